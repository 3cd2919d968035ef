"""NumPy: the baseline.  Gradients are written by hand."""

from __future__ import annotations

import numpy as np

from . import workloads as W

COLUMNS = {"numpy": "NumPy"}


def setup() -> str:
    return f"numpy {np.__version__}"


def build(column, case, d):
    w = case.workload
    if w == "add":
        a, b = d["a"], d["b"]
        return lambda: a + b
    if w == "sigmoid":
        y = d["y"]
        return lambda: W.np_sigmoid(y)
    if w == "mlp_grad":
        return lambda: W.np_mlp_grads(**d)
    if w == "per_example_grads":
        if case.params["via"] == "vectorized_map":
            return lambda: W.np_per_example_grads_batched(**d)
        return lambda: W.np_per_example_grads_loop(**d)
    raise KeyError(w)
