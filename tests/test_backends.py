"""Backends: the interface, where CuPy may be named, and (on any machine) a fake device whose
arrays refuse implicit host conversion (tests/fake_device.py), registered as GPU:0 only inside
these tests. It proves that work placed on a device runs on that device's array module with
no silent host round trip: eager ops, the op table, compiled functions (their fused regions
included), gradients, vectorized_map, random draws, copies between devices, and the error
naming both devices when inputs live on different ones."""
import ast
import os
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.backends import device as D
from ndflow.backends.base import Backend
from ndflow.core import tree
from ndflow.graph import fusion

import optable
from fake_device import FakeArray, HostConversionError, fake_gpu, transfers
from helpers import assert_same

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Primitives with no device kernel: their kernels compute in host memory, so on a device their
# results are copied there with a RuntimeWarning (never silently). None in the op table today;
# a new one must be declared here.
HOST_FALLBACKS = set()


@pytest.fixture
def fake():
    with fake_gpu() as b:
        yield b


# ------------------------------------------------------------------ the interface
def test_every_cupy_line_lives_in_the_cupy_backend():
    """No module but backends/cupy_backend.py imports CuPy or names a CuPy attribute."""
    offenders = []
    for d, _, files in os.walk(os.path.join(ROOT, "ndflow")):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, ROOT)
            if rel == os.path.join("ndflow", "backends", "cupy_backend.py"):
                continue
            with open(path, encoding="utf-8") as fh:
                tree_ = ast.parse(fh.read(), path)
            for node in ast.walk(tree_):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                elif isinstance(node, ast.Attribute) and node.attr == "cuda":
                    names = ["<attribute .cuda>"]
                if any(n.split(".")[0] in ("cupy", "cupyx", "<attribute .cuda>") for n in names):
                    offenders.append("%s:%d" % (rel, node.lineno))
    assert not offenders, offenders


def test_numpy_backend_round_trips_and_draws_numpys_stream():
    b = D.CPU_BACKEND
    assert b.host and b.xp is np and b.device_type == "CPU"
    a = np.arange(4.0)
    assert b.from_host(a) is a and b.to_host(a) is a
    c = b.copy(a, 0)
    assert not np.shares_memory(a, c) and np.array_equal(a, c)
    assert b.empty((2, 3), np.float32).dtype == np.float32
    info = b.memory_info()
    assert set(info) >= {"used", "total", "free"}
    rs1, rs2 = np.random.RandomState(3), np.random.RandomState(3)
    got = b.random_draw(rs1, "normal", {"size": (4,)}, np.dtype(np.float32))
    want = rs2.normal(size=(4,)).astype(np.float32)
    assert got.dtype == np.float32 and np.array_equal(got, want)


def test_a_backend_subclass_must_say_how_to_move_memory():
    b = Backend()
    with pytest.raises(NotImplementedError):
        b.from_host(np.ones(2))
    with pytest.raises(NotImplementedError):
        b.to_host(np.ones(2))


def test_no_gpu_backend_means_no_gpu_devices_and_soft_placement():
    if D.gpu_backend() is not None:
        pytest.skip("this machine has a GPU")
    assert nf.config.list_physical_devices("GPU") == []


# ------------------------------------------------------------------ the fake device
def test_fake_device_placement(fake):
    assert [d.name for d in nf.config.list_physical_devices("GPU")] == ["/physical_device:GPU:0"]
    before = transfers()
    with nf.device("GPU:0"):
        x = tnp.asarray(np.arange(6.0).reshape(2, 3))      # the one upload
        y = tnp.tanh(x @ x.T) + 1
        s = tnp.sum(y, axis=0)
        z = tnp.zeros(3)
    for a in (x, y, s, z):
        assert a.device == GPU0 and type(a._v) is FakeArray
    after = transfers()
    assert after["to_host"] == before["to_host"], "a host round trip while computing"
    assert after["from_host"] == before["from_host"] + 1
    want = np.tanh(np.arange(6.0).reshape(2, 3) @ np.arange(6.0).reshape(2, 3).T) + 1
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(s.numpy(), want.sum(0), rtol=1e-12)
    with pytest.raises(HostConversionError):
        np.asarray(x._v)                          # the buffer refuses implicit conversion


