"""`odeint`: SciPy's `scipy.integrate.odeint` interface over an adaptive Dormand-Prince (RK45)
integrator, with gradients by the adjoint method (as `jax.experimental.ode.odeint`).

The stepping is an `nf.while_loop` per output interval, so the same code runs eagerly, compiled
(`nf.function`) and vectorized (`nf.vectorized_map`: each example keeps its own step size).
Every loop is bounded: at most `mxstep` attempted steps per output interval, and a step that
would fall below `hmin` (or below the rounding of t) ends the integration, with SciPy's warning,
instead of shrinking forever. A step whose error estimate is NaN is accepted, as LSODA's error
test accepts it, so dynamics that turn NaN return NaN (SciPy's answer) rather than retrying.

Decreasing times integrate backwards: the integrator runs in s = -t. Steps end exactly on the
requested times (no dense-output interpolation). Gradients with respect to y0, t and the array
arguments come from integrating the adjoint system backwards (`nf.custom_gradient`), so memory
does not grow with the number of steps; they are accurate to the integration tolerances.
"""
import warnings

import numpy as np

from .. import numpy as tnp
from ..autodiff.tape import GradientTape
from ..autodiff.functional import custom_gradient
from ..graph.control import while_loop
from ..core import tree
from ..core.primitive import bind
from ..primitives.misc import runtime_warning_p
from ..numpy._core import checked

__all__ = ["odeint", "ODEintWarning"]


class ODEintWarning(Warning):
    """Warning issued by `odeint` (excess work, step-size failure, illegal input), as
    `scipy.integrate.ODEintWarning`."""


# SciPy's messages, by LSODA's istate (odeint's own codes: the same meanings)
_MSGS = {2: "Integration successful.",
         -1: "Excess work done on this call (perhaps wrong Dfun type).",
         -3: "Illegal input detected (internal error).",
         -4: "Repeated error test failures (internal error)."}
_RUN_WITH = " Run with full_output = 1 to get quantitative information."
_TOL = 1.49012e-8          # SciPy's default rtol and atol
_MXSTEP = 500              # attempted steps per output interval when mxstep=0, as SciPy's
_F64 = np.dtype(np.float64)

_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0)
_A = ((),
      (1 / 5,),
      (3 / 40, 9 / 40),
      (44 / 45, -56 / 15, 32 / 9),
      (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
      (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656))
_B5 = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_B4 = (5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40)
_E = tuple(a - b for a, b in zip(_B5, _B4))


def _rms(x):
    return tnp.sqrt(tnp.mean(x * x)) if x.shape[-1] else tnp.zeros(x.shape[:-1], x.dtype)


def _dopri_step(fun, y, f0, t, h):
    """One Dormand-Prince step: (y_new, f_new, error estimate)."""
    ks = [f0]
    for i in range(1, 6):
        yi = y + h * sum(a * k for a, k in zip(_A[i], ks))
        ks.append(fun(yi, t + _C[i] * h))
    y_new = y + h * sum(b * k for b, k in zip(_B5, ks) if b)
    f_new = fun(y_new, t + h)
    ks.append(f_new)
    err = h * sum(e * k for e, k in zip(_E, ks) if e)
    return y_new, f_new, err


class _Options:
    """The step-control settings, in the integrator's units (times s = direction * t)."""

    def __init__(self, rtol, atol, h0, hmax, hmin, mxstep):
        self.rtol, self.atol = rtol, atol
        self.h0, self.hmin, self.mxstep = h0, hmin, mxstep
        self.hmax = hmax if hmax != 0 else np.inf       # (negative: illegal, see _illegal)


def _initial_step(fun, y0, f0, t0, o):
    """Hairer's starting step from the scale of y0, f0 and a trial f (a finite positive step,
    at most hmax); h0 > 0 is taken as given."""
    if o.h0 > 0:
        return tnp.asarray(min(o.h0, o.hmax), dtype=_F64), 0
    scale = o.atol + tnp.abs(y0) * o.rtol
    d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
    h0 = tnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / tnp.where(d1 > 0, d1, 1.0))
    f1 = fun(y0 + h0 * f0, t0 + h0)
    d2 = _rms((f1 - f0) / scale) / h0
    big = tnp.maximum(d1, d2)
    h1 = tnp.where(big <= 1e-15, tnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / tnp.where(big > 0, big, 1.0)) ** 0.2)
    h = tnp.minimum(tnp.minimum(100 * h0, h1), o.hmax)
    # NaN or inf in y0 or f0 (SciPy answers NaN there): a start that still steps
    return tnp.where(tnp.isfinite(h) & (h > 0), h, min(1e-6, o.hmax)), 1


