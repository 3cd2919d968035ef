"""`tnp.ufunc`: NumPy's universal functions as objects.

Each ufunc of `ndflow.numpy` (tnp.add, tnp.exp, ...) is an instance: callable as NumPy's (with
`out=`, `where=`, `dtype=`), with `.reduce`, `.accumulate`, `.outer`, `.at` and `.reduceat`
where NumPy defines them, and NumPy's attributes (`nin`, `nout`, `nargs`, `identity`, `types`,
`signature`, `__name__`). Everything is composed of primitives, so it differentiates, traces
and vectorizes.

Each ufunc, and each of the methods reduce, accumulate, reduceat and at, is a composite
primitive (core/primitive.py `Composite`): NumPy's own ufunc (method) is its kernel, run on the
buffers for a plain eager call, so its values are NumPy's by construction at one Python call more
than calling NumPy; everything else (tapes, traces, vectorized_map, devices, options NumPy's
loop would need `out=` for) runs the composition: dtypes resolved as NumPy does
(`ufunc_operands`), then `fn`, the ufunc's definition over primitives. The choice is inlined in
`__call__` and in each method (these are the hottest calls there are, see
tests/test_composites.py, which checks every kernel against its composition on the op table
and special values).
"""
import functools
import operator

import numpy as np
from ._ufunc_docs import ufunc_doc   # (data: the texts of tnp.add, tnp.exp ...)

from ..core.ndarray import ndarray
from ..core.primitive import bind, Composite
from ..core import dispatch as _door
from ..core import dtypes as _dt
from ..core import mutation as _mut
from ..primitives import elementwise as E, reduction as R, cumulative as C, indexing as IX
from ..primitives.shape import squeeze_p
from ..primitives._util import norm_axis
from ._core import ufunc_operands, ufunc_apply, asarray, _scalar, _PY, _make
from ._composites import select as where_
from .indexing import _getitem, _split_index, take
from .manipulation import (broadcast_to, concatenate, expand_dims, moveaxis, ravel, reshape,
                           squeeze, stack)
# (math.py makes its ufunc objects of this module: where= selects with the composite below them,
# and the methods compose primitives rather than call other ufunc objects)

_NO_VALUE = np._NoValue          # NumPy's own marker, so `initial=np._NoValue` passes through
_REORDERABLE_NO_IDENTITY = frozenset({"maximum", "minimum", "fmax", "fmin"})


def _operand(x):
    return x if type(x) is ndarray or type(x) in _PY else asarray(x)


def _host(x):
    if isinstance(x, ndarray):
        return x.numpy()
    if isinstance(x, tuple):
        return tuple(_host(e) for e in x)
    if isinstance(x, list):
        return [_host(e) for e in x]
    return x


def _dtype_name(d):
    return getattr(d, "name", getattr(d, "__name__", str(d)))


