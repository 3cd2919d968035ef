"""`nf.config.settings`: one object for the compiler's and the kernel tiers' tuning; values
checked on assignment, per-thread overrides that nest and restore, and what a region does
follows the settings in force when it is planned."""
import threading

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core.settings import Settings
from ndflow.graph import fusion

settings = nf.config.settings


def test_every_field_is_documented_and_has_its_default():
    fields = Settings.fields()
    assert len(fields) >= 10
    fresh = Settings()
    for name, f in fields.items():
        assert f.__doc__ and len(f.__doc__.split()) >= 8, name
        assert getattr(fresh, name) == f.default
        assert name in fresh.describe()


def test_assignment_checks_and_normalizes():
    s = Settings()
    s.numba = False
    assert s.numba == "off"
    s.numba = "SYNC"
    assert s.numba == "sync"
    s.fast_math = "on"
    assert s.fast_math is True
    s.large_min = 16.0
    assert s.large_min == 16 and type(s.large_min) is int
    for name, bad in (("numba", "sometimes"), ("large_min", -1), ("large_min", 2.5),
                      ("threads", 0), ("hot_calls", True), ("fast_math", "maybe")):
        with pytest.raises(ValueError):
            setattr(s, name, bad)
    with pytest.raises(AttributeError, match="no setting 'large_mni'"):
        s.large_mni = 3
    with pytest.raises(AttributeError, match="no setting"):
        s.override(fusoin=False)
    s.reset()
    assert s.numba == "background" and s.large_min == 4096 and s.fast_math is False


def test_overrides_are_per_thread_nest_and_restore():
    s = Settings()
    seen = {}

    def other():
        seen["other"] = (s.numba, s.large_min)
    with s.override(numba="sync", large_min=7):
        with s.override(large_min=9):
            assert (s.numba, s.large_min) == ("sync", 9)
            t = threading.Thread(target=other)
            t.start()
            t.join()
        assert (s.numba, s.large_min) == ("sync", 7)
        s.large_min = 100             # the process-wide value, under the override
        assert s.large_min == 7
    assert (s.numba, s.large_min) == ("background", 100)
    assert seen["other"] == ("background", 4096)


def test_bound_carries_the_overrides_into_another_thread():
    s = Settings()
    got = []
    with s.override(fast_math=True):
        job = s.bound(lambda: got.append(s.fast_math))
    t = threading.Thread(target=job)
    t.start()
    t.join()
    assert got == [True] and s.fast_math is False
    plain = s.bound(len)
    assert plain is len                # nothing overridden: the function itself


def test_fusion_setting_is_read_when_a_graph_is_optimized():
    def g(x):
        return tnp.exp(x) * 2 + 1
    x = np.ones(5)
    with settings.override(fusion=False):
        cf = nf.function(g).get_concrete_function(x)
    assert not fusion.fused_kernels(cf.graph)
    f = nf.function(g)
    assert len(fusion.fused_kernels(f.get_concrete_function(x).graph)) == 1
    np.testing.assert_array_equal(f(x), np.exp(x) * 2 + 1)


def test_tier0_sizes_follow_the_settings_in_force_when_planned():
    """`large_min`: the same region of 64 elements runs NumPy's plain calls or the out= path
    into pooled buffers, as the setting in force when its plan was made says."""
    f = nf.function(lambda y: 1 / (1 + tnp.exp(-y)))
    y = np.linspace(-3, 3, 64)
    with settings.override(large_min=16, numba="off"):
        r = f(y)
        k = fusion.fused_kernels(f.get_concrete_function(y).graph)[0]
        pools = k.tier0.output_pools
    np.testing.assert_array_equal(r, 1 / (1 + np.exp(-y)))
    assert pools and sum(p.allocated for p in pools) >= 1


def test_docstring_examples_run():
    import doctest
    import ndflow.config
    import ndflow.core.settings
    for m in (ndflow.core.settings, ndflow.config):
        assert doctest.testmod(m).failed == 0, m
