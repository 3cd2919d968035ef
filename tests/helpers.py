"""Helpers shared by the tests (NumPy is the oracle): comparisons, data, fused kernels."""
import numpy as np

import ndflow.numpy as tnp
from ndflow.core import tree
from ndflow.graph import fusion
from ndflow.graph.kernels import planner


def to_nf(a):
    """NumPy arrays become ndflow arrays (views stay views); everything else is left as is."""
    return tnp.asarray(a) if isinstance(a, np.ndarray) else a


def to_np(a):
    if isinstance(a, tnp.ndarray):
        return a.numpy()
    return a


def leaves(x):
    return tree.flatten(x)


def assert_same(got, want, rtol=0.0, atol=0.0, ctx="", values=True, ndflow_type=True):
    """`got` (ndflow) matches `want` (NumPy): structure, array type, dtype, shape and values.

    `rtol` may be a function of the result dtype giving (rtol, atol) (an op record's
    `tolerance`)."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)), f"{ctx}: expected a sequence, got {type(got)}"
        assert len(got) == len(want), f"{ctx}: {len(got)} outputs, NumPy gives {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, rtol, atol, f"{ctx}[{i}]", values, ndflow_type)
        return
    if isinstance(want, (np.ndarray, np.generic)):
        if ndflow_type:
            assert isinstance(got, tnp.ndarray), \
                f"{ctx}: expected an ndflow array, got {type(got).__name__}"
        g = np.asarray(to_np(got))
        w = np.asarray(want)
        assert g.dtype == w.dtype, f"{ctx}: dtype {g.dtype}, NumPy gives {w.dtype}"
        assert g.shape == w.shape, f"{ctx}: shape {g.shape}, NumPy gives {w.shape}"
        if not values:
            return
        if callable(rtol):
            rtol, atol = rtol(w.dtype)
        if w.dtype.kind in "fc" or w.dtype == tnp.bfloat16:
            np.testing.assert_allclose(g.astype(w.dtype if w.dtype != tnp.bfloat16 else np.float32),
                                       w if w.dtype != tnp.bfloat16 else w.astype(np.float32),
                                       rtol=rtol, atol=atol, equal_nan=True, err_msg=ctx)
        else:
            np.testing.assert_array_equal(g, w, err_msg=ctx)
        return
    # Python values (e.g. linspace's step)
    if isinstance(want, float):
        if callable(rtol):
            rtol, atol = rtol(np.dtype(float))
        assert np.isclose(float(to_np(got)), want, rtol=max(rtol, 1e-12), atol=atol), ctx
    else:
        assert to_np(got) == want, f"{ctx}: {got!r} != {want!r}"


def assert_close_nf(got, want, rtol=0.0, atol=0.0, ctx=""):
    """Both ndflow (e.g. compiled vs eager): compare as NumPy."""
    want = tree.map_structure(lambda a: a.numpy() if isinstance(a, tnp.ndarray) else a, want)
    assert_same(got, want, rtol, atol, ctx)


def run_threads(work, n=4):
    """Run `work(i)` for i in range(n) on n threads at once; join them all."""
    import threading
    ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def assert_bits_equal(got, want):
    """`got` has `want`'s shape, dtype and bits (-0.0 and +0.0 differ; NaNs match by position,
    whatever their payloads)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                 got.dtype, want.dtype)
    nan = np.isnan(want) if want.dtype.kind in "fc" else np.zeros(want.shape, bool)
    if want.dtype.kind in "fc":
        np.testing.assert_array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8)), (got, want)


def guide_per_example(w1, b, w2):
    """The TensorFlow NumPy guide's per-example gradients of its MLP with weights (w1, b, w2)
    captured: (the gradient of one (input, label) pair, the vectorized_map of it)."""
    import ndflow as nf

    def single(arg):
        inp, label = arg
        with nf.GradientTape() as tape:
            tape.watch([w1, b, w2])
            y = tnp.maximum(tnp.matmul(tnp.expand_dims(inp, 0), w1) + b, 0)
            loss = tnp.sum(tnp.square(tnp.matmul(y, w2) - tnp.expand_dims(label, 0)))
        return tuple(tape.gradient(loss, [w1, b, w2]))

    def per_example(inputs, labels):
        return nf.vectorized_map(single, (inputs, labels))
    return single, per_example


def tape_data(shape, dtype, seed, specials=(np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 2.5)):
    """Normal values of `dtype` with up to 8 of `specials` at random places (float dtypes, 8
    elements or more): the eager-tape tests' operands."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    if a.size >= 8 and np.dtype(dtype).kind == "f":
        a.reshape(-1)[rng.permutation(a.size)[:8]] = np.array(specials)[:8]
    return a


def value_bits(v):
    """(dtype, shape, bytes) of an ndflow or NumPy value (None stays None): equal exactly
    when two results are the same bits."""
    import ndflow.numpy as tnp
    if v is None:
        return None
    v = v.numpy() if isinstance(v, tnp.ndarray) else np.asarray(v)
    return v.dtype, v.shape, v.tobytes()


def four_element_operands(dtype, seed=1):
    """(a, b, t) for a small region of two 4-element operands and a 0-d one: random values,
    then NaN, inf, -0.0 and a tiny value against -inf, 0.0, -0.0 and 3.0, each with t = 0.0,
    2.0 and inf."""
    rng = np.random.default_rng(seed)
    for special in (False, True):
        a, b = rng.standard_normal(4).astype(dtype), rng.standard_normal(4).astype(dtype)
        if special:
            a[:] = [np.nan, np.inf, -0.0, 1e-30]
            b[:] = [-np.inf, 0.0, -0.0, 3.0]
        for tv in (0.0, 2.0, np.inf):
            yield a, b, np.asarray(tv, dtype)


def single_kernel(f, *args):
    """The one fused kernel of `f`'s graph for `args`."""
    ks = fusion.fused_kernels(f.get_concrete_function(*args).graph)
    assert len(ks) == 1, ks
    return ks[0]


def routes_reached(fn):
    """The planner routes decided while `fn()` runs, and its result."""
    before = dict(planner.REACHED)
    out = fn()
    return {r for r, n in planner.REACHED.items() if n > before.get(r, 0)}, out