def _interval(fun, carry, target, o):
    """Steps from carry's t to `target` (while the status is 0): the new carry."""
    eps16 = 16 * np.finfo(np.float64).eps

    def cond(y, f, t, h, n, stuck, nst, hu):
        return (t < target) & (n < o.mxstep) & ~stuck

    def body(y, f, t, h, n, stuck, nst, hu):
        rem = target - t
        last = h >= rem
        step = tnp.where(last, rem, h)
        y_new, f_new, err = _dopri_step(fun, y, f, t, step)
        scale = o.atol + o.rtol * tnp.maximum(tnp.abs(y), tnp.abs(y_new))
        e = _rms(err / scale)
        ok = ~(e > 1.0)            # a NaN error passes, as in LSODA's test
        factor = tnp.where(tnp.isnan(e), 10.0,
                           tnp.clip(0.9 * tnp.where(e > 0, e, 1e-10) ** -0.2, 0.2, 10.0))
        h_next = step * factor
        # a landing step was cut short: its successor may keep the step that was working
        h_next = tnp.where(ok & last, tnp.maximum(h_next, h), h_next)
        floor = eps16 * tnp.maximum(tnp.abs(t), tnp.abs(target))
        if o.hmin > 0:
            # hmin bounds reductions only (as LSODA's): a start or growth below it is fine
            h_next = tnp.where(h_next < step, tnp.maximum(h_next, tnp.minimum(step, o.hmin)),
                               h_next)
            floor = tnp.maximum(floor, o.hmin)
        if o.hmax < np.inf:
            h_next = tnp.minimum(h_next, o.hmax)
        t_new = tnp.where(last, target, t + step)
        # stuck: a rejected step at the smallest one allowed, or an accepted one that does not
        # move t (LSODA steps on with t + h == t until mxstep runs out; this ends at once)
        stuck = tnp.where(ok, ~(t_new > t), step <= floor)
        return (tnp.where(ok, y_new, y), tnp.where(ok, f_new, f), tnp.where(ok, t_new, t),
                h_next, n + 1, stuck, nst + ok.astype(np.int32), tnp.where(ok, step, hu))
    y, f, t, h, status, nst, nfe, hu = carry
    y, f, t, h, n, stuck, nst, hu = while_loop(
        cond, body, (y, f, t, h, tnp.asarray(0, dtype=np.int32), tnp.asarray(False), nst, hu))
    # LSODA's codes: stuck at hmin, repeated error test failures (-4); stuck at the rounding
    # of t or out of steps before the target, excess work (-1)
    code = -1
    if o.hmin > 0:
        code = tnp.where(o.hmin > eps16 * tnp.maximum(tnp.abs(t), tnp.abs(target)), -4, -1)
    new = tnp.where(stuck, code, tnp.where(t < target, -1, 0))
    status = tnp.where(status == 0, new, status).astype(np.int32)
    return y, f, t, h, status, nst, nfe + 6 * n, hu


def _integrate(fun, y0, ss, o):
    """(ys, info): ys[i] = y(ss[i]) for a flat state y0 (1-D) and increasing times ss;
    fun(y, s) -> dy/ds. After a failed interval (status < 0) the row of that interval holds
    the state reached and every later row is NaN (SciPy leaves them unset). info: per interval
    the time reached, the last step, cumulative steps and evaluations; the final status."""
    # NumPy's warnings come from func only, under the caller's settings: the step control's
    # own arithmetic on NaN or inf states (inf / inf in the error scale) is not the user's
    errs = np.geterr()

    def user(y, s):
        with np.errstate(**errs):
            return fun(y, s)
    with np.errstate(all="ignore"):
        return _integrate_quiet(user, y0, ss, o)


