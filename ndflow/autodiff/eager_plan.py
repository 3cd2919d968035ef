"""The eager backward plan: the tape's backward pass in plain eager execution.

When nothing but the backward pass observes it (no other tape, no trace, no device scope or
switch: the thread's state is `fast`), every `bind` in a VJP rule takes the eager fast path and
calls its kernel on NumPy buffers; the wrapping, dispatch and allocation around those calls are
most of the cost of a small backward pass, and the memory of a large one. The plan walks the
same records in the same order as the reference loop (`GradientTape._backward`) and adds:

* host rules (`host_vjp.py`): the common primitives' VJP rules on the NumPy buffers, the
  general rules' kernels in their order, run in one tight loop (`_host_records`) that keeps
  its cotangents as bare buffers and hands any other record to the tape's own step
  (`GradientTape._step`), taking over again after it;
* summing in place: a cotangent that only the pass's table holds takes the next gradient for
  the same value with `np.add(..., out=)` (who holds it is counted with `sys.getrefcount`,
  compared with counts calibrated below on arrays held the same way);
* donation: a host rule that declares it may write into the cotangent it consumes when the
  pass alone holds it, so a long chain over large arrays holds fewer of them at once.

A sequence of records seen before (a training loop's step) runs first as its cached schedule
(`eager_schedule.py`): the same host rules, sums and donations, decided once for the sequence
and checked against the records before each use; the loop here takes any record it leaves.

The gradient rules know nothing of this: the plan owns the buffers. Each of the three gives the
reference loop's bits (the same kernels on the same operands, in the same order):
tests/test_eager_plan.py runs every op-table record's gradient both ways, and
tests/test_host_vjp.py checks each host rule against its general rule.
"""
import sys

import numpy as np

from ..core import dtypes as _dt
from ..core.settings import settings
from ..core.ndarray import ndarray, _wrap
from .host_vjp import RULES
from . import eager_schedule

_ndarray = np.ndarray

# The plan's switch for tests: off, every backward pass runs the reference loop (tests compare
# the two); an ablation run measures what the plan pays with `settings.routes_off`
ENABLED = True


def takes(state):
    """Whether this backward pass runs as the eager plan: plain eager execution, seen from the
    thread's state once the differentiating tape has stopped recording, and the plan not
    switched off (`settings.routes_off` naming 'eager_plan')."""
    return ENABLED and state.fast and "eager_plan" not in settings.routes_off


def backward(tape, ct, keep, consume):
    """The backward pass over `tape`'s records, from the cotangents in `ct` (tid -> array),
    as `GradientTape._backward` does it (see there for `keep` and `consume`)."""
    recs = tape._records
    conn = tape._connected
    # a sequence of records seen before: its cached schedule (as many records as it takes;
    # the loop below goes on from where it stops)
    i = eager_schedule.run(recs, ct, keep, conn, consume, RULES)
    if i < 0:
        return                        # (its cotangents left wrapped)
    while i >= 0:
        i = _host_records(recs, i, ct, keep, conn, consume)
        if i < 0:
            break
        _wrap_bare(ct)                # (the tape's step reads wrapped cotangents)
        tape._step(i, ct, keep, consume, _sum_into)
        i -= 1
    _wrap_bare(ct)


def _host_records(recs, i, ct, keep, conn, consume):
    """Records i, i-1, ... while each one's primitive has a host rule that applies: its kernels
    on the buffers, without the general step's per-record work. Returns the index of the first
    record it leaves to the tape's step (-1 when none is left). The cotangents it makes stay
    bare host buffers in the table (no wrapper per gradient); the decisions (which cotangent,
    which inputs need a gradient, donation, summing in place) are made on the same references
    as the step's (a bare buffer's counted alone: `_BSOLE` / `_BSHARED`)."""
    get = ct.get
    okd = None                            # the last dtype found differentiable
    while i >= 0:
        prim, args, outs, params = recs[i]
        if type(outs) is int:
            tid = outs
        elif len(outs) == 1 and not prim.multiple_results:
            tid = outs[0]._tid            # a rule that reads its output (exp)
            if outs[0]._t is not None or outs[0]._dev is not None:
                return i
        else:
            return i
        c = get(tid)
        if c is None:
            if consume:
                recs[i] = None
            i -= 1
            continue
        rule = RULES.get(prim)
        if rule is None or rule[1] is not prim.vjp:
            return i                      # (a rule replaced since: the general step runs it)
        wrapped = type(c) is ndarray      # (from the general step, or the tape's seed)
        if wrapped and (c._t is not None or c._dev is not None):
            return i
        if len(args) == 2:
            # (_host_needs, inlined for the binary records, most of them)
            a0, a1 = args
            if a0._t is not None or a0._dev is not None or a1._t is not None \
                    or a1._dev is not None:
                return i
            needs = (a0._tid in conn, a1._tid in conn)            # (tid 0 is never in conn)
        elif len(args) == 1:
            a0 = args[0]
            if a0._t is not None or a0._dev is not None:
                return i
            needs = (a0._tid in conn,)
        else:
            needs = _host_needs(args, conn)
            if needs is None:
                return i
        if tid not in keep:
            del ct[tid]
        # (decided while this frame alone holds the cotangent)
        if not rule[2]:
            donated = False
        elif wrapped:
            donated = _refs(c) == _SOLE and _owned(c)
        else:
            donated = _brefs(c) == _BSOLE and type(c) is _ndarray \
                and c.flags.owndata and c.flags.writeable
        cv = c._v if wrapped else c
        raw = rule[0](cv, args, outs, params, needs, donated)
        if raw is NotImplemented:
            ct[tid] = c                   # (nothing was written) the general step runs it
            return i
        if consume:
            recs[i] = None
        i -= 1
        for a, r in zip(args, raw):
            if r is None:
                continue
            # (a host rule gives a gradient only where `needs` asks for one, or for the one
            # input of a unary record, which was connected when recorded: in conn)
            d = a._v.dtype
            if d is not okd:
                if not _differentiable(d):
                    continue
                okd = d
            if a._tid in ct:
                _host_sum(ct, a._tid, r, c, cv, wrapped)
            else:
                ct[a._tid] = c if r is cv else r      # (the first gradient of the value)
        # (what this record held, released before the next one's decisions and kernels)
        c = cv = raw = a = r = a0 = a1 = args = outs = params = None
    return i


