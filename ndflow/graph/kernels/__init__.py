"""Kernels for fused elementwise regions, generated from one `Program` and cached by its key.

A fused region runs on one of the backend's kernel tiers, by one of the routes the planner
names (`planner.Route`), chosen by the planner once per signature, with its reason
(`explain`):

- tier 0 (`numpy_tier`, `numpy_columns`, `blocks`): NumPy code, always there, NumPy's values
  and warnings bit for bit;
- tier 1 (`numba_tier` and its `numba_*` modules; numba is a dependency, but ndflow still
  runs without it, on tier 0): the region compiled into one loop that inlines our own
  vectorizable math (`mathlib`), asked for once the region has run `settings.hot_calls`
  times and its tier-0 time has paid for what the compile costs the caller
  (`planner.compile_pays`), compiled in a background thread and used when ready;
- a device backend's kernel (`cuda_tier`, compiled by the CuPy backend) for device buffers.

The fusion policy the compiler's passes ask (`policy`) does not depend on which tiers exist:
the optimized graph is the same with and without numba. The numbers and switches behind the
choices are fields of `nf.config.settings` (`ndflow/core/settings.py`). Compiled kernels are
kept in NDFLOW_CACHE_DIR (default ~/.cache/ndflow/kernels): a private directory (0700;
refused if another user owns it or group/others may write it) whose files are verified
(HMAC) before numba loads them. NDFLOW_DEBUG=kernels prints each region's tier-0 source,
NDFLOW_DEBUG=plan each decision of the planner as it is made.

Nothing here imports numba until a compile is first requested.
"""
import sys

from .program import Program, Op
from .fused import FusedKernel, kernel_for
from .planner import Route, explain, numba_available

__all__ = ["Program", "Op", "FusedKernel", "kernel_for", "numba_available", "wait_for_compiles",
           "explain", "Route"]


def wait_for_compiles(timeout=None):
    """Block until queued tier-1 compiles have finished (no-op when none was queued)."""
    m = sys.modules.get(__name__ + ".numba_compile")
    if m is not None:
        m.wait(timeout)