class ufunc:
    """A NumPy universal function on ndflow arrays (differentiable, traceable, vectorizable)."""
    __slots__ = ("__name__", "__qualname__", "_np", "_fn", "_prim", "_reduce", "_accumulate",
                 "nin", "nout", "nargs", "identity", "signature", "_reorderable", "_lane",
                 "_lane_s",
                 "__dict__", "__weakref__")

    def __init__(self, np_ufunc, fn, *, name=None, doc=None, reduce=None, accumulate=None,
                 prim=None):
        self._np = np_ufunc
        self._fn = fn
        # `fn` is `bind(prim, *operands)` (None: something else): the tape lane binds it
        # without the two calls in between
        self._prim = prim
        # the last dtype `same_loop` accepted for the tape lane (with an array partner): the
        # answer depends on the ufunc and the dtype alone, so the lane asks once per dtype run
        self._lane = None
        # (dtype, the Python scalar, its read-only 0-d of that dtype, the scalar first): the
        # last scalar partner of the tape lane, which `same_loop` accepted with that dtype
        # (core/dispatch.py `_lane_scalar`)
        self._lane_s = None
        self._reduce = reduce            # (x, axes, keepdims) -> reduction, when specialized
        self._accumulate = accumulate    # (x, axis) -> scan, when specialized
        self.__name__ = self.__qualname__ = name or np_ufunc.__name__
        self.nin = np_ufunc.nin
        self.nout = np_ufunc.nout
        self.nargs = np_ufunc.nargs
        self.identity = np_ufunc.identity
        self.signature = np_ufunc.signature
        self._reorderable = self.identity is not None or self.__name__ in _REORDERABLE_NO_IDENTITY
        self.__doc__ = doc or ufunc_doc(self.__name__)
        if self.signature is None:
            # the kernel is exactly what `__call__`'s eager branch runs on the buffers
            self.composite = Composite(self.__name__, np_ufunc, self._compose_call)

    # ------------------------------------------------------------------ attributes
    @property
    def types(self):
        return list(self._np.types)

    @property
    def ntypes(self):
        return self._np.ntypes

    def __repr__(self):
        return f"<ufunc '{self.__name__}'>"

    def __reduce__(self):
        return (_by_name, (self.__name__,))

    # ------------------------------------------------------------------ calling
    # the eager door's template for ufunc objects (core/dispatch.py): NumPy's ufunc on the
    # buffers, the tape lane, or `_general`
    __call__ = _door.ufunc_call

    def _general(self, ins, rest, kwargs):
        """The general route of a call (`rest`: positional `out`)."""
        return self._apply(ins, *_call_options(self, rest, kwargs))

    def _compose_call(self, *args, **kwargs):
        """The composition of a call: every path but the plain eager one."""
        return self._apply(args[:self.nin], *_call_options(self, args[self.nin:], kwargs))

    def _apply(self, args, out, where, dtype, casting):
        """The general path: NumPy's dtype resolution, then `fn` on primitives."""
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes from {self.nin} to {self.nargs} "
                            f"positional arguments but {len(args)} were given")
        ops = [_operand(x) for x in args]
        r = None
        if dtype is None:
            try:
                ins = ufunc_operands(self._np, *ops)
            except OverflowError:
                r = _out_of_range_comparison(self._np, ops)
                if r is None:
                    raise
        else:
            ins = self._operands_for_dtype(ops, _dt.canonical(dtype))
        if r is None:
            r = self._fn(*ins)
        if where is not True:
            outs = out if isinstance(out, tuple) else (out,) * self.nout
            if self.nout > 1:
                r = tuple(where_(where, ri, oi if oi is not None else ri)
                          for ri, oi in zip(r, outs))
            else:
                r = where_(where, r, outs[0] if outs[0] is not None else r)
        if out is None:
            return r
        return _write_out(self, r, out, casting)

    def _operands_for_dtype(self, ops, dtype):
        types = tuple((_dt.BOOL if type(o) is bool else type(o)) if type(o) in _PY else o.dtype
                      for o in ops)
        try:
            loop = self._np.resolve_dtypes(types + (None,) * self.nout,
                                           signature=(None,) * self.nin + (dtype,) * self.nout)
        except TypeError as e:
            raise TypeError(f"ufunc {self.__name__!r}: no loop for inputs "
                            f"{', '.join(_dtype_name(t) for t in types)} with dtype={dtype} "
                            f"({e})") from None
        res = []
        for o, d in zip(ops, loop[:self.nin]):
            if type(o) in _PY:
                res.append(_scalar(o, d))
            else:
                res.append(o if o.dtype == d else bind(E.convert_p, o, dtype=d))
        return res

    # ------------------------------------------------------------------ methods
    def _check_method(self, method, nin_msg, single_msg):
        if self.signature is not None:
            if method in ("outer", "at"):
                raise TypeError(f"method {method} is not allowed in ufunc with non-trivial "
                                f"signature" if method == "outer" else
                                f"{self.__name__}.at does not support ufunc with non-trivial "
                                f"signature: {self.__name__} has signature {self.signature}.")
            raise RuntimeError("Reduction not defined on ufunc with signature")
        if nin_msg and self.nin != 2:
            raise ValueError(nin_msg)
        if single_msg and self.nout != 1:
            raise ValueError(single_msg)

    def _method_dtype(self, method, d, dtype, *extra):
        return _probe_dtype(self._np, method, d, None if dtype is None else
                            _dt.canonical(dtype), *extra)

    # reduce, accumulate and reduceat: the calls of their composites (set below the class)
    def _reduce_composed(self, array, axis=0, dtype=None, out=None, keepdims=False,
                         initial=_NO_VALUE, where=True):
        """Reduce `array` along `axis` by applying the ufunc repeatedly, as NumPy's
        `ufunc.reduce` (add, multiply, maximum, minimum, logical and/or, fmax/fmin and
        logaddexp use dedicated reductions; other ufuncs fold pairwise (reorderable ones) or
        left to right)."""
        self._check_method("reduce", "reduce only supported for binary functions",
                           "reduce only supported for functions returning a single value")
        a = asarray(array)
        rd = self._method_dtype("reduce", a.dtype, dtype)
        scalar_identity = False
        if a.ndim == 0:
            # NumPy's rule for a 0-d array: axis 0, -1 or None "reduce" it by one application
            # to the identity (hypot.reduce(-1.5) is 1.5, add.reduce(-0.0) is +0.0); () leaves
            # it; any other axis is out of bounds
            if isinstance(axis, (tuple, list)) and len(axis) == 0:
                axes = ()
            elif axis is None or (not isinstance(axis, (tuple, list))
                                  and operator.index(axis) in (0, -1)):
                axes = ()
                scalar_identity = self.identity is not None
            else:
                bad = axis[0] if isinstance(axis, (tuple, list)) else axis
                raise np.exceptions.AxisError(operator.index(bad), 0)
        elif axis is None:
            axes = tuple(range(a.ndim))
        elif isinstance(axis, (tuple, list)):
            axes = tuple(norm_axis(operator.index(i), a.ndim) for i in axis)
            if len(set(axes)) != len(axes):
                raise ValueError("duplicate value in 'axis'")
        else:
            axes = (norm_axis(operator.index(axis), a.ndim),)
        if len(axes) > 1 and not self._reorderable:
            raise ValueError(f"reduction operation '{self.__name__}' is not reorderable, so at "
                             f"most one axis may be specified")
        has_init = initial is not _NO_VALUE and initial is not None
        if self._reduce is REDUCE_SUM and a.ndim and axes and (
                where is not True or (a.dtype != rd and rd.kind in "fc")):
            # NumPy's order of additions, which the mask or the cast decide (see add_reduce)
            r = add_reduce(a, axes, keepdims, rd, initial if has_init else None, where)
            return r if out is None else _write_out(self, r, out, "unsafe")
        x = a if a.dtype == rd else bind(E.convert_p, a, dtype=rd)
        ident = initial if has_init else self.identity
        mask = None
        if where is not True:
            if len(where.shape if isinstance(where, ndarray) else np.shape(where)) > a.ndim:
                # (the mask broadcasts to the operand, never the operand to the mask)
                raise ValueError("input operand has more dimensions than allowed by the axis "
                                 "remapping")
            if ident is None:
                raise ValueError(f"reduction operation '{self.__name__}' does not have an "
                                 f"identity, so to use a where mask one has to specify 'initial'")
            if self.identity is not None or self.__name__ in _REORDERABLE_NO_IDENTITY:
                # masked elements become the identity (or, for the idempotent extrema, the
                # initial value): they then change nothing
                fill = self.identity if self.identity is not None else initial
                x = where_(where, x, _const(fill, rd))
            else:
                mask = where_(where, True, False)
                mask = where_(mask, mask, bind(E.zeros_like_p, bind(E.convert_p, x,
                                                                    dtype=_dt.BOOL)))
        empty = any(x.shape[i] == 0 for i in axes)
        if empty:
            if ident is None:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} which "
                                 f"has no identity")
            shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdims \
                else tuple(d for i, d in enumerate(x.shape) if i not in axes)
            r = broadcast_to(_const(ident, rd), shape)
            r = bind(E.copy_p, r)
        elif not axes:
            r = x if not has_init else self._fn(_const(initial, rd), x)
            if scalar_identity and not has_init:
                r = self._fn(_const(self.identity, rd), x)
        elif self._reduce is not None:
            r = self._reduce(x, axes, bool(keepdims))
            if has_init:
                r = self._fn(_const(initial, rd), r)
        else:
            r = self._fold(x, axes, bool(keepdims), _const(initial, rd) if has_init else None,
                           mask)
        if r.dtype != rd:
            r = bind(E.convert_p, r, dtype=rd)
        return r if out is None else _write_out(self, r, out, "unsafe")

    def _fold(self, x, axes, keepdims, start, mask=None):
        rest = [d for i, d in enumerate(x.shape) if i not in axes]
        y = moveaxis(x, axes, tuple(range(len(axes))))
        if mask is not None:     # a where= mask of a non-reorderable ufunc: one axis
            mask = moveaxis(mask, axes, tuple(range(len(axes))))
        if len(axes) > 1:
            y = reshape(y, (-1,) + tuple(-1 if d is None else d for d in rest))
        n = y.shape[0]
        if n is None:
            raise ValueError(f"{self.__name__}.reduce folds along the reduced axis, whose size "
                             f"is unknown while tracing; give it a static size")
        if self._reorderable:
            r = _tree_fold(self._fn, y, n)
            if start is not None:
                r = self._fn(start, r)
        else:
            r = start
            for i in range(n):
                if r is None:
                    r = y[i]
                elif mask is None:
                    r = self._fn(r, y[i])
                else:          # masked elements are skipped
                    r = where_(mask[i], self._fn(r, y[i]), r)
        if keepdims:
            r = expand_dims(r, tuple(sorted(axes)))
        return r

    def _accumulate_composed(self, array, axis=0, dtype=None, out=None):
        """Cumulative application along `axis`, as NumPy's `ufunc.accumulate` (add, multiply,
        maximum and minimum use scan primitives; other reorderable ufuncs a log-depth scan,
        the rest a left-to-right loop)."""
        self._check_method("accumulate", "accumulate only supported for binary functions",
                           "accumulate only supported for functions returning a single value")
        a = asarray(array)
        if a.ndim == 0:
            ax = axis[0] if isinstance(axis, (tuple, list)) and len(axis) == 1 else axis
            if not isinstance(ax, (tuple, list)) and operator.index(ax) not in (0, -1):
                raise np.exceptions.AxisError(operator.index(ax), 0)    # (NumPy's order)
            raise TypeError("cannot accumulate on a scalar")
        if isinstance(axis, (tuple, list)):
            if len(axis) != 1:
                raise ValueError("accumulate does not allow multiple axes")
            axis = axis[0]
        axis = norm_axis(operator.index(axis), a.ndim)
        rd = self._method_dtype("accumulate", a.dtype, dtype)
        x = a if a.dtype == rd else bind(E.convert_p, a, dtype=rd)
        if self._accumulate is not None:
            r = self._accumulate(x, axis)
        else:
            y = moveaxis(x, axis, 0)
            n = y.shape[0]
            if n is None:
                raise ValueError(f"{self.__name__}.accumulate along an axis whose size is "
                                 f"unknown while tracing; give it a static size")
            r = moveaxis(_scan(self._fn, y, n, self._reorderable), 0, axis)
        if r.dtype != rd:
            r = bind(E.convert_p, r, dtype=rd)
        return r if out is None else _write_out(self, r, out, "unsafe")

    def outer(self, A, B, /, **kwargs):
        """self(a, b) for every pair: the result has shape A.shape + B.shape."""
        self._check_method("outer", "outer product only supported for binary functions", None)
        a, b = asarray(A), asarray(B)      # as NumPy: Python scalars become arrays here
        if b.ndim:
            a = expand_dims(a, tuple(range(a.ndim, a.ndim + b.ndim)))
        return self(a, b, **kwargs)

    def at(self, a, indices, b=None, /):
        """Unbuffered in-place `a[indices] = self(a[indices], b)`: repeated indices apply
        repeatedly. On an ndflow array under a tape or trace it is a functional update that
        rebinds `a` (as `a[i] = v` is); add/subtract take traced indices, the others need
        concrete ones (the repeats decide the order of the updates)."""
        if self.signature is not None:
            self._check_method("at", None, None)
        if self.nout != 1:
            raise ValueError("Only single output ufuncs supported at this time")
        if self.nin == 2 and b is None:
            raise ValueError("second operand needed for ufunc")
        if self.nin == 1 and b is not None:
            raise ValueError("second operand provided when ufunc is unary")
        if not isinstance(a, ndarray):
            self._np.at(a, _host(indices), *(() if b is None else (_host(b),)))
            return None
        if _door.writes_in_place(a):
            # AT's kernel: NumPy's in-place `at` on the buffer
            _at_kernel(self, a, _host(indices), None if b is None else _host(b))
            return None
        return self._at_composed(a, indices, b)

    def _at_composed(self, a, indices, b=None):
        """`at` as a functional update recorded by the mutation model (core/mutation.py)."""
        _mut.begin(a)
        ops = tuple(o for o in (indices, b) if isinstance(o, ndarray))
        _mut.assign(a, ops, lambda: _at(self, a, indices, b))
        return None

    def _reduceat_composed(self, array, indices, axis=0, dtype=None, out=None):
        """Reductions over the slices [indices[i], indices[i+1]) along `axis` (a single element
        where indices[i] >= indices[i+1]), as NumPy's `ufunc.reduceat`; indices must be
        concrete."""
        self._check_method("reduceat", "reduceat only supported for binary functions",
                           "reduceat only supported for functions returning a single value")
        a = asarray(array)
        if a.ndim == 0:
            if operator.index(axis) not in (0, -1):
                raise np.exceptions.AxisError(operator.index(axis), 0)    # (NumPy's order)
            raise TypeError("cannot reduceat on a scalar")
        if isinstance(indices, ndarray) and indices._t is not None:
            raise TypeError(f"{self.__name__}.reduceat needs concrete indices (the segments "
                            f"decide the shape of the work), got a traced array")
        idx = [operator.index(i) for i in np.asarray(_host(indices)).ravel()]
        axis = norm_axis(operator.index(axis), a.ndim)
        n = a.shape[axis]
        rd = self._method_dtype("reduceat", a.dtype, dtype)
        lead = (slice(None),) * axis
        parts = []
        for k, s in enumerate(idx):
            if s < 0 or (n is not None and s >= n):
                raise IndexError(f"index {s} out-of-bounds in {self.__name__}.reduceat "
                                 f"[0, {n})")
            e = idx[k + 1] if k + 1 < len(idx) else None
            if e is None or s < e:
                seg = _getitem(a, lead + (slice(s, e),))
                r = self.reduce(seg, axis=axis, dtype=rd)
                if self._np is np.add and rd.kind == "f" and seg.dtype.kind == "f":
                    # NumPy's reduceat starts each segment from its first element, reduce
                    # from the identity +0.0: a segment of -0.0 only sums to -0.0
                    zero = ufunc_apply(np.logical_and, E.logical_and_p,
                                       ufunc_apply(np.equal, E.eq_p, seg, 0),
                                       ufunc_apply(np.signbit, E.signbit_p, seg))
                    neg = bind(R.reduce_all_p, zero, axes=(axis,), keepdims=False)
                    r = where_(neg, _const(-0.0, rd), r)
                parts.append(r)
            else:
                v = squeeze(_getitem(a, lead + (slice(s, s + 1),)), axis)
                parts.append(v if v.dtype == rd else bind(E.convert_p, v, dtype=rd))
        if not parts:
            shape = list(a.shape)
            shape[axis] = 0
            return _make("zeros", tuple(shape), dtype=rd)
        r = stack(parts, axis=axis)
        return r if out is None else _write_out(self, r, out, "unsafe")


