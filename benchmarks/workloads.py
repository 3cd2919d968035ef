"""Workload definitions: cases (sizes), input data and NumPy reference results.

Everything here is plain NumPy, so the parent process can import it without
importing any framework.  The per-system implementations live in ``impl_*.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Case:
    workload: str
    key: str          # stable id used in the JSON between processes
    label: str        # shown in the table
    params: dict = field(default_factory=dict)
    quick: bool = True  # part of the --quick run
    repeat: int | None = None   # repeats of one call each (slow, stateful first calls)


# Model sizes from the TensorFlow NumPy guide's MLP example.
N_IN, N_HIDDEN, N_OUT = 32, 64, 2
# The digits classifier (MNIST-sized): 784 -> 128 -> 10, softmax cross-entropy, SGD.
D_IN, D_HIDDEN, D_OUT, D_LR = 784, 128, 10, 0.1
# Polynomial fit: degree 3, Adam, a fresh batch of 256 points each step.
POLY_TRUE = (0.5, -1.0, 2.0, 0.3)
POLY_STEPS, POLY_BATCH, POLY_LR = 1000, 256, 0.01
ADAM_B1, ADAM_B2, ADAM_EPS = 0.9, 0.999, 1e-7
CHAIN_N, CHAIN_LEN = 1000, 11

WORKLOADS: dict[str, list[Case]] = {
    "add": [
        Case("add", "1", "1", {"n": 1}),
        Case("add", "1048576", "2**20", {"n": 2**20}),
    ],
    # the sweep of sizes is the guide's figure of time against size and a scaling table
    "sigmoid": [Case("sigmoid", str(2**k), f"2**{k}" if k else "1", {"n": 2**k},
                     quick=k in (0, 20, 24)) for k in (0, 5, 10, 15, 18, 20, 22, 24)],
    # batch 512 is the guide's; the others make the scaling table
    "mlp_grad": [Case("mlp_grad", str(b), f"batch {b}", {"batch": b}, quick=b in (32, 512, 4096))
                 for b in (32, 128, 512, 1024, 4096)],
    "per_example_grads": [
        Case("per_example_grads", "vectorized_map-128", "vectorized_map, batch 128",
             {"batch": 128, "via": "vectorized_map"}),
        Case("per_example_grads", "map_fn-128", "map_fn, batch 128",
             {"batch": 128, "via": "map_fn"}),
    ],
    "polyfit_adam": [
        Case("polyfit_adam", "1000", "1000 steps", {"steps": POLY_STEPS}),
    ],
    "classifier_step": [
        Case("classifier_step", "32", "batch 32", {"batch": 32}),
        Case("classifier_step", "256", "batch 256", {"batch": 256}),
    ],
    "matmul_chain": [
        Case("matmul_chain", "11x1000", "11 x 1000x1000", {"n": CHAIN_N, "k": CHAIN_LEN},
             quick=False),
    ],
    "first_call": [
        Case("first_call", "classifier-32", "classifier step", {"batch": 32}, repeat=3),
    ],
}


# Workloads shown as scaling tables (rows: the cases' sizes); the main table shows only the
# cases named here of them (the goals' sizes).
SCALING = {"sigmoid": "size", "mlp_grad": "batch"}
MAIN_CASES = {"sigmoid": {"1", "1048576", "16777216"}, "mlp_grad": {"512"}}


class NotApplicable(Exception):
    """Raised by an implementation's ``build`` for a column that has no meaning for a workload
    (NumPy's copy column outside the sigmoid): the table shows ``-`` and no note."""


def cases(workload: str, quick: bool = False) -> list[Case]:
    return [c for c in WORKLOADS[workload] if c.quick or not quick]


# --------------------------------------------------------------------------- data


def make_data(case: Case, dtype=np.float32) -> dict[str, np.ndarray]:
    """Deterministic inputs for one case, as NumPy arrays of ``dtype``."""
    rng = np.random.default_rng(0)
    w = case.workload
    if w == "add":
        n = case.params["n"]
        d = {"a": rng.standard_normal(n), "b": rng.standard_normal(n)}
    elif w == "sigmoid":
        d = {"y": rng.standard_normal(case.params["n"])}
    elif w == "polyfit_adam":
        steps = case.params["steps"]
        xs = rng.uniform(-1, 1, (steps, POLY_BATCH))
        powers = xs[None] ** np.arange(len(POLY_TRUE))[:, None, None]
        ys = np.tensordot(np.asarray(POLY_TRUE), powers, 1) \
            + 0.01 * rng.standard_normal((steps, POLY_BATCH))
        d = {"xs": xs, "ys": ys}
    elif w in ("classifier_step", "first_call"):
        batch = case.params["batch"]
        labels = rng.integers(0, D_OUT, batch)
        d = {
            "x": rng.uniform(0, 1, (batch, D_IN)),           # pixel intensities
            "onehot": np.eye(D_OUT)[labels],
            "w1": rng.standard_normal((D_IN, D_HIDDEN)) / np.sqrt(D_IN),
            "b1": np.zeros(D_HIDDEN),
            "w2": rng.standard_normal((D_HIDDEN, D_OUT)) / np.sqrt(D_HIDDEN),
            "b2": np.zeros(D_OUT),
        }
    elif w == "matmul_chain":
        n, k = case.params["n"], case.params["k"]
        d = {"a": rng.standard_normal((n, n))}
        for i in range(k):
            d[f"w{i}"] = rng.standard_normal((n, n)) / np.sqrt(n)
    elif w in ("mlp_grad", "per_example_grads"):
        batch = case.params["batch"]
        d = {
            "x": rng.standard_normal((batch, N_IN)),
            "labels": rng.standard_normal((batch, N_OUT)),
            # initialisation as in the guide's Model.predict
            "w1": rng.standard_normal((N_IN, N_HIDDEN)) / np.sqrt(N_IN),
            "b": rng.standard_normal(N_HIDDEN),
            "w2": rng.standard_normal((N_HIDDEN, N_OUT)) * 0.01,
        }
    else:
        raise KeyError(f"unknown workload {w!r}")
    return {k: v.astype(dtype) for k, v in d.items()}


# ------------------------------------------------- hand-written NumPy computations
# dtype-generic: used for the NumPy column (float32) and the reference (float64).


def np_sigmoid(y):
    return 1 / (1 + np.exp(-y))


def np_mlp_grads(x, labels, w1, b, w2):
    """Gradient of sum(square(maximum(x @ w1 + b, 0) @ w2 - labels)) w.r.t. (w1, b, w2)."""
    h_pre = x @ w1 + b
    h = np.maximum(h_pre, 0)
    pred = h @ w2
    dpred = 2 * (pred - labels)
    dw2 = h.T @ dpred
    dh_pre = (dpred @ w2.T) * (h_pre > 0)
    dw1 = x.T @ dh_pre
    db = dh_pre.sum(axis=0)
    return [dw1, db, dw2]


def np_per_example_grads_batched(x, labels, w1, b, w2):
    """Per-example gradients, vectorized by hand (outer products via einsum)."""
    h_pre = x @ w1 + b
    h = np.maximum(h_pre, 0)
    pred = h @ w2
    dpred = 2 * (pred - labels)
    dw2 = np.einsum("bi,bj->bij", h, dpred)
    dh_pre = (dpred @ w2.T) * (h_pre > 0)
    dw1 = np.einsum("bi,bj->bij", x, dh_pre)
    return [dw1, dh_pre, dw2]


def np_per_example_grads_loop(x, labels, w1, b, w2):
    """Per-example gradients, one example at a time (what map_fn does)."""
    outs = [np_mlp_grads(x[i:i + 1], labels[i:i + 1], w1, b, w2) for i in range(x.shape[0])]
    return [np.stack(g) for g in zip(*outs)]


def np_polyfit_adam(xs, ys):
    """Fit the cubic's coefficients with Adam, one fresh batch per step; returns them."""
    dt = xs.dtype.type
    deg = len(POLY_TRUE)
    c, m, v = (np.zeros(deg, xs.dtype) for _ in range(3))
    b1, b2 = dt(ADAM_B1), dt(ADAM_B2)
    k = np.arange(deg, dtype=xs.dtype)[:, None]
    for t in range(1, xs.shape[0] + 1):
        x, y = xs[t - 1], ys[t - 1]
        p = x[None, :] ** k
        g = 2 * (p @ (c @ p - y)) / dt(x.size)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        c = c - dt(POLY_LR) * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + dt(ADAM_EPS))
    return c


def np_classifier_step(params, x, onehot):
    """One SGD step of the digits classifier; updates `params` in place, returns the loss."""
    w1, b1, w2, b2 = params
    h_pre = x @ w1 + b1
    h = np.maximum(h_pre, 0)
    logits = h @ w2 + b2
    z = logits - logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1))
    loss = np.mean(lse - (z * onehot).sum(axis=1))
    dlogits = (np.exp(z) / np.exp(z).sum(axis=1, keepdims=True) - onehot) / x.shape[0]
    dh = (dlogits @ w2.T) * (h_pre > 0)
    grads = (x.T @ dh, dh.sum(axis=0), h.T @ dlogits, dlogits.sum(axis=0))
    for p, g in zip(params, grads):
        p -= D_LR * g
    return loss


def np_matmul_chain(a, *ws):
    for w in ws:
        a = a @ w
    return a


def reference(case: Case):
    """Expected result, computed in float64 from the same (float32-rounded) inputs."""
    d = {k: v.astype(np.float64) for k, v in make_data(case).items()}
    w = case.workload
    if w == "add":
        return d["a"] + d["b"]
    if w == "sigmoid":
        return np_sigmoid(d["y"])
    if w == "mlp_grad":
        return np_mlp_grads(**d)
    if w == "per_example_grads":
        return np_per_example_grads_batched(**d)
    if w == "polyfit_adam":
        return np_polyfit_adam(d["xs"], d["ys"])
    if w in ("classifier_step", "first_call"):
        params = [d[k].copy() for k in ("w1", "b1", "w2", "b2")]
        return np.asarray(np_classifier_step(params, d["x"], d["onehot"]))
    if w == "matmul_chain":
        return np_matmul_chain(d["a"], *[d[f"w{i}"] for i in range(case.params["k"])])
    raise KeyError(w)


