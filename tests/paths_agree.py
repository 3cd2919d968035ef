"""Machinery of the "paths agree" suite (tests/test_paths_agree.py): one op-table record, one
drawn input, every path ndflow can take, and NumPy.

A case is drawn from a seed: the dtype (one of the record's), one of the record's samples (or,
for the elementwise families, freshly drawn shapes: 0-d, empty, size 1, broadcasting), a memory
layout for each array (as is, Fortran order, strided, reversed: same values, other strides) and
special values written into some of its elements (signed zeros, NaN, +-inf, huge and tiny
numbers, subnormals; integer extremes for integer dtypes).

The paths: NumPy (the oracle), eager, under a recording tape (the general `bind` path),
compiled with `nf.function` (and with every size unknown), `vectorized_map` over a batch of
three such inputs against a Python loop over them. Results are compared bit-carefully: dtype,
shape, NaN positions, infinities, the sign of zeros, values within the record's tolerance; when
NumPy raises, every path must raise the same type.
"""
import threading
import warnings

import numpy as np

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import tree

from optable import Sample, values as draw_values


# What a record may declare in its `paths_reasons` (each with the reason):
EXCLUSIONS = {
    "zero_sign": "the sign of a zero result is not compared",
    "nonfinite_raises": "for a non-finite first argument (a non-hermitian SVD with vectors) "
                        "the oracle is the exception in the record's "
                        "`paths_nonfinite_error` (NumPy's own call cannot be made)",
    "layouts": "arrays are passed as drawn (C order), not in other layouts",
    "keep_args": "the argument positions in the record's `paths_keep_args` get no special "
                 "values (a precondition NumPy does not check, e.g. interp's increasing xp)",
    "dynamic_size": "compiled and batched paths may raise a clear error (its message says "
                    "'known only at run time') where NumPy's output size depends on values",
    "value_dtype": "the result's dtype depends on the values (real eigenvalues are returned "
                   "real): a batch that mixes both has no stacked loop result to compare the "
                   "batched one with (each example is still compared with NumPy)",
    "zero_sign_batched": "the sign of a zero result is not compared between vectorized_map "
                         "and the loop (the batched kernel orders equal -0.0 and 0.0 "
                         "differently); eager and compiled are still compared with NumPy",
    "nonfinite_kernel": "only elements finite on both sides are compared: with NaN, inf or "
                        "huge inputs, which outputs come out NaN and which inf depends on the "
                        "kernel's operation order (see the record's reason)",
    "known_defect": "the record is expected to diverge (xfail, not strict): a defect left open",
}


def declared(rec, kind):
    return kind in getattr(rec, "paths_reasons", {})


# ------------------------------------------------------------------ special values
def specials(dt):
    dt = np.dtype(dt)
    if dt.kind == "f":
        fi = np.finfo(dt)
        return np.array([0.0, -0.0, np.nan, np.inf, -np.inf, fi.max, -fi.max, fi.tiny,
                         -fi.tiny, fi.smallest_subnormal, 1.0, -1.0, fi.eps], dtype=dt)
    if dt.kind == "c":
        f = specials(np.empty((), dt).real.dtype)
        re = np.concatenate([f, np.zeros(3, f.dtype), [1.0, np.nan, np.inf]]).astype(f.dtype)
        im = np.concatenate([np.zeros(f.size, f.dtype), [np.nan, -np.inf, -0.0],
                             [np.inf, 0.0, np.nan]]).astype(f.dtype)
        return _complex(re, im, dt)
    if dt.kind == "i":
        ii = np.iinfo(dt)
        return np.array([ii.min, ii.max, 0, -1, 1], dtype=dt)
    if dt.kind == "u":
        return np.array([0, np.iinfo(dt).max, 1], dtype=dt)
    return np.array([True, False])


def _complex(re, im, dt):
    out = np.empty(re.shape, dt)
    out.real, out.imag = re, im       # re + 1j*im would turn inf*1j's 0 part into NaN
    return out


