"""Scalar helpers that fused numba kernels inline (imported only by numba_tier, which needs
numba). Selects, not branches, so loops vectorize; NaN rules are NumPy's."""

import math

import numpy as np
from numba import njit

_i = dict(inline="always", error_model="numpy")


@njit(**_i)
def _abs(x):
    return abs(x)


@njit(**_i)
def _where(c, a, b):
    return a if c else b


@njit(**_i)
def _maximum(a, b):
    # equal operands (-0.0 and +0.0): the second, as NumPy's loops give
    return a if (a > b or a != a) else b


@njit(**_i)
def _minimum(a, b):
    return a if (a < b or a != a) else b


@njit(**_i)
def _sign(x):
    return (x > 0) - (x < 0) if x == x else x


@njit(**_i)
def _isnan(x):
    return x != x


@njit(**_i)
def _isinf(x):
    return abs(x) == np.inf


@njit(**_i)
def _isfinite(x):
    return abs(x) < np.inf


@njit(**_i)
def _land(a, b):
    return (a != 0) and (b != 0)


@njit(**_i)
def _lor(a, b):
    return (a != 0) or (b != 0)


@njit(**_i)
def _lxor(a, b):
    return (a != 0) != (b != 0)


@njit(**_i)
def _lnot(a):
    return a == 0


@njit(**_i)
def _signbit(x):
    # the sign bit, NaN's included (an LLVM intrinsic: no branch, no bit casts)
    return math.copysign(1.0, x) < 0
