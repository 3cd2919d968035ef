"""Eager gradients of recurrent character models (an RNN and an LSTM in the shape of
autograd's examples, written here) against autograd's, and the eager backward plan against the
reference loop, bit for bit.

What the drift of autograd's own rnn/lstm examples came from (issue 22): not a change of
ndflow's arithmetic (their trajectories on ndflow are the same bits from the first week's
commits to now) but rules that round differently from autograd's — tanh's VJP is
`g * (1 - y*y)` here, `g / cosh(x)**2` in autograd; logsumexp's gradient goes through its
composition; cotangents of a value used many times are summed in another order — a unit in the
last place that Adam's step `m / sqrt(v)` turns into a full step where a gradient component is
~0. So the test holds ndflow to autograd within rounding on each gradient and on a short
trajectory, and holds the plan to the reference bits.
"""
import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.autodiff import eager_plan
from ndflow.scipy.special import logsumexp as nf_logsumexp

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")
a_logsumexp = pytest.importorskip("autograd.scipy.special").logsumexp

CHARS, STATE, STEPS, SEQS = 16, 8, 6, 5


def _params(kind, rs):
    n_in = CHARS + STATE + 1
    p = {"h0": rs.randn(1, STATE) * 0.1, "out": rs.randn(STATE + 1, CHARS) * 0.1}
    for gate in (["change"] if kind == "rnn" else ["change", "forget", "ingate", "outgate"]):
        p[gate] = rs.randn(n_in, STATE) * 0.1
    if kind == "lstm":
        p["c0"] = rs.randn(1, STATE) * 0.1
    return p


def _loss(m, lse, kind, p, xs):
    def affine(w, *parts):
        return m.dot(m.hstack(parts + (m.ones((parts[0].shape[0], 1)),)), w)

    def logprobs(h):
        o = affine(p["out"], h)
        return o - lse(o, axis=1, keepdims=True)

    def sig(z):
        return 0.5 * (m.tanh(z) + 1.0)

    h = m.repeat(p["h0"], xs.shape[1], axis=0)
    c = m.repeat(p["c0"], xs.shape[1], axis=0) if kind == "lstm" else None
    total = m.sum(logprobs(h) * xs[0])
    for t in range(STEPS - 1):
        if kind == "rnn":
            h = m.tanh(affine(p["change"], xs[t], h))
        else:
            c = c * sig(affine(p["forget"], xs[t], h)) + \
                sig(affine(p["ingate"], xs[t], h)) * m.tanh(affine(p["change"], xs[t], h))
            h = sig(affine(p["outgate"], xs[t], h)) * m.tanh(c)
        total = total + m.sum(logprobs(h) * xs[t + 1])
    return -total / (STEPS * xs.shape[1])


def _data(seed):
    rs = np.random.RandomState(seed)
    return np.eye(CHARS)[rs.randint(0, CHARS, (STEPS, SEQS))]


def _grads(kind, p, xs):
    ga = autograd.grad(lambda q: _loss(anp, a_logsumexp, kind, q, xs))(p)
    gn = {}
    for plan in (True, False):
        old, eager_plan.ENABLED = eager_plan.ENABLED, plan
        try:
            g = nf.grad(lambda q: _loss(tnp, nf_logsumexp, kind, q, xs))(p)
        finally:
            eager_plan.ENABLED = old
        gn[plan] = {k: np.asarray(v) for k, v in g.items()}
    return ga, gn[True], gn[False]


@pytest.mark.parametrize("kind", ["rnn", "lstm"])
@pytest.mark.parametrize("seed", [0, 1])
def test_gradients_match_autograd_and_the_plan_the_reference(kind, seed):
    rs = np.random.RandomState(seed)
    p = _params(kind, rs)
    ga, plan, ref = _grads(kind, p, _data(seed))
    for k in p:
        np.testing.assert_array_equal(plan[k], ref[k], err_msg=k)      # the same bits
        scale = np.abs(ga[k]).max()
        np.testing.assert_allclose(plan[k], ga[k], rtol=0, atol=1e-13 * scale, err_msg=k)


@pytest.mark.parametrize("kind", ["rnn", "lstm"])
def test_adam_trajectory_follows_autograds(kind):
    from autograd.misc.optimizers import adam
    xs = _data(3)
    init = _params(kind, np.random.RandomState(3))
    traj = {}
    for name, g in (("ag", autograd.grad(lambda q, i: _loss(anp, a_logsumexp, kind, q, xs))),
                    ("nf", nf.grad(lambda q, i: _loss(tnp, nf_logsumexp, kind, q, xs)))):
        seen = []
        adam(lambda q, i: {k: np.asarray(v) for k, v in g(q, i).items()}, init,
             step_size=0.05, num_iters=15, callback=lambda w, i, gr: seen.append(w))
        traj[name] = seen
    for wa, wn in zip(traj["ag"], traj["nf"]):
        for k in wa:
            np.testing.assert_allclose(wn[k], wa[k], rtol=0, atol=1e-9, err_msg=k)


def test_elementwise_rules_that_share_autograds_formula_give_its_bits():
    # dot, hstack, repeat, indexing and sums round as autograd's rules do: the same bits
    rs = np.random.RandomState(0)
    x, w, c = rs.randn(5, 8), rs.randn(9, 8), rs.randn(5, 8)

    def f(m, v):
        return m.sum(m.dot(m.hstack((m.repeat(v[:1], 5, axis=0) * v, m.ones((5, 1)))), w) * c)
    np.testing.assert_array_equal(np.asarray(nf.grad(lambda v: f(tnp, v))(x)),
                                  autograd.grad(lambda v: f(anp, v))(x))