def inject(a, rng, density):
    """A copy of `a` with about `density` of its elements replaced by special values of its
    dtype (at least one when density > 0 and `a` is not empty)."""
    a = np.array(a, copy=True)
    if a.size == 0 or density == 0 or a.dtype.kind not in "fciub":
        return a
    sp = specials(a.dtype)
    mask = rng.random(a.shape) < density
    if not mask.any():
        mask.flat[rng.integers(a.size)] = True
    a[mask] = sp[rng.integers(0, sp.size, size=int(mask.sum()))]
    return a


LAYOUTS = ("as_is", "fortran", "strided", "reversed")


def relayout(a, kind):
    """Same values and shape, other strides (a view into a new buffer)."""
    if not isinstance(a, np.ndarray) or a.ndim == 0 or kind == "as_is":
        return a
    if kind == "fortran":
        return np.asfortranarray(a)
    if kind == "strided":
        buf = np.empty(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        v = buf[..., ::2]
        v[...] = a
        return v
    buf = np.ascontiguousarray(a[(slice(None, None, -1),) * a.ndim])
    return buf[(slice(None, None, -1),) * a.ndim]


# ------------------------------------------------------------------ drawing a case
def _draw_shape(rng, ndim_max=3):
    nd = int(rng.integers(0, ndim_max + 1))
    return tuple(int(rng.choice([0, 1, 1, 2, 3, 4])) for _ in range(nd))


def _broadcastable(rng, shape):
    """A shape that broadcasts with `shape` (some axes set to 1, some leading ones dropped)."""
    s = [1 if rng.random() < 0.3 else d for d in shape]
    drop = int(rng.integers(0, len(s) + 1))
    return tuple(s[drop:])


def _fresh_shapes(rec, rng, dt, sample):
    """For the elementwise families (unary_samples, binary_samples): the same kind of call on
    drawn shapes."""
    fam = getattr(rec.samples, "family", None)
    if fam is None or rng.random() < 0.3:
        return sample
    arrs = [i for i, a in enumerate(sample.args) if isinstance(a, np.ndarray)]
    if fam == "unary" and arrs == [0]:
        shp = _draw_shape(rng)
        return Sample((draw_values(rng, shp, dt, rec.samples.domains[0]),) + sample.args[1:],
                      sample.kwargs, "drawn shape")
    if fam == "binary" and arrs == [0, 1]:
        s0 = _draw_shape(rng)
        s1 = _broadcastable(rng, s0)
        if rng.random() < 0.5:
            s0, s1 = s1, s0
        d = rec.samples.domains
        return Sample((draw_values(rng, s0, sample.args[0].dtype, d[0]),
                       draw_values(rng, s1, sample.args[1].dtype, d[1])) + sample.args[2:],
                      sample.kwargs, "drawn shapes")
    return sample


class Case:
    """One drawn input: `sample` (with specials and layouts applied) and `batch`, three inputs
    of the same structure for the batching check."""

    def __init__(self, rec, seed):
        self.seed = seed
        rng = np.random.default_rng([seed, sum(map(ord, rec.name)), len(rec.name)])
        self.dt = np.dtype(rec.dtypes[int(rng.integers(len(rec.dtypes)))])
        base_samples = rec.samples(rng, self.dt)
        k = int(rng.integers(len(base_samples)))
        base = _fresh_shapes(rec, rng, self.dt, base_samples[k])
        no_specials = getattr(rec, "paths_no_specials", None)
        self.density = 0.0 if no_specials else float(rng.choice([0.0, 0.2, 0.5, 1.0]))
        self.layout = [str(rng.choice(LAYOUTS)) for _ in base.args]
        if declared(rec, "layouts"):
            self.layout = ["as_is"] * len(base.args)
        self.sample = self._make(rec, base, rng)
        # two more examples of the same structure: the same sample index of other draws
        self.batch = [self.sample]
        for j in range(2):
            other = rec.samples(np.random.default_rng([seed, j, 99]), self.dt)[k]
            if base.desc.startswith("drawn"):
                other = Sample(tuple(draw_values(rng, a.shape, a.dtype,
                                                 rec.samples.domains[min(i, 1)])
                                     if isinstance(a, np.ndarray) else a
                                     for i, a in enumerate(base.args)), base.kwargs, base.desc)
            other = Sample(tuple(o if isinstance(o, np.ndarray) and isinstance(b, np.ndarray)
                                 and o.shape == b.shape else b
                                 for o, b in zip(other.args, base.args)), base.kwargs, base.desc)
            self.batch.append(self._make(rec, other, rng))

    def _make(self, rec, s, rng):
        args = []
        skip = getattr(rec, "paths_keep_args", ()) if declared(rec, "keep_args") else ()
        for i, a in enumerate(s.args):
            if isinstance(a, np.ndarray):
                if i not in skip and (a.dtype.kind in "fc" or a.dtype == self.dt):
                    a = inject(a, rng, self.density)
                a = relayout(a, self.layout[i])
            args.append(a)
        out = Sample(tuple(args), dict(s.kwargs), s.desc)
        out.layouts = self.layout
        return out

    def __repr__(self):
        return "seed=%d dtype=%s specials=%.1f layouts=%s %r" % (
            self.seed, self.dt.name, self.density, self.layout, self.sample)


# ------------------------------------------------------------------ running the paths
class Raised:
    def __init__(self, exc):
        # the type and message are the result; the traceback would keep every frame it passed
        # alive, the tapes in them too, until a collection (a tape alive holds every
        # later write up: core/mutation.py)
        self.exc = exc.with_traceback(None)

    def __repr__(self):
        return "raised %s: %s" % (type(self.exc).__name__, str(self.exc)[:200])


def _quiet(fn):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn()
        except Exception as e:       # noqa: BLE001 -- the exception is the result compared
            return Raised(e)


def _nf(a):
    return tnp.asarray(a) if isinstance(a, np.ndarray) else a


def _array_positions(s):
    return [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray)]