def test_fake_device_refuses_a_kernel_that_would_go_through_the_host(fake):
    from ndflow.core.primitive import Primitive, Aval, REGISTRY, bind
    p = Primitive("host_only_for_test", lambda x: np.asarray(x) * 2,
                  lambda x: Aval(x.shape, x.dtype))
    REGISTRY.remove(p)
    with nf.device("GPU:0"):
        x = tnp.ones(3)
        with pytest.raises(TypeError, match=r"host_only_for_test.*GPU:0"):
            bind(p, x)


def test_mixing_devices_is_an_error_naming_both(fake):
    with nf.device("GPU:0"):
        g = tnp.ones(3)
    c = tnp.ones(3)
    with pytest.raises(ValueError, match=r"device:GPU:0.*device:CPU:0"):
        g + c
    with pytest.raises(ValueError, match=r"device:CPU:0.*device:GPU:0"):
        tnp.concatenate([c, g])
    assert (g + 1).device == GPU0 and (2.0 * g).device == GPU0     # Python scalars are fine


def test_copies_between_devices(fake):
    c = tnp.arange(4.0)
    with nf.device("GPU:0"):
        g = tnp.copy(c)
        g2 = tnp.copy(g)                           # a copy on the same device
    assert g.device == GPU0 and type(g._v) is FakeArray
    assert g2._v._a is not g._v._a
    with nf.device("CPU:0"):
        back = tnp.copy(g)
    assert back.device == CPU0 and type(back._v) is np.ndarray
    np.testing.assert_array_equal(back.numpy(), c.numpy())
    h = g.to_device("CPU:0")
    assert h.device == CPU0 and np.array_equal(h.numpy(), c.numpy())
    assert tnp.asarray(np.ones(2), device="GPU:0").device == GPU0


def test_compiled_function_runs_on_its_inputs_device(fake):
    with nf.device("GPU:0"):
        x = tnp.asarray(np.linspace(-3, 3, 12).reshape(3, 4))
    f = nf.function(lambda a: tnp.tanh(a) * 2 + 1 / (1 + tnp.exp(-a)))
    runs = fake.fused_runs
    out = f(x)      # tracing may read small constants back (the compiler's passes), once
    before = transfers()
    out2 = f(x)
    assert transfers() == before, "a call of the compiled graph moved memory"
    assert out.device == GPU0 and type(out._v) is FakeArray and out2.device == GPU0
    assert fake.fused_runs >= runs + 2, "the fused region did not run through the backend"
    xs = np.linspace(-3, 3, 12).reshape(3, 4)
    np.testing.assert_allclose(out.numpy(), np.tanh(xs) * 2 + 1 / (1 + np.exp(-xs)), rtol=1e-12)
    # the same function on CPU inputs: its own trace, on the CPU
    cpu = f(tnp.asarray(xs))
    assert cpu.device == CPU0 and type(cpu._v) is np.ndarray
    np.testing.assert_allclose(cpu.numpy(), out.numpy(), rtol=1e-12)


def test_gradients_vectorized_map_and_variables_on_the_device(fake):
    xs = np.array([0.1, 0.2, 0.3])
    with nf.device("GPU:0"):
        x = tnp.asarray(xs)
        with nf.GradientTape() as tape:
            tape.watch(x)
            y = tnp.sum(tnp.sin(x) * x)
        g = tape.gradient(y, x)
        v = nf.vectorized_map(lambda r: r * r + 1, tnp.ones((4, 2)))
        var = nf.Variable(tnp.zeros(3))
        var.assign_add(x)
    grad_fn = nf.function(lambda a: nf.grad(lambda b: tnp.sum(tnp.tanh(b) ** 2))(a))
    cg = grad_fn(x)
    for a in (g, v, cg):
        assert a.device == GPU0 and type(a._v) is FakeArray
    np.testing.assert_allclose(g.numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-12)
    np.testing.assert_allclose(cg.numpy(), 2 * np.tanh(xs) * (1 - np.tanh(xs) ** 2), rtol=1e-12)
    np.testing.assert_array_equal(v.numpy(), np.full((4, 2), 2.0))
    assert var.device == GPU0
    np.testing.assert_array_equal(var.numpy(), xs)


