"""Property tests against NumPy on random shapes, dtypes and values: broadcasting binary
operations, reductions, shape manipulation and indexing (get and set). Each case runs eagerly
(the fast path) and under a recording tape (the slow path through `bind`), and where cheap also
compiled."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck, event
from hypothesis.extra import numpy as hnp

import ndflow as nf
import ndflow.numpy as tnp

from helpers import assert_same

# NDFLOW_HYPOTHESIS_EXAMPLES=2000 for a deeper search than the default run's 40
SETTINGS = settings(max_examples=int(os.environ.get("NDFLOW_HYPOTHESIS_EXAMPLES", 40)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# NumPy's own warnings for empty means and NaN results: the same on both sides
pytestmark = [pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning")]

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64]
_TOL = {np.dtype(np.float16): (1e-3, 1e-3), np.dtype(np.float32): (1e-5, 1e-5),
        np.dtype(np.float64): (1e-12, 1e-12)}


def _tol(dt):
    return _TOL.get(np.dtype(dt), (0, 0))


def arrays(dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        elements = st.floats(-10, 10, width=dtype.itemsize * 8, allow_subnormal=False)
    elif dtype.kind in "iu":
        elements = st.integers(0 if dtype.kind == "u" else -20, 20)
    else:
        elements = st.booleans()
    return hnp.arrays(dtype, shape, elements=elements)


def _both(fn_np, fn_nf, *args):
    """Run NumPy and ndflow; if NumPy raises, ndflow must raise the same type."""
    try:
        with np.errstate(all="ignore"):
            want = fn_np(*args)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            fn_nf(*[tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args])
        return None, None
    nf_args = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    with np.errstate(all="ignore"):
        got = fn_nf(*nf_args)
    return got, want


def _slow(fn):
    """The same call with a tape recording (forces the general `bind` path)."""
    def run(*args):
        with nf.GradientTape():
            return fn(*args)
    return run


# ------------------------------------------------------------------ binary elementwise
BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "maximum", "minimum",
          "equal", "not_equal", "less", "greater_equal", "logical_and", "logical_xor",
          "bitwise_and", "remainder", "arctan2"]


@st.composite
def binary_case(draw):
    name = draw(st.sampled_from(BINARY))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4))
    dts = [draw(st.sampled_from(DTYPES)) for _ in range(2)]
    a = draw(arrays(dts[0], shapes.input_shapes[0]))
    b = draw(arrays(dts[1], shapes.input_shapes[1]))
    kind = draw(st.sampled_from(["arrays", "scalar left", "scalar right", "0-d"]))
    if kind == "scalar left":
        a = draw(st.sampled_from([2, -1.5, True, 3.25]))
    elif kind == "scalar right":
        b = draw(st.sampled_from([2, -1.5, True, 0.5]))
    elif kind == "0-d":
        a = np.asarray(a.ravel()[0] if a.size else a.dtype.type(1))
    return name, a, b


@SETTINGS
@given(binary_case())
def test_binary_broadcasting_vs_numpy(case):
    name, a, b = case
    np_f, nf_f = getattr(np, name), getattr(tnp, name)
    for f in (nf_f, _slow(nf_f)):
        got, want = _both(np_f, f, a, b)
        if want is not None:
            rt, at = _tol(np.asarray(want).dtype)
            assert_same(got, want, rt, at, ctx=f"{name}({a!r}, {b!r})")


@SETTINGS
@given(binary_case())
def test_binary_operators_vs_numpy(case):
    name, a, b = case
    ops = {"add": "__add__", "subtract": "__sub__", "multiply": "__mul__",
           "true_divide": "__truediv__", "floor_divide": "__floordiv__", "less": "__lt__",
           "equal": "__eq__", "remainder": "__mod__", "bitwise_and": "__and__"}
    if name not in ops or not isinstance(a, np.ndarray):
        return
    op = ops[name]

    def call(x, y):
        return getattr(x, op)(y)
    for f in (call, _slow(call)):
        got, want = _both(call, f, a, b)
        if want is not None:
            rt, at = _tol(np.asarray(want).dtype)
            assert_same(got, np.asarray(want), rt, at, ctx=f"{op}({a!r}, {b!r})")


# ------------------------------------------------------------------ reductions
REDUCTIONS = ["sum", "prod", "max", "min", "mean", "any", "all", "argmax", "argmin"]


@st.composite
def reduction_case(draw):
    name = draw(st.sampled_from(REDUCTIONS))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    dt = draw(st.sampled_from([np.float32, np.float64, np.int32, np.int64, np.bool_]))
    a = draw(arrays(dt, shape))
    nd = len(shape)
    if name in ("argmax", "argmin"):
        axis = draw(st.one_of(st.none(), st.integers(-nd, nd - 1) if nd else st.none()))
    else:
        axis = draw(st.one_of(
            st.none(),
            st.integers(-nd, nd - 1) if nd else st.none(),
            st.lists(st.integers(0, nd - 1), unique=True, max_size=nd).map(tuple)
            if nd else st.none()))
    keepdims = draw(st.booleans())
    if draw(st.booleans()) and nd >= 2:
        a = np.swapaxes(a, 0, -1)   # non-contiguous
    return name, a, axis, keepdims


@SETTINGS
@given(reduction_case())
def test_reductions_vs_numpy(case):
    name, a, axis, keepdims = case

    def call(m):
        return lambda x: getattr(m, name)(x, axis=axis, keepdims=keepdims)
    for f in (call(tnp), _slow(call(tnp))):
        got, want = _both(call(np), f, a)
        if want is not None:
            rt, at = _tol(np.asarray(want).dtype)
            rt = max(rt, 1e-5) if np.asarray(want).dtype == np.float32 else rt
            assert_same(got, np.asarray(want), rt, at, ctx=f"{name}({a!r}, axis={axis}, "
                                                            f"keepdims={keepdims})")


# ------------------------------------------------------------------ manipulation
@st.composite
def manipulation_case(draw):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    dt = draw(st.sampled_from([np.float32, np.int64, np.bool_]))
    a = draw(arrays(dt, shape))
    nd = len(shape)
    kind = draw(st.sampled_from(["reshape", "transpose", "stack", "concatenate", "expand_dims",
                                 "squeeze", "moveaxis", "broadcast_to"]))
    if kind == "reshape":
        size = a.size
        dims = []
        rest = size
        for _ in range(draw(st.integers(0, 3))):
            divs = [d for d in range(1, 5) if rest % d == 0] if rest else [0, 1, 2]
            d = draw(st.sampled_from(divs))
            dims.append(d)
            rest = rest // d if d else rest
        if size:
            dims.append(rest)
        elif not dims or 0 not in dims:
            dims.append(0)
        if draw(st.booleans()) and dims and 0 not in dims:
            dims[draw(st.integers(0, len(dims) - 1))] = -1
        return kind, (a, tuple(dims)), {}
    if kind == "transpose":
        return kind, (a, tuple(draw(st.permutations(range(nd))))), {}
    if kind in ("stack", "concatenate"):
        n = draw(st.integers(1, 3))
        if kind == "concatenate" and nd == 0:
            a = a.reshape(1)
            nd = 1
        axis = draw(st.integers(-(nd + (kind == "stack")), nd - (kind == "concatenate")))
        arrs = [a]
        for _ in range(n - 1):
            s = list(a.shape)
            if kind == "concatenate":
                s[axis] = draw(st.integers(0, 3))
            arrs.append(draw(arrays(draw(st.sampled_from([np.float32, np.int64, np.bool_])),
                                    tuple(s))))
        return kind, (arrs,), {"axis": axis}
    if kind == "expand_dims":
        return kind, (a, draw(st.integers(-nd - 1, nd))), {}
    if kind == "squeeze":
        ones = [i for i, d in enumerate(shape) if d == 1]
        axis = draw(st.one_of(st.none(), st.lists(st.sampled_from(ones), unique=True).map(tuple)
                              if ones else st.none()))
        return kind, (a,), {"axis": axis}
    if kind == "moveaxis":
        if not nd:
            return "transpose", (a, ()), {}
        return kind, (a, draw(st.integers(-nd, nd - 1)), draw(st.integers(-nd, nd - 1))), {}
    target = tuple(draw(st.sampled_from([1, 2])) for _ in range(draw(st.integers(0, 2)))) + \
        tuple(d if d != 1 or not draw(st.booleans()) else 3 for d in shape)
    return kind, (a, target), {}


@SETTINGS
@given(manipulation_case())
def test_manipulation_vs_numpy(case):
    kind, args, kwargs = case

    def call(m):
        def f(*xs):
            xs = [[m.asarray(e) if m is tnp else e for e in x] if isinstance(x, list) else x
                  for x in xs]
            return getattr(m, kind)(*xs, **kwargs)
        return f
    for f in (call(tnp), _slow(call(tnp))):
        got, want = _both(call(np), f, *args)
        if want is not None:
            shapes = [[e.shape for e in x] if isinstance(x, list) else np.shape(x) for x in args]
            assert_same(got, want, ctx=f"{kind}{shapes} {kwargs}")


# ------------------------------------------------------------------ indexing
@st.composite
def index_case(draw, setitem=False):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5))
    dt = draw(st.sampled_from([np.float64, np.int32, np.bool_]))
    x = draw(arrays(dt, shape))
    arr_shape = draw(st.sampled_from([(), (2,), (3,), (2, 2), (1, 3)]))
    idx = []
    dim = 0
    n_dims = len(shape)
    while dim < n_dims:
        size = shape[dim]
        kinds = ["slice", "full", "newaxis", "intarray"]
        if size:
            kinds.append("int")
        if dim + 1 <= n_dims:
            kinds.append("bool")
        k = draw(st.sampled_from(kinds))
        if k == "newaxis":
            idx.append(None)
            continue
        if k == "full":
            idx.append(slice(None))
        elif k == "slice":
            start = draw(st.one_of(st.none(), st.integers(-size - 2, size + 2)))
            stop = draw(st.one_of(st.none(), st.integers(-size - 2, size + 2)))
            step = draw(st.one_of(st.none(), st.sampled_from([1, 2, -1, -2, 3])))
            idx.append(slice(start, stop, step))
        elif k == "int":
            idx.append(draw(st.integers(-size, size - 1)))
        elif k == "intarray":
            if size == 0:
                idx.append(np.zeros((0,), np.int64))
            else:
                idx.append(draw(hnp.arrays(np.int64, arr_shape,
                                           elements=st.integers(-size, size - 1))))
        elif k == "bool":
            span = draw(st.integers(1, min(2, n_dims - dim)))
            idx.append(draw(hnp.arrays(np.bool_, shape[dim:dim + span])))
            dim += span
            continue
        dim += 1
    if idx and draw(st.booleans()):
        # replace a run of trailing full slices (possibly empty) by an Ellipsis
        cut = draw(st.integers(0, len(idx)))
        if all(isinstance(e, slice) and e == slice(None) for e in idx[cut:]):
            idx = idx[:cut] + [Ellipsis]
    if draw(st.booleans()) and idx and not isinstance(idx[0], np.ndarray):
        key = idx[0] if len(idx) == 1 else tuple(idx)
    else:
        key = tuple(idx)
    if draw(st.booleans()) and x.ndim >= 2:
        x = np.asfortranarray(x)
    return x, key


def _key_nf(key, as_nf):
    if not as_nf:
        return key
    conv = lambda k: tnp.asarray(k) if isinstance(k, np.ndarray) else k  # noqa: E731
    return tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)


@SETTINGS
@given(index_case(), st.booleans())
def test_getitem_vs_numpy(case, nf_index_arrays):
    x, key = case
    try:
        want = x[key]
    except IndexError:
        with pytest.raises(IndexError):
            tnp.asarray(x)[_key_nf(key, nf_index_arrays)]
        return
    k = _key_nf(key, nf_index_arrays)
    assert_same(tnp.asarray(x)[k], np.asarray(want), ctx=f"x{x.shape}[{key!r}]")
    with nf.GradientTape():
        assert_same(tnp.asarray(x)[k], np.asarray(want), ctx=f"(tape) x{x.shape}[{key!r}]")
    # compiled, with the index arrays and masks as traced arguments (a traced mask selects an
    # unknown number of elements)
    keys = key if isinstance(key, tuple) else (key,)
    pos = [i for i, e in enumerate(keys) if isinstance(e, np.ndarray)]
    static = []

    def traced(a, *arrs):
        ks = list(keys)
        for i, e in zip(pos, arrs):
            ks[i] = e
        r = a[tuple(ks) if isinstance(key, tuple) else ks[0]]
        static.append(tuple(r.shape))
        return r
    event("masked" if _has_bool(key) else "plain")
    got = nf.function(traced)(tnp.asarray(x), *[tnp.asarray(keys[i]) for i in pos])
    assert_same(got, np.asarray(want), ctx=f"(function) x{x.shape}[{key!r}]")
    # the static shape while tracing: NumPy's, with None only for sizes a mask decides
    masked = _has_bool(key)
    assert len(static[0]) == want.ndim and all(
        s == w or (s is None and masked) for s, w in zip(static[0], want.shape)), \
        f"traced shape {static[0]} for x{x.shape}[{key!r}], NumPy gives {want.shape}"


@SETTINGS
@given(index_case(), st.sampled_from(["full", "scalar", "python", "row"]), st.booleans())
def test_setitem_vs_numpy(case, value_kind, under_tape):
    x, key = case
    try:
        target_shape = x[key].shape
    except IndexError:
        return
    rng = np.random.default_rng(0)
    if value_kind == "full":
        v = (rng.standard_normal(target_shape) * 5).astype(x.dtype)
    elif value_kind == "row":
        v = (rng.standard_normal(target_shape[-1:]) * 5).astype(x.dtype)
    elif value_kind == "scalar":
        v = np.asarray(7, dtype=x.dtype)
    else:
        v = {np.dtype(np.float64): 2.5, np.dtype(np.int32): 3, np.dtype(np.bool_): True}[x.dtype]
    want = x.copy()
    want[key] = v
    got = tnp.asarray(x.copy())
    vv = tnp.asarray(v) if isinstance(v, np.ndarray) else v
    if under_tape:
        with nf.GradientTape():
            got[_key_nf(key, True)] = vv
    else:
        got[_key_nf(key, True)] = vv
    assert_same(got, want, ctx=f"x{x.shape}[{key!r}] = {value_kind} (tape={under_tape})")


def _has_bool(key):
    return any(isinstance(e, np.ndarray) and e.dtype == bool
               for e in (key if isinstance(key, tuple) else (key,)))


@SETTINGS
@given(index_case(), st.booleans())
def test_getitem_inside_vectorized_map_matches_loop(case, batch_indices):
    """Indexing per example, batched: the operand always carries the batch axis, the integer
    index arrays too when `batch_indices`."""
    x, key = case
    if _has_bool(key):
        return
    try:
        x[key]
    except IndexError:
        return
    keys = key if isinstance(key, tuple) else (key,)
    arr_pos = [i for i, k in enumerate(keys) if isinstance(k, np.ndarray)]
    xs = np.stack([x, x * 2 if x.dtype != np.bool_ else ~x, x[...]])
    rng = np.random.default_rng(0)
    per_keys = []
    for b in range(3):
        ks = list(keys)
        if batch_indices:
            for i in arr_pos:
                size = x.shape[_axis_of(keys, i, x.ndim)]
                ks[i] = rng.integers(-size, size, size=keys[i].shape) if size else keys[i]
        per_keys.append(ks)

    def rebuild(ks):
        return tuple(ks) if isinstance(key, tuple) else ks[0]
    want = np.stack([xs[b][rebuild(per_keys[b])] for b in range(3)])
    if batch_indices and arr_pos:
        idx_batched = tuple(tnp.asarray(np.stack([per_keys[b][i] for b in range(3)]))
                            for i in arr_pos)

        def f(inp):
            xb, ib = inp
            ks = list(keys)
            for i, a in zip(arr_pos, ib):
                ks[i] = a
            return xb[rebuild(ks)]
        got = nf.vectorized_map(f, (tnp.asarray(xs), idx_batched))
    else:
        k = _key_nf(key, True)
        got = nf.vectorized_map(lambda xb: xb[k], tnp.asarray(xs))
    event("checked, index arrays batched" if batch_indices and arr_pos else "checked")
    assert_same(got, want, ctx=f"vectorized_map x{x.shape}[{key!r}]")


def _axis_of(keys, i, ndim):
    """The axis of x that entry i of an index tuple (without bool masks) refers to."""
    before = [k for k in keys[:i] if k is not None]
    if any(k is Ellipsis for k in before):
        after = [k for k in keys[i + 1:] if k is not None]
        return ndim - 1 - len(after)
    return len(before)


@SETTINGS
@given(index_case(), st.booleans())
def test_setitem_inside_vectorized_map_matches_loop(case, batched_value):
    x, key = case
    if _has_bool(key) or x.dtype == np.bool_:
        return
    try:
        tshape = x[key].shape
    except IndexError:
        return
    xs = np.stack([x, x + 1, x * 3])
    vs = np.stack([np.full(tshape, 7 + b, x.dtype) for b in range(3)])
    want = xs.copy()
    for b in range(3):
        want[b][key] = vs[b] if batched_value else vs[0]
    k = _key_nf(key, True)

    def f(inp):
        xb, vb = inp
        y = xb * 1
        y[k] = vb if batched_value else tnp.asarray(vs[0])
        return y
    got = nf.vectorized_map(f, (tnp.asarray(xs), tnp.asarray(vs)))
    event("checked")
    assert_same(got, want, ctx=f"vectorized_map x{x.shape}[{key!r}] = v")