def _with(s, pos, arrs):
    args = list(s.args)
    for i, a in zip(pos, arrs):
        args[i] = a
    return args


def fresh(s):
    """A copy of sample `s` with the same layouts (a path that writes into its arguments, as
    put or copyto do, must not change what the next path sees)."""
    lay = getattr(s, "layouts", None) or ["as_is"] * len(s.args)
    out = Sample(tuple(relayout(np.array(a), k) if isinstance(a, np.ndarray) else a
                       for a, k in zip(s.args, lay)), dict(s.kwargs), s.desc)
    out.layouts = lay
    return out


def numpy_path(rec, s):
    s = fresh(s)
    a = s.args[0] if s.args else None
    if declared(rec, "nonfinite_raises") and isinstance(a, np.ndarray) and \
            s.kwargs.get("compute_uv", True) and not s.kwargs.get("hermitian", False) and \
            a.dtype.kind in "fc" and not np.isfinite(a).all():
        return Raised(rec.paths_nonfinite_error("declared oracle for a non-finite input"))
    return _quiet(lambda: rec.call(np, *s.args, **s.kwargs))


def eager_path(rec, s):
    s = fresh(s)
    return _quiet(lambda: rec.call(tnp, *[_nf(a) for a in s.args], **s.kwargs))


def tape_path(rec, s):
    s = fresh(s)
    def run():
        args = [_nf(a) for a in s.args]
        with nf.GradientTape() as tape:
            for a in args:
                if isinstance(a, tnp.ndarray) and a.dtype.kind in "fc":
                    tape.watch(a)
            return rec.call(tnp, *args, **s.kwargs)
    return _quiet(run)


