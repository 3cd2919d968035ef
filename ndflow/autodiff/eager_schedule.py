"""Cached schedules for the eager backward plan: a training loop's backward pass, planned once.

A training step records the same primitives, wired the same way, every time; only the values
and their tids are new. The eager plan (`eager_plan.py`) re-derives per record what does not
change between such steps: which host rule runs it, which of its inputs need a gradient, which
cotangent each gradient joins, which cotangents the pass must keep, and each input dtype's
differentiability. A schedule holds those decisions, made once for a sequence of records
(`_build`), compiled into one function of straight-line Python (`_compile`) that checks the
records against them and then runs each record's host rule with the cotangents in local names
instead of a table keyed by tids: no loop, no per-record decisions. (The same schedule run by
a loop over its steps cost as much as the plan's own loop: the decisions are cheap, the
interpretation around them is not.)

What a schedule assumes, and so what is checked before it runs (any difference: another
schedule, or a new one, or the plan's own loop; never a schedule that does not fit):

* the records' primitives, in order (the cache's key), and each one's VJP rule still the
  one its host rule mirrors;
* the wiring: which earlier record's output, or which other connected value, each input is
  (tids compared slot by slot, every slot's tid distinct), and which inputs are not connected
  (so need no gradient): the watched set and the sources (`keep`) included;
* the seeds (which outputs the targets are) and the kept outputs;
* every handle an eager array on the default device, and each input that takes a gradient of
  a dtype equal to the one the schedule decided its differentiability for.

Shapes, parameters and values are not part of it: the host rules read them from the records
on every run, as the plan does, and decide donation and summing in place on the buffers as
they are then (who holds a cotangent is counted with `sys.getrefcount`, calibrated below on
a buffer held as the compiled code holds its cotangents). A schedule is only made for the
plan's own situation (plain eager execution: nested and recording tapes, traces and devices
take the reference loop before the plan is asked), so a persistent tape, a nested tape's inner
gradient or a changed program differ from a cached schedule in what is checked, or never
reach it.

The gradients are the reference loop's bits: the same host rules on the same operands in the
same order as `eager_plan._host_records` (tests/test_eager_schedule.py compares the three on
the op table, and checks that each part of the check above refuses a schedule that differs).
One pair of steps is decided together: a loss ending in sum(x * x) whose seed is exactly one
runs as x + x, the rules' (1 * x) + (1 * x) without the broadcast and the product (`_unit_tail`;
the seed is read on every run, and any other seed runs both rules).
"""
import operator
import sys

import numpy as np

from ..core import dtypes as _dt
from ..core.ndarray import ndarray, _wrap
from ..core.settings import settings
from ..primitives import elementwise as E, reduction as R
from .host_vjp import RULES, twice

_ndarray = np.ndarray
_refcount = sys.getrefcount
_first = operator.itemgetter(0)
_vjp = operator.attrgetter("vjp")

# How an input of a record is found: the output of an earlier record or a value seen before
# in the pass (LINK, its slot's tid compared), a connected value met for the first time (NEW:
# it takes its slot), or a value the tape does not follow (FREE: no gradient).
_LINK, _NEW, _FREE = 0, 1, 2

# A schedule costs a compile (about a millisecond for ten records, 150 lines of code, more
# than a hundred backward passes save): only a sequence recorded this often gets one (a
# training loop), and only one of at most _LONGEST records
_SEEN = 8
_LONGEST = 32
_PER_KEY = 4       # schedules kept per sequence of primitives (the newest first)
_KEYS = 256        # sequences remembered at most (all forgotten beyond)

_REBUILDS = 16     # schedules built at most per sequence (then the plan's loop runs it)

# tuple of primitives -> how often seen (an int, before its schedule), its schedules (a list),
# or (rules,): none, the plan's loop runs it
_CACHE = {}
_BUILT = {}        # tuple of primitives -> schedules built for it


class Schedule:
    """The decisions of one backward pass over a sequence of records (see the module's text),
    compiled (`run`), for the VJP rules `vjps` and the host rules `rules`.

    `steps`, in the order they run (the records in reverse): (record index, host rule,
    whether it takes donations, whether its output's cotangent is kept, the slot each input's
    gradient joins (-1: none), the `needs` the rule gets, the checks of its inputs: (kind,
    slot, dtype or None) each). Record i's output has slot i."""
    __slots__ = ("vjps", "rules", "run", "steps")

    def __init__(self, vjps, rules, run, steps):
        self.vjps, self.rules, self.run, self.steps = vjps, rules, run, steps


