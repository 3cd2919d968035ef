"""Op-table records: angle, sinc, i0, unwrap, interp."""
import numpy as np

from optable import record, Sample, values, noncontig, unary_samples, F32, F64, I32, C128

_NONZERO = "away from 0, where angle's real-input gradient is undefined"


def _angle_samples(rng, dt):
    v = values(rng, (3, 4), dt)
    if dt.kind != "c":
        v = np.where(np.abs(v) < 0.2, 0.7, v).astype(dt)     # arctan2(0, x) jumps at x = 0
    return [Sample((v,)), Sample((v,), {"deg": True}), Sample((v[0, 0],), desc="scalar")]


record("angle", _angle_samples, dtypes=(F32, F64, I32, C128))
record("sinc", unary_samples(), dtypes=(F32, F64, I32))
record("i0", lambda rng, dt: [Sample((values(rng, (7,), dt) * 4,)),
                              Sample((np.array([-40.0, -31.0, 0.0, 12.0, 35.0]).astype(dt),),
                                     desc="both regimes"),
                              Sample((noncontig(rng, (3, 4), dt),))], dtypes=(F32, F64, I32),
       tol={np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-13, 1e-13)})


def _unwrap_samples(rng, dt):
    p = np.cumsum(rng.uniform(0.1, 2.5, (2, 9)), axis=1)
    w = np.mod(p, 2 * np.pi).astype(dt)
    return [Sample((w,)), Sample((w.T,), {"axis": 0}), Sample((w[0],), {"period": 5.0}),
            Sample((w[1],), {"discont": 4.0})]


record("unwrap", _unwrap_samples, dtypes=(F32, F64))


def _interp_samples(rng, dt):
    xp = np.array([0.0, 1.0, 2.5, 4.0])
    fp = values(rng, (4,), dt)
    x = np.array([-1.0, 0.3, 0.5, 1.7, 2.6, 3.9, 5.0]).astype(dt)
    return [Sample((x, xp, fp)), Sample((x[2:5], xp, fp), {"left": -7.0, "right": 9.0}),
            Sample((x, xp, fp), {"period": 3.0}, "periodic"),
            Sample((x[1], xp, fp), desc="scalar x")]


record("interp", _interp_samples, dtypes=(F32, F64), diff_args=(0, 2),
       unknown_dims=lambda s: "the sample grid's length is needed while tracing (ValueError)")

# einsum_path returns a contraction order (a list and a report string), computed from shapes
from optable import NON_COMPUTING  # noqa: E402
NON_COMPUTING.add("einsum_path")