def _call_options(uf, args, kwargs):
    """(out, where, dtype, casting) from the rest of a ufunc call (out may be positional)."""
    extra = set(kwargs) - {"out", "where", "dtype", "casting", "order", "subok", "signature"}
    if extra:
        raise TypeError(f"{uf.__name__}() got an unexpected keyword argument {extra.pop()!r}")
    out = kwargs.get("out")
    if args:
        if len(args) > uf.nout or "out" in kwargs:
            raise TypeError(f"{uf.__name__}() takes from {uf.nin} to {uf.nargs} positional "
                            f"arguments but {uf.nin + len(args)} were given")
        out = args if uf.nout > 1 else args[0]
    return out, kwargs.get("where", True), kwargs.get("dtype"), kwargs.get("casting", "same_kind")


# The hot classes take (x, /, *args, **kwargs): with no options given that is the cheapest
# signature to call (keyword parameters with defaults cost more than an empty **kwargs)
class _Unary(ufunc):
    __slots__ = ()
    __call__ = _door.ufunc_unary


class _Binary(ufunc):
    __slots__ = ()
    __call__ = _door.ufunc_binary


class _Generalized(ufunc):
    """A generalized ufunc (a core signature, e.g. matmul's): calling it runs `fn` with the
    arguments as given (matmul: NumPy's kernel when plain, its primitive under tapes alone);
    NumPy defines none of the methods for these."""
    __slots__ = ()
    __call__ = _door.gufunc_call

    @property
    def __signature__(self):
        # what `inspect.signature` reports: the implementing function's parameters
        # (vecdot(x1, x2, /, out=None, *, axis=-1, ...)), not (*args, **kwargs)
        import inspect
        return inspect.signature(self._fn)