# ----------------------------------------------------------------------- checking


def to_numpy(out):
    """Convert a (nested list/tuple of) framework array(s) to NumPy."""
    if isinstance(out, (list, tuple)):
        return [to_numpy(o) for o in out]
    if hasattr(out, "numpy") and callable(out.numpy):
        return np.asarray(out.numpy())
    return np.asarray(out)


def check(out, ref, dtype=np.float32) -> str | None:
    """None when ``out`` matches ``ref``; otherwise a short description of the mismatch."""
    out = to_numpy(out)
    if isinstance(ref, list):
        if not isinstance(out, list) or len(out) != len(ref):
            return f"expected {len(ref)} outputs, got {type(out).__name__}"
        for i, (o, r) in enumerate(zip(out, ref)):
            msg = check(o, r, dtype)
            if msg:
                return f"output {i}: {msg}"
        return None
    if isinstance(out, list):
        return f"expected one array, got a sequence of {len(out)}"
    if out.shape != ref.shape:
        return f"shape {out.shape} != expected {ref.shape}"
    if out.dtype != dtype:
        return f"dtype {out.dtype} != expected {np.dtype(dtype)}"
    scale = float(np.max(np.abs(ref))) if ref.size else 1.0
    if not np.allclose(out, ref, rtol=1e-3, atol=1e-4 * max(scale, 1.0)):
        err = float(np.max(np.abs(out.astype(np.float64) - ref)))
        return f"wrong values (max abs error {err:.3g}, scale {scale:.3g})"
    return None