def test_compiled_training_step_updates_variables_on_the_device(fake):
    """A compiled SGD step over Variables placed on the device (the digits classifier's shape):
    the Variables' reads are no creation kernels (they take the device of their Variable), the
    update stays on the device, and the values are NumPy's, step after step."""
    rng = np.random.default_rng(3)
    x, w0, b0 = rng.standard_normal((8, 5)), rng.standard_normal((5, 3)), rng.standard_normal(3)
    onehot = np.eye(3)[rng.integers(0, 3, 8)]
    with nf.device("GPU:0"):
        w, b = nf.Variable(w0), nf.Variable(b0)
        xd, od = tnp.asarray(x), tnp.asarray(onehot)

    def step(x, onehot):
        with nf.GradientTape() as tape:
            z = tnp.matmul(x, w) + b
            z = z - tnp.max(z, axis=1, keepdims=True)
            loss = tnp.mean(tnp.log(tnp.sum(tnp.exp(z), axis=1)) - tnp.sum(z * onehot, axis=1))
        for p, g in zip((w, b), tape.gradient(loss, (w, b))):
            p.assign_sub(0.5 * g)
        return loss
    f = nf.function(step)
    wn, bn = w0.copy(), b0.copy()
    for _ in range(3):
        loss = f(xd, od)
        z = x @ wn + bn
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        want = np.mean(np.log(np.exp(z).sum(axis=1)) - (z * onehot).sum(axis=1))
        d = (p - onehot) / x.shape[0]
        wn, bn = wn - 0.5 * (x.T @ d), bn - 0.5 * d.sum(axis=0)
        np.testing.assert_allclose(loss.numpy(), want, rtol=1e-12)
    for var, want in ((w, wn), (b, bn)):
        assert var.device == GPU0 and type(var._value._v) is FakeArray
        np.testing.assert_allclose(var.numpy(), want, rtol=1e-12)


def test_random_draws_on_the_device_are_seeded_but_not_numpys_stream(fake):
    def draw():
        tnp.random.seed(7)
        with nf.device("GPU:0"):
            a = tnp.random.normal(size=(5,))
            b = tnp.random.uniform(size=(2, 2)).astype(np.float32)
            c = nf.function(lambda: tnp.random.normal(size=(3,)))()
            d = tnp.random.normal(loc=tnp.zeros(4), scale=1.0)
        return a, b, c, d
    first, second = draw(), draw()
    for a, b in zip(first, second):
        assert a.device == GPU0 and type(a._v) is FakeArray
        np.testing.assert_array_equal(a.numpy(), b.numpy())      # reproducible under seed
    np.random.seed(7)
    assert not np.array_equal(first[0].numpy(), np.random.normal(size=(5,)))
    assert first[1].dtype == np.float32 and first[3].shape == (4,)


def _device_args(sample):
    return [tnp.asarray(a, device="GPU:0") if isinstance(a, np.ndarray) else a
            for a in sample.args]


def _check_on_device(got, want, rec, ctx, backend, sample):
    for g in tree.flatten(got):
        if isinstance(g, tnp.ndarray):
            assert g.device == GPU0 and D.backend_of(g._v) is backend, \
                f"{ctx}: result off the device ({g.device}, {type(g._v).__name__})"
    if rec.device_canon is not None:       # where NumPy leaves the arrangement open
        host = tree.map_structure(lambda g: g.numpy() if isinstance(g, tnp.ndarray) else g, got)
        got = rec.device_canon(tuple(host) if isinstance(want, tuple) else host, sample)
        want = rec.device_canon(tuple(want) if isinstance(want, tuple) else want, sample)
        assert_same(got, want, rec.tolerance, None, ctx=ctx, ndflow_type=False)
        return
    assert_same(got, want, rec.tolerance, None, ctx=ctx, values=rec.values == "values")


def _host_fallbacks_declared(caught):
    warned = {str(w.message).split("'")[1] for w in caught
              if "has no kernel for" in str(w.message)}
    assert warned <= HOST_FALLBACKS, f"new host fallbacks: {warned - HOST_FALLBACKS}"


