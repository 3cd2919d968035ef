"""Shared fixtures and helpers. NumPy is the oracle throughout the suite."""
import contextlib
import gc

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core.state import STATE

nf.config.set_debug(*nf.config.get_debug(), "verify")   # the graph verifier runs after every pass


def pytest_addoption(parser):
    # numba compiles fused kernels in the background after a few calls: hundreds of compiles
    # across the suite. Off by default; the tier-1 tests turn it on where they test it, and
    # `--numba sync` runs every other test with it on too (compiled in the calling thread)
    parser.addoption("--numba", default="off", choices=("off", "sync", "background"),
                     help="nf.config.settings.numba for the tests that do not set their own")


def pytest_configure(config):
    nf.config.settings.numba = config.getoption("numba")


# A worker's heap grows past a million objects (numba, ONNX, SciPy, Dask, the fused-kernel
# cache), and each full collection, automatic or a test's own gc.collect(), walked them all:
# 0.5-1.5 s each, 11 s of 155 in one run of test_optable and four memory-checking files. Every
# FREEZE_EVERY tests, what survives a full collection is moved where collections do not look
# (gc.freeze): 1.7 s there. Tests that check an object is freed make it themselves, after the
# freeze; frozen objects are still freed when their last reference goes.
# The freeze comes after a test's whole protocol: its fixtures are torn down and pytest has
# dropped them, so nothing of one test is frozen alive and left in a cycle later (a frozen
# cycle is never collected: a tape in one would hold up every later write).
FREEZE_EVERY = 500
_finished = [0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    yield
    _finished[0] += 1
    if _finished[0] % FREEZE_EVERY == 0:
        gc.collect()
        gc.freeze()


@pytest.fixture
def nf_settings():
    """`nf_settings(numba="sync", numba_min=1)`: ndflow settings for the rest of one test, in
    the test's thread (`nf.config.settings.override`), restored after it."""
    with contextlib.ExitStack() as stack:
        yield lambda **values: stack.enter_context(nf.config.settings.override(**values))


@pytest.fixture(autouse=True)
def _clean_state():
    """Every test starts and ends in the default mode: NumPy promotion, float64, no scopes."""
    tnp.experimental_enable_numpy_behavior(prefer_float32=False, dtype_conversion_mode="legacy")
    yield
    leaked = (list(STATE.traces), list(STATE.tapes), STATE.device)
    tnp.experimental_enable_numpy_behavior(prefer_float32=False, dtype_conversion_mode="legacy")
    STATE.traces.clear()
    STATE.tapes.clear()
    STATE.device = None
    STATE.refresh()
    assert leaked == ([], [], None), "a test left interpreter state behind: %r" % (leaked,)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def gpu_available():
    return bool(nf.config.list_physical_devices("GPU"))


@pytest.fixture
def two_cpus():
    """The CPU split into two logical devices for one test (restored afterwards)."""
    from ndflow.backends import device as D
    saved = list(D._cpu_devices)
    nf.config.set_logical_device_configuration(
        nf.config.list_physical_devices("CPU")[0],
        [nf.config.LogicalDeviceConfiguration(), nf.config.LogicalDeviceConfiguration()])
    yield
    D._cpu_devices[:] = saved


# `import ndflow` leaves these for first use; the suite enumerates every primitive and
# composite (tests/test_optable.py, test_traits.py, test_composites.py ...), whatever the order
# the tests run in
import ndflow.numpy.random  # noqa: E402,F401
import ndflow.summary  # noqa: E402,F401
import ndflow.distribute  # noqa: E402,F401
# ... and the rest of what loads on first use (nf.function, nf.GradientTape, tnp.median, tnp.linalg,
# bfloat16 ...): every name `from ndflow import *` and `from ndflow.numpy import *` give
for _n in nf.__all__:
    getattr(nf, _n)
for _n in tnp.__all__:
    getattr(tnp, _n)
