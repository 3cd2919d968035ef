"""The GPU tier's code generator (graph/kernels/cuda_tier.py), tested without a GPU: the kernel
text and its cache key, which fused regions it takes, and (where a host C++ compiler exists)
what the generated C computes: each kernel body is compiled for the CPU with a tiny shim for
the two CUDA intrinsics it may use and compared with NumPy on special values (NaN, +-0.0,
+-inf, integer wrap-around). On a GPU, tests/test_gpu.py runs the same kernels with CuPy."""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core.primitive import REGISTRY
from ndflow.graph import fusion
from ndflow.graph.kernels import cuda_tier, Program, Op


def _prog(fn, *args):
    cf = nf.function(fn).get_concrete_function(*args)
    ks = fusion.fused_kernels(cf.graph)
    assert len(ks) == 1, "expected one fused region"
    return ks[0].prog


def _prims():
    return {p.name: p for p in REGISTRY}


def test_sigmoid_kernel_text():
    x = tnp.ones((4, 3), dtype="float32")
    p = _prog(lambda a: 1 / (1 + tnp.exp(-a)), x)
    src = cuda_tier.generate(p)
    assert src is not None, cuda_tier.why_not(p)
    assert src.name.startswith("ndflow_fused_")
    assert src.in_params.split(", ")[0] == "float32 x0"
    assert src.out_params == "float32 y0"
    lines = src.body.splitlines()
    assert lines[0] == "float t0 = (-x0);"
    assert lines[1] == "float t1 = exp((float)t0);"
    assert all(line.startswith("float t") for line in lines[:-1])
    assert lines[-1] == "y0 = t%d;" % (len(lines) - 2)
    assert "negative,exp,add,true_divide" in src.preamble
    assert "ndflow_fused_" in str(src)


def test_the_key_is_complete_and_size_free():
    f = lambda a, b: tnp.maximum(a * b, 0.0) + 1          # noqa: E731
    k = lambda *s: cuda_tier.cache_key(_prog(f, *s))       # noqa: E731
    base = k(tnp.ones((4, 3)), tnp.ones(3))
    assert base == k(tnp.ones((40, 30)), tnp.ones(30)), "sizes must not change the kernel"
    assert base != k(tnp.ones((4, 3), dtype="float32"), tnp.ones(3, dtype="float32"))
    assert base != k(tnp.ones((2, 4, 3)), tnp.ones(3)), "the shape class (ndim) is in the key"
    assert base != cuda_tier.cache_key(_prog(lambda a, b: tnp.minimum(a * b, 0.0) + 1,
                                             tnp.ones((4, 3)), tnp.ones(3)))
    # params with the same == but different bits (-0.0, NaN) are different constants
    P = _prims()
    fl = P["full_like"]

    def full(v):
        return Program([((3,), np.float64)], [Op(fl, (0,), {"fill_value": v}, (3,), np.float64),
                                              Op(P["add"], (0, 1), {}, (3,), np.float64)],
                       [2], (3,))
    assert cuda_tier.cache_key(full(0.0)) != cuda_tier.cache_key(full(-0.0))
    assert cuda_tier.generate(full(0.0)).body != cuda_tier.generate(full(-0.0)).body
    # equal programs share one Source
    assert cuda_tier.generate(full(1.5)) is cuda_tier.generate(full(1.5))


def test_every_scalar_expression_has_a_cuda_spelling():
    """The C comes from the primitives' scalar expressions through one table keyed by the
    vocabulary's functions (none by primitive): every elementwise primitive's expression is
    written for operands of the op table's first dtype that C has, or the tier names the
    function it has no C for."""
    import elementwise_cases as C
    from ndflow.primitives.scalar import FUNCTIONS
    assert set(cuda_tier._SPELLING) <= set(FUNCTIONS)
    assert not hasattr(cuda_tier, "_table")
    unspelled = set(FUNCTIONS) - set(cuda_tier._SPELLING)
    for p in C.elementwise_primitives():
        if p.scalar is None or p.returns_view:
            continue
        # the op table's first dtype that C has
        dts = next(d for d in C.dtypes(p) if all(x in cuda_tier._CTYPE for x in d))
        for params in C.PARAMS.get(p.name, [{}]):
            if params.get("dtype", np.dtype("f8")) not in cuda_tier._CTYPE:
                continue
            prog = C.program(p, [np.zeros(3, d) for d in dts], params)
            why = cuda_tier.why_not(prog)
            if set(p.scalar.functions()) & unspelled:
                assert "no CUDA expression" in why, (p, why)
            elif params.get("dtype", np.dtype("f8")).kind in "iu" and dts[0].kind == "f":
                assert "float-to-integer" in why, (p, why)
            else:
                assert why is None, (p, dts, why)


