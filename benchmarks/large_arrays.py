"""Large arrays: the seed guide's sigmoid against a plain copy of the same array, one run.

    PYTHONPATH=. python -m benchmarks.large_arrays [--sizes 16,20,22,24] [--reps 15]

Columns (milliseconds, best of --reps rounds; every round times each column once, in turn, so
that a change of machine load hits all columns alike):

    copy          np.copyto(out, y): the floor a memory-bound kernel can reach
    copy-new      y.copy(): a copy into a new array (what `python -m benchmarks` calls the
                  copy: it pays the page faults of its result; ndflow's compiled call reuses
                  its pooled result buffer once the caller has dropped the last one)
    exp-1t        np.exp(y, out=out) on one thread: the exact tier's floor is this over the
                  threads (NumPy's exp loop; the rest of the chain costs ~50% more)
    numpy         eager NumPy, 1 / (1 + np.exp(-y))
    unblocked     nf.function, default (exact) tier, each op over the whole array (the
                  tier-0 path before blocking: settings.block_min above the size)
    blocked-1t    nf.function, default tier, chunk by chunk on one thread
    blocked       nf.function, default tier as shipped (from settings.block_threads_min
                  elements chunks are shared between threads when timing shows it pays)
    blocked-nt    the same, chunks always shared between all threads (settings.threads)
    fast-math     nf.function with settings.fast_math (numba loop with ndflow's own exp:
                  within a few ulps of NumPy, not bit for bit); absent without numba

Ratios are to the copy. The default tier's results are checked bit for bit against NumPy's.
After each row, `threads used` says how many of the timed calls of `blocked` ran on one thread
and how many on several (it chooses by timing both).
"""
import argparse
import os
import sys
import time

import numpy as np


def _sigmoid_fn(nf, tnp):
    @nf.function
    def sigmoid(y):
        return 1 / (1 + tnp.exp(-y))
    return sigmoid


def _build(nf, tnp, y, **values):
    """A fresh compiled sigmoid planned under the settings `values`."""
    with nf.config.settings.override(**values):
        f = _sigmoid_fn(nf, tnp)
        ty = tnp.asarray(y)
        f(ty)                           # trace and plan with these settings
    return lambda: f(ty)


def _forced_threads(f):
    """`f` with the thread choice off: its chunks always shared between all threads."""
    from ndflow.graph.kernels import blocks

    def g():
        blocks.ADAPT = False
        try:
            return f()
        finally:
            blocks.ADAPT = True
    return g


def _fast_math(nf, tnp, y):
    try:
        import numba  # noqa: F401
    except ImportError:
        return None
    from ndflow.graph.kernels import wait_for_compiles
    with nf.config.settings.override(fast_math=True, numba="sync"):
        f = _sigmoid_fn(nf, tnp)
        ty = tnp.asarray(y)
        for _ in range(5):
            f(ty)
        wait_for_compiles()
    return lambda: f(ty)


def measure(p, dtype, reps, nf, tnp):
    n = 1 << p
    y = np.random.default_rng(0).standard_normal(n).astype(dtype)
    out = np.empty_like(y)
    big = 1 << 62
    cols = {
        "copy": lambda: np.copyto(out, y),
        "copy-new": lambda: y.copy(),
        "exp-1t": lambda: np.exp(y, out=out),
        "numpy": lambda: 1 / (1 + np.exp(-y)),
        "unblocked": _build(nf, tnp, y, block_min=big, block_threads_min=big),
        "blocked-1t": _build(nf, tnp, y, block_threads_min=big, block_min=0),
        "blocked": _build(nf, tnp, y),
        "blocked-nt": _forced_threads(_build(nf, tnp, y)),
    }
    fm = _fast_math(nf, tnp, y)
    if fm is not None:
        cols["fast-math"] = fm
    want = (1 / (1 + np.exp(-y))).view(np.uint8)
    for name in ("unblocked", "blocked-1t", "blocked", "blocked-nt"):
        got = np.asarray(cols[name]()).view(np.uint8)
        if not np.array_equal(got, want):
            raise AssertionError("%s: not NumPy's bits at 2^%d %s" % (name, p, dtype))
    # calls per timing: about 2 ms of work, so timer and loop costs vanish
    inner = max(1, (1 << 21) // n)
    best = {k: float("inf") for k in cols}
    from ndflow.graph.kernels import blocks
    used = {}
    for _ in range(reps):
        for k, f in cols.items():
            seen = dict(getattr(blocks, "USED", {}))
            t0 = time.perf_counter()
            for _ in range(inner):
                f()
            best[k] = min(best[k], (time.perf_counter() - t0) / inner)
            if k == "blocked":
                for t, c in getattr(blocks, "USED", {}).items():
                    used[t] = used.get(t, 0) + c - seen.get(t, 0)
    return best, used


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16,20,22,24", help="powers of two")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--reps", type=int, default=15)
    a = ap.parse_args(argv)
    import ndflow as nf
    import ndflow.numpy as tnp
    from ndflow.graph.kernels import blocks
    s = nf.config.settings
    print("# sigmoid 1/(1+exp(-y)), ms, best of %d; ratio to np.copyto in ()" % a.reps)
    print("# load average %.2f %.2f %.2f; threads %d; chunk %d bytes; blocked from %d, threads "
          "from %d elements" % (*os.getloadavg(), blocks.threads(), s.block_bytes,
                                 s.block_min, s.block_threads_min))
    header = None
    for dt in a.dtypes.split(","):
        for p in (int(s) for s in a.sizes.split(",")):
            best, used = measure(p, np.dtype(dt), a.reps, nf, tnp)
            if header is None:
                header = ["size", "dtype"] + list(best)
                print(" | ".join("%-16s" % h for h in header))
            c = best["copy"]
            cells = ["2^%d" % p, dt] + ["%.3f (%.2f)" % (v * 1e3, v / c) for v in best.values()]
            print(" | ".join("%-16s" % x for x in cells))
            print("#   blocked: threads used %s; exact floor exp-1t/%d threads = %.3f ms" % (
                ", ".join("%d thread(s) %d calls" % tc for tc in sorted(used.items()) if tc[1])
                or "none (unblocked)", blocks.threads(), best["exp-1t"] * 1e3 / blocks.threads()))
            sys.stdout.flush()
    print("# load average after %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
