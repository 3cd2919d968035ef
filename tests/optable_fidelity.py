"""Op-table samples for NumPy call forms issue 8 added to existing records: `linspace`,
`logspace` and `geomspace` with array endpoints (now differentiable in them), `einsum`'s
sublist form; and the record of `lib.stride_tricks.sliding_window_view`."""
import numpy as np

import optable
from optable import Sample, values, record, F32, F64, I32

_by = optable.by_name()


def _extend(name, extra):
    """Add `extra(rng, dt)` samples to the record `name`; array endpoints make it
    differentiable, so its gradient checks run (on the samples with float arrays)."""
    r = _by[name]
    old = r.samples
    r.samples = lambda rng, dt: old(rng, dt) + extra(rng, dt)
    r.diff_args, r.grad_reason = None, ""


def _space(domain):
    def gen(rng, dt):
        v = lambda s: values(rng, s, dt, domain)  # noqa: E731
        return [Sample((v((3,)), v(())), {"num": 4}, "array start"),
                Sample((v((2, 1)), v((3,))), {"num": 3, "axis": -1}, "broadcast, last axis"),
                Sample((v(()), v((2,))), {"num": 5, "endpoint": False}, "no endpoint"),
                Sample((v((2,)), v((2,))), {"num": 1}, "one sample")]
    return gen


_extend("linspace", _space("real"))
_extend("logspace", lambda rng, dt: _space("small")(rng, dt) + [
    Sample((values(rng, (2,), dt, "small"), values(rng, (), dt, "small"),),
           {"num": 3, "base": values(rng, (2,), dt, "base"), "axis": 1}, "array base")])
_extend("geomspace", lambda rng, dt: _space("positive")(rng, dt) + [
    Sample((-values(rng, (2,), dt, "positive"), -values(rng, (2,), dt, "positive")),
           {"num": 4}, "negative")])


def _sublists(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((3, 4)), [0, 1], v((4, 2)), [1, 2], [0, 2]), desc="sublist matmul"),
            Sample((v((3, 4)), [0, 1], v((4, 2)), [1, 2]), desc="sublist implicit"),
            Sample((v((2, 3, 4)), [Ellipsis, 0, 1], v((4, 5)), [1, 2], [Ellipsis, 0, 2]),
                   desc="sublist ellipsis"),
            Sample((v((3, 3)), [30, 30]), desc="sublist trace (lowercase labels)"),
            Sample((v((2, 3)), [27, 1], v((3,)), [1]), desc="sublist label order")]


_old_einsum = _by["einsum"].samples
_by["einsum"].samples = lambda rng, dt: _old_einsum(rng, dt) + _sublists(rng, dt)


def _windows(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((7,)), 3)), Sample((v((4, 6)), (2, 3))),
            Sample((v((4, 6)), 3), {"axis": 1}), Sample((v((4, 6)), (2, 2)), {"axis": (1, 1)}),
            Sample((v((3, 5)), 2), {"axis": -2}), Sample((v((5,)), 5), desc="one window")]


def _swv(m, x, w, **kw):
    return m.lib.stride_tricks.sliding_window_view(x, w, **kw)


record("lib.stride_tricks.sliding_window_view", _windows, dtypes=(F32, F64, I32), call=_swv,
       unknown_dims=lambda s: "the number of windows (a result size) comes from the length of "
                              "the windowed axis, which must be known while tracing")
