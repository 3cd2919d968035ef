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


# Model sizes from the TensorFlow NumPy guide's MLP example.
N_IN, N_HIDDEN, N_OUT = 32, 64, 2

WORKLOADS: dict[str, list[Case]] = {
    "add": [
        Case("add", "1", "1", {"n": 1}),
        Case("add", "1048576", "2**20", {"n": 2**20}),
    ],
    "sigmoid": [
        Case("sigmoid", "1", "1", {"n": 1}),
        Case("sigmoid", "1024", "2**10", {"n": 2**10}, quick=False),
        Case("sigmoid", "1048576", "2**20", {"n": 2**20}),
    ],
    "mlp_grad": [
        Case("mlp_grad", "512", "batch 512", {"batch": 512}),
    ],
    "per_example_grads": [
        Case("per_example_grads", "vectorized_map-128", "vectorized_map, batch 128",
             {"batch": 128, "via": "vectorized_map"}),
        Case("per_example_grads", "map_fn-128", "map_fn, batch 128",
             {"batch": 128, "via": "map_fn"}),
    ],
}


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