def _host_needs(args, conn):
    """Whether each input needs a gradient; None where an input is not an eager host array
    (the general step takes the record)."""
    for a in args:
        if a._t is not None or a._dev is not None:
            return None
    return tuple([a._tid in conn for a in args])


def _host_sum(ct, at, r, c, cv, wrapped):
    """Host gradient `r` summed into the table's cotangent of value `at` (there is one): in
    place where only the table holds it (a gradient of this record is still held by the
    caller, by `r` or `c`: never summed into), else `prev + r` (np.add on the buffers, in
    this order). `c` is the record's cotangent, `cv` its buffer: a rule that returns `cv`
    passes `c` on."""
    prev = ct[at]
    if type(prev) is not ndarray:
        # (_brefs first, before a name here holds more of prev)
        if _brefs(prev) == _BSHARED and type(prev) is _ndarray and type(r) is _ndarray \
                and prev.flags.owndata and prev.flags.writeable and prev.shape == r.shape \
                and prev.dtype == r.dtype:
            np.add(prev, r, out=prev)
        else:
            ct[at] = np.add(prev, r)
    else:
        # a wrapped cotangent (the general step's): summed as there
        if _refs(prev) == _SHARED and _owned(prev) and type(r) is _ndarray \
                and prev._v.shape == r.shape and prev._v.dtype == r.dtype:
            np.add(prev._v, r, out=prev._v)
        elif type(prev._v) is _ndarray and prev._t is None and prev._dev is None:
            ct[at] = np.add(prev._v, r)   # (bare, as the other sums here)
        else:
            ct[at] = prev + (c if r is cv and wrapped else _wrap(r))


def _sum_into(ct, at, g):
    """The general step's sum for the plan: `prev + g`, in place into prev where only the
    table holds it and its memory (same shape and dtype: the same bits as `prev + g`)."""
    prev = ct.get(at)
    if prev is None:
        ct[at] = g
    elif _refs(prev) == _SHARED and _owned(prev) and type(g._v) is _ndarray \
            and g._t is None and g._dev is None and prev._v.shape == g._v.shape \
            and prev._v.dtype == g._v.dtype:
        np.add(prev._v, g._v, out=prev._v)
    else:
        ct[at] = prev + g


def _wrap_bare(ct):
    """The host records' bare cotangents wrapped, for the general step and the results."""
    for k, v in ct.items():
        if type(v) is not ndarray:
            ct[k] = _wrap(v)


_DIFF = {}      # id(dtype) -> (dtype, whether gradients flow through it)


def _differentiable(d):
    # by the dtype's identity (hashing a NumPy dtype costs more than the check); the entry
    # holds its dtype, so the id names the same object while it lives
    ok = _DIFF.get(id(d))
    if ok is None or ok[0] is not d:
        ok = _DIFF[id(d)] = (d, _dt.is_differentiable(d))
    return ok[1]


# ------------------------------------------------------------------ who holds a cotangent
def _refs(c):
    """References to eager array `c` and to its NumPy buffer, as seen from here (compared
    with `_SOLE` / `_SHARED`, measured the same way on arrays held as the backward pass
    holds its own, so the counts do not depend on the interpreter's conventions)."""
    v = c._v
    if type(v) is not _ndarray or c._t is not None or c._dev is not None:
        return None
    return sys.getrefcount(c), sys.getrefcount(v)


def _owned(c):
    f = c._v.flags
    return f.owndata and f.writeable


def _brefs(v):
    """References to a bare host buffer in the cotangent table, as seen from here (compared
    with `_BSOLE` / `_BSHARED`, measured the same way: see `_refs`)."""
    return sys.getrefcount(v)


def _calibrate():
    c = _wrap(np.empty(1))
    sole = _refs(c)                  # one name holds it (a cotangent being consumed)
    table = {0: _wrap(np.empty(1))}
    prev = table.get(0)
    shared = _refs(prev)             # the cotangent table and one name (one to sum into)
    v = np.empty(1)
    bsole = _brefs(v)
    table = {0: np.empty(1)}
    prev = table.get(0)
    bshared = _brefs(prev)
    return sole, shared, bsole, bshared


_SOLE, _SHARED, _BSOLE, _BSHARED = _calibrate()