def jit_path(rec, s, unknown=False):
    s = fresh(s)
    pos = _array_positions(s)

    def f(*arrs):
        return rec.call(tnp, *_with(s, pos, arrs), **s.kwargs)
    sig = [nf.TensorSpec([None] * s.args[i].ndim, s.args[i].dtype) for i in pos] \
        if unknown else None
    return _quiet(lambda: nf.function(f, input_signature=sig)(*[_nf(s.args[i]) for i in pos]))


def batch_paths(rec, batch):
    """(vectorized_map over the stacked batch, the loop over it stacked)."""
    batch = [fresh(b) for b in batch]
    pos = _array_positions(batch[0])
    s0 = batch[0]

    def per(*arrs):
        return rec.call(tnp, *_with(s0, pos, arrs), **s0.kwargs)

    def loop():
        outs = [per(*[tnp.asarray(s.args[i]) for i in pos]) for s in batch]
        flat = [tree.flatten(o) for o in outs]
        if declared(rec, "value_dtype") and len({(len(f), tuple(np.asarray(_np(x)).dtype
                                                              for x in f)) for f in flat}) > 1:
            return _MIXED
        d = tree.flatten_with_def(outs[0])[1]
        return tree.unflatten(d, [tnp.asarray(np.stack([np.asarray(_np(f[k])) for f in flat]))
                                  for k in range(len(flat[0]))])
    stacked = tuple(tnp.asarray(np.stack([s.args[i] for s in batch])) for i in pos)
    return (_quiet(lambda: nf.vectorized_map(lambda xs: per(*xs), stacked)), _quiet(loop))


_MIXED = object()


def _np(a):
    return a.numpy() if isinstance(a, tnp.ndarray) else a


# ------------------------------------------------------------------ comparing
def _same_float(g, w, rtol, atol, where, rec=None):
    if rec is not None and declared(rec, "nonfinite_kernel"):
        both = np.isfinite(g) & np.isfinite(w)
        g, w = np.where(both, g, 0), np.where(both, w, 0)
    if w.dtype.kind == "c":
        return (_same_float(g.real, w.real, rtol, atol, where + ".real", rec)
                or _same_float(g.imag, w.imag, rtol, atol, where + ".imag", rec))
    gn, wn = np.isnan(g), np.isnan(w)
    if not np.array_equal(gn, wn):
        i = np.argwhere(gn != wn)[0]
        return f"{where}: NaN positions differ, first at {tuple(i)}: {g[tuple(i)]!r} vs " \
               f"NumPy {w[tuple(i)]!r}"
    wi = np.isinf(w)
    if not np.array_equal(np.isinf(g), wi) or not np.array_equal(g[wi], w[wi]):
        i = np.argwhere((np.isinf(g) != wi) | (np.isinf(g) & (g != w)))[0]
        return f"{where}: infinities differ, first at {tuple(i)}: {g[tuple(i)]!r} vs " \
               f"NumPy {w[tuple(i)]!r}"
    fin = ~(wn | wi)
    gf, wf = g[fin].astype(np.float64), w[fin].astype(np.float64)
    with np.errstate(all="ignore"):
        bad = ~(np.abs(gf - wf) <= atol + rtol * np.abs(wf))
    if bad.any():
        j = int(np.argmax(bad))
        return f"{where}: values differ: {gf[j]!r} vs NumPy {wf[j]!r} " \
               f"({int(bad.sum())} of {bad.size} elements; rtol={rtol}, atol={atol})"
    zeros = np.asarray((g == 0) & (w == 0))
    if rec is not None and declared(rec, "zero_sign"):
        zeros[...] = False
    if not np.array_equal(np.signbit(g[zeros]), np.signbit(w[zeros])):
        i = np.argwhere(zeros & (np.signbit(g) != np.signbit(w)))[0]
        return f"{where}: sign of zero differs at {tuple(i)}: {g[tuple(i)]!r} vs NumPy " \
               f"{w[tuple(i)]!r}"
    return None


