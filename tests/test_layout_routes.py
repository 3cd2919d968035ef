"""Tier 0's large and blocked paths write into C-ordered buffers. NumPy lays a result out in
its operands' order (Fortran-ordered operands give a Fortran-ordered product) and sums along
memory, so on an operand of two dims or more that is not C-contiguous, those paths would give
other strides and other sums' bits: such a call runs the plain path (NumPy's calls). Checked
against NumPy bit for bit, with the results' layout, on every operand layout and region kind,
with tier 1 off and on: tier 1 declines such operands too, also in a static region's generated
caller, which reshapes operands to the kernel's collapsed shape (a Fortran-ordered one would be
copied into C order there, and its results laid out unlike NumPy's)."""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

from ndflow.graph.kernels.planner import Route

from helpers import assert_bits_equal, routes_reached

ROUTES = {
    "large": {"large_min": 1},
    # (chunks of 1024 float64: a dozen per call)
    "blocked": {"large_min": 1, "block_min": 2, "block_bytes": 8192,
                "block_threads_min": 1 << 62},
}


def _layouts(rng, n, m):
    base = rng.standard_normal((n, m))
    wide = rng.standard_normal((n, 2 * m))
    return {
        "C": base,
        "F": np.asfortranarray(base),
        "transposed": np.ascontiguousarray(base.T).T,
        "column slice": wide[:, ::2],
        "row broadcast": np.broadcast_to(base[0], (n, m)),
        "reversed": base[::-1],
    }


def _regions(m):
    """The regions, written with module `m`'s functions (ndflow's, NumPy's)."""
    return {
        "elementwise": lambda x, y: x * 3.0 + 1.0,
        "sum axis 0": lambda x, y: m.sum(x * 3.0, axis=0),
        "sum axis 1": lambda x, y: m.sum(x * 3.0, axis=1),
        "sum": lambda x, y: m.sum(x * 3.0),
        "two operands": lambda x, y: x * y + 1.0,
        "two operands, sum axis 0": lambda x, y: m.sum(x * y - 0.5, axis=0),
    }


REGIONS, NUMPY = _regions(tnp), _regions(np)


@pytest.mark.parametrize("numba", ["off", "sync"])
@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("region", list(REGIONS))
def test_tier0_keeps_numpys_bits_and_layout_on_every_operand_layout(nf_settings, numba, route,
                                                                     region):
    nf_settings(numba=numba, hot_calls=1, **ROUTES[route])
    rng = np.random.default_rng(7)
    xs, ys = _layouts(rng, 3001, 4), _layouts(rng, 3001, 4)
    f = nf.function(REGIONS[region])
    two = region.startswith("two operands")
    for xl, x in xs.items():
        for yl, y in (ys.items() if two else [("C", ys["C"])]):     # (one reads only x)
            want = NUMPY[region](x, y)
            for _ in range(3):          # the hot call and the calls after it
                got = f(tnp.asarray(x), tnp.asarray(y)).numpy()
                ctx = f"{region}, x {xl}, y {yl}"
                try:
                    assert_bits_equal(got, want)
                except AssertionError as e:
                    raise AssertionError(f"{ctx}: {e}") from None
                assert got.shape == want.shape, ctx
                if got.ndim >= 2:
                    assert (got.flags.c_contiguous, got.flags.f_contiguous) == \
                        (want.flags.c_contiguous, want.flags.f_contiguous), ctx


def test_columns_route_keeps_numpys_layout(nf_settings):
    """Tier 0 column by column (a short last axis after a long one) writes C-ordered results:
    a call with permuted operands runs the plain path instead, laid out as NumPy's (the
    region's route stays the columns one: the test is per call)."""
    nf_settings(numba="off", hot_calls=1)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((64, 32, 1)), rng.standard_normal((64, 1, 2))
    for x, y in ((a, b), (np.asfortranarray(a), np.asfortranarray(b)),
                 (a, np.asfortranarray(b))):
        f = nf.function(lambda x, y: x * y * 2.0)
        want = x * y * 2.0
        reached, got = routes_reached(lambda: [f(x, y) for _ in range(3)][-1])
        got = got.numpy()
        assert_bits_equal(got, want)
        assert got.strides == want.strides
        assert Route.T0_COLUMNS in reached, reached