def _max_exp(a):
    return tnp.max(tnp.exp(a) * 2)


def _affine_exp(a):
    return tnp.exp(a) * 2 + 1


def _to_int(a):
    return (a * 2 + 1).astype("int32")


@pytest.mark.parametrize("fn,arg,reason", [
    (_max_exp, lambda: tnp.ones(10000), "only sums"),
    (_affine_exp, lambda: tnp.ones(3, dtype="complex128"), "complex128"),
    (_to_int, lambda: tnp.ones(3), "float-to-integer"),
])
def test_what_the_tier_does_not_take_says_why(fn, arg, reason):
    prog = _prog(fn, arg())
    assert cuda_tier.generate(prog) is None
    assert reason in cuda_tier.why_not(prog)


# ------------------------------------------------------------------ the C, run on the CPU
_SHIM = r"""
#define __device__
#include <cmath>
#include <cstring>
using std::isnan; using std::isinf; using std::isfinite; using std::signbit;
static inline double __longlong_as_double(long long v) { double d; std::memcpy(&d, &v, 8); return d; }
"""


def _c_function(src, k):
    """The kernel body as a C function looping over n elements of equal-size operands."""
    ct = {np.dtype(t): c for t, c in cuda_tier._CTYPE.items()}
    params = ["long n"]
    params += ["const %s* x%dp" % (ct[d], i) for i, d in enumerate(src.in_dtypes)]
    params += ["%s* y%dp" % (ct[d], i) for i, d in enumerate(src.out_dtypes)]
    loads = "".join("%s x%d = x%dp[i]; " % (ct[d], i, i) for i, d in enumerate(src.in_dtypes))
    decl = "".join("%s y%d; " % (ct[d], i) for i, d in enumerate(src.out_dtypes))
    stores = "".join("y%dp[i] = y%d; " % (i, i) for i in range(len(src.out_dtypes)))
    return ('extern "C" void k%d(%s) {\n for (long i = 0; i < n; i++) {\n %s%s\n%s\n %s\n }\n}\n'
            % (k, ", ".join(params), loads, decl, src.body, stores))


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.5, np.inf, -np.inf, np.nan, 1e300, -1e-300])
_CASES = [  # (name, function, operand dtypes, exact?)
    ("arith", lambda a, b: a * b + a - b, ("float64", "float64"), True),
    ("divide", lambda a, b: a / b + 1 / a, ("float64", "float64"), True),
    ("maxmin", lambda a, b: tnp.maximum(a, b) + 0 * tnp.minimum(b, a), ("float64", "float64"),
     True),
    ("maxmin_bits", lambda a, b: tnp.maximum(a, b) * tnp.minimum(b, a) * 1,
     ("float64", "float64"), True),
    ("sign_abs", lambda a, b: tnp.sign(a) * tnp.abs(b) + tnp.sign(b), ("float64", "float64"), True),
    ("compare_select", lambda a, b: tnp.where((a < b) | (a != a), a, b * 2) + 0.0,
     ("float64", "float64"), True),
    ("isnan_isinf", lambda a, b: tnp.where(tnp.isnan(a) | tnp.isinf(b), 1.0, 2.0) * a,
     ("float64", "float64"), True),
    ("rounding", lambda a, b: tnp.floor(a) + tnp.ceil(b) + tnp.rint(a * b) + tnp.trunc(a),
     ("float64", "float64"), True),
    ("float32", lambda a, b: (a * b - a) / (b + 1), ("float32", "float32"), True),
    ("int32_wrap", lambda a, b: a * b + a - b, ("int32", "int32"), True),
    ("int8_wrap", lambda a, b: -(a * b) + a, ("int8", "int8"), True),
    ("uint8_wrap", lambda a, b: a * b - a, ("uint8", "uint8"), True),
    ("math", lambda a, b: tnp.exp(a) * tnp.tanh(b) + tnp.log1p(a * a) + tnp.sqrt(b * b),
     ("float64", "float64"), False),
    ("int_to_float", lambda a, b: a.astype("float64") * 0.5 + b, ("int32", "float64"), True),
    ("bitwise", lambda a, b: (a & b) | (a ^ ~b) + (a | b), ("int32", "int32"), True),
    ("bitwise_uint8", lambda a, b: (a & b) ^ ~(a | b), ("uint8", "uint8"), True),
    ("bool_ops", lambda a, b: tnp.where((a & b) | ~(a ^ b), 1.0, 2.0) * 3,
     ("bool", "bool"), True),
    ("signbit_fmod", lambda a, b: tnp.where(tnp.signbit(a), tnp.fmod(a, b), b) + 0.0 * a,
     ("float64", "float64"), True),
    ("inverse_trig", lambda a, b: tnp.arctan2(a, b) + tnp.arcsinh(a) * tnp.arctan(b) +
     tnp.hypot(a, b) - tnp.cosh(a * 0.001), ("float64", "float64"), False),
    ("nextafter_fill", lambda a, b: tnp.nextafter(a, b) * tnp.full_like(a, -2.0),
     ("float64", "float64"), True),
]


def _operands(dts):
    vals = []
    for i, dt in enumerate(dts):
        dt = np.dtype(dt)
        if dt.kind == "f":
            with np.errstate(over="ignore"):
                a = SPECIAL.astype(dt)
            vals.append(np.repeat(a, len(SPECIAL)) if i == 0 else np.tile(a, len(SPECIAL)))
        elif dt == np.bool_:
            n = len(SPECIAL)
            vals.append(np.resize([False, True], n * n) if i == 0 else
                        np.resize([False, False, True, True], n * n))
        else:
            info = np.iinfo(dt)
            ints = np.array([0, 1, -1, 2, 7, info.max, info.min, info.max // 3], dtype=np.int64)
            ints = ints.astype(dt) if dt.kind == "i" else (ints % (int(info.max) + 1)).astype(dt)
            n = len(SPECIAL)
            vals.append(np.resize(ints, n * n) if i == 0 else np.resize(ints[::-1], n * n))
    return vals


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler to run the generated kernels on the CPU")
    progs = []
    for k, (name, fn, dts, exact) in enumerate(_CASES):
        ops = _operands(dts)
        prog = _prog(fn, *[tnp.asarray(o) for o in ops])
        src = cuda_tier.generate(prog)
        assert src is not None, (name, cuda_tier.why_not(prog))
        progs.append((src, ops))
    d = tmp_path_factory.mktemp("cuda_tier")
    cpp = d / "kernels.cpp"
    cpp.write_text(_SHIM + "".join(_c_function(s, k) for k, (s, _) in enumerate(progs)))
    lib = d / "kernels.so"
    # -fwrapv: signed overflow is what the generated code relies on being two's complement in
    # conversions only; the flag keeps the host compiler from exploiting it elsewhere
    subprocess.run([cxx, "-O1", "-shared", "-fPIC", "-ffp-contract=off", str(cpp), "-o",
                    str(lib)], check=True, capture_output=True, timeout=120)
    return ctypes.CDLL(str(lib)), progs


@pytest.mark.parametrize("k", range(len(_CASES)), ids=[c[0] for c in _CASES])
def test_generated_c_matches_numpy(compiled, k):
    lib, progs = compiled
    name, fn, dts, exact = _CASES[k]
    src, ops = progs[k]
    # the graph's operands: the sample arrays and the constants the trace captured
    cf = nf.function(fn).get_concrete_function(*[tnp.asarray(o) for o in ops])
    env = {v.id: o for v, o in zip(cf.graph.inputs, ops)}
    env.update({c.id: np.asarray(c.const._v) for c in cf.graph.consts})
    for node in cf.graph.nodes:      # the nodes before the region run as they are
        if node.prim.fused:
            break
        outs = node.prim.impl(*[env[v.id] for v in node.inputs], **node.params)
        outs = outs if node.prim.multiple_results else (outs,)
        env.update({o.id: np.asarray(b) for o, b in zip(node.outputs, outs)})
    n = ops[0].size
    ins = [np.ascontiguousarray(np.broadcast_to(env[v.id], (n,)), dtype=d)
           for v, d in zip(node.inputs, src.in_dtypes)]
    outs = [np.empty(n, d) for d in src.out_dtypes]
    args = [ctypes.c_long(n)] + [a.ctypes.data_as(ctypes.c_void_p) for a in ins + outs]
    getattr(lib, "k%d" % k)(*args)
    with np.errstate(all="ignore"):
        want = np.asarray(fn(*[np.asarray(o) for o in ops]))
    got = outs[0]
    assert got.dtype == want.dtype
    if exact:
        if got.dtype.kind == "f":
            # bit for bit, NaN payloads aside: -0.0 vs 0.0 counts
            same = (got.view(np.uint8).reshape(n, -1) == want.view(np.uint8).reshape(n, -1)
                    ).all(1) | (np.isnan(got) & np.isnan(want))
            bad = np.flatnonzero(~same)
            assert not bad.size, [(ops[0][i], ops[1][i], got[i], want[i]) for i in bad[:5]]
        else:
            np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0, equal_nan=True)


def _row_sums(a, b):
    return tnp.sum(tnp.maximum(a * b, 0.25) - tnp.tanh(a), axis=1)


def test_a_trailing_sum_is_a_reduction_kernel():
    a = np.linspace(-2, 2, 64 * 80).reshape(64, 80)
    b = np.cos(a)
    prog = _prog(_row_sums, tnp.asarray(a), tnp.asarray(b))
    src = cuda_tier.generate(prog)
    assert src is not None, cuda_tier.why_not(prog)
    assert src.reduce == ((1,), False, "double") and src.body == ""
    assert src.map_expr == "%s_map(%s)" % (src.name, ", ".join(
        "x%d" % i for i in range(len(src.in_dtypes))))
    kw = cuda_tier.reduction_kernel_args(src)
    assert kw["reduce_expr"] == "a + b" and kw["identity"] == "0" and kw["reduce_type"] == "double"
    assert "__device__ double %s_map(" % src.name in kw["preamble"]
    # a sum that is not the region's only result stays with the elementwise tier's rules
    two = _prog(lambda x: (tnp.sum(tnp.exp(x) * 2, axis=0), tnp.exp(x) * 2), tnp.ones((3, 4)))
    assert "not the region's one trailing result" in cuda_tier.why_not(two)
    cxx = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if cxx is None:
        return
    # the map function, compiled for the CPU, then summed as the ReductionKernel would
    cf = nf.function(_row_sums).get_concrete_function(tnp.asarray(a), tnp.asarray(b))
    node = next(n for n in cf.graph.nodes if n.prim.fused)
    env = {v.id: o for v, o in zip(cf.graph.inputs, (a, b))}
    env.update({c.id: np.asarray(c.const._v) for c in cf.graph.consts})
    n = a.size
    ins = [np.ascontiguousarray(np.broadcast_to(env[v.id], a.shape).reshape(-1), dtype=d)
           for v, d in zip(node.inputs, src.in_dtypes)]
    params = ", ".join(["long n"] + ["const double* p%d" % i for i in range(len(ins))]
                       + ["double* out"])
    call = "%s_map(%s)" % (src.name, ", ".join("p%d[i]" % i for i in range(len(ins))))
    code = _SHIM + src.preamble + 'extern "C" void run(%s) { for (long i = 0; i < n; i++) ' \
        'out[i] = %s; }\n' % (params, call)
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        cpp, lib = os.path.join(d, "r.cpp"), os.path.join(d, "r.so")
        with open(cpp, "w") as f:
            f.write(code)
        subprocess.run([cxx, "-O1", "-shared", "-fPIC", "-ffp-contract=off", cpp, "-o", lib],
                       check=True, capture_output=True, timeout=120)
        out = np.empty(n)
        ctypes.CDLL(lib).run(ctypes.c_long(n), *[x.ctypes.data_as(ctypes.c_void_p) for x in ins],
                             out.ctypes.data_as(ctypes.c_void_p))
    want = np.sum(np.maximum(a * b, 0.25) - np.tanh(a), axis=1)
    np.testing.assert_allclose(out.reshape(a.shape).sum(axis=1), want, rtol=1e-12, atol=1e-12)


def test_runner_steps_aside_for_unexpected_dtypes():
    p = _prog(lambda a: a * 2 + 1, tnp.ones(3))
    src = cuda_tier.generate(p)
    calls = []
    r = cuda_tier.Runner(src, lambda *xs: calls.append(xs) or xs[0])
    assert r(np.ones(3, np.float32), np.float64(2), np.float64(1)) is NotImplemented
    assert not calls
    r(np.ones(3), np.float64(2), np.float64(1))
    assert len(calls) == 1