_COMPARISONS = (np.less, np.less_equal, np.greater, np.greater_equal, np.equal, np.not_equal)


def _out_of_range_comparison(np_ufunc, ops):
    """NumPy 2 compares an integer array with a Python int outside its dtype's range exactly
    (NEP 50: `int8_array < 1000` is all True, `uint8_array == -1` all False), where arithmetic
    raises OverflowError: the answer is the same for every element. None for other ufuncs."""
    if np_ufunc not in _COMPARISONS or len(ops) != 2:
        return None
    i = next((k for k, o in enumerate(ops) if type(o) is int), None)
    if i is None or not isinstance(ops[1 - i], ndarray) or ops[1 - i].dtype.kind not in "iu":
        return None          # (floats and bools: NumPy's OverflowError stands)
    big = np.inf if ops[i] > 0 else -np.inf
    const = bool(np_ufunc(big, 0) if i == 0 else np_ufunc(0, big))
    other = bind(E.convert_p, ops[1 - i], dtype=_dt.BOOL)
    return bind(E.full_like_p, other, fill_value=const)


def make_ufunc(np_ufunc, fn, **kw):
    """The ufunc object for NumPy's `np_ufunc`, computing `fn(*operands)` on operands already
    promoted to the loop's input dtypes."""
    if np_ufunc.signature is not None:
        cls = _Generalized
    elif np_ufunc.nout != 1:
        cls = ufunc
    else:
        cls = {1: _Unary, 2: _Binary}.get(np_ufunc.nin, ufunc)
    return cls(np_ufunc, fn, **kw)


