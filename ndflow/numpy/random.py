"""`tnp.random`: NumPy's legacy module functions and `RandomState`, and `Generator` via
`default_rng`, drawing ndflow arrays.

Streams: every draw calls NumPy's own sampler on a NumPy stream, so `tnp.random.seed(s)` then
`tnp.random.normal(...)` gives `np.random.seed(s); np.random.normal(...)` and
`tnp.random.default_rng(s)` gives `np.random.default_rng(s)` (PCG64), value for value. The
global stream is ndflow's own: seeding NumPy's does not move it.

Draws are effects: inside `nf.function` every call draws fresh numbers at run time (never
constant-folded, never merged). Under `vectorized_map` a draw whose parameters carry the batch
axis draws for every example; one whose parameters do not draws once for all examples.

Gradients: distributions given ndflow arrays as parameters are composed from a standard draw
where they are location/scale families, so gradients reach those parameters (NumPy computes
the same `loc + scale * z` in C, so the stream is unchanged):
normal (loc, scale), uniform (low, high), lognormal (mean, sigma), laplace, logistic, gumbel
(loc, scale), exponential (scale), rayleigh (scale), gamma (scale), weibull (a: the Weibull draw
is a power of an exponential one), multivariate_normal (mean). `choice`, `permutation`,
`permuted` and `shuffle` gather from the array, so gradients reach its elements. Other
parameters (shape parameters, degrees of freedom, probabilities, cov) get no gradient (None),
as in TensorFlow's stateful random ops. Integer draws have no gradient.

Differences from NumPy: scalars come back as 0-d ndflow arrays; float draws are float32 under
`experimental_enable_numpy_behavior(prefer_float32=True)`; `bytes` returns Python bytes drawn
when it is called (also while tracing); `shuffle` works in place on ndflow arrays (and NumPy
arrays and lists, through NumPy).
"""
import operator
import warnings

import numpy as np
from numpy.random import (BitGenerator, MT19937, PCG64, PCG64DXSM, Philox, SFC64,  # noqa: F401
                          SeedSequence)

from ..core import dtypes as _dt
from ..core.ndarray import ndarray
from ..core.primitive import bind
from ..primitives import random as Rp
from ..primitives._util import broadcast_shapes as _bshape, norm_axis as _norm_axis
from ._core import asarray
from .indexing import take as _take, take_along_axis as _take_along_axis
from .math import (add as _add, multiply as _multiply, exp as _exp, subtract as _subtract, equal as _equal, where_ as _where, power as _power,
                   true_divide as _true_divide)

__all__ = [
    "beta", "binomial", "bytes", "chisquare", "choice", "default_rng", "dirichlet",
    "exponential", "f", "gamma", "geometric", "get_bit_generator", "get_state", "gumbel",
    "hypergeometric", "laplace", "logistic", "lognormal", "logseries", "multinomial",
    "multivariate_normal", "negative_binomial", "noncentral_chisquare", "noncentral_f", "normal",
    "pareto", "permutation", "poisson", "power", "rand", "randint", "randn", "random",
    "random_integers", "random_sample", "ranf", "rayleigh", "sample", "seed",
    "set_bit_generator", "set_state", "shuffle", "standard_cauchy", "standard_exponential",
    "standard_gamma", "standard_normal", "standard_t", "triangular", "uniform", "vonmises",
    "wald", "weibull", "zipf", "Generator", "RandomState", "BitGenerator", "MT19937", "PCG64",
    "PCG64DXSM", "Philox", "SFC64", "SeedSequence"]

_I64 = np.dtype(np.int64)
_PY = (float, int, bool)


# ------------------------------------------------------------------ argument handling
def _size(size):
    t = type(size)
    if size is None or t is tuple and all(type(d) is int for d in size):
        return size
    if t is int:
        return (size,)
    if isinstance(size, ndarray):
        size = size.numpy().tolist()
    if np.ndim(size) == 0:
        return (operator.index(size),)
    return tuple(operator.index(s) for s in size)


def _is_scalar(v):
    return type(v) in _PY or not isinstance(v, ndarray) and np.ndim(v) == 0


def _static(v):
    return v[()] if isinstance(v, np.ndarray) else v