def run(recs, ct, keep, conn, consume, rules):
    """The backward pass over `recs` (as `eager_plan.backward`'s) by a cached schedule where
    one fits (unless `settings.routes_off` names 'eager_schedule'), of the host rules `rules`
    (host_vjp.RULES, or a table a test puts in its place).
    Returns the index of the record the plan's loop goes on from: -1 when the schedule ran
    them all, len(recs) - 1 when none fits (nothing was done); after a host rule
    declined its record (NotImplemented), that record's index, with the table as the plan's
    loop leaves it (bare host buffers and arrays, by tid)."""
    n = len(recs)
    if not n or n > _LONGEST:
        return n - 1
    try:
        key = tuple(map(_first, recs))
    except TypeError:                 # (a record released: a pass that failed before)
        return n - 1
    entry = _CACHE.get(key)
    if type(entry) is not list:
        if type(entry) is tuple:
            if entry[0] is rules:
                return n - 1          # refused (see below)
            entry = _SEEN - 1         # (refused with other rules: try again)
        elif entry is None and len(_CACHE) >= _KEYS:
            _CACHE.clear()
            _BUILT.clear()
        seen = (entry or 0) + 1
        if seen < _SEEN:
            _CACHE[key] = seen
            return n - 1
        entry = _CACHE[key] = []
    if "eager_schedule" in settings.routes_off:
        return n - 1                  # (read here: a refused sequence does not pay for it)
    vjps = list(map(_vjp, key))
    for s in entry:
        if s.vjps == vjps and s.rules is rules:
            i = s.run(recs, ct, keep, conn, consume)
            if i is not None:
                return i
    built = _BUILT[key] = _BUILT.get(key, 0) + 1
    s = None if built > _REBUILDS else _build(key, vjps, rules, recs, ct, keep, conn)
    if s is None:
        # a sequence that cannot have one (a primitive without a host rule, a value on a
        # device, ...), or that keeps changing between more variants than a key keeps, is
        # the plan's loop's from now on (with these rules), without a look at its records
        _CACHE[key] = (rules,)
        return n - 1
    entry.insert(0, s)
    del entry[_PER_KEY:]
    i = s.run(recs, ct, keep, conn, consume)
    return n - 1 if i is None else i


def _build(key, vjps, rules, recs, ct, keep, conn):
    """The schedule of `recs` as they are now; None where the plan's loop must run them (a
    primitive without a host rule, or whose rule was replaced; an output that is not named by
    its tid alone; a value on a device; a target that no record computes)."""
    n = len(recs)
    stid = [r[2] for r in recs]
    for i, o in enumerate(stid):
        rule = rules.get(key[i])
        if type(o) is not int or rule is None or rule[1] is not vjps[i]:
            return None
    slot_of = dict(zip(stid, range(n)))
    if len(slot_of) != n:
        return None
    for t, c in ct.items():
        if t not in slot_of or type(c) is not ndarray or c._dev is not None:
            return None
    steps = []
    nslots = n
    for i in range(n - 1, -1, -1):
        checks, dests, needs = [], [], []
        for a in recs[i][1]:
            if a._dev is not None:
                return None
            t = a._tid
            s = slot_of.get(t)
            if s is not None:
                if i <= s < n:
                    return None       # (not a program's order: the plan's loop takes it)
                kind = _LINK
            elif t in conn:
                s = slot_of[t] = nslots
                nslots += 1
                kind = _NEW
            else:
                checks.append((_FREE, -1, None))
                dests.append(-1)
                needs.append(False)
                continue
            d = a._v.dtype
            checks.append((kind, s, d))
            dests.append(s if _dt.is_differentiable(d) else -1)
            needs.append(True)
        rule = rules[key[i]]
        steps.append((i, rule[0], rule[2], stid[i] in keep, tuple(dests), tuple(needs),
                      tuple(checks)))
    seeds = sorted(slot_of[t] for t in ct)
    kept = sorted(slot_of[t] for t in keep if t in slot_of and slot_of[t] < n)
    tail = _unit_tail(key, rules, steps, seeds)
    return Schedule(vjps, rules, _compile(n, nslots, steps, seeds, kept, tail), steps)