def _integrate_quiet(fun, y0, ss, o):
    f0 = fun(y0, ss[0])
    h, extra = _initial_step(fun, y0, f0, ss[0], o)
    zero = tnp.asarray(0, dtype=np.int32)
    carry = (y0, f0, ss[0], h, zero, zero, zero + 1 + extra, tnp.zeros((), _F64))
    rows, info = [y0], []
    for i in range(1, ss.shape[0]):
        before = carry[4]
        carry = _interval(fun, carry, ss[i], o)
        rows.append(tnp.where(before != 0, np.nan, carry[0]))
        info.append((carry[2], carry[7], carry[5], carry[6]))
    return tnp.stack(rows), info, carry[4]


def _flat(x):
    return tnp.reshape(x, (-1,))


def _tolerance(v, n, name):
    """rtol or atol: a float, or a NumPy vector with one entry per state element."""
    if v is None:
        return _TOL
    a = np.asarray(v, dtype=np.float64)
    if a.ndim == 0:
        return float(a)
    if a.shape != (n,):
        raise ValueError(f"odeint: {name} must be a scalar or have one entry per element of "
                         f"the state ({n}), got shape {a.shape}")
    return a


def _illegal(o, n):
    """Whether the settings are LSODA's illegal input (SciPy warns and integrates nothing):
    negative (or NaN) tolerances, steps or mxstep, or an empty state."""
    bad = [np.asarray(o.rtol), np.asarray(o.atol), o.h0, o.hmin, o.hmax, o.mxstep]
    return n == 0 or any(bool(np.any(~(np.asarray(v) >= 0))) for v in bad)


class _State:
    """How the user's y0 maps to the flat float64 vector the integrator steps: a plain array
    (SciPy's case: 0-d becomes 1-D, as SciPy's) or a nested structure of arrays (tuple, list,
    dict of arrays, as JAX's), whose leaves are flattened and concatenated."""

    def __init__(self, y0):
        leaves, self.treedef = tree.flatten_with_def(y0)
        self.structured = isinstance(y0, dict) or (
            isinstance(y0, (list, tuple)) and
            any(isinstance(v, (tnp.ndarray, np.ndarray)) for v in leaves))
        if not self.structured:
            leaves = [y0]
        leaves = [tnp.asarray(v) for v in leaves]
        for v in leaves:
            if v.dtype.kind not in "biuf":
                raise TypeError(f"odeint: y0 must be real numbers, got dtype {v.dtype}")
        if not self.structured and leaves[0].ndim == 0:
            leaves = [tnp.reshape(leaves[0], (1,))]
        self.leaves = [v.astype(_F64) for v in leaves]
        self.shapes = [tuple(v.shape) for v in self.leaves]
        self.sizes = [int(np.prod(sh)) for sh in self.shapes]
        self.n = sum(self.sizes)

    def unpack(self, vec, lead=()):
        out, off = [], 0
        for sh, k in zip(self.shapes, self.sizes):
            out.append(tnp.reshape(vec[..., off:off + k], lead + sh))
            off += k
        return out[0] if not self.structured else tree.unflatten(self.treedef, out)

    def pack(self, ys):
        if not self.structured:
            v = _flat(tnp.asarray(ys).astype(_F64))
            if v.shape[0] is not None and v.shape[0] != self.n:
                raise RuntimeError(f"The size of the array returned by func ({v.shape[0]}) "
                                   f"does not match the size of y0 ({self.n}).")
            return v
        vs = tree.flatten(ys)
        if len(vs) != len(self.shapes):
            raise ValueError(f"odeint: func returned {len(vs)} arrays for a state of "
                             f"{len(self.shapes)}")
        return tnp.concatenate([_flat(tnp.asarray(v).astype(_F64)) for v in vs])


