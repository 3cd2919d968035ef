"""Functional programming: apply_along_axis, apply_over_axes, vectorize, frompyfunc.

`apply_along_axis` and `vectorize` run the Python function once on batched values
(`nf.vmap`), so a function written for one element or one row costs one call, stays
differentiable and can be compiled. When the function makes a Python decision on the values
(`if x > 0:`), which batched values cannot answer, they fall back to calling it element by
element (row by row) as NumPy does."""
import re

import numpy as np

from ..core.ndarray import ndarray, TracingError, static_size as _static_size
from ..core import dtypes as _dt
from ._core import asarray
from .manipulation import moveaxis, broadcast_to, expand_dims, stack, reshape
from ..primitives._util import norm_axis, broadcast_shapes
from ..vectorize.batching import vmap
from .creation import zeros
from .manipulation import transpose, broadcast_arrays


def _vmap_n(f, n):
    for _ in range(n):
        f = vmap(f)
    return f


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """`func1d` applied to the 1-d slices along `axis`, as `numpy.apply_along_axis`; the
    result's own dimensions replace `axis`. One batched call when the function allows it."""
    a = asarray(arr)
    nd = a.ndim
    axis = norm_axis(axis, nd)
    v = moveaxis(a, axis, -1)
    lead = tuple(v.shape[:-1])
    if any(d == 0 for d in lead):
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")

    def row(x):
        return asarray(func1d(x, *args, **kwargs))
    try:
        out = _vmap_n(row, len(lead))(v)
    except TracingError:
        if None in lead:
            raise
        rows = [row(v[i]) for i in np.ndindex(*lead)]
        first = rows[0]
        rows = [r if r.dtype == first.dtype else r.astype(first.dtype) for r in rows]
        out = reshape(stack(rows), lead + tuple(first.shape))
    k = out.ndim - len(lead)
    # the result's dimensions go where `axis` was
    perm = list(range(len(lead)))
    perm = perm[:axis] + list(range(len(lead), len(lead) + k)) + perm[axis:]
    return transpose(out, perm)


def apply_over_axes(func, a, axes):
    """`func(a, axis)` applied over each axis in turn, keeping the dimensions, as
    `numpy.apply_over_axes`."""
    val = asarray(a)
    N = val.ndim
    if np.ndim(axes) == 0:
        axes = (axes,)
    for axis in axes:
        if axis < 0:
            axis = N + axis
        res = asarray(func(val, axis))
        if res.ndim == val.ndim:
            val = res
        else:
            res = expand_dims(res, axis)
            if res.ndim == val.ndim:
                val = res
            else:
                raise ValueError("function is not returning an array of the correct shape")
    return val


# ------------------------------------------------------------------ vectorize
_DIMENSION_NAME = r"\w+"
_CORE_DIMENSION_LIST = f"(?:{_DIMENSION_NAME}(?:,{_DIMENSION_NAME})*)?"
_ARGUMENT = rf"\({_CORE_DIMENSION_LIST}\)"
_ARGUMENT_LIST = f"{_ARGUMENT}(?:,{_ARGUMENT})*"
_SIGNATURE = f"^{_ARGUMENT_LIST}->{_ARGUMENT_LIST}$"


def _parse_signature(signature):
    """'(m,n),(n)->(m)' -> ([('m', 'n'), ('n',)], [('m',)])."""
    sig = re.sub(r"\s+", "", signature)
    if not re.match(_SIGNATURE, sig):
        raise ValueError(f"not a valid gufunc signature: {signature}")
    ins, outs = sig.split("->")

    def parse(part):
        return [tuple(re.findall(_DIMENSION_NAME, arg)) for arg in re.findall(_ARGUMENT, part)]
    return parse(ins), parse(outs)


_NoValue = object()


class vectorize:
    """A function of scalars (or of core arrays, with `signature=`) applied elementwise with
    broadcasting, as `numpy.vectorize`; `excluded` arguments are passed through, `otypes` sets
    the output dtypes. It runs the function once on batched values (`nf.vmap`), so it is fast,
    differentiable and traceable; a function that makes Python decisions on the values runs
    element by element instead, as NumPy's does. Usable as a decorator, with or without
    keyword arguments. `cache` is accepted (the function is never called an extra time)."""

    def __init__(self, pyfunc=_NoValue, otypes=None, doc=None, excluded=None, cache=False,
                 signature=None):
        if pyfunc is not _NoValue and not callable(pyfunc):
            raise TypeError("When used as a decorator, only accepts keyword arguments.")
        self.pyfunc = pyfunc
        self.cache = cache
        self.signature = signature
        if pyfunc is not _NoValue and hasattr(pyfunc, "__name__"):
            self.__name__ = pyfunc.__name__
        self._doc = doc
        self.__doc__ = doc if doc is not None else getattr(pyfunc, "__doc__", None)
        if isinstance(otypes, str):
            for ch in otypes:
                if ch not in np.typecodes["All"]:
                    raise ValueError(f"Invalid otype specified: {ch}")
            otypes = [np.dtype(ch) for ch in otypes]
        elif otypes is not None:
            try:
                otypes = [np.dtype(t) for t in otypes]
            except TypeError:
                raise ValueError("Invalid otype specification") from None
        self.otypes = otypes
        self.excluded = set(excluded) if excluded is not None else set()
        self._core = _parse_signature(signature) if signature is not None else None

    def __call__(self, *args, **kwargs):
        if self.pyfunc is _NoValue:
            (f,) = args
            self.pyfunc = f
            self.__name__ = getattr(f, "__name__", "vectorized")
            self.__doc__ = self._doc if self._doc is not None else f.__doc__
            return self
        excluded = self.excluded
        names = [n for n in kwargs if n not in excluded]
        inds = [i for i in range(len(args)) if i not in excluded]
        vargs = [args[i] for i in inds] + [kwargs[n] for n in names]

        def func(*vals):
            the_args = list(args)
            for k, i in enumerate(inds):
                the_args[i] = vals[k]
            kw = dict(kwargs)
            kw.update(zip(names, vals[len(inds):]))
            return self.pyfunc(*the_args, **kw)
        if self._core is not None:
            return self._call_with_signature(func, vargs)
        if not vargs:
            return func()
        return self._call_elementwise(func, vargs)

    # -- elementwise: broadcast, then one batched call over every element
    def _call_elementwise(self, func, vargs):
        arrs = [asarray(a) for a in vargs]
        bs = list(broadcast_arrays(*arrs)) if len(arrs) > 1 else arrs
        shape = tuple(bs[0].shape)
        if self.otypes is None and any(_static_size(a) == 0 for a in arrs):
            raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is set")
        if _static_size(bs[0]) == 0:
            outs = [_empty(shape, t) for t in self.otypes]
            return outs[0] if len(outs) == 1 else tuple(outs)
        known = None not in shape
        flat = [reshape(b, (-1,)) for b in bs] if known else bs
        multi = []          # whether pyfunc returns a tuple (then so does vectorize)

        def one(*xs):
            r = func(*xs)
            multi.append(isinstance(r, tuple))
            return tuple(asarray(v) for v in r) if isinstance(r, tuple) else (asarray(r),)
        try:
            res = _vmap_n(one, 1 if known else len(shape))(*flat)
        except TracingError:
            if not known:
                raise
            multi.clear()
            res = self._loop(one, flat)
        outs = []
        for k, r in enumerate(res):
            if known:
                r = reshape(r, shape)
            if self.otypes is not None and k < len(self.otypes) and r.dtype != self.otypes[k]:
                r = r.astype(self.otypes[k])
            outs.append(r)
        return tuple(outs) if multi and multi[0] else outs[0]

    def _loop(self, one, flat):
        """Element by element, NumPy's way: the first result's dtypes decide the outputs'."""
        n = flat[0].shape[0]
        results = [one(*[f[i] for f in flat]) for i in range(n)]
        types = self.otypes or [r.dtype for r in results[0]]
        return tuple(stack([r[k] if r[k].dtype == types[k] else r[k].astype(types[k])
                            for r in results]) for k in range(len(results[0])))

    # -- generalized: core dimensions from the signature
    def _call_with_signature(self, func, vargs):
        ins, outs_core = self._core
        if len(vargs) != len(ins):
            raise TypeError(f"wrong number of positional arguments: expected {len(ins)}, got "
                            f"{len(vargs)}")
        arrs = [asarray(a) for a in vargs]
        sizes = {}
        loops = []
        for a, core in zip(arrs, ins):
            nc = len(core)
            if a.ndim < nc:
                raise ValueError(f"{a.ndim}-dimensional argument does not have enough dimensions "
                                 f"for all core dimensions {core!r}")
            for name, d in zip(core, a.shape[a.ndim - nc:]):
                if name in sizes and d is not None and sizes[name] is not None and \
                        sizes[name] != d:
                    raise ValueError(f"inconsistent size for core dimension {name!r}: {d} vs "
                                     f"{sizes[name]}")
                sizes.setdefault(name, d)
            loops.append(tuple(a.shape[:a.ndim - nc]))
        loop = broadcast_shapes(*loops)
        bs = []
        for a, core in zip(arrs, ins):
            nc = len(core)
            target = tuple(loop) + tuple(a.shape[a.ndim - nc:])
            if a.ndim < len(target):
                a = expand_dims(a, tuple(range(len(target) - a.ndim)))
            if tuple(a.shape) != target:
                a = broadcast_to(a, target)
            bs.append(a)
        nout = len(outs_core)

        def one(*xs):
            r = func(*xs)
            n = len(r) if isinstance(r, tuple) else 1
            if n != nout:
                raise ValueError(f"wrong number of outputs from pyfunc: expected {nout}, got {n}")
            r = r if isinstance(r, tuple) else (r,)
            out = []
            for v, core in zip(r, outs_core):
                v = asarray(v)
                if v.ndim != len(core):
                    raise ValueError(f"output has {v.ndim} dimensions, the signature says "
                                     f"{len(core)} ({core!r})")
                for name, d in zip(core, v.shape):
                    if name in sizes and sizes[name] is not None and d is not None and \
                            sizes[name] != d:
                        raise ValueError(f"inconsistent size for core dimension {name!r}: {d} "
                                         f"vs {sizes[name]}")
                out.append(v)
            return tuple(out)
        if any(d == 0 for d in loop):
            if self.otypes is None:
                raise ValueError("cannot call `vectorize` on size 0 inputs unless `otypes` is "
                                 "set")
            if any(n not in sizes for c in outs_core for n in c):
                raise ValueError("cannot call `vectorize` with a signature including new output "
                                 "dimensions on size 0 inputs")
            res = tuple(_empty(tuple(loop) + tuple(sizes[n] for n in c), t)
                        for c, t in zip(outs_core, self.otypes))
            return res[0] if nout == 1 else res
        try:
            res = _vmap_n(one, len(loop))(*bs)
        except TracingError:
            if None in loop:
                raise
            rows = [one(*[b[i] for b in bs]) for i in np.ndindex(*loop)]
            res = tuple(reshape(stack([r[k] for r in rows]), tuple(loop) + tuple(rows[0][k].shape))
                        for k in range(nout))
        if self.otypes is not None:
            res = tuple(r if r.dtype == t else r.astype(t) for r, t in zip(res, self.otypes))
        return res[0] if nout == 1 else tuple(res)


def _empty(shape, dtype):
    return zeros(shape, _dt.canonical(dtype))


# ------------------------------------------------------------------ frompyfunc
def frompyfunc(func, /, nin, nout, *, identity=None):
    """A broadcasting Python-level "ufunc" from `func`, as `numpy.frompyfunc`, run on the host
    element by element. Difference: NumPy returns object arrays, which ndflow does not have;
    results are converted to the dtype NumPy infers from them (a TypeError if they are not
    numbers)."""
    if nin < 0 or nout < 0:
        raise ValueError("nin and nout must be non-negative")
    f = np.frompyfunc(func, nin, nout, identity=identity)

    def call(*args):
        host = [a.numpy() if isinstance(a, ndarray) else a for a in args]
        r = f(*host)
        conv = (lambda v: asarray(np.array(np.asarray(v, dtype=object).tolist())))
        return tuple(conv(v) for v in r) if nout > 1 else conv(r)
    call.__name__ = getattr(func, "__name__", "frompyfunc")
    call.nin, call.nout, call.identity = nin, nout, identity
    return call
