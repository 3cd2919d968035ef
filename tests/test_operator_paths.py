"""The array operators (`a + b`, `a ** 2`, `a < 300`, `a += b`, ...) agree with NumPy's own
operators on every path: eager (the operator's inlined NumPy call), under a tape (the NumPy
layer's ufunc composites through `bind`) and compiled, over every pair of dtypes and Python
scalars, with special values (signed zeros, NaN, infinities, integer extremes). The eager
operators call NumPy directly for speed; this is the test that they cannot drift from the path
every transformation takes."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

OPS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
       "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne"]
DTYPES = [np.bool_, np.int8, np.uint8, np.int64, np.uint64, np.float16, np.float32,
          np.float64, np.complex64]
SCALARS = [0, 1, -1, 2, 300, 2 ** 63, -2 ** 70, 0.5, -0.0, float("nan"), float("inf"), 1j, True]


def _values(dt):
    dt = np.dtype(dt)
    if dt.kind == "b":
        return np.array([True, False])
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.array([info.min, 0, 1, info.max], dtype=dt)
    if dt.kind == "c":
        return np.array([0, complex(-0.0, -0.0), complex(np.nan, 1), np.inf,
                         complex(-np.inf, 2), 1 + 2j], dtype=dt)
    return np.array([-0.0, 0.0, np.nan, np.inf, -np.inf, 1.5, -2.0], dtype=dt)


def _outcome(f):
    try:
        with np.errstate(all="ignore"):
            r = f()
    except Exception as e:          # the error type is part of the answer
        return ("raises", type(e))
    return ("value", np.asarray(r.numpy() if hasattr(r, "numpy") else r))


def _check(got, want, ctx):
    assert got[0] == want[0], f"{ctx}: {got} vs NumPy's {want}"
    if got[0] == "raises":
        # NumPy's private subclasses (_UFuncOutputCastingError...) may come as their public
        # base (TypeError), which is what users catch
        assert got[1] is want[1] or (issubclass(want[1], got[1]) and got[1].__module__ == "builtins"), \
            f"{ctx}: raises {got[1]}, NumPy {want[1]}"
        return
    g, w = got[1], want[1]
    assert (g.dtype, g.shape) == (w.dtype, w.shape), f"{ctx}: {g.dtype}{g.shape} vs {w.dtype}{w.shape}"
    if w.dtype.kind in "fc":
        # bits, so NaN payload aside, signed zeros and infinities must match
        g, w = g.reshape(-1), w.reshape(-1)
        gv = g.view(np.float32 if w.dtype == np.complex64 else np.float64 if w.dtype == np.complex128 else w.dtype)
        wv = w.view(gv.dtype)
        same = (gv == wv) | (np.isnan(gv) & np.isnan(wv))
        same &= (np.signbit(gv) == np.signbit(wv)) | np.isnan(wv)
        assert same.all(), f"{ctx}: {g} vs NumPy's {w}"
    else:
        np.testing.assert_array_equal(g, w, err_msg=ctx)


def _cases(op):
    for d1 in DTYPES:
        a = _values(d1)
        for other in [_values(d2) for d2 in DTYPES] + SCALARS:
            if op == "matmul":
                if isinstance(other, np.ndarray):
                    yield a[:2], other[:2]
                continue
            if isinstance(other, np.ndarray):
                yield a[:, None], other[None, :]
            else:
                yield a, other


@pytest.mark.parametrize("op", OPS)
def test_operators_agree_with_numpy_on_every_path(op):
    name = "__%s__" % op
    for a, b in _cases(op):
        want = _outcome(lambda: getattr(a, name)(b))
        ta = tnp.asarray(a)
        tb = tnp.asarray(b) if isinstance(b, np.ndarray) else b
        ctx = f"{a.dtype} {name} {b.dtype if isinstance(b, np.ndarray) else repr(b)}"
        _check(_outcome(lambda: getattr(ta, name)(tb)), want, ctx + " eager")

        def taped():
            with nf.GradientTape():
                return getattr(ta, name)(tb)
        _check(_outcome(taped), want, ctx + " taped")
        if isinstance(b, np.ndarray):
            compiled = nf.function(lambda x, y: getattr(x, name)(y))
            _check(_outcome(lambda: compiled(ta, tb)), want, ctx + " compiled")
        else:
            compiled = nf.function(lambda x: getattr(x, name)(b))
            _check(_outcome(lambda: compiled(ta)), want, ctx + " compiled")


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow"])
def test_inplace_operators_agree_with_numpy(op):
    name = "__i%s__" % op
    for d in DTYPES:
        for other in SCALARS + [_values(d)[:1]]:
            a = _values(d)
            want = _outcome(lambda: getattr(a.copy(), name)(other))
            ctx = f"{a.dtype} {name} {other!r}"
            t = tnp.asarray(a.copy())
            _check(_outcome(lambda: getattr(t, name)(other)), want, ctx + " eager")

            def taped():
                u = tnp.asarray(a.copy())
                with nf.GradientTape():
                    return getattr(u, name)(other)
            _check(_outcome(taped), want, ctx + " taped")


@pytest.mark.parametrize("mode", ["reflect", "symmetric"])
def test_odd_reflections_are_numpys_bits_on_every_path(mode):
    # 'odd' pads are chains of 2 * edge - chunk: infinities, NaN and -0.0 in the input must
    # land where NumPy's rounds of reflections put them, also several periods out
    rng = np.random.default_rng(7)
    for trial in range(60):
        n = int(rng.integers(1, 6))
        a = rng.normal(size=(n, 2) if trial % 3 == 0 else n)
        if trial % 5 == 0:
            a = (a * 10).astype(np.int16)
        else:
            m = rng.random(a.shape)
            a[m < 0.15] = np.inf
            a[(m > 0.15) & (m < 0.3)] = -0.0
            a[(m > 0.3) & (m < 0.4)] = -np.inf
        widths = (int(rng.integers(0, 13)), int(rng.integers(0, 13)))
        want = _outcome(lambda: np.pad(a, widths, mode=mode, reflect_type="odd"))
        f = lambda x: tnp.pad(x, widths, mode=mode, reflect_type="odd")  # noqa: E731
        ctx = f"pad {mode} odd {a!r} {widths}"
        _check(_outcome(lambda: f(tnp.asarray(a))), want, ctx + " eager")
        _check(_outcome(lambda: nf.function(f)(tnp.asarray(a))), want, ctx + " compiled")