def difference(got, want, rec, where, ndflow_side=True):
    """None when `got` (an ndflow result) is NumPy's `want`, else what differs."""
    if isinstance(want, Raised) or isinstance(got, Raised):
        if isinstance(want, Raised) and isinstance(got, Raised):
            if isinstance(got.exc, type(want.exc)):
                return None
            return f"{where}: {got!r}, NumPy {want!r}"
        return f"{where}: {got!r}, NumPy gives {_short(want)}" if isinstance(got, Raised) \
            else f"{where}: gives {_short(got)}, NumPy {want!r}"
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return f"{where}: structure {type(got).__name__} vs NumPy's {len(want)} outputs"
        for i, (g, w) in enumerate(zip(got, want)):
            d = difference(g, w, rec, f"{where}[{i}]", ndflow_side)
            if d:
                return d
        return None
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return f"{where}: dict keys differ"
        for k in want:
            d = difference(got[k], want[k], rec, f"{where}[{k!r}]", ndflow_side)
            if d:
                return d
        return None
    if isinstance(want, (np.ndarray, np.generic)):
        if ndflow_side and not isinstance(got, tnp.ndarray):
            return f"{where}: a {type(got).__name__}, not an ndflow array"
        g, w = np.asarray(_np(got)), np.asarray(want)
        if g.dtype != w.dtype:
            return f"{where}: dtype {g.dtype}, NumPy {w.dtype}"
        if g.shape != w.shape:
            return f"{where}: shape {g.shape}, NumPy {w.shape}"
        if rec.values != "values":
            return None
        if w.dtype == tnp.bfloat16:
            g, w = g.astype(np.float32), w.astype(np.float32)
        if w.dtype.kind in "fc":
            rtol, atol = rec.tolerance(w.dtype)
            return _same_float(g, w, rtol, atol, where, rec)
        if not np.array_equal(g, w):
            i = np.argwhere(g != w)[0] if g.ndim else ()
            return f"{where}: values differ at {tuple(i)}: {g[tuple(i)]!r} vs NumPy " \
                   f"{w[tuple(i)]!r}"
        return None
    if isinstance(want, float):
        g = _np(got)
        if isinstance(g, np.ndarray):
            g = g.item()
        if not isinstance(g, (float, int, np.floating)):
            return f"{where}: {g!r}, NumPy {want!r}"
        return _same_float(np.asarray(g, np.float64), np.asarray(want, np.float64),
                           *rec.tolerance(np.float64), where, rec)
    g = _np(got)
    try:
        eq = bool(np.all(g == want)) and type(g) is type(want) or g == want
    except Exception:   # noqa: BLE001
        eq = False
    return None if eq else f"{where}: {g!r}, NumPy {want!r}"


def _short(x):
    r = repr(tree.map_structure(_np, x) if not isinstance(x, Raised) else x)
    return r if len(r) < 300 else r[:300] + "..."


# ------------------------------------------------------------------ one case, every path
def paths_of(rec, case):
    """The paths a record takes part in (the others are declared in the record)."""
    out = ["eager", "tape"]
    has_arrays = bool(_array_positions(case.sample))
    if rec.jit:
        out.append("jit")
        if has_arrays and not (rec.unknown_dims and rec.unknown_dims(case.sample)):
            out.append("jit_unknown")
    if rec.vmap and has_arrays:
        out.append("vmap")
    return out