def _check_times(t):
    t = tnp.asarray(t)
    if t.dtype.kind not in "biuf":
        raise TypeError(f"odeint: t must be real numbers, got dtype {t.dtype}")
    t = t.astype(_F64)
    if t.ndim != 1:
        raise ValueError(f"odeint: t must be a 1-D array of times, got shape {t.shape}")
    if t.shape[0] is None or t.shape[0] >= 2:
        d = t[1:] - t[:-1]
        t = checked(t, ~(tnp.all(d >= 0) | tnp.all(d <= 0)), ValueError,
                    "The values in t must be monotonically increasing or monotonically "
                    "decreasing; repeated values are allowed.")
    return t


def _with_tcrit(t, tcrit):
    """(times to step to, the rows of t among them): the critical points strictly inside the
    span become interval ends, so no step crosses one (LSODA's itask 4)."""
    if tcrit is None or t.shape[0] is None or t.shape[0] < 2:
        return t, None
    if t._t is not None:
        raise NotImplementedError("odeint: tcrit needs concrete times (not traced ones)")
    tv = t.numpy()
    lo, hi = min(tv[0], tv[-1]), max(tv[0], tv[-1])
    tc = np.asarray(tcrit, dtype=np.float64).ravel()
    tc = tc[(tc > lo) & (tc < hi) & ~np.isin(tc, tv)]
    if not tc.size:
        return t, None
    merged = np.unique(np.concatenate([tv, tc]))    # sorted; t's repeats come back below
    if tv[-1] < tv[0]:
        merged = merged[::-1]
    rows = np.array([np.flatnonzero(merged == v)[0] for v in tv])
    return tnp.asarray(merged), rows


def _split_args(args):
    """(positions of the differentiable arguments: ndflow float arrays, their values); the
    others (Python numbers, NumPy arrays, any object) reach func unchanged, as in SciPy."""
    pos = [i for i, a in enumerate(args)
           if isinstance(a, tnp.ndarray) and a.dtype.kind in "fc"]
    return pos, [args[i] for i in pos]


def _warn(ys, status, printmessg):
    """SciPy's ODEintWarning for a failed integration (at once for concrete values; inside
    nf.function or vectorized_map, a RuntimeWarning with the same text at every run)."""
    if status._t is None:
        code = int(status.numpy())
        if code < 0:
            warnings.warn(_MSGS[code] + _RUN_WITH, ODEintWarning, stacklevel=3)
        elif printmessg:
            warnings.warn(_MSGS[2], ODEintWarning, stacklevel=3)
        return ys
    for code in (-1, -4):
        ys = bind(runtime_warning_p, ys, status == code, message=_MSGS[code] + _RUN_WITH)
    return ys


def odeint(func, y0, t, *extra, args=(), Dfun=None, col_deriv=0, full_output=0, ml=None,
           mu=None, rtol=None, atol=None, tcrit=None, h0=0.0, hmax=0.0, hmin=0.0, ixpr=0,
           mxstep=0, mxhnil=0, mxordn=12, mxords=5, printmessg=0, tfirst=False):
    """Integrate dy/dt = func(y, t, *args) from y(t[0]) = y0 and return y at each time of `t`,
    as `scipy.integrate.odeint` (shape (len(t), len(y0)), float64), differentiable in y0, t and
    the ndflow-array arguments (adjoint method), compilable and vectorizable.

    As SciPy: `t` increasing or decreasing (backwards in time), repeated values allowed, else
    ValueError; `args=` (a tuple), `tfirst=True` for func(t, y, ...); `rtol`/`atol` (scalars or
    one per state element; default 1.49012e-8); `h0` (first step), `hmax`, `hmin` (0: none);
    `mxstep` (attempted steps per output interval); `tcrit` (no step crosses these times);
    `full_output=True` returns (y, infodict) and `printmessg` warns the message.
    A failed integration warns `ODEintWarning` with SciPy's message ("Excess work done on this
    call ..." when mxstep runs out or the step falls below the rounding of t, as near a
    blow-up; "Repeated error test failures ..." when it would fall below hmin; "Illegal input
    detected ..." for negative tolerances or steps); the row of the interval that failed holds the state reached (infodict['tcur'] says
    when) and later rows are NaN (SciPy leaves them unset). NaN dynamics give NaN, as SciPy.

    Differences: the method is explicit RK45 (Dormand-Prince, RMS error norm), not LSODA, so
    results agree with SciPy's to the tolerances, not bit for bit; `mxstep` (default 500, as
    SciPy's) counts attempted steps. On non-stiff problems it takes fewer steps than LSODA; a
    stiff one (LSODA switches to BDF) can need far more, and then warns "Excess work done":
    raise `mxstep` or rescale. `Dfun`, `col_deriv`, `ml`, `mu`, `ixpr`, `mxhnil`, `mxordn`, `mxords` concern
    LSODA only and are accepted and ignored. infodict has 'hu', 'tcur', 'nst', 'nfe', 'nje'
    (0), 'nqu' (5), 'mused' (1), 'imxer' (-1), 'istate' (2, or the failure's negative code)
    and, for concrete values, 'message'. Extensions: extra positional arguments after `t` are
    passed to func as `args=` (as `jax.experimental.ode.odeint`); y0 may have any shape, or be
    a structure (tuple, list, dict) holding arrays: func gets and returns that structure and
    each leaf of the result gains a leading time axis (a list of plain numbers is an array, as
    SciPy's). Inside `nf.function`/`vectorized_map` the failure warning is a RuntimeWarning
    with the same text, issued at each run.

    >>> import ndflow.numpy as tnp
    >>> from ndflow.scipy.integrate import odeint
    >>> ys = odeint(lambda y, t, k: -k * y, [1.0], tnp.linspace(0., 1., 3), args=(2.0,))
    >>> ys.shape, bool(abs(float(ys[-1, 0]) - float(tnp.exp(-2.0))) < 1e-7)
    ((3, 1), True)
    """
    if not isinstance(args, (tuple, list)):
        raise TypeError("Extra arguments must be in a tuple.")
    if extra and args:
        raise TypeError("odeint: pass func's extra arguments either after t or as args=, "
                        "not both")
    args = tuple(extra) + tuple(args)
    state = _State(y0)
    t = _check_times(t)
    steps_t, rows = _with_tcrit(t, tcrit)
    mx = _MXSTEP if mxstep == 0 else int(mxstep)
    o = _Options(_tolerance(rtol, state.n, "rtol"), _tolerance(atol, state.n, "atol"),
                 float(h0), float(hmax), float(hmin), mx)
    ys, info, status = _solve(func, state, steps_t, args, o, tfirst, _illegal(o, state.n))
    if rows is not None:
        ys = tnp.take(ys, tnp.asarray(rows), axis=0)
        info = [info[r - 1] for r in rows[1:]]
    ys = _warn(ys, status, printmessg)
    out = state.unpack(ys, (t.shape[0],))
    if not full_output:
        return out
    return out, _infodict(info, status)


def _infodict(info, status):
    n = len(info)
    i32 = np.int32
    d = {"hu": tnp.stack([v[1] for v in info]) if n else tnp.zeros((0,)),
         "tcur": tnp.stack([v[0] for v in info]) if n else tnp.zeros((0,)),
         "nst": tnp.stack([v[2] for v in info]) if n else tnp.zeros((0,), i32),
         "nfe": tnp.stack([v[3] for v in info]) if n else tnp.zeros((0,), i32),
         "nje": tnp.zeros((n,), i32), "nqu": tnp.full((n,), 5, i32),
         "mused": tnp.ones((n,), i32), "imxer": -1,
         "istate": tnp.where(status == 0, 2, status).astype(i32)}
    if status._t is None:
        d["message"] = _MSGS[int(d["istate"].numpy())]
    return d


def _solve(func, state, t, args, o, tfirst, illegal):
    """(ys (len(t), n), per-interval info in t's units, status) through the custom gradient."""
    n_t = t.shape[0]
    y0f = tnp.concatenate([_flat(v) for v in state.leaves]) if state.leaves else \
        tnp.zeros((0,))
    if n_t == 0:
        return tnp.zeros((0, state.n)), [], tnp.asarray(0, dtype=np.int32)
    if illegal:
        # SciPy: LSODA returns at once, the first output row repeats y0, the rest unset
        ys = tnp.concatenate([y0f[None], y0f[None], tnp.full((max(n_t - 2, 0), state.n),
                                                             np.nan)])[:n_t]
        z = tnp.zeros((), _F64)
        zi = tnp.zeros((), np.int32)
        return ys, [(t[0], z, zi, zi)] * (n_t - 1), tnp.asarray(-3, dtype=np.int32)
    concrete = t._t is None
    d = (-1.0 if float(t[-1]) < float(t[0]) else 1.0) if concrete else \
        tnp.where(t[-1] < t[0], -1.0, 1.0)
    pos, dargs = _split_args(args)

    def fun_flat(yf, s, *dv):
        full = list(args)
        for i, v in zip(pos, dv):
            full[i] = v
        tt = d * s
        yv = state.unpack(yf)
        out = func(tt, yv, *full) if tfirst else func(yv, tt, *full)
        return d * state.pack(out)

    held = {}

    @custom_gradient
    def run(y0v, ss, *dv):
        ys, info, status = _integrate(lambda y, s: fun_flat(y, s, *dv), y0v, ss, o)
        held["info"], held["status"] = info, status

        def grad_fn(g):
            return _adjoint(fun_flat, ys, ss, dv, g, o)
        return ys, grad_fn

    ys = run(y0f, d * t, *dargs)
    info = [(d * tr, d * hu, nst, nfe) for tr, hu, nst, nfe in held["info"]]
    return ys, info, held["status"]


def _adjoint(fun_flat, ys, ss, args, g, o):
    """Cotangents of (y0, s, *args) from the cotangent g of ys, integrating the adjoint system
    a' = -a df/dy, args_bar' = -a df/dargs backwards (in negated time) between outputs."""
    n = ys.shape[1]
    sizes = [int(np.prod(a.shape)) for a in args]
    g = tnp.reshape(g, ys.shape)

    def vjp(y, tt, a_vec, targs):
        with GradientTape() as tape:
            tape.watch(y)
            for x in targs:
                tape.watch(x)
            yd = fun_flat(y, tt, *targs)
        grads = tape.gradient(yd, [y] + list(targs), output_gradients=a_vec,
                              unconnected_gradients="zero")
        return yd, grads

    def aug(state, s):
        # s is negated time; the state is [y, a, args_bar] flattened
        y, a = state[:n], state[n:2 * n]
        yd, grads = vjp(y, -s, a, list(args))
        parts = [-yd, grads[0]] + [_flat(gr) for gr in grads[1:]]
        return tnp.concatenate(parts)

    a = g[-1]
    a_pre = a
    args_bar = [tnp.zeros((k,), dtype=ys.dtype) for k in sizes]
    t_bars = []
    for i in range(ys.shape[0] - 1, 0, -1):
        tb = tnp.sum(fun_flat(ys[i], ss[i], *args) * g[i])
        t_bars.append(tb)
        state = tnp.concatenate([ys[i], a] + args_bar)
        out = _integrate(aug, state, tnp.stack([-ss[i], -ss[i - 1]]), o)[0][-1]
        a_pre = out[n:2 * n]
        a = a_pre + g[i - 1]
        off = 2 * n
        new_bar = []
        for k in sizes:
            new_bar.append(out[off:off + k])
            off += k
        args_bar = new_bar
    # moving t0 moves the whole trajectory: dy(t)/dt0 = -J(t, t0) f(y0, t0)
    t0_bar = -tnp.sum(fun_flat(ys[0], ss[0], *args) * a_pre) if t_bars else \
        tnp.zeros((), dtype=ys.dtype)
    ts_bar = tnp.stack([t0_bar] + t_bars[::-1]) if t_bars else tnp.reshape(t0_bar, (1,))
    return (a, ts_bar) + tuple(tnp.reshape(b, x.shape) for b, x in zip(args_bar, args))