# ------------------------------------------------------------------ the methods as composites
# Each method's kernel is NumPy's method on host buffers (the ufunc object first, so one
# composite serves every ufunc); the composition is the method's general path.
def _reduce_kernel(uf, array, axis=0, dtype=None, out=None, keepdims=False, initial=_NO_VALUE,
                   where=True):
    if initial is _NO_VALUE and where is True:
        return uf._np.reduce(array, axis, dtype, None, keepdims)
    kw = {} if initial is _NO_VALUE else {"initial": initial}
    if where is not True:
        kw["where"] = where
    return uf._np.reduce(array, axis=axis, dtype=dtype, keepdims=keepdims, **kw)


def _accumulate_kernel(uf, array, axis=0, dtype=None, out=None):
    return uf._np.accumulate(array, axis, dtype)


def _reduceat_kernel(uf, array, indices, axis=0, dtype=None, out=None):
    return uf._np.reduceat(array, indices, axis, dtype)


def _at_kernel(uf, a, indices, b=None):
    """In place on the eager array's buffer (a NumPy scalar buffer becomes an array first)."""
    buf = a._v
    if not isinstance(buf, np.ndarray):
        buf = a._v = np.array(buf)
    uf._np.at(buf, indices, *(() if b is None else (b,)))


REDUCE = Composite("ufunc.reduce", _reduce_kernel, ufunc._reduce_composed, ("out",))
ACCUMULATE = Composite("ufunc.accumulate", _accumulate_kernel, ufunc._accumulate_composed,
                       ("out",))