def check_case(rec, case, oracle=None):
    """Every divergence of one drawn case (an empty list when every path agrees)."""
    s = case.sample
    want = numpy_path(rec, s) if oracle is None else oracle(s)
    problems = []
    for p in paths_of(rec, case):
        if p == "eager":
            got = eager_path(rec, s)
        elif p == "tape":
            got = tape_path(rec, s)
        elif p == "jit":
            got = jit_path(rec, s)
        elif p == "jit_unknown":
            got = jit_path(rec, s, unknown=True)
        else:
            wants = [want] + [numpy_path(rec, b) if oracle is None else oracle(b)
                              for b in case.batch[1:]]
            vm, lp = batch_paths(rec, case.batch)
            for j, b in enumerate(case.batch):       # the loop is eager on each example
                if j:
                    d = difference(eager_path(rec, b), wants[j], rec, f"eager (example {j})")
                    if d:
                        problems.append(d)
            if any(isinstance(w, Raised) for w in wants):
                # (vectorized_map's examples are the rows of the stacked batch: a raise that
                # only a drawn example's layout brings, as view's of a strided last axis,
                # is not one it could meet)
                on_rows = [numpy_path(rec, r) if oracle is None else oracle(r)
                           for r in _stacked_rows(case.batch)]
                raised = [w for w in on_rows if isinstance(w, Raised)]
                if raised and not isinstance(vm, Raised):
                    problems.append(f"vectorized_map gives a result where NumPy raises on an "
                                    f"example: {raised[0]!r}")
                continue
            if lp is _MIXED:
                continue
            d = difference(vm, lp if isinstance(lp, Raised) else stacked_np(lp),
                           _Batched(rec), "vectorized_map vs loop")
            if d:
                problems.append(d)
            continue
        if p.startswith("jit") and declared(rec, "dynamic_size") and isinstance(got, Raised) \
                and "known only at run time" in str(got.exc):
            continue
        d = difference(got, want, rec, p)
        if d:
            problems.append(d)
    return problems


def _stacked_rows(batch):
    """The examples as vectorized_map sees them: each sample with its arrays replaced by its
    row of their stack (C-contiguous, whatever layout the example was drawn with)."""
    pos = _array_positions(batch[0])
    stacked = [np.stack([fresh(b).args[i] for b in batch]) for i in pos]
    rows = []
    for j, b in enumerate(batch):
        r = Sample(tuple(_with(b, pos, [st[j] for st in stacked])), dict(b.kwargs), b.desc)
        r.layouts = ["as_is"] * len(r.args)
        rows.append(r)
    return rows


class _Batched:
    """The record as seen by the batched-vs-loop comparison."""

    def __init__(self, rec):
        self._rec = rec
        self.paths_reasons = dict(rec.paths_reasons)
        if "zero_sign_batched" in rec.paths_reasons:
            self.paths_reasons["zero_sign"] = rec.paths_reasons["zero_sign_batched"]

    def __getattr__(self, k):
        return getattr(self._rec, k)


def stacked_np(x):
    return tree.map_structure(_np, x)


def thread_check(rec, case, threads=4, iterations=3):
    """The record's eager, taped and compiled results computed by `threads` threads at once,
    each `iterations` times, equal the single-thread results."""
    s = case.sample
    paths = {"eager": lambda: eager_path(rec, s), "tape": lambda: tape_path(rec, s)}
    pos = _array_positions(s)
    if rec.jit and pos:
        # one compiled function shared by the threads (its trace cache and buffers too)
        fn = nf.function(lambda *arrs: rec.call(tnp, *_with(s, pos, arrs), **s.kwargs))
        paths["jit"] = lambda: _quiet(lambda: fn(*[_nf(a) for a in
                                                     [fresh(s).args[i] for i in pos]]))
    want = {k: f() for k, f in paths.items()}
    errors = []
    barrier = threading.Barrier(threads)

    def work():
        try:
            barrier.wait(timeout=10)
            for _ in range(iterations):
                for name, run in paths.items():
                    got = run()
                    w = want[name]
                    if isinstance(w, Raised):
                        d = None if isinstance(got, Raised) and type(got.exc) is type(w.exc) \
                            else f"thread {name}: {got!r} vs one thread's {w!r}"
                    else:
                        d = difference(got, stacked_np(w), rec, f"thread {name}")
                    if d:
                        errors.append(d)
        except Exception as e:  # noqa: BLE001
            errors.append(f"thread: {type(e).__name__}: {e}")
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors
