"""TensorFlow: ``tf.experimental.numpy`` eager, and ``tf.function``."""

from __future__ import annotations

import os

COLUMNS = {"tf": "TF-NP eager", "tf_fn": "tf.function"}

tf = tnp = None


def setup() -> str:
    global tf, tnp
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow

    tf = tensorflow
    tnp = tf.experimental.numpy
    tnp.experimental_enable_numpy_behavior()
    return f"tensorflow {tf.__version__}"


def _predict(weights, inputs):
    w1, bias, w2 = weights
    y = tnp.matmul(inputs, w1) + bias
    y = tnp.maximum(y, 0)
    return tnp.matmul(y, w2)


def _compute_gradients(weights, inputs, labels):
    with tf.GradientTape() as tape:
        tape.watch(weights)
        prediction = _predict(weights, inputs)
        loss = tnp.sum(tnp.square(prediction - labels))
    return tape.gradient(loss, weights)


def build(column, case, d):
    compiled = column == "tf_fn"
    maybe_compile = tf.function if compiled else (lambda f: f)
    arr = {k: tnp.asarray(v) for k, v in d.items()}
    w = case.workload

    if w == "add":
        def add(a, b):
            return a + b

        f, a, b = maybe_compile(add), arr["a"], arr["b"]
        return lambda: f(a, b)

    if w == "sigmoid":
        def sigmoid(y):
            return 1 / (1 + tnp.exp(-y))

        f, y = maybe_compile(sigmoid), arr["y"]
        return lambda: f(y)

    if w == "mlp_grad":
        def grads(x, labels, w1, b, w2):
            return _compute_gradients([w1, b, w2], x, labels)

        f = maybe_compile(grads)
        args = (arr["x"], arr["labels"], arr["w1"], arr["b"], arr["w2"])
        return lambda: f(*args)

    if w == "per_example_grads":
        weights = [arr["w1"], arr["b"], arr["w2"]]

        def single_example_gradient(arg):
            inp, label = arg
            # a tuple, to match map_fn's fn_output_signature structure
            return tuple(_compute_gradients(
                weights, tnp.expand_dims(inp, 0), tnp.expand_dims(label, 0)))

        if case.params["via"] == "vectorized_map":
            def per_example_gradients(inputs, labels):
                return tf.vectorized_map(single_example_gradient, (inputs, labels))
        else:
            def per_example_gradients(inputs, labels):
                return tf.map_fn(single_example_gradient, (inputs, labels),
                                 fn_output_signature=(tf.float32,) * 3)

        f, x, labels = maybe_compile(per_example_gradients), arr["x"], arr["labels"]
        return lambda: f(x, labels)

    raise KeyError(w)