REDUCEAT = Composite("ufunc.reduceat", _reduceat_kernel, ufunc._reduceat_composed, ("out",))
AT = Composite("ufunc.at", _at_kernel, ufunc._at_composed)
# `uf.reduce(...)`, `uf.accumulate(...)`, `uf.reduceat(...)` are their composites' calls (the
# eager door's): NumPy's method when plain eager (its errors for ufuncs without the method are
# the composition's, `_check_method`), the composition else; they keep the composition's
# signature and docstring
ufunc.reduce = functools.wraps(ufunc._reduce_composed)(REDUCE.call)
ufunc.accumulate = functools.wraps(ufunc._accumulate_composed)(ACCUMULATE.call)
ufunc.reduceat = functools.wraps(ufunc._reduceat_composed)(REDUCEAT.call)


def _by_name(name):
    return getattr(_door.tnp, name)


# ------------------------------------------------------------------ helpers
@functools.lru_cache(maxsize=1024)
def _probe_dtype(np_ufunc, method, d, dtype):
    """The result dtype NumPy's method gives for input dtype `d` (and its errors, raised as
    NumPy raises them) from a one-element probe."""
    probe = np.ones((1,), d)
    if method == "reduce":
        return np_ufunc.reduce(probe, dtype=dtype).dtype
    if method == "accumulate":
        return np_ufunc.accumulate(probe, dtype=dtype).dtype
    return np_ufunc.reduceat(probe, [0], dtype=dtype).dtype


