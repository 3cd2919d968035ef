"""Index tricks: r_, c_ (concatenation by indexing syntax), mgrid, ogrid (grids from
slices), and the pure-Python helpers s_, index_exp, ndindex, ndenumerate."""
import numpy as np

from ..core import dtypes as _dt
from ._core import asarray
from .creation import linspace, arange, zeros
from .manipulation import concatenate, expand_dims, transpose

s_ = np.s_
index_exp = np.index_exp
ndindex = np.ndindex


class AxisConcatenator:
    """`r_` / `c_`: slices become ranges (a complex step is a number of points), scalars and
    arrays are joined along `axis` after promotion to `ndmin` dimensions, as NumPy's. A leading
    string 'axis', 'axis,ndmin' or 'axis,ndmin,trans1d' changes those; NumPy's matrix strings
    ('r', 'c', and bmat expressions) are not supported (ndflow has no matrix class)."""

    def __init__(self, axis=0, ndmin=1, trans1d=-1):
        self.axis = axis
        self.ndmin = ndmin
        self.trans1d = trans1d

    def __getitem__(self, key):
        if isinstance(key, str):
            raise ValueError("ndflow has no matrix class: matrix strings are not supported")
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        objs, types = [], []
        for k, item in enumerate(key):
            scalar = False
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, (complex, np.complexfloating)):
                    new = linspace(start, item.stop, num=int(abs(step)))
                else:
                    new = arange(start, item.stop, step)
                if ndmin > 1:
                    new = expand_dims(new, tuple(range(ndmin - 1)))
                    if trans1d != -1:
                        new = new.swapaxes(-1, trans1d)
            elif isinstance(item, str):
                if k != 0:
                    raise ValueError("special directives must be the first entry.")
                if item in ("r", "c"):
                    raise ValueError("ndflow has no matrix class: 'r'/'c' directives are not "
                                     "supported")
                try:
                    vec = [int(x) for x in item.split(",")]
                except ValueError:
                    raise ValueError(f"unknown special directive {item!r}") from None
                if len(vec) == 1:
                    axis = vec[0]
                else:
                    axis, ndmin = vec[:2]
                    if len(vec) == 3:
                        trans1d = vec[2]
                continue
            elif type(item) in _dt.PY_SCALARS or isinstance(item, np.generic):
                scalar = True
                new = item
            else:
                a = asarray(item)
                item_ndim = a.ndim
                new = expand_dims(a, tuple(range(ndmin - a.ndim))) if a.ndim < ndmin else a
                if trans1d != -1 and item_ndim < ndmin:
                    k2 = ndmin - item_ndim
                    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
                    d = list(range(ndmin))
                    new = transpose(new, d[:k1] + d[k2:] + d[k1:k2])
            objs.append(new)
            types.append(item if scalar else new.dtype)
        if not objs:
            return zeros((0,))
        final = np.result_type(*types)     # Python scalars weak, as NumPy's
        arrs = []
        for o in objs:
            a = asarray(o, dtype=final)
            if a.ndim < ndmin:
                a = expand_dims(a, tuple(range(ndmin - a.ndim)))
            arrs.append(a)
        return concatenate(arrs, axis=axis)

    def __len__(self):
        return 0


r_ = AxisConcatenator(0)
c_ = AxisConcatenator(-1, ndmin=2, trans1d=0)


class _Grid:
    """`mgrid` / `ogrid`: dense or open grids from slices (static values: constants), as
    NumPy's."""

    def __init__(self, sparse):
        self._np = np.ogrid if sparse else np.mgrid

    def __getitem__(self, key):
        r = self._np[key]
        if isinstance(r, (list, tuple)):
            return type(r)(asarray(a) for a in r)
        return asarray(r)


mgrid = _Grid(False)
ogrid = _Grid(True)


class ndenumerate:
    """Iterate over (index, element) pairs, as `numpy.ndenumerate` (elements are 0-d ndflow
    arrays)."""

    def __init__(self, arr):
        self._a = asarray(arr)
        self._it = np.ndindex(*self._a.shape)

    def __iter__(self):
        return self

    def __next__(self):
        i = next(self._it)
        return i, self._a[i]
