"""`ndflow.scipy`: SciPy functions written with ndflow operations, so they differentiate
(tapes, `nf.grad`), compile (`nf.function`) and vectorize (`nf.vectorized_map`) like the rest,
as `jax.scipy` offers. SciPy itself is not needed.

    import ndflow.scipy as nsp
    nsp.special.gammaln(x); nsp.stats.norm.logpdf(x, loc, scale); nsp.linalg.expm(a)
    nsp.integrate.odeint(f, y0, t); nsp.signal.convolve(a, v)
"""
import importlib

_SUBMODULES = ("special", "stats", "linalg", "integrate", "signal")
__all__ = list(_SUBMODULES)


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ndflow.scipy' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))