def run_record_on_device(rec, backend, dtype=None):
    """One op-table record on GPU:0 (its first dtype): every sample eagerly, the first one
    compiled (no scope: the inputs' device), results on the device and equal to NumPy's.
    Shared with tests/test_gpu.py, which runs it on a real GPU."""
    dt = np.dtype(dtype or rec.dtypes[0])
    samples = rec.samples(np.random.default_rng(0), dt)
    ran = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for s in samples:
            with np.errstate(all="ignore"):
                want = rec.call(np, *s.args, **s.kwargs)
            with nf.device("GPU:0"):
                got = rec.call(tnp, *_device_args(s), **s.kwargs)
            _check_on_device(got, want, rec, f"{rec.name}{s!r}", backend, s)
            ran += 1
        s = samples[0]
        if rec.jit and any(isinstance(a, np.ndarray) for a in s.args):
            args = _device_args(s)
            pos = [i for i, a in enumerate(args) if isinstance(a, tnp.ndarray)]

            def f(*arrs):
                full = list(args)
                for i, v in zip(pos, arrs):
                    full[i] = v
                return rec.call(tnp, *full, **s.kwargs)
            with np.errstate(all="ignore"):
                want = rec.call(np, *s.args, **s.kwargs)
            got = nf.function(f)(*[args[i] for i in pos])
            _check_on_device(got, want, rec, f"nf.function {rec.name}{s!r}", backend, s)
    assert ran
    _host_fallbacks_declared(caught)


# every record of the op table, its first dtype, eagerly and compiled on the fake device. An
# implicit conversion to host memory raises (the fake's __array__); explicit reads of values
# the NumPy layer needs on the host (histogram's range, data-dependent sizes) are allowed.
RECORD_PARAMS = [pytest.param(r, id=r.name) for r in optable.RECORDS]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("rec", RECORD_PARAMS)
def test_optable_on_a_device(rec, fake):
    run_record_on_device(rec, fake)


def test_host_fallback_is_a_warned_copy_not_a_silent_one(fake):
    """A kernel that allocates in host memory for device inputs (no device kernel): its result
    reaches the device as a copy, with a warning naming the primitive, eagerly and compiled."""
    from ndflow.core.primitive import Primitive, Aval, REGISTRY, bind
    p = Primitive("host_alloc_for_test", lambda x: np.ones(x.shape, x.dtype),
                  lambda x: Aval(x.shape, x.dtype))
    REGISTRY.remove(p)
    with nf.device("GPU:0"):
        x = tnp.zeros(3)
    D._warned_upload.discard(p.name)
    with pytest.warns(RuntimeWarning, match=r"'host_alloc_for_test' has no kernel for fake.*copied"):
        u = bind(p, x)
    assert u.device == GPU0 and type(u._v) is FakeArray
    np.testing.assert_array_equal(u.numpy(), np.ones(3))
    D._warned_upload.discard(p.name)
    f = nf.function(lambda a: bind(p, a) * 2 + a)
    with pytest.warns(RuntimeWarning, match=r"'host_alloc_for_test' has no kernel"):
        c = f(x)
    assert c.device == GPU0 and type(c._v) is FakeArray
    np.testing.assert_array_equal(c.numpy(), np.full(3, 2.0))


def test_fused_region_falls_back_op_by_op_without_a_compiler(fake):
    f = nf.function(lambda a, b: tnp.maximum(a * b + 1, 0.5) - tnp.sqrt(tnp.abs(a)))
    with nf.device("GPU:0"):
        a = tnp.asarray(np.linspace(-1, 1, 8))
        b = tnp.asarray(np.linspace(2, 3, 8))
    cf = f.get_concrete_function(a, b)
    assert fusion.fused_kernels(cf.graph), "expected a fused region"
    out = f(a, b)
    an, bn = np.linspace(-1, 1, 8), np.linspace(2, 3, 8)
    np.testing.assert_allclose(out.numpy(), np.maximum(an * bn + 1, 0.5) - np.sqrt(np.abs(an)),
                               rtol=1e-12)
    assert type(out._v) is FakeArray


class _Partial:
    """A device library's array that implements part of NumPy's API, as CuPy does: no
    `spacing` ufunc, no `upper=` in cholesky, no `hermitian=`, lexsort of one stacked key array
    without `axis`, solve without broadcast leading axes. Everything else runs NumPy's."""
    _REFUSED_KW = {np.linalg.cholesky: "upper", np.linalg.svd: "hermitian",
                   np.linalg.pinv: "hermitian", np.lexsort: "axis"}

    def __init__(self, a):
        self.a = np.asarray(a)

    shape = property(lambda self: self.a.shape)
    ndim = property(lambda self: self.a.ndim)
    dtype = property(lambda self: self.a.dtype)

    def astype(self, dt, copy=True):
        return _Partial(self.a.astype(dt, copy=copy))

    def __lt__(self, other):
        return _Partial(self.a < _raw(other))

    def __sub__(self, other):
        return _Partial(self.a - _raw(other))

    def __add__(self, other):
        return _Partial(self.a + _raw(other))

    def __mul__(self, other):
        return _Partial(self.a * _raw(other))

    def __getitem__(self, key):
        return _Partial(self.a[key])

    def all(self):
        return self.a.all()

    def __array_ufunc__(self, ufunc, method, *args, **kw):
        if ufunc is np.spacing:
            return NotImplemented
        return _Partial(getattr(ufunc, method)(*map(_raw, args), **kw))

    def __array_function__(self, func, types, args, kw):
        if self._REFUSED_KW.get(func) in kw:
            raise TypeError(f"{func.__name__}() got an unexpected keyword argument")
        if func is np.lexsort and isinstance(args[0], tuple):
            raise AttributeError("'tuple' object has no attribute 'ndim'")
        if func is np.linalg.solve and args[0].shape[:-2] != args[1].shape[:-2]:
            raise ValueError("a must have (..., M, M) shape and b must have (..., M, K)")
        out = func(*[_raw(a) for a in args], **kw)
        return tuple(map(_Partial, out)) if isinstance(out, tuple) else _Partial(out)


def _raw(v):
    if isinstance(v, _Partial):
        return v.a
    if isinstance(v, (tuple, list)):
        return type(v)(_raw(e) for e in v)
    return v


def test_kernels_reach_a_library_with_part_of_numpys_signature():
    """The kernels that CuPy's gaps broke on a real GPU (spacing, cholesky(upper=True), svd,
    svdvals and pinv with hermitian=True or at its default, lexsort, solve with broadcast
    leading axes) give NumPy's values through such a library; what it cannot do is a
    TypeError."""
    from ndflow.primitives import elementwise_extra as X, linalg_decomp as L, sorting as S
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64, np.int32):
        x = np.array([0.0, -0.0, 1, -1, 3.5, -1e-30, np.inf, -np.inf, np.nan]).astype(dt) \
            if dt != np.int32 else np.array([0, 1, -7, 2 ** 30], dt)
        got = X._spacing_impl(_Partial(x)).a
        with np.errstate(invalid="ignore"):
            want = np.spacing(x)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match="float16"):
        X._spacing_impl(_Partial(np.ones(2, np.int8)))
    m = rng.standard_normal((2, 4, 4))
    spd = m @ m.transpose(0, 2, 1) + 4 * np.eye(4)
    np.testing.assert_allclose(L._cholesky_impl(_Partial(spd), upper=True).a,
                               np.linalg.cholesky(spd, upper=True), rtol=1e-12)
    np.testing.assert_array_equal(L._cholesky_impl(_Partial(spd)).a, np.linalg.cholesky(spd))
    np.testing.assert_allclose(L._svd_impl(_Partial(m), False, False)[1].a,
                               np.linalg.svd(m, compute_uv=False), rtol=1e-12)
    sym = m + m.transpose(0, 2, 1)            # indefinite: negative eigenvalues flip V's rows
    sym[:, 0, 3] = 7.0                         # the upper triangle is not read
    u, sv, vh = (r.a for r in L._svd_impl(_Partial(sym), False, True))
    wu, ws, wvh = np.linalg.svd(sym, hermitian=True)
    np.testing.assert_allclose(sv, ws, rtol=1e-12)
    np.testing.assert_allclose(u @ (sv[..., None] * vh), wu @ (ws[..., None] * wvh), atol=1e-12)
    np.testing.assert_allclose(L._svdvals_impl(_Partial(sym), True).a,
                               np.linalg.svd(sym, compute_uv=False, hermitian=True), rtol=1e-12)
    np.testing.assert_allclose(L._pinv_impl(_Partial(sym), 1e-15, True).a,
                               np.linalg.pinv(sym, 1e-15, hermitian=True), rtol=1e-9, atol=1e-12)
    b = rng.standard_normal((4, 2))
    np.testing.assert_allclose(L._solve_impl(_Partial(spd), _Partial(b)).a,
                               np.linalg.solve(spd, b), rtol=1e-12)
    k1, k2 = rng.integers(0, 3, 9), rng.integers(0, 3, 9)
    got = S._lexsort_impl(_Partial(k1), _Partial(k2), axis=-1).a
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.lexsort((k1, k2)))
    with pytest.raises(TypeError, match="1-d keys of one dtype"):
        S._lexsort_impl(_Partial(k1), _Partial(k2.astype(np.float64)), axis=-1)


