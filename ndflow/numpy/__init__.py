"""ndflow.numpy: the NumPy API on ndflow arrays (differentiable, traceable, vectorizable).

This layer parses arguments the NumPy way, resolves dtypes and calls primitives; it holds no
kernels and no gradient rules.
"""
import builtins as _builtins
import sys as _sys

import numpy as _np

from ..core import ndarray as _ndmod
from ..core import dispatch as _door
from ..core.ndarray import ndarray
from ..core.dtypes import (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,  # noqa
                           float16, float32, float64, complex64, complex128)
from ..core.state import STATE as _STATE, GLOBAL_MODE as _GLOBAL_MODE, sync_mode as _sync_mode
from ..core import dtypes as _dtypes

from ._core import asarray, array  # noqa: F401
from .creation import (zeros, ones, empty, full, zeros_like, ones_like, empty_like,  # noqa: F401
                       full_like, arange, linspace, logspace, geomspace, eye, identity, copy,
                       asanyarray, ascontiguousarray, astype, _astype, _view)
from .ufuncs import ufunc  # noqa: F401
from .math import (add, subtract, multiply, true_divide, divide, floor_divide, remainder,  # noqa
                   mod, fmod, power, pow, float_power, maximum, minimum, fmax, fmin, arctan2,
                   atan2, hypot, bitwise_and, bitwise_or, bitwise_xor, left_shift,
                   bitwise_left_shift, right_shift, bitwise_right_shift, nextafter, gcd, lcm,
                   ldexp, equal, not_equal, less, less_equal, greater, greater_equal,
                   logical_and, logical_or, logical_xor, logaddexp, logaddexp2, copysign,
                   heaviside, divmod, negative, positive, exp, exp2, expm1, log, log2, log10,
                   log1p, sqrt, cbrt, sin, cos, tan, arcsin, arccos, arctan, sinh, cosh, tanh,
                   arcsinh, arccosh, arctanh, asin, acos, atan, asinh, acosh, atanh,
                   reciprocal, absolute, abs, fabs, sign, floor, ceil, trunc, fix, rint,
                   conjugate, conj, logical_not, invert, bitwise_not, bitwise_invert,
                   bitwise_count, isnan, isinf, isfinite, signbit, spacing, square, deg2rad,
                   radians, rad2deg, degrees, modf, frexp, isnat, matmul, vecdot, matvec, vecmat,
                   real, imag, iscomplexobj, round, around, clip)
from .math import where_ as where, _set_part  # noqa: F401
from .reductions import (sum, prod, max, min, amax, amin, any, all, argmax, argmin, mean,  # noqa
                         var, std, count_nonzero)
from .manipulation import (reshape, ravel, transpose, permute_dims, matrix_transpose,  # noqa
                           swapaxes, moveaxis, expand_dims, squeeze, broadcast_to,
                           broadcast_arrays, concatenate, concat, stack, vstack, hstack,
                           atleast_1d, atleast_2d, shape, ndim, size)
from .manipulation import broadcast_shapes_ as broadcast_shapes  # noqa: F401
from .indexing import (_getitem, _setitem, take, take_along_axis, nonzero, argwhere,  # noqa
                       flatnonzero)
from .linalg_ops import dot, vdot, inner, outer, tensordot, einsum  # noqa: F401
from .linalg_ops import kron, cross, einsum_path  # noqa: F401
from ._interop import NumPyFallbackError, NumPyFallbackWarning  # noqa: F401
from .array_api import (__array_api_version__, __array_namespace_info__, isdtype,  # noqa: F401
                        from_dlpack, finfo, iinfo)
from .printing import (set_printoptions, get_printoptions, printoptions, array2string,  # noqa
                       array_repr, array_str, format_float_positional, format_float_scientific,
                       base_repr, binary_repr, errstate, seterr, geterr, seterrcall, geterrcall,
                       getbufsize, setbufsize, show_config, show_runtime)

newaxis = None
pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
euler_gamma = _np.euler_gamma
dtype = _np.dtype
result_type = None  # replaced below
can_cast = _np.can_cast
issubdtype = _np.issubdtype
number, integer, floating, complexfloating, inexact, signedinteger, unsignedinteger, generic = (
    _np.number, _np.integer, _np.floating, _np.complexfloating, _np.inexact,
    _np.signedinteger, _np.unsignedinteger, _np.generic)
bool = bool_  # noqa: A001


def result_type(*arrays_and_dtypes):  # noqa: F811
    """Result dtype of an operation on these, in the current promotion mode (Python scalars
    are weak, NEP 50)."""
    return _dtypes.result_type(*[
        a if isinstance(a, (ndarray, _np.ndarray, _np.dtype)) or type(a) in _dtypes.PY_SCALARS
        else _np.dtype(a) for a in arrays_and_dtypes])


