"""The two contracts a fused region runs under (`FusedKernel.fast_math`, fixed when the region
is built: `nf.function(jit_compile=True)`, or `settings.fast_math` while the graph was
optimized), and the fast one's accuracy bounds: the one place they are written down. The
performance guide's table (docs/guides/performance.md, "the accuracy contract") and the tests
(tests/test_jit_compile.py) read them from here.

Under the fast-math contract tier 1 may:
- compute exp, expm1, log and tanh with ndflow's own vectorizable math (`mathlib`): within
  `ULPS[function][dtype]` units in the last place of NumPy's result;
- add a region's sum in its own order (on several threads): within n * eps * sum|x| of NumPy's
  sum of the same n terms (`sum_bound`; a mean divides both by n);
and the optimizer may merge a stack of matrix products (a (..., m, k) @ (k, n)) into one BLAS
call: each element within k * eps * sum|a_i * b_i| of NumPy's (`sum_bound` over the inner dim);
and it may compute x ** k, k a constant of integer values, as |x| ** k negated where x's sign
bit is set and k is odd (`graph.passes._power_of_magnitude`): within `POWER_ULPS[dtype]` of
NumPy's pow, whose negative bases take the C library's pow where its positive ones take SVML's
(on AVX-512 machines; elsewhere both are the C library's, which computes the same way).
Every other function of tier 1's vocabulary is NumPy's bit for bit (a*b + c too: contracting
it into one fused multiply-add would move NaN, inf and signed zeros, see `numba_source`), and
so is everything that runs on tier 0. Exact under both contracts: the positions of NaN, +-inf
and signed zeros, the results' dtypes and shapes, the errors raised, integer and boolean
results.

Each bound is the largest distance measured on 3.2e7 random bit patterns per dtype, every
float32 value around the overflow and underflow edges and every 256th float32 bit pattern
(float64 tanh's 4 ulps, at -0.0078084685927837, showed on a dense sample where the random ones
gave 3). NumPy's results depend on the CPU: its float32 expm1 on an AVX-512 machine was 3 ulps
from ours where the AVX2 machine the table was first measured on gave 2.
tests/test_jit_compile.py checks the edges and 2**20 random patterns at each run.
"""
import numpy as np

EXACT = "NumPy's bits (the default)"
FAST = "fast math (jit_compile=True): within the accuracy contract's bounds"

# function of the scalar vocabulary (not a primitive) -> {dtype: ulps of NumPy's result}
ULPS = {
    "exp": {"float32": 2, "float64": 1},
    # float32 expm1: ours is within 2 ulps of the correctly rounded value, and so is NumPy's
    # on an AVX-512 machine, where 3 was measured between the two (2 on an AVX2 one)
    "expm1": {"float32": 3, "float64": 2},
    "log": {"float32": 3, "float64": 1},
    "tanh": {"float32": 3, "float64": 4},
}


# x ** k as |x| ** k with the sign set: NumPy's pow of |x| (SVML's where NumPy calls it) from
# its pow of a negative x, measured on 1.4e8 random negative bit patterns per dtype with k
# from -8 to 8 and a few beyond, and every float32 (a dense float64 sample) whose power of k
# lies near the overflow and underflow edges, where no position of inf or zero moved
POWER_ULPS = {"float32": 1, "float64": 1}


def ulps(function, dtype):
    """The bound of `function` (a name of the scalar vocabulary) on `dtype` under the
    fast-math contract, in ulps of NumPy's result: 0 where it is NumPy's bit for bit."""
    return ULPS.get(function, {}).get(np.dtype(dtype).name, 0)


def ulp(x):
    """The spacing of the floats at |x| (elementwise): the unit of `ULPS` (at the largest
    float, the spacing below it: numpy.spacing's there overflows to inf)."""
    a = np.abs(x)
    big = np.finfo(a.dtype).max
    with np.errstate(over="ignore"):
        return np.where(a == big, np.spacing(np.nextafter(big, 0)), np.spacing(a))


def sum_bound(n, abs_sum, dtype):
    """How far a sum of n terms added in another order may lie from NumPy's: n * eps *
    sum|terms| (`abs_sum`); each order is within (n - 1) * eps / 2 * sum|terms| of the exact
    sum."""
    return n * np.finfo(dtype).eps * abs_sum