def test_device_canonical_forms_accept_other_valid_answers_only():
    """The op table's device comparison (OpRecord.device_canon) takes what NumPy leaves open
    (order inside a partition's segments, an eigenvector's sign or phase, a singular pair's
    sign) and nothing else."""
    from optable_canon import partition_canon, argpartition_canon, eigh_canon, svd_canon
    from optable import Sample
    x = np.array([5.0, 1.0, 4.0, 2.0, 3.0, 0.0, 9.0])
    s = Sample((x, [1, 4]))
    want = np.partition(x, [1, 4])
    other = want.copy()
    other[[2, 3]] = other[[3, 2]]                     # the middle segment in another order
    np.testing.assert_array_equal(partition_canon(other, s), partition_canon(want, s))
    wrong = want.copy()
    wrong[[1, 2]] = wrong[[2, 1]]                     # the kth element moved
    assert not np.array_equal(partition_canon(wrong, s), partition_canon(want, s))
    idx = np.argpartition(x, [1, 4])
    alt = idx.copy()
    alt[[2, 3]] = alt[[3, 2]]
    np.testing.assert_array_equal(argpartition_canon(alt, s), argpartition_canon(idx, s))
    alt[[0, 1]] = alt[[1, 0]]
    assert not np.array_equal(argpartition_canon(alt, s), argpartition_canon(idx, s))
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    w, v = np.linalg.eigh(a)
    flipped = v * np.array([1.0, -1.0, -1.0])
    np.testing.assert_allclose(eigh_canon((w, flipped), None)[1], eigh_canon((w, v), None)[1])
    swapped = v[:, [1, 0, 2]]
    assert not np.allclose(eigh_canon((w, swapped), None)[1], eigh_canon((w, v), None)[1])
    u, sv, vh = np.linalg.svd(a)
    sg = np.array([-1.0, 1.0, -1.0])
    got = svd_canon((u * sg, sv, sg[:, None] * vh), None)
    for g, e in zip(got, svd_canon((u, sv, vh), None)):
        np.testing.assert_allclose(g, e, atol=1e-12)
    half = svd_canon((u * sg, sv, vh), None)           # u flipped without its vh row: wrong
    assert not np.allclose(half[2], svd_canon((u, sv, vh), None)[2])


def test_cupy_backend_keeps_the_sign_of_zero_cupys_fill_drops():
    """CuPy uploads a 0-d array, and makes `full`, by `ndarray.fill`, which writes zero bytes
    for any value equal to 0: -0.0 became +0.0 on an H200 (format_float_positional printed
    '0.'). The CuPy backend uploads 0-d values as bytes and makes a signed-zero `full` by a copy.
    Here a module that fills the way CuPy does stands in for it."""
    from ndflow.backends.cupy_backend import CupyBackend

    class Memset(np.ndarray):
        pass

    class FakeCupy:
        ndarray = Memset

        class cuda:
            class Device:
                def __init__(self, i=0):
                    pass

                def __enter__(self):
                    return self

                def __exit__(self, *a):
                    return False

        @staticmethod
        def _fill(shape, dtype, value):
            v = np.asarray(value, dtype)
            out = np.empty(shape, dtype)
            if v == 0:
                out[...] = 0                     # memset: the sign is gone
            else:
                out[...] = v
            return out

        @classmethod
        def asarray(cls, a):
            a = np.asarray(a)
            return cls._fill((), a.dtype, a) if a.ndim == 0 else a.copy()

        @classmethod
        def full(cls, shape, value, dtype=None):
            return cls._fill(shape, np.asarray(value, dtype).dtype, value)

        broadcast_to = staticmethod(np.broadcast_to)

    b = CupyBackend(FakeCupy)
    for dt in (np.float32, np.float64, np.complex128):
        z = np.asarray(-0.0, dt) if dt != np.complex128 else np.asarray(complex(-0.0, -0.0))
        assert not np.signbit(np.real(FakeCupy.asarray(z))), "the stand-in drops the sign"
        up = b.from_host(z)
        assert up.shape == () and np.signbit(np.real(up)) and np.signbit(np.imag(up)) == \
            np.signbit(np.imag(z))
        f = b.make("full", (2, 3), z[()], dt)
        assert f.shape == (2, 3) and f.dtype == dt and np.signbit(np.real(f)).all()
    np.testing.assert_array_equal(b.make("full", (2,), 1.5, np.float64), [1.5, 1.5])
    assert np.array_equal(b.from_host(np.arange(3.0)), np.arange(3.0))