def _const(v, dtype):
    """A 0-d array of `dtype` holding v (NumPy's unsafe cast: bitwise_and's identity -1 in
    uint8 is 255)."""
    if isinstance(v, ndarray):
        return v if v.dtype == dtype else bind(E.convert_p, v, dtype=dtype)
    with np.errstate(all="ignore"):
        return asarray(np.asarray(v).astype(dtype))


def _tree_fold(fn, y, n):
    """fn over axis 0 of y by pairs (log2(n) binds): for associative ufuncs."""
    while n > 1:
        h = n // 2
        z = fn(y[0:2 * h:2], y[1:2 * h:2])
        if n % 2:
            z = concatenate([z, y[n - 1:n]])
        y, n = z, n - h
    return y[0]


def _scan(fn, y, n, associative):
    """Inclusive scan of fn over axis 0: Hillis-Steele doubling for associative ufuncs
    (log2(n) steps), else left to right."""
    if n == 0:
        return y
    if associative:
        k = 1
        while k < n:
            y = concatenate([y[:k], fn(y[:n - k], y[k:])])
            k *= 2
        return y
    acc = [y[0]]
    for i in range(1, n):
        acc.append(fn(acc[-1], y[i]))
    return stack(acc)


def _write_out(uf, r, out, casting):
    outs = out if isinstance(out, tuple) else (out,)
    rs = r if isinstance(r, tuple) else (r,)
    if len(outs) != len(rs):
        raise ValueError(f"The 'out' tuple must have exactly {len(rs)} entries: one per ufunc "
                         f"output")
    for o, v in zip(outs, rs):
        if o is None:
            continue
        if not isinstance(o, ndarray):
            raise TypeError(f"return arrays must be of ArrayType (ndflow arrays), got "
                            f"{type(o).__name__}")
        if not np.can_cast(v.dtype, o.dtype, casting=casting):
            raise TypeError(f"Cannot cast ufunc '{uf.__name__}' output from {v.dtype!r} to "
                            f"{o.dtype!r} with casting rule '{casting}'")
        o[...] = v
    if isinstance(out, tuple):
        return tuple(o if o is not None else v for o, v in zip(outs, rs))
    return outs[0]


def _at(uf, a, indices, b):
    """The functional form of `uf.at(a, indices, b)`: the updated array."""
    if uf.__name__ in ("add", "subtract") and a.dtype != _dt.BOOL:
        base, spec, arrays, inserted = _split_index(a, indices)
        v = asarray(b)
        if uf.__name__ == "subtract":
            v = uf(0, v) if v.dtype.kind != "b" else v
        # NumPy casts each update's result to a's dtype unsafely
        if v.dtype != a.dtype:
            v = bind(E.convert_p, v, dtype=a.dtype)
        r = bind(IX.index_add_p, base, v, *arrays, spec=spec)
        if inserted:
            r = bind(squeeze_p, r, axes=inserted)
        return r
    idx = indices
    if isinstance(idx, ndarray) or (isinstance(idx, tuple) and any(
            isinstance(i, ndarray) for i in idx)):
        host = _host(idx)
        if any(isinstance(i, ndarray) and i._t is not None
               for i in (idx if isinstance(idx, tuple) else (idx,))):
            raise TypeError(f"{uf.__name__}.at on an ndflow array under nf.function needs "
                            f"concrete indices (repeated indices apply in order); only add and "
                            f"subtract take traced ones")
        idx = host
    if None in a.shape:
        raise TypeError(f"{uf.__name__}.at needs the array's shape (unknown while tracing)")
    size = int(np.prod(a.shape, dtype=np.int64))
    pos = np.arange(size).reshape(a.shape)[idx]
    flat_pos = np.asarray(pos).ravel()
    order = np.argsort(flat_pos, kind="stable")
    sp = flat_pos[order]
    starts = np.r_[0, np.flatnonzero(sp[1:] != sp[:-1]) + 1] if sp.size else np.zeros(0, int)
    rank_sorted = np.arange(sp.size) - np.repeat(starts, np.diff(np.r_[starts, sp.size]))
    rank = np.empty_like(rank_sorted)
    rank[order] = rank_sorted
    flat = ravel(a)
    if b is not None:
        bb = ravel(broadcast_to(asarray(b), np.shape(pos)))
    for r in range(int(rank.max()) + 1 if rank.size else 0):
        sel = np.flatnonzero(rank == r)
        where_pos = asarray(flat_pos[sel])
        cur = take(flat, where_pos)
        new = uf(cur, take(bb, asarray(sel))) if b is not None else uf(cur)
        if new.dtype != a.dtype:
            new = bind(E.convert_p, new, dtype=a.dtype)
        flat = bind(IX.index_update_p, flat, new, where_pos, spec=(("a",),))
    return reshape(flat, a.shape)