def _unit_tail(key, rules, steps, seeds):
    """A loss that ends in sum(x * x) (a square under a sum), its sum the one seeded target:
    (the sum's record, the square's, x's slot, x's dtype), whose two steps the compiled code
    runs as `host_vjp.twice(x)` when the seed is exactly one (checked on every run: a seed
    the caller gives, of another value, runs both rules). None for any other program.

    The two steps' cotangents must be theirs alone, so that the pair's result is what the
    rules give: the square's output feeds the sum only, and x's slot takes no gradient
    before the square's (its first: the reference's `gx + gx`, not `(prev + gx) + gx`).
    x real floating (for a complex x, 1 * x is not x's bits: (1 + 0j) * (a + inf j))."""
    if len(seeds) != 1:
        return None
    order = {st[0]: k for k, st in enumerate(steps)}
    top = steps[0]
    s = seeds[0]
    if top[0] != s or key[s] is not R.reduce_sum_p or top[3]:
        return None
    if top[1] is not RULES[R.reduce_sum_p][0] or len(top[4]) != 1 or top[4][0] < 0:
        return None
    j = top[4][0]
    sq = steps[order[j]] if j in order else None
    if sq is None or key[j] is not E.mul_p or sq[1] is not RULES[E.mul_p][0] or sq[3]:
        return None
    m = sq[4][0]
    if sq[4] != (m, m) or m < 0 or m in seeds:
        return None
    d = sq[6][0][2]
    if d is None or d.kind != "f":
        return None
    for st in steps:
        if st[0] != s and j in st[4]:
            return None                   # (another record reads the square)
        if st is sq:
            break
        if m in st[4]:
            return None                   # (x takes a gradient before the square's)
    return s, j, m, d


def _compile(n, nslots, steps, seeds, kept, tail=None):
    """The schedule as one function, straight-line Python: the checks, then each record's
    rule with its cotangents in local names `c<slot>` (the tids in `o<slot>`) instead of a
    table; `run(recs, ct, keep, conn, consume)` -> the index the plan's loop goes on from,
    None where the checks refuse the records (nothing was done). `tail`: see `_unit_tail`."""
    ns = {"_wrap": _wrap, "_donatable": _donatable, "_sum": _sum, "NotImplemented": NotImplemented,
          "_unit": _unit, "_twice": twice}
    src = ["def run(recs, ct, keep, conn, consume):",
           f"    {', '.join(f'r{i}' for i in range(n))}, = recs",
           f"    {', '.join(f'o{i}' for i in range(n))}, = "
           f"{', '.join(f'r{i}[2]' for i in range(n))},",
           f"    seen = {{{', '.join(f'o{i}' for i in range(n))}}}",
           f"    if len(seen) != {n} or len(ct) != {len(seeds)}: return None"]
    for k in seeds:
        src.append(f"    if o{k} not in ct or type(ct[o{k}]) is not _nd or ct[o{k}]._dev "
                   f"is not None: return None")
    ns["_nd"] = ndarray
    if kept:
        for i in range(n):
            src.append(f"    if (o{i} in keep) is not {i in kept}: return None")
    else:
        src.append(f"    if keep and not keep.isdisjoint(seen): return None")
    # the inputs, in the order the records run (a value met first takes its slot there),
    # checked together: a tuple compared costs a few instructions an input, a test of its own
    # line a dozen (the checks are most of a small schedule's run)
    new, devs, links, dtypes, free = [], [], [], [], []
    for i, _, _, _, _, _, checks in steps:
        names = [f"x{i}_{j}" for j in range(len(checks))]
        src.append(f"    {', '.join(names)}, = r{i}[1]")
        for x, (kind, k, d) in zip(names, checks):
            devs.append(f"{x}._dev")
            if kind == _LINK:
                links.append((f"{x}._tid", f"o{k}"))
            elif kind == _NEW:
                src.append(f"    o{k} = {x}._tid")
                new.append(k)
            else:
                free.append(f"{x}._tid in conn")
            if d is not None:
                # (==: a dtype equal to the one decided for is as differentiable)
                dtypes.append((f"{x}._v.dtype", f"D{x}"))
                ns[f"D{x}"] = d
    ns["_NONES"] = (None,) * len(devs)
    src.append(f"    if ({', '.join(devs)},) != _NONES: return None")
    for k in new:
        src += [f"    if o{k} in seen or o{k} not in conn: return None", f"    seen.add(o{k})"]
    for pairs in (links, dtypes):
        if pairs:
            src.append(f"    if ({', '.join(a for a, _ in pairs)},) != "
                       f"({', '.join(b for _, b in pairs)},): return None")
    if free:
        src.append(f"    if {' or '.join(free)}: return None")
    src.append("    " + " = ".join([f"x{i}_{j}" for i, *_, c in steps
                                        for j in range(len(c))] + ["None"]))
    src.append(f"    {' = '.join(f'c{k}' for k in range(nslots))} = None")
    for k in seeds:
        src.append(f"    c{k} = ct.pop(o{k})._v")
    for i, rule, donates, is_kept, dests, needs, checks in steps:
        ns[f"R{i}"], ns[f"N{i}"] = rule, needs
        # the slots that may hold a cotangent here: record i's and those of earlier records,
        # the kept ones and the values met (a later record's is released when it runs)
        ns[f"L{i}"] = tuple((f"o{k}", f"c{k}") for k in range(nslots)
                            if k <= i or k in kept or k >= n)
        src += _step(i, donates, is_kept, dests, tail, ns)
        # (the record released once its rule has run, as the plan's loop releases it)
        src.append(f"    r{i} = None")
        src.append(f"    if consume: recs[{i}] = None")
    for k in sorted(set(kept) | set(new)):
        src.append(f"    if c{k} is not None: ct[o{k}] = _wrap(c{k})")
    src.append("    return -1")
    ns["_spill"] = _spill
    text = "\n".join(src)
    exec(compile(text, "<ndflow eager schedule>", "exec"), ns)
    ns["run"].source = text           # (for a reader: print(schedule.run.source))
    return ns["run"]


