"""PyTorch: eager, and ``torch.compile`` (Inductor, CPU).

Gradients use ``torch.func`` (``grad``, ``grad_and_value``, ``vmap``) so that the whole step,
backward pass included, is one compiled function, as ``jax.jit(jax.grad(...))`` is.
"""

from __future__ import annotations

import os

from . import workloads as W

COLUMNS = {"torch": "torch eager", "torch_compile": "torch.compile"}

torch = None


def setup() -> str:
    global torch
    import torch as _torch

    torch = _torch
    if os.environ.get("NDFLOW_BENCH_THREADS"):
        torch.set_num_threads(int(os.environ["NDFLOW_BENCH_THREADS"]))
    # a first call must compile: no graph from the on-disk cache of an earlier call
    torch._inductor.config.fx_graph_cache = False
    torch._dynamo.config.cache_size_limit = 64
    return f"torch {torch.__version__}"


def _predict(weights, inputs):
    w1, bias, w2 = weights
    return torch.maximum(inputs @ w1 + bias, torch.zeros(())) @ w2


def _loss(weights, inputs, labels):
    return torch.sum(torch.square(_predict(weights, inputs) - labels))


def _detach(out):
    if isinstance(out, (list, tuple)):
        return [_detach(o) for o in out]
    return out.detach()


def build(column, case, d):
    from torch.func import grad, grad_and_value, vmap

    arr = {k: torch.from_numpy(v) for k, v in d.items()}
    w = case.workload
    compile_ = torch.compile if column == "torch_compile" else (lambda f: f)

    if w == "add":
        f, args = compile_(lambda a, b: a + b), (arr["a"], arr["b"])
    elif w == "sigmoid":
        f, args = compile_(lambda y: 1 / (1 + torch.exp(-y))), (arr["y"],)
    elif w == "mlp_grad":
        f = compile_(grad(_loss))
        args = ((arr["w1"], arr["b"], arr["w2"]), arr["x"], arr["labels"])
    elif w == "per_example_grads":
        def single_example_gradient(weights, inp, label):
            return grad(_loss)(weights, inp.unsqueeze(0), label.unsqueeze(0))

        if case.params["via"] == "vectorized_map":
            f = compile_(vmap(single_example_gradient, in_dims=(None, 0, 0)))
        elif column == "torch_compile":
            raise NotImplementedError("PyTorch has no map_fn (torch.compile would unroll a "
                                      "Python loop over the examples)")
        else:   # eager: what map_fn does, one example at a time
            def f(weights, x, labels):
                outs = [single_example_gradient(weights, x[i], labels[i])
                        for i in range(x.shape[0])]
                return [torch.stack(g) for g in zip(*outs)]
        args = ((arr["w1"], arr["b"], arr["w2"]), arr["x"], arr["labels"])
    elif w == "polyfit_adam":
        deg = len(W.POLY_TRUE)
        powers = torch.arange(deg, dtype=torch.float32)[:, None]

        def loss(coef, x, y):
            return torch.mean(torch.square(coef @ (x[None, :] ** powers) - y))

        @compile_
        def fit_step(coef, m, v, t, x, y):
            g = grad(loss)(coef, x, y)
            t = t + 1.0
            m = m * W.ADAM_B1 + g * (1 - W.ADAM_B1)
            v = v * W.ADAM_B2 + g * g * (1 - W.ADAM_B2)
            lr = W.POLY_LR * torch.sqrt(1 - W.ADAM_B2 ** t) / (1 - W.ADAM_B1 ** t)
            return coef - m * lr / (torch.sqrt(v) + W.ADAM_EPS), m, v, t

        xs, ys = d["xs"], d["ys"]

        def fit():
            z = torch.zeros(deg)
            state = (z, z, z, torch.zeros(()))
            for i in range(xs.shape[0]):       # fresh NumPy data every step
                state = fit_step(*state, torch.from_numpy(xs[i]), torch.from_numpy(ys[i]))
            return state[0]
        return fit
    elif w in ("classifier_step", "first_call"):
        state = [tuple(arr[k] for k in ("w1", "b1", "w2", "b2"))]
        x, onehot = arr["x"], arr["onehot"]

        def make_step():
            def loss(params, x, onehot):
                w1, b1, w2, b2 = params
                h = torch.relu(x @ w1 + b1)
                logits = h @ w2 + b2
                z = logits - torch.amax(logits, dim=1, keepdim=True)
                lse = torch.log(torch.sum(torch.exp(z), dim=1))
                return torch.mean(lse - torch.sum(z * onehot, dim=1))

            def train_step(params, x, onehot):
                g, val = grad_and_value(loss)(params, x, onehot)
                return val, tuple(p - W.D_LR * gp for p, gp in zip(params, g))
            return compile_(train_step)

        def run(step):
            val, state[0] = step(state[0], x, onehot)
            return val.detach()

        if w == "first_call":
            def first():
                torch._dynamo.reset()          # forget every compiled graph
                return run(make_step())
            return first
        step = make_step()
        return lambda: run(step)
    elif w == "matmul_chain":
        def chain(a, *ws):
            for m in ws:
                a = a @ m
            return a

        f = compile_(chain)
        args = (arr["a"],) + tuple(arr[f"w{i}"] for i in range(case.params["k"]))
    else:
        raise KeyError(w)

    def call():
        return _detach(f(*args))

    return call