def _as_param(v):
    """An array parameter as an ndflow array; NumPy arrays and lists keep NumPy's dtype."""
    return v if isinstance(v, ndarray) else asarray(np.asarray(v))


def _concrete(a):
    return isinstance(a, ndarray) and a._t is None


def _float(dtype=None):
    return _dt.default_float() if dtype is None else _dt.canonical(dtype)


def _check_size(size, *shapes):
    """NumPy's rule: parameters broadcast to `size` (sizes unknown while tracing pass)."""
    if size is None:
        return
    try:
        full = np.broadcast_shapes(size, *[tuple(1 if d is None else d for d in sh)
                                           for sh in shapes])
    except ValueError:
        full = None
    if full != tuple(size):
        raise ValueError(f"shape mismatch: parameters of shapes "
                         f"{', '.join(str(tuple(sh)) for sh in shapes)} cannot be broadcast to "
                         f"size {tuple(size)}")


class _Sampler:
    """Distributions shared by RandomState and Generator (same names and signatures)."""

    _rs = None       # the NumPy stream; None: the global one, looked up when a draw runs

    def _np(self):
        return Rp.STREAM["rs"] if self._rs is None else self._rs

    # -------------------------------------------------------------- the one way to draw
    def _draw(self, method, size, params=(), kind="f", dtype=None, shape=None, extra=(),
              elementwise=True, has_size=True, tie=None):
        """`method` of the NumPy stream; `params` (name, value) broadcast against `size`
        (scalars are static arguments, arrays are inputs of the draw); `tie`: an ndflow array
        the draw is made for (batching it draws for every example)."""
        size = _size(size)
        names, arrays = (), []
        if isinstance(tie, ndarray):
            names, arrays = ("!",), [tie]
        if params or extra:
            static = dict(extra)
            for name, v in params:
                if v is None or _is_scalar(v):
                    static[name] = _static(v)
                else:
                    names += (name,)
                    arrays.append(_as_param(v))
            if has_size:
                static["size"] = size
            static = tuple(sorted(static.items()))
        else:
            static = (("size", size),) if has_size else ()
        if shape is None:
            shape = size if size is not None else _bshape(*[a.shape for a in arrays])
        if kind == "f":
            dtype = _float(dtype)
        elif dtype is None:
            dtype = _I64
        return bind(Rp.random_draw_p, *arrays, method=method, rs=self._rs, static=static,
                    names=names, shape=tuple(shape), dtype=np.dtype(dtype),
                    elementwise=elementwise)

    def _standard(self, method, size, params, extra=(), dtype=None):
        """A standard draw (static parameters `extra`) of `size`, or of the shape that the
        array `params` broadcast to (lent at run time). The arrays are inputs of the draw, so
        batching them draws for every example."""
        size = _size(size)
        shapes = [np.shape(v) if not isinstance(v, ndarray) else v.shape for v in params]
        _check_size(size, *[s for s in shapes if s])
        donors = tuple(("~%d" % i, v) for i, v in enumerate(params) if not _is_scalar(v))
        shape = size if size is not None else _bshape(*shapes) if shapes else ()
        return self._draw(method, size, donors, extra=extra, dtype=dtype, shape=shape)

    def _reparam(self, params):
        return any(isinstance(v, ndarray) for v in params)

    @staticmethod
    def _nonnegative(v, name):
        if _is_scalar(v):
            if v < 0:
                raise ValueError(f"{name} < 0")
        elif _concrete(v) and np.any(v.numpy() < 0):
            raise ValueError(f"{name} < 0")

    def _loc_scale(self, method, loc, scale, size, names=("loc", "scale")):
        """loc + scale * z with z = method(0, 1): NumPy's own arithmetic in C, so the same
        numbers, and differentiable in loc and scale when they are ndflow arrays."""
        if not self._reparam((loc, scale)):
            return self._draw(method, size, ((names[0], loc), (names[1], scale)))
        self._nonnegative(scale, names[1])
        z = self._standard(method, size, (loc, scale), extra=((names[0], 0.0), (names[1], 1.0)))
        return _add(loc if _is_scalar(loc) else _as_param(loc),
                   _multiply(scale if _is_scalar(scale) else _as_param(scale), z))

    def _scaled(self, method, scale, size, std_params=(), name="scale"):
        """scale * z with z = method(..., scale=1)."""
        if not self._reparam((scale,)):
            return self._draw(method, size, tuple(std_params) + ((name, scale),))
        self._nonnegative(scale, name)
        arrays = [v for _, v in std_params if not _is_scalar(v)]
        if arrays:     # standard_gamma(shape) with an array shape: an input of the draw
            size = _size(size)
            shp = [np.shape(v) if not isinstance(v, ndarray) else v.shape for _, v in std_params]
            full = size if size is not None else _bshape(scale.shape, *shp)
            _check_size(size, scale.shape, *shp)
            z = self._draw(method, full, tuple(std_params) + (("~s", scale),),
                           extra=() if name is None else ((name, 1.0),))
        else:
            z = self._standard(method, size, (scale,), extra=tuple(std_params) +
                               (() if name is None else ((name, 1.0),)))
        return _multiply(_as_param(scale), z)

    # -------------------------------------------------------------- continuous
    def beta(self, a, b, size=None):
        """Beta distribution (no gradient to a, b)."""
        return self._draw("beta", size, (("a", a), ("b", b)))

    def chisquare(self, df, size=None):
        """Chi-square distribution (no gradient to df)."""
        return self._draw("chisquare", size, (("df", df),))

    def exponential(self, scale=1.0, size=None):
        """Exponential distribution; differentiable in `scale` (an ndflow array)."""
        return self._scaled("exponential", scale, size)

    def f(self, dfnum, dfden, size=None):
        """F distribution (no gradient to the degrees of freedom)."""
        return self._draw("f", size, (("dfnum", dfnum), ("dfden", dfden)))

    def gamma(self, shape, scale=1.0, size=None):
        """Gamma distribution; differentiable in `scale` (scale * standard_gamma(shape)), not in
        `shape`."""
        if not self._reparam((scale,)):
            return self._draw("gamma", size, (("shape", shape), ("scale", scale)))
        return self._scaled("standard_gamma", scale, size, (("shape", shape),), name=None)

    def gumbel(self, loc=0.0, scale=1.0, size=None):
        """Gumbel distribution; differentiable in loc and scale."""
        return self._loc_scale("gumbel", loc, scale, size)

    def laplace(self, loc=0.0, scale=1.0, size=None):
        """Laplace distribution; differentiable in loc and scale."""
        return self._loc_scale("laplace", loc, scale, size)

    def logistic(self, loc=0.0, scale=1.0, size=None):
        """Logistic distribution; differentiable in loc and scale."""
        return self._loc_scale("logistic", loc, scale, size)

    def lognormal(self, mean=0.0, sigma=1.0, size=None):
        """Log-normal distribution (exp of a normal draw); differentiable in mean and sigma."""
        if not self._reparam((mean, sigma)):
            return self._draw("lognormal", size, (("mean", mean), ("sigma", sigma)))
        self._nonnegative(sigma, "sigma")
        return _exp(self._loc_scale("normal", mean, sigma, size))

    def noncentral_chisquare(self, df, nonc, size=None):
        """Noncentral chi-square distribution (no gradient to its parameters)."""
        return self._draw("noncentral_chisquare", size, (("df", df), ("nonc", nonc)))

    def noncentral_f(self, dfnum, dfden, nonc, size=None):
        """Noncentral F distribution (no gradient to its parameters)."""
        return self._draw("noncentral_f", size, (("dfnum", dfnum), ("dfden", dfden),
                                                 ("nonc", nonc)))

    def normal(self, loc=0.0, scale=1.0, size=None):
        """Normal distribution; differentiable in loc and scale (ndflow arrays)."""
        return self._loc_scale("normal", loc, scale, size)

    def pareto(self, a, size=None):
        """Pareto II (Lomax) distribution (no gradient to a)."""
        return self._draw("pareto", size, (("a", a),))

    def power(self, a, size=None):
        """Power distribution on [0, 1] (no gradient to a)."""
        return self._draw("power", size, (("a", a),))

    def rayleigh(self, scale=1.0, size=None):
        """Rayleigh distribution; differentiable in `scale`."""
        return self._scaled("rayleigh", scale, size)

    def standard_cauchy(self, size=None):
        """Standard Cauchy distribution."""
        return self._draw("standard_cauchy", size)

    def standard_t(self, df, size=None):
        """Student's t distribution (no gradient to df)."""
        return self._draw("standard_t", size, (("df", df),))

    def triangular(self, left, mode, right, size=None):
        """Triangular distribution (no gradient to its parameters)."""
        return self._draw("triangular", size, (("left", left), ("mode", mode),
                                               ("right", right)))

    def uniform(self, low=0.0, high=1.0, size=None):
        """Uniform on [low, high), as `numpy.random.uniform` (the same values for the same seed);
        differentiable in low and high (low + (high - low) * u).

        Examples
        --------
        >>> import ndflow.numpy as tnp
        >>> tnp.random.seed(0)
        >>> tnp.random.uniform(-1., 1., size=2)
        array([0.09762701, 0.43037873], dtype=float64)
        """
        if not self._reparam((low, high)):
            return self._draw("uniform", size, (("low", low), ("high", high)))
        lo = low if _is_scalar(low) else _as_param(low)
        hi = high if _is_scalar(high) else _as_param(high)
        u = self._standard("uniform", size, (low, high), extra=(("low", 0.0), ("high", 1.0)))
        return _add(lo, _multiply(_subtract(hi, lo), u))

    def vonmises(self, mu, kappa, size=None):
        """von Mises distribution (no gradient to mu, kappa)."""
        return self._draw("vonmises", size, (("mu", mu), ("kappa", kappa)))

    def wald(self, mean, scale, size=None):
        """Wald (inverse Gaussian) distribution (no gradient to its parameters)."""
        return self._draw("wald", size, (("mean", mean), ("scale", scale)))

    def weibull(self, a, size=None):
        """Weibull distribution; differentiable in `a` (an ndflow array): the draw is
        standard_exponential() ** (1/a), as NumPy computes it (NumPy draws nothing where a == 0;
        ndflow draws there too, so a stream with such zeros moves on differently)."""
        if not self._reparam((a,)):
            return self._draw("weibull", size, (("a", a),))
        self._nonnegative(a, "a")
        e = self._standard("standard_exponential", size, (a,))
        zero = _equal(a, 0)
        safe = _where(zero, 1.0, a)
        return _where(zero, 0.0, _power(e, _true_divide(1.0, safe)))

    def dirichlet(self, alpha, size=None):
        """Dirichlet distribution over len(alpha) categories (no gradient to alpha)."""
        k = (_as_param(alpha) if not isinstance(alpha, ndarray) else alpha).shape[-1:]
        s = _size(size)
        return self._draw("dirichlet", size, (("alpha", alpha),),
                          shape=(s if s is not None else ()) + tuple(k), elementwise=False)

    # -------------------------------------------------------------- discrete
    def binomial(self, n, p, size=None):
        """Binomial distribution (int64)."""
        return self._draw("binomial", size, (("n", n), ("p", p)), kind="i")

    def geometric(self, p, size=None):
        """Geometric distribution (int64)."""
        return self._draw("geometric", size, (("p", p),), kind="i")

    def hypergeometric(self, ngood, nbad, nsample, size=None):
        """Hypergeometric distribution (int64)."""
        return self._draw("hypergeometric", size, (("ngood", ngood), ("nbad", nbad),
                                                   ("nsample", nsample)), kind="i")

    def logseries(self, p, size=None):
        """Logarithmic series distribution (int64)."""
        return self._draw("logseries", size, (("p", p),), kind="i")

    def negative_binomial(self, n, p, size=None):
        """Negative binomial distribution (int64)."""
        return self._draw("negative_binomial", size, (("n", n), ("p", p)), kind="i")

    def poisson(self, lam=1.0, size=None):
        """Poisson distribution (int64)."""
        return self._draw("poisson", size, (("lam", lam),), kind="i")

    def zipf(self, a, size=None):
        """Zipf distribution (int64)."""
        return self._draw("zipf", size, (("a", a),), kind="i")

    def multinomial(self, n, pvals, size=None):
        """Multinomial distribution (int64, last axis: the len(pvals) categories)."""
        pv = _as_param(pvals)
        s = _size(size)
        lead = s if s is not None else _bshape(np.shape(n) if _is_scalar(n) or not isinstance(
            n, ndarray) else n.shape, pv.shape[:-1])
        return self._draw("multinomial", size, (("n", n), ("pvals", pv)), kind="i",
                          shape=tuple(lead) + tuple(pv.shape[-1:]), elementwise=False)

    def multivariate_normal(self, mean, cov, size=None, check_valid="warn", tol=1e-8, **kw):
        """Multivariate normal distribution (the last axis has len(mean)); differentiable in
        `mean` (an ndflow array), not in `cov`."""
        m = _as_param(mean)
        s = _size(size)
        shape = (s if s is not None else ()) + tuple(m.shape[-1:])
        extra = (("check_valid", check_valid), ("tol", tol)) + tuple(sorted(kw.items()))
        if not isinstance(mean, ndarray):
            return self._draw("multivariate_normal", size, (("mean", m), ("cov", cov)),
                              shape=shape, extra=extra, elementwise=False)
        if m.ndim != 1 or m.shape[0] is None:
            raise ValueError("mean must be 1 dimensional (of a size known while tracing)")
        zero = asarray(np.zeros(m.shape, dtype=np.float64))
        z = self._draw("multivariate_normal", size, (("mean", zero), ("cov", cov)),
                       shape=shape, extra=extra, elementwise=False, tie=m)
        return _add(m, z)

    # -------------------------------------------------------------- permutations
    def _indices(self, n, x=None):
        """A permutation of arange(n) (for the array x: batching x permutes every example)."""
        return self._draw("permutation", None, extra=(("x", int(n)),), kind="i", shape=(n,),
                          has_size=False, elementwise=False, tie=x)

    def _gather(self, x, idx, axis):
        return _take(x, idx, axis=axis)


class RandomState(_Sampler):
    """NumPy's legacy `RandomState` (Mersenne Twister, the legacy samplers) whose draws are
    ndflow arrays. `RandomState(seed)` and `np.random.RandomState(seed)` give the same
    numbers; a `numpy.random.BitGenerator` can be passed instead of a seed."""

    def __init__(self, seed=None):
        self._rs = seed._np() if isinstance(seed, RandomState) else np.random.RandomState(seed)

    def __repr__(self):
        return "RandomState(MT19937)" if self._rs is not None else "RandomState(global)"

    # -------------------------------------------------------------- state
    def seed(self, seed=None):
        """Reseed the stream, as `numpy.random.seed`."""
        self._np().seed(seed)

    def get_state(self, legacy=True):
        """The stream's state, in NumPy's format (`set_state` and NumPy accept it)."""
        return self._np().get_state(legacy=legacy)

    def set_state(self, state):
        """Set the stream's state (from `get_state`, ours or NumPy's)."""
        self._np().set_state(state)

    def bytes(self, length):
        """`length` random bytes (Python bytes, drawn when called, also while tracing)."""
        return self._np().bytes(length)

    # -------------------------------------------------------------- uniform and normal
    def rand(self, *args):
        """Uniform [0, 1) samples of shape `args` (a 0-d array for none)."""
        return self._draw("random_sample", args if args else None)

    def randn(self, *args):
        """Standard normal samples of shape `args`, as `numpy.random.randn` (the same values for the
        same seed); a 0-d array for no arguments (NumPy: a float). Inside `nf.function` new
        samples are drawn at every call.

        Examples
        --------
        >>> import ndflow.numpy as tnp
        >>> tnp.random.seed(0)
        >>> tnp.random.randn(2, 2).shape
        (2, 2)
        """
        return self._draw("standard_normal", args if args else None)

    def random_sample(self, size=None):
        """Uniform [0, 1) samples."""
        return self._draw("random_sample", size)

    def random(self, size=None):
        """Uniform [0, 1) samples (alias of random_sample)."""
        return self._draw("random_sample", size)

    def standard_normal(self, size=None):
        """Standard normal samples."""
        return self._draw("standard_normal", size)

    def standard_exponential(self, size=None):
        """Standard exponential samples."""
        return self._draw("standard_exponential", size)

    def standard_gamma(self, shape, size=None):
        """Standard gamma samples (no gradient to shape)."""
        return self._draw("standard_gamma", size, (("shape", shape),))

    # -------------------------------------------------------------- integers
    def randint(self, low, high=None, size=None, dtype=int):
        """Integers in [low, high) (in [0, low) without high), as `numpy.random.randint`."""
        return self._draw("randint", size, (("low", low), ("high", high)), kind="i",
                          dtype=_dt.canonical(dtype), extra=(("dtype", _dt.canonical(dtype)),))

    def random_integers(self, low, high=None, size=None):
        """Integers in [low, high] (deprecated in NumPy: use randint(low, high + 1))."""
        if high is None:
            warnings.warn(f"This function is deprecated. Please call randint(1, {low} + 1) "
                          f"instead", DeprecationWarning, stacklevel=2)
            low, high = 1, low
        else:
            warnings.warn(f"This function is deprecated. Please call randint({low}, {high} + 1) "
                          f"instead", DeprecationWarning, stacklevel=2)
        return self.randint(low, int(high) + 1, size=size, dtype=np.int64)

    def tomaxint(self, size=None):
        """Integers in [0, sys.maxsize]."""
        return self._draw("tomaxint", size, kind="i")

    # -------------------------------------------------------------- selections
    def choice(self, a, size=None, replace=True, p=None):
        """Samples from `a` (an array, or arange(a) for an int), as `numpy.random.choice`;
        differentiable in the elements of `a`."""
        if _is_scalar(a) and not isinstance(a, np.ndarray):
            return self._draw("choice", size, (("p", p),), kind="i", shape=_size(size) or (),
                              extra=(("a", operator.index(a)), ("replace", replace)),
                              elementwise=False)
        arr = _as_param(a)
        if arr.ndim != 1:
            raise ValueError("a must be 1-dimensional")
        idx = self._draw("choice", size, (("p", p),), kind="i", shape=_size(size) or (),
                         extra=(("a", arr.shape[0]), ("replace", replace)), elementwise=False,
                         tie=arr)
        return self._gather(arr, idx, 0)

    def permutation(self, x):
        """A permuted arange(x) for an int, else a copy of x shuffled along its first axis
        (differentiable in x)."""
        if isinstance(x, (int, np.integer)):
            return self._indices(operator.index(x))
        arr = _as_param(x)
        if arr.ndim < 1:
            raise IndexError("x must be an integer or at least 1-dimensional")
        return self._gather(arr, self._indices(arr.shape[0], arr), 0)

    def shuffle(self, x):
        """Shuffle along the first axis in place (ndflow arrays; NumPy arrays and lists through
        NumPy)."""
        if not isinstance(x, ndarray):
            self._np().shuffle(x)
            return
        if x.ndim < 1:
            raise TypeError("shuffle: x must be at least 1-dimensional")
        x[...] = self._gather(x, self._indices(x.shape[0], x), 0)


class Generator(_Sampler):
    """NumPy's `Generator` (PCG64 by default) whose draws are ndflow arrays: `default_rng(s)`
    and `numpy.random.default_rng(s)` give the same numbers. Takes a NumPy BitGenerator or
    Generator (sharing its state), or, unlike NumPy, a seed."""

    def __init__(self, bit_generator=None):
        if isinstance(bit_generator, Generator):
            bit_generator = bit_generator._rs
        if isinstance(bit_generator, np.random.Generator):
            self._rs = bit_generator
        elif isinstance(bit_generator, np.random.BitGenerator):
            self._rs = np.random.Generator(bit_generator)
        else:
            self._rs = np.random.default_rng(bit_generator)

    def __repr__(self):
        return f"Generator({type(self._rs.bit_generator).__name__})"

    @property
    def bit_generator(self):
        """The NumPy bit generator behind this stream."""
        return self._rs.bit_generator

    def spawn(self, n_children):
        """Independent child generators, as `numpy.random.Generator.spawn`."""
        return [Generator(g) for g in self._rs.spawn(n_children)]

    def bytes(self, length):
        """`length` random bytes (Python bytes, drawn when called, also while tracing)."""
        return self._rs.bytes(length)

    # -------------------------------------------------------------- with dtype= and out=
    def _with_out(self, method, size, dtype, out, params=(), extra=()):
        if out is not None:
            if size is not None and _size(size) != tuple(out.shape):
                raise ValueError(f"size must match out.shape when used together: size {size}, "
                                 f"out.shape {tuple(out.shape)}")
            size = tuple(out.shape)
            dtype = out.dtype if dtype is None else dtype
        d = _float(dtype)
        if dtype is not None and d not in (_dt.F32, _dt.F64):
            raise TypeError(f"Unsupported dtype {d} for {method}")
        # an explicit dtype is NumPy's (float32 has its own samplers); None: float64, as NumPy,
        # cast under prefer_float32
        extra = tuple(extra) + ((("dtype", d),) if dtype is not None else ())
        r = self._draw(method, size, params, dtype=d, extra=extra)
        if out is None:
            return r
        out[...] = r
        return out

    def random(self, size=None, dtype=None, out=None):
        """Uniform [0, 1) samples (float64, or float32 by NumPy's float32 sampler)."""
        return self._with_out("random", size, dtype, out)

    def standard_normal(self, size=None, dtype=None, out=None):
        """Standard normal samples (float64, or float32 by NumPy's float32 sampler)."""
        return self._with_out("standard_normal", size, dtype, out)

    def standard_exponential(self, size=None, dtype=None, method="zig", out=None):
        """Standard exponential samples ('zig' or 'inv' method, as NumPy)."""
        return self._with_out("standard_exponential", size, dtype, out,
                              extra=(("method", method),))

    def standard_gamma(self, shape, size=None, dtype=None, out=None):
        """Standard gamma samples (no gradient to shape)."""
        return self._with_out("standard_gamma", size, dtype, out, (("shape", shape),))

    # -------------------------------------------------------------- integers
    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        """Integers in [low, high) ([low, high] with endpoint=True), as
        `numpy.random.Generator.integers`."""
        d = _dt.canonical(dtype)
        return self._draw("integers", size, (("low", low), ("high", high)), kind="i", dtype=d,
                          extra=(("dtype", d), ("endpoint", bool(endpoint))))

    # -------------------------------------------------------------- selections
    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):
        """Samples from `a` along `axis` (or from arange(a) for an int); differentiable in the
        elements of `a`."""
        extra = (("replace", replace), ("shuffle", shuffle))
        if _is_scalar(a) and not isinstance(a, np.ndarray):
            return self._draw("choice", size, (("p", p),), kind="i", shape=_size(size) or (),
                              extra=extra + (("a", operator.index(a)),), elementwise=False)
        arr = _as_param(a)
        if arr.ndim == 0:
            raise ValueError("a must be a sequence or an integer, not a 0-d array")
        ax = _norm_axis(axis, arr.ndim)
        idx = self._draw("choice", size, (("p", p),), kind="i", shape=_size(size) or (),
                         extra=extra + (("a", arr.shape[ax]),), elementwise=False, tie=arr)
        return self._gather(arr, idx, ax)

    def permutation(self, x, axis=0):
        """A permuted arange(x) for an int, else a copy of x shuffled along `axis`."""
        if isinstance(x, (int, np.integer)):
            return self._indices(operator.index(x))
        arr = _as_param(x)
        if arr.ndim < 1:
            raise IndexError("x must be an integer or at least 1-dimensional")
        ax = _norm_axis(axis, arr.ndim)
        return self._gather(arr, self._indices(arr.shape[ax], arr), ax)

    def shuffle(self, x, axis=0):
        """Shuffle along `axis` in place (ndflow arrays; NumPy arrays and lists through NumPy)."""
        if not isinstance(x, ndarray):
            self._rs.shuffle(x, axis=axis)
            return
        if x.ndim < 1:
            raise TypeError("shuffle: x must be at least 1-dimensional")
        ax = _norm_axis(axis, x.ndim)
        x[...] = self._gather(x, self._indices(x.shape[ax], x), ax)

    def permuted(self, x, *, axis=None, out=None):
        """x with the elements of each slice along `axis` shuffled independently (all elements
        when axis is None), as `numpy.random.Generator.permuted`; differentiable in x."""
        arr = _as_param(x)
        if None in arr.shape:
            raise ValueError("permuted needs the shape of x while tracing")
        if axis is None:
            base = np.arange(int(np.prod(arr.shape)), dtype=np.int64).reshape(arr.shape)
        else:
            axis = _norm_axis(axis, arr.ndim)
            view = [1] * arr.ndim
            view[axis] = arr.shape[axis]
            base = np.broadcast_to(np.arange(arr.shape[axis]).reshape(view), arr.shape).copy()
        idx = self._draw("permuted", None, (("x", base),), kind="i", shape=arr.shape,
                         extra=(("axis", axis),), has_size=False, elementwise=False, tie=arr)
        r = _take(arr, idx) if axis is None else _take_along_axis(arr, idx, axis)
        if out is None:
            return r
        out[...] = r
        return out

    def multivariate_normal(self, mean, cov, size=None, check_valid="warn", tol=1e-8, *,
                            method="svd"):
        """Multivariate normal distribution ('svd', 'eigh' or 'cholesky' factorization, as
        NumPy); differentiable in `mean`, not in `cov`."""
        return _Sampler.multivariate_normal(self, mean, cov, size, check_valid, tol,
                                            method=method)

    def multivariate_hypergeometric(self, colors, nsample, size=None, method="marginals"):
        """Multivariate hypergeometric distribution (int64, last axis: the colors)."""
        c = _as_param(colors)
        s = _size(size)
        return self._draw("multivariate_hypergeometric", size, (("colors", c),), kind="i",
                          shape=(s if s is not None else ()) + tuple(c.shape[-1:]),
                          extra=(("nsample", operator.index(nsample)), ("method", method)),
                          elementwise=False)