def _step(i, donates, is_kept, dests, tail, ns):
    """The compiled lines of record i's step (its rule `R<i>` on the cotangent in `c<i>`, each
    gradient summed into its slot), and for the sum of a unit-seed tail (`_unit_tail`) the
    two records' x + x in front of them."""
    if donates:
        body = [f"c = c{i}"] + ([] if is_kept else [f"c{i} = None"])
        # (decided before the call: an argument already pushed for it would be counted)
        body += ["d = _donatable(c)", f"g = R{i}(c, r{i}[1], o{i}, r{i}[3], N{i}, d)",
                 "if g is NotImplemented:", f"    c{i} = c",
                 f"    return _spill(ct, locals(), L{i}, {i})"]
    else:
        # (the slot itself passed: the rule never writes into it)
        body = [f"g = R{i}(c{i}, r{i}[1], o{i}, r{i}[3], N{i}, False)",
                "if g is NotImplemented:", f"    return _spill(ct, locals(), L{i}, {i})"]
        body += [] if is_kept else [f"c{i} = None"]
    for j, k in enumerate(dests):
        if k >= 0:
            body += [f"r = g[{j}]",
                     "if r is not None:",
                     f"    c{k} = r if c{k} is None else _sum(c{k}, r)"]
    body.append("c = g = r = None" if donates else "g = r = None")
    src = [f"    if c{i} is not None:"]
    if tail is not None and tail[0] == i:
        # a square under a sum from a seed of exactly one: x + x (the square's record is
        # then left with no cotangent, as a record none reaches)
        _, j, m, d = tail
        ns["DU"] = d
        src += [f"        if _unit(c{i}, DU):",
                f"            c{m} = _twice(r{j}[1][0]._v)",
                f"            c{i} = None",
                "        else:"]
        body = ["    " + b for b in body]
    return src + ["        " + b for b in body]


def _unit(c, d):
    """Whether seed buffer `c` is a 0-d array of dtype `d` holding exactly one (the default
    seed, or an output gradient of that value: the same bits either way)."""
    return type(c) is _ndarray and c.shape == () and c.dtype == d and c.item() == 1


def _donatable(c):
    """Whether a host rule may write into cotangent `c`: one name of the schedule's frame
    alone holds it (counted as `_calibrate` counts it), and it owns writable memory."""
    return _refcount(c) == _ALONE and type(c) is _ndarray and c.flags.owndata \
        and c.flags.writeable


def _sum(prev, r):
    """prev + r for a slot: in place where only the slot's name holds `prev` and its memory
    (same shape and dtype: the same bits); a gradient of the running record is still held by
    the schedule's frame (`g`, `r`), so it is never summed into."""
    if _refcount(prev) == _ALONE and type(prev) is _ndarray and type(r) is _ndarray \
            and prev.flags.owndata and prev.flags.writeable and prev.shape == r.shape \
            and prev.dtype == r.dtype:
        np.add(prev, r, out=prev)
        return prev
    return np.add(prev, r)


def _spill(ct, names, live, i):
    """The cotangents left in the slots `live` ((tid's name, cotangent's name) each, looked up
    in the compiled code's local `names`), back into the table by tid (as bare buffers, as
    the plan's loop keeps them); returns `i`, the record the plan's loop goes on from. (A
    lookup by name keeps the compiled code linear in the records: a host rule declines a
    record rarely.)"""
    for t, c in live:
        v = names[c]
        if v is not None:
            ct[names[t]] = v
    return i


def _calibrate():
    """The reference count `_donatable` and `_sum` see of a buffer that one local name of the
    calling frame alone holds (the compiled code's `c` being consumed, or its slot `c<k>`
    summed into), counted the same way, so it does not depend on the interpreter's
    conventions."""
    seen = []

    def probe(v):
        seen.append(_refcount(v))

    c = np.empty(1)
    probe(c)
    return seen[0]


_ALONE = _calibrate()