def experimental_enable_numpy_behavior(prefer_float32=False, dtype_conversion_mode="legacy"):
    """TensorFlow's switches: `prefer_float32` makes Python floats (and float results of Python
    scalars) float32; `dtype_conversion_mode` is 'legacy' (NumPy 2 promotion), 'all' or 'safe'
    (the JAX lattice; 'safe' refuses lossy promotions)."""
    mode = {"secure": "safe"}.get(dtype_conversion_mode, dtype_conversion_mode)
    if mode not in ("legacy", "all", "safe"):
        raise ValueError(f"dtype_conversion_mode must be 'legacy', 'all' or 'safe', got "
                         f"{dtype_conversion_mode!r}")
    _GLOBAL_MODE["prefer_float32"] = _builtins.bool(prefer_float32)
    _GLOBAL_MODE["promotion"] = mode
    _sync_mode()


_ndmod._tnp = _door.tnp = _sys.modules[__name__]

# Loaded on first use (`tnp.median`, `x.sort()`, `tnp.linalg`, ...): the functions of these
# modules and the modules themselves; everything else above is what most programs touch.
_LAZY_MODULES = {
    "poly_ops": (
        "convolve correlate polyval polyadd polysub polymul polyder polyint polydiv poly roots "
        "polyfit"),
    "windows": "bartlett blackman hamming hanning kaiser",
    "functional": "apply_along_axis apply_over_axes vectorize frompyfunc",
    "special": "angle sinc i0 unwrap interp",
    "differences": (
        "cumsum cumprod cumulative_sum cumulative_prod nancumsum nancumprod diff ediff1d gradient "
        "trapezoid"),
    "statistics": (
        "ptp average median nanmedian nansum nanprod nanmean nanvar nanstd nanmax nanmin "
        "nanargmax nanargmin cov corrcoef"),
    "quantiles": "quantile percentile nanquantile nanpercentile",
    "histograms": "bincount digitize histogram histogram2d histogramdd histogram_bin_edges",
    "sorting": (
        "sort argsort lexsort sort_complex partition argpartition searchsorted unique unique_all "
        "unique_counts unique_inverse unique_values piecewise"),
    "sets": "isin intersect1d union1d setdiff1d setxor1d",
    "npyio": "save load savez savez_compressed loadtxt savetxt genfromtxt fromfile",
    "shaping": (
        "atleast_3d column_stack dstack row_stack array_split split hsplit vsplit dsplit unstack "
        "tile repeat roll rollaxis flip fliplr flipud rot90 block append delete insert resize "
        "trim_zeros"),
    "padding": "pad",
    "routines": (
        "diagonal trace diag diagflat tri tril triu vander indices ix_ meshgrid ravel_multi_index "
        "unravel_index diag_indices diag_indices_from tril_indices triu_indices tril_indices_from "
        "triu_indices_from mask_indices choose compress extract select copyto put put_along_axis "
        "place putmask fill_diagonal"),
    "logic": (
        "isclose allclose array_equal array_equiv isreal iscomplex isrealobj isscalar isposinf "
        "isneginf nan_to_num real_if_close"),
    "conversion": (
        "frombuffer fromiter fromstring fromfunction require asfortranarray asarray_chkfinite "
        "shares_memory may_share_memory isfortran iterable packbits unpackbits promote_types "
        "min_scalar_type mintypecode typename common_type"),
    "index_tricks": "r_ c_ s_ index_exp mgrid ogrid ndindex ndenumerate",
    "linalg": "", "fft": "", "lib": "", "random": "",
}
_LAZY = {n: m for m, names in _LAZY_MODULES.items() for n in names.split()}
_LAZY.update(dict.fromkeys(_LAZY_MODULES, None))    # the modules themselves
_LAZY["bfloat16"] = ".."                             # ml_dtypes (core.dtypes)

# `from ndflow.numpy import *` gives what it gave when all was imported eagerly (tnp.random,
# which numpy.random makes costly, was loaded on first use already)
__all__ = sorted((set(n for n in globals() if not n.startswith("_")) | set(_LAZY)) - {"random"})


def __getattr__(name):
    # tnp.random imports numpy.random (its bit generators), which `import numpy` does not
    import importlib
    where = _LAZY.get(name, False)
    if where is False:
        # TensorFlow's names tried on tnp: the error says how NumPy spells them
        raise AttributeError(importlib.import_module("._tfnames", __name__).missing(name))
    if where is None:
        return importlib.import_module("." + name, __name__)    # sets the attribute itself
    if where == "..":
        value = getattr(_dtypes, name)
    else:
        value = getattr(importlib.import_module("." + where, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    # (random is listed once loaded, as before)
    return sorted(set(globals()) | (set(_LAZY) - {"random"}))
