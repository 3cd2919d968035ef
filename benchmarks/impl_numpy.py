"""NumPy: the baseline.  Gradients are written by hand."""

from __future__ import annotations

import numpy as np

from . import workloads as W

# "copy": a plain copy of the sigmoid's input (a new array, as the sigmoid's result is): the
# memory floor the goal compares compiled elementwise kernels with
COLUMNS = {"numpy": "NumPy", "numpy_copy": "copy"}
UNCHECKED = {"numpy_copy"}     # its result is the input, not the sigmoid


def setup() -> str:
    return f"numpy {np.__version__}"


def build(column, case, d):
    w = case.workload
    if column == "numpy_copy":
        if w != "sigmoid":
            raise W.NotApplicable(column)
        y = d["y"]
        return lambda: y.copy()
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
    if w == "polyfit_adam":
        return lambda: W.np_polyfit_adam(d["xs"], d["ys"])
    if w in ("classifier_step", "first_call"):
        # first_call: NumPy compiles nothing; its column is one step, the scale to compare with
        params = [d[k].copy() for k in ("w1", "b1", "w2", "b2")]
        return lambda: W.np_classifier_step(params, d["x"], d["onehot"])
    if w == "matmul_chain":
        ws = [d[f"w{i}"] for i in range(case.params["k"])]
        return lambda: W.np_matmul_chain(d["a"], *ws)
    raise KeyError(w)
