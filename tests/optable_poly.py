"""Op-table records: polynomials, convolution/correlation and window functions."""
import numpy as np

from optable import RECORDS, record, Sample, values, noncontig, F32, F64, I32, C128, _const

_KNOWN_LEN = "the number of coefficients is a loop count (needs the size)"


def _conv_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    out = []
    for n, k in ((5, 3), (3, 5), (4, 4), (6, 1), (2, 5)):
        for mode in ("full", "same", "valid"):
            out.append(Sample((v((n,)), v((k,)), mode), desc=f"{n},{k}"))
    out.append(Sample((noncontig(rng, (4,), dt), v((2,))), desc="default mode"))
    return out


def _conv0_samples(rng, dt):
    return _conv_samples(rng, dt) + [Sample((values(rng, (), dt), values(rng, (3,), dt)),
                                            desc="0-d")]


_MODE = "same/valid: which operand is longer decides the output (mode='full' works)"
for _name in ("convolve", "correlate"):
    record(_name, _conv0_samples if _name == "convolve" else _conv_samples,
           dtypes=(F32, F64, I32, C128),
           tol={F32: (1e-5, 1e-5)},
           unknown_dims=lambda s: _MODE if len(s.args) < 3 or s.args[2] != "full" else None)


def _poly_pair(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((3,)), v((2,)))), Sample((v((2,)), v((4,)))), Sample((v((3,)), v((3,)))),
            Sample((v(()), v((2,))))]


record("polyval", lambda rng, dt: [
    Sample((values(rng, (3,), dt), values(rng, (2, 3), dt))),
    Sample((values(rng, (4,), dt), values(rng, (), dt))),
    Sample((values(rng, (1,), dt), values(rng, (5,), dt))),
    Sample((values(rng, (3,), I32), values(rng, (4,), dt)), desc="int coefficients"),
    Sample((noncontig(rng, (3,), dt), noncontig(rng, (2, 2), dt)))],
       dtypes=(F32, F64, I32), unknown_dims=lambda s: _KNOWN_LEN)
record("polyadd", _poly_pair, dtypes=(F64, I32), unknown_dims=lambda s: _KNOWN_LEN)
record("polysub", _poly_pair, dtypes=(F64, I32), unknown_dims=lambda s: _KNOWN_LEN)


def _polymul_samples(rng, dt):
    v = lambda s: values(rng, s, dt, "nonzero")  # noqa: E731
    lead0 = np.concatenate([np.zeros(2, dt), v((2,))])
    return [Sample((v((3,)), v((2,)))), Sample((lead0, v((3,))), desc="leading zeros"),
            Sample((np.zeros(3, dt), v((2,))), desc="zero polynomial")]


record("polymul", _polymul_samples, dtypes=(F64, I32), vmap=False,
       vmap_reason="leading zeros are stripped (as NumPy's poly1d): data-dependent size",
       diff_args=(), grad_reason="finite differences move the leading zeros that decide the "
                                 "output size; the gradient is checked in test_poly.py")
record("polyder", lambda rng, dt: [
    Sample((values(rng, (4,), dt),)), Sample((values(rng, (4,), dt), 2)),
    Sample((values(rng, (4,), dt), 0)), Sample((values(rng, (2,), dt), 3))],
       dtypes=(F32, F64, I32), unknown_dims=lambda s: _KNOWN_LEN)
record("polyint", lambda rng, dt: [
    Sample((values(rng, (3,), dt),)), Sample((values(rng, (3,), dt), 2)),
    Sample((values(rng, (3,), dt), 2, [1.5, -2.0])), Sample((values(rng, (2,), dt), 3, 0.5))],
       dtypes=(F32, F64, I32), unknown_dims=lambda s: _KNOWN_LEN)
record("polydiv", lambda rng, dt: [
    Sample((values(rng, (4,), dt), values(rng, (2,), dt, "nonzero"))),
    Sample((values(rng, (5,), dt), values(rng, (3,), dt, "nonzero"))),
    Sample((values(rng, (2,), dt), values(rng, (3,), dt, "nonzero")))],
       dtypes=(F64, I32), unknown_dims=lambda s: _KNOWN_LEN, vmap=False,
       vmap_reason="the remainder's leading near-zeros are stripped by value (eagerly, as NumPy; "
                   "batched only those zero by construction)")
record("poly", lambda rng, dt: [
    Sample((values(rng, (3,), dt),)), Sample((values(rng, (1,), dt),)),
    Sample((noncontig(rng, (4,), dt),))], dtypes=(F32, F64, I32),
       unknown_dims=lambda s: _KNOWN_LEN, tol={F32: (1e-4, 1e-5)})
record("roots", lambda rng, dt: [
    Sample((np.poly(values(rng, (3,), np.float64)).astype(dt),)),
    Sample((np.array([1.0, 0.0, 1.0, 0.0, 0.0], dt),))],
       dtypes=(F64,), jit=False, vmap=False, diff_args=(),
       vmap_reason="host NumPy eigenvalues (the dtype depends on the values)",
       grad_reason="host NumPy eigenvalues: no gradient")


def _fit_samples(rng, dt):
    x = np.linspace(-2, 2, 9).astype(dt)
    y = lambda: values(rng, (9,), dt)  # noqa: E731
    return [Sample((x, y(), 2)), Sample((x, y(), 0)), Sample((x, y(), 3)),
            Sample((x, np.stack([y(), y()], 1), 1), desc="2-d y"),
            Sample((x, y(), 2), {"w": np.abs(values(rng, (9,), dt)) + 0.5}),
            Sample((x, y(), 2), {"cov": True}), Sample((x, y(), 1), {"cov": "unscaled"}),
            Sample((x, np.stack([y(), y()], 1), 1), {"cov": True})]


record("polyfit", _fit_samples, dtypes=(F32, F64), tol={F32: (1e-3, 1e-4), F64: (1e-9, 1e-11)},
       grad_tol=(1e-5, 1e-7), unknown_dims=lambda s: "the fit is unrolled over the coefficients")
record("bartlett", _const(Sample((5,)), Sample((6,)), Sample((1,)), Sample((0,)),
                          Sample((4.0,))), dtypes=(F64,))
record("blackman", _const(Sample((5,)), Sample((6,)), Sample((1,)), Sample((0,))), dtypes=(F64,))
record("hamming", _const(Sample((5,)), Sample((6,)), Sample((1,)), Sample((0,))), dtypes=(F64,))
record("hanning", _const(Sample((5,)), Sample((6,)), Sample((1,)), Sample((0,))), dtypes=(F64,))
record("kaiser", lambda rng, dt: [
    Sample((5, 3.0)), Sample((6, 14.0)), Sample((1, 2.0)), Sample((7, 40.0)),
    Sample((6, values(rng, (), dt, "positive") * 4), desc="beta array")], dtypes=(F64,))


# the windows are built from a length (and kaiser's beta): nothing to differentiate
for _n in ("bartlett", "blackman", "hamming", "hanning", "kaiser"):
    _r = next(r for r in RECORDS if r.name == _n)
    _r.diff_args, _r.grad_reason = (), "created from Python values, no array input"