def default_rng(seed=None):
    """A `Generator` seeded as `numpy.random.default_rng(seed)` (the same PCG64 stream)."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed)


# ------------------------------------------------------------------ the module functions
# NumPy's module functions are the methods of one global RandomState; ours too (its stream is
# looked up when each draw runs, so compiled functions follow seed/set_state/set_bit_generator).
_rand = RandomState.__new__(RandomState)


def seed(seed=None):
    """Seed the global stream, as `numpy.random.seed` (also `nf.random.set_seed`): the draws that
    follow are NumPy's for the same seed.

    Examples
    --------
    >>> import ndflow.numpy as tnp
    >>> tnp.random.seed(0)
    >>> tnp.random.randn(2)
    array([1.76405235, 0.40015721], dtype=float64)
    """
    Rp.seed(seed)


def get_bit_generator():
    """The bit generator of the global stream, as `numpy.random.get_bit_generator`."""
    return Rp.STREAM["rs"]._bit_generator


def set_bit_generator(bitgen):
    """Replace the bit generator of the global stream, as `numpy.random.set_bit_generator`."""
    Rp.STREAM["rs"] = np.random.RandomState(bitgen)


get_state = _rand.get_state
set_state = _rand.set_state
bytes = _rand.bytes  # noqa: A001
rand = _rand.rand
randn = _rand.randn
random = _rand.random
random_sample = _rand.random_sample
ranf = _rand.random_sample
sample = _rand.random_sample
randint = _rand.randint
random_integers = _rand.random_integers
standard_normal = _rand.standard_normal
standard_exponential = _rand.standard_exponential
standard_gamma = _rand.standard_gamma
standard_cauchy = _rand.standard_cauchy
standard_t = _rand.standard_t
normal = _rand.normal
uniform = _rand.uniform
lognormal = _rand.lognormal
laplace = _rand.laplace
logistic = _rand.logistic
gumbel = _rand.gumbel
exponential = _rand.exponential
rayleigh = _rand.rayleigh
weibull = _rand.weibull
gamma = _rand.gamma
beta = _rand.beta
chisquare = _rand.chisquare
noncentral_chisquare = _rand.noncentral_chisquare
f = _rand.f
noncentral_f = _rand.noncentral_f
pareto = _rand.pareto
power = _rand.power
triangular = _rand.triangular
vonmises = _rand.vonmises
wald = _rand.wald
dirichlet = _rand.dirichlet
multivariate_normal = _rand.multivariate_normal
binomial = _rand.binomial
negative_binomial = _rand.negative_binomial
geometric = _rand.geometric
hypergeometric = _rand.hypergeometric
logseries = _rand.logseries
poisson = _rand.poisson
zipf = _rand.zipf
multinomial = _rand.multinomial
choice = _rand.choice
permutation = _rand.permutation
shuffle = _rand.shuffle
