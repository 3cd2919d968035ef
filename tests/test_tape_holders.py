"""core.mutation.HOLDERS: tapes register without a lock or closure; entries leave on release,
on backward, and when a holding tape is collected (without touching another tape's entry)."""
import gc

import numpy as np

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.core import mutation as mut


def _holding_tape():
    x = tnp.asarray(np.arange(3.0))
    t = nf.GradientTape(persistent=True)
    with t:
        t.watch(x)
        y = x * x
    return t, x, y


def test_a_collected_holding_tape_leaves_holders():
    gc.collect()            # (a tape an earlier test left in a cycle would leave in ours)
    before = dict(mut.HOLDERS)
    t, x, y = _holding_tape()
    assert id(t) in mut.HOLDERS
    del t
    gc.collect()
    assert mut.HOLDERS == before


def test_a_collected_tape_keeps_other_entries():
    t1, x1, y1 = _holding_tape()
    t2, x2, y2 = _holding_tape()
    assert id(t1) in mut.HOLDERS and id(t2) in mut.HOLDERS
    del t1
    gc.collect()
    assert id(t2) in mut.HOLDERS
    # the surviving tape still protects its handles from writes
    x2[0] = 10.0
    g = t2.gradient(y2, x2)
    np.testing.assert_array_equal(np.asarray(g), 2 * np.arange(3.0))


def test_release_then_hold_again():
    t, x, y = _holding_tape()
    mut.release(t)
    assert id(t) not in mut.HOLDERS
    mut.hold(t)
    mut.hold(t)
    assert id(t) in mut.HOLDERS
    mut.release(t)
    assert id(t) not in mut.HOLDERS
    t._held = False


def test_non_persistent_backward_releases():
    x = tnp.asarray(np.arange(3.0))
    with nf.GradientTape() as t:
        t.watch(x)
        y = (x * x).sum()
    assert id(t) in mut.HOLDERS
    t.gradient(y, x)
    assert id(t) not in mut.HOLDERS