# ------------------------------------------------------------------ specialized reductions/scans
def _mask(a, where):
    """`where` as a boolean mask over a. The mask broadcasts to a's shape, never a to the
    mask's (NumPy's reductions refuse a mask that would enlarge the array: its axes were
    counted on a)."""
    w = asarray(where)
    if w.ndim > a.ndim or any(
            d == 1 and e is not None and e != 1
            for d, e in zip(a.shape[a.ndim - w.ndim:], w.shape)):
        raise ValueError("input operand has more dimensions than allowed by the axis "
                         "remapping" if w.ndim > a.ndim else
                         f"non-broadcastable operand with shape {tuple(w.shape)} doesn't match "
                         f"the broadcast shape {tuple(a.shape)}")
    return w


def add_reduce(a, axes, keepdims, dtype, initial=None, where=None):
    """NumPy's sum of `a` in `dtype` where its rounding depends on the order NumPy's loop
    takes (a cast to a float dtype, a `where` mask, a start value with either): the
    `add_reduce` primitive, which calls NumPy with the same arguments (see its comment).
    `axes` normalised; `where` as NumPy takes it (True: no mask)."""
    if where is True:
        where = None
    ops = (a,)
    if where is not None:
        w = asarray(_mask(a, where), dtype=_dt.BOOL)
        if w.ndim < a.ndim:
            w = expand_dims(w, tuple(range(a.ndim - w.ndim)))
        ops += (w,)
    if initial is not None:
        initial = _start_value(initial)
    return bind(R.add_reduce_p, *ops, axes=tuple(axes), keepdims=bool(keepdims),
                dtype=np.dtype(dtype), initial=initial)


def _start_value(initial):
    """`initial` as the primitive's parameter: a Python number as it is, an array's one element
    as a NumPy scalar of its dtype (NumPy casts either to the result's dtype). Its value must
    be known when the sum is bound."""
    if isinstance(initial, ndarray):
        if initial._t is not None:
            raise TypeError("sum: `initial` must be a number known when the function is traced "
                            "(NumPy adds it before the elements, so it is a parameter of the "
                            "sum); got a traced array")
        initial = initial.numpy()
    if isinstance(initial, (bool, int, float, complex, np.generic)):
        return initial
    v = np.asarray(initial)
    if v.ndim or v.dtype.kind not in "biufc":
        raise ValueError(f"sum: `initial` must be a number, got {initial!r}")
    return v[()]


def reduce_with(prim):
    return lambda x, axes, keepdims: bind(prim, x, axes=axes, keepdims=keepdims)


def scan_with(prim):
    return lambda x, axis: bind(prim, x, axis=axis)


REDUCE_SUM = reduce_with(R.reduce_sum_p)
REDUCE_PROD = reduce_with(R.reduce_prod_p)
REDUCE_MAX = reduce_with(R.reduce_max_p)
REDUCE_MIN = reduce_with(R.reduce_min_p)
REDUCE_ALL = reduce_with(R.reduce_all_p)
REDUCE_ANY = reduce_with(R.reduce_any_p)
SCAN_SUM = scan_with(C.cumsum_p)
SCAN_PROD = scan_with(C.cumprod_p)
SCAN_MAX = scan_with(C.cummax_p)
SCAN_MIN = scan_with(C.cummin_p)
