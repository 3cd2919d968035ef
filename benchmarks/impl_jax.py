"""JAX: ``jax.jit`` (results are waited for with ``block_until_ready``)."""

from __future__ import annotations

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
    else:
        raise KeyError(w)

    def call():
        return jax.block_until_ready(f(*args))

    return call
