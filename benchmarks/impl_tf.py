"""TensorFlow: ``tf.experimental.numpy`` eager, ``tf.function``, and ``tf.function`` compiled by
XLA (``jit_compile=True``)."""

from __future__ import annotations

import os

from . import workloads as W

COLUMNS = {"tf": "TF-NP eager", "tf_fn": "tf.function", "tf_xla": "tf XLA"}

tf = tnp = None


def setup() -> str:
    global tf, tnp
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow

    tf = tensorflow
    if os.environ.get("NDFLOW_BENCH_THREADS"):
        n = int(os.environ["NDFLOW_BENCH_THREADS"])
        tf.config.threading.set_intra_op_parallelism_threads(n)
        tf.config.threading.set_inter_op_parallelism_threads(n)
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
    if column == "tf_xla":
        def maybe_compile(f):
            return tf.function(f, jit_compile=True)
    else:
        maybe_compile = tf.function if column == "tf_fn" else (lambda f: f)
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

    if w == "polyfit_adam":
        # Adam written out (Keras is not assumed installed), with TF's epsilon placement
        deg = len(W.POLY_TRUE)
        coef, m, v = (tf.Variable(tnp.zeros(deg, dtype=tnp.float32)) for _ in range(3))
        t = tf.Variable(0.0)
        powers = tnp.arange(deg, dtype=tnp.float32)[:, None]

        def fit_step(x, y):
            with tf.GradientTape() as tape:
                pred = tnp.matmul(coef, x[None, :] ** powers)
                loss = tnp.mean(tnp.square(pred - y))
            g = tape.gradient(loss, coef)
            t.assign_add(1.0)
            m.assign(m * W.ADAM_B1 + g * (1 - W.ADAM_B1))
            v.assign(v * W.ADAM_B2 + g * g * (1 - W.ADAM_B2))
            lr = W.POLY_LR * tnp.sqrt(1 - W.ADAM_B2 ** t) / (1 - W.ADAM_B1 ** t)
            coef.assign_sub(m * lr / (tnp.sqrt(v) + W.ADAM_EPS))
            return loss

        step, xs, ys = maybe_compile(fit_step), d["xs"], d["ys"]

        def fit():
            for i in range(xs.shape[0]):
                step(xs[i], ys[i])
            return coef.numpy()
        return fit

    if w in ("classifier_step", "first_call"):
        params = [tf.Variable(arr[k]) for k in ("w1", "b1", "w2", "b2")]
        x, onehot = arr["x"], arr["onehot"]

        def make_step():
            def train_step(x, onehot):
                w1, b1, w2, b2 = params
                with tf.GradientTape() as tape:
                    h = tnp.maximum(tnp.matmul(x, w1) + b1, 0)
                    logits = tnp.matmul(h, w2) + b2
                    z = logits - tnp.max(logits, axis=1, keepdims=True)
                    lse = tnp.log(tnp.sum(tnp.exp(z), axis=1))
                    loss = tnp.mean(lse - tnp.sum(z * onehot, axis=1))
                for p, g in zip(params, tape.gradient(loss, params)):
                    p.assign_sub(g * W.D_LR)
                return loss
            return maybe_compile(train_step)

        if w == "first_call":
            return lambda: make_step()(x, onehot)
        step = make_step()
        return lambda: step(x, onehot)

    if w == "matmul_chain":
        def chain(a, *ws):
            for mat in ws:
                a = tnp.matmul(a, mat)
            return a

        f, ws = maybe_compile(chain), [arr[f"w{i}"] for i in range(case.params["k"])]
        return lambda: f(arr["a"], *ws)

    raise KeyError(w)
