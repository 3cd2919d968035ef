"""JAX: ``jax.jit`` (results are waited for with ``block_until_ready``)."""

from __future__ import annotations

from . import workloads as W

COLUMNS = {"jax_jit": "jax.jit"}

jax = jnp = None


def setup() -> str:
    global jax, jnp
    import jax as _jax
    import jax.numpy as _jnp

    jax, jnp = _jax, _jnp
    return f"jax {jax.__version__}"


def _loss(weights, inputs, labels):
    w1, bias, w2 = weights
    y = jnp.maximum(jnp.matmul(inputs, w1) + bias, 0)
    prediction = jnp.matmul(y, w2)
    return jnp.sum(jnp.square(prediction - labels))


def build(column, case, d):
    arr = {k: jnp.asarray(v) for k, v in d.items()}
    w = case.workload

    if w == "add":
        f, args = jax.jit(lambda a, b: a + b), (arr["a"], arr["b"])
    elif w == "sigmoid":
        f, args = jax.jit(lambda y: 1 / (1 + jnp.exp(-y))), (arr["y"],)
    elif w == "mlp_grad":
        f = jax.jit(jax.grad(_loss))
        args = ((arr["w1"], arr["b"], arr["w2"]), arr["x"], arr["labels"])
    elif w == "per_example_grads":
        grad = jax.grad(_loss)

        def single_example_gradient(weights, inp, label):
            return grad(weights, jnp.expand_dims(inp, 0), jnp.expand_dims(label, 0))

        if case.params["via"] == "vectorized_map":
            f = jax.jit(jax.vmap(single_example_gradient, in_axes=(None, 0, 0)))
        else:
            f = jax.jit(lambda weights, x, labels: jax.lax.map(
                lambda a: single_example_gradient(weights, *a), (x, labels)))
        args = ((arr["w1"], arr["b"], arr["w2"]), arr["x"], arr["labels"])
    elif w == "polyfit_adam":
        deg = len(W.POLY_TRUE)
        powers = jnp.arange(deg, dtype=jnp.float32)[:, None]

        def loss(coef, x, y):
            return jnp.mean(jnp.square(jnp.matmul(coef, x[None, :] ** powers) - y))

        @jax.jit
        def fit_step(state, x, y):
            coef, m, v, t = state
            g = jax.grad(loss)(coef, x, y)
            t = t + 1.0
            m = m * W.ADAM_B1 + g * (1 - W.ADAM_B1)
            v = v * W.ADAM_B2 + g * g * (1 - W.ADAM_B2)
            lr = W.POLY_LR * jnp.sqrt(1 - W.ADAM_B2 ** t) / (1 - W.ADAM_B1 ** t)
            return coef - m * lr / (jnp.sqrt(v) + W.ADAM_EPS), m, v, t

        xs, ys = d["xs"], d["ys"]

        def fit():
            z = jnp.zeros(deg, jnp.float32)
            state = (z, z, z, jnp.float32(0))
            for i in range(xs.shape[0]):
                state = fit_step(state, xs[i], ys[i])
            return jax.block_until_ready(state[0])
        return fit
    elif w in ("classifier_step", "first_call"):
        state = [tuple(arr[k] for k in ("w1", "b1", "w2", "b2"))]
        x, onehot = arr["x"], arr["onehot"]

        def make_step():
            def loss(params, x, onehot):
                w1, b1, w2, b2 = params
                h = jnp.maximum(jnp.matmul(x, w1) + b1, 0)
                logits = jnp.matmul(h, w2) + b2
                z = logits - jnp.max(logits, axis=1, keepdims=True)
                lse = jnp.log(jnp.sum(jnp.exp(z), axis=1))
                return jnp.mean(lse - jnp.sum(z * onehot, axis=1))

            def train_step(params, x, onehot):
                val, g = jax.value_and_grad(loss)(params, x, onehot)
                return val, tuple(p - W.D_LR * gp for p, gp in zip(params, g))
            return jax.jit(train_step)

        def run(step):
            val, state[0] = step(state[0], x, onehot)
            return jax.block_until_ready(val)

        if w == "first_call":
            return lambda: run(make_step())
        step = make_step()
        return lambda: run(step)
    elif w == "matmul_chain":
        def chain(a, *ws):
            for m in ws:
                a = jnp.matmul(a, m)
            return a

        f = jax.jit(chain)
        args = (arr["a"],) + tuple(arr[f"w{i}"] for i in range(case.params["k"]))
    else:
        raise KeyError(w)

    def call():
        return jax.block_until_ready(f(*args))

    return call
