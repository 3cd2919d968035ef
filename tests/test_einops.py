"""einops' main entry on ndflow arrays (the backend in ndflow/_einops.py), against einops on
NumPy arrays: eager, under a tape, inside nf.function."""
import subprocess
import sys

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

einops = pytest.importorskip("einops")

A = np.arange(2 * 12, dtype=np.float64).reshape(2, 12) - 7.5


@pytest.mark.parametrize("pattern,kw", [("b (h w) -> b w h", {"h": 3}), ("b n -> n b", {}),
                                        ("b (h w) -> (b h) w", {"h": 4}),
                                        ("b (h w) -> h b w", {"w": 6})])
def test_rearrange_matches_numpy(pattern, kw):
    got = einops.rearrange(tnp.asarray(A), pattern, **kw)
    assert isinstance(got, tnp.ndarray)
    np.testing.assert_array_equal(got.numpy(), einops.rearrange(A, pattern, **kw))


@pytest.mark.parametrize("op", ["min", "max", "sum", "mean", "prod"])
def test_reduce_matches_numpy(op):
    got = einops.reduce(tnp.asarray(A), "b (h w) -> b h", op, h=3)
    want = einops.reduce(A, "b (h w) -> b h", op, h=3)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_repeat_and_einsum_match_numpy():
    got = einops.repeat(tnp.asarray(A), "b n -> b n r", r=3)
    np.testing.assert_array_equal(got.numpy(), einops.repeat(A, "b n -> b n r", r=3))
    got = einops.einsum(tnp.asarray(A), tnp.asarray(A), "b n, c n -> b c")
    np.testing.assert_array_equal(got.numpy(), einops.einsum(A, A, "b n, c n -> b c"))


def test_integer_mean_is_refused_as_for_numpy():
    ints = np.arange(6).reshape(2, 3)
    with pytest.raises(NotImplementedError, match="non-floating"):
        einops.reduce(ints, "a b -> a", "mean")
    with pytest.raises(NotImplementedError, match="non-floating"):
        einops.reduce(tnp.asarray(ints), "a b -> a", "mean")


def test_gradient_through_rearrange_and_reduce():
    x = tnp.asarray(A)
    w = np.linspace(-1, 1, 6).reshape(2, 3)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = einops.reduce(einops.rearrange(x, "b (h w) -> b h w", h=3) ** 2, "b h w -> b h",
                          "sum")
        loss = tnp.sum(y * w)
    g = tape.gradient(loss, x).numpy()
    # d/dx of sum_bh w[b,h] sum_w x[b,h,w]^2 = 2 x w[b,h] broadcast over w
    np.testing.assert_allclose(g, (2 * A.reshape(2, 3, 4) * w[:, :, None]).reshape(2, 12))


def test_inside_nf_function():
    @nf.function
    def f(x):
        return einops.reduce(einops.rearrange(x, "b (h w) -> b w h", h=3), "b w h -> w", "max")

    np.testing.assert_array_equal(f(tnp.asarray(A)).numpy(),
                                  einops.reduce(einops.rearrange(A, "b (h w) -> b w h", h=3),
                                                "b w h -> w", "max"))


@pytest.mark.parametrize("order", ["import einops, ndflow.numpy as tnp",
                                   "import ndflow.numpy as tnp, einops"])
def test_either_import_order(order):
    code = (f"{order}\nimport sys\n"
            "x = einops.rearrange(tnp.ones((2, 3)), 'a b -> b a')\n"
            "print(type(x).__name__, x.shape)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["ndarray", "(3,", "2)"]


def test_import_ndflow_does_not_load_einops():
    code = "import ndflow, sys; print('einops' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
