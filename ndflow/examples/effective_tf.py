"""Effective TensorFlow (Vahid Kazemi), the parts in the seed, ported to ndflow.

Source: seed 004 (Chinese translation, Alibaba Cloud Yunqi community, of "Effective Tensorflow -
Guides and best practices for effective use of Tensorflow"): TensorFlow basics (NumPy vs
TensorFlow matmul; fitting f(x) = 5x^2 + 3 with gradient descent), static and dynamic shapes,
broadcasting the good and the ugly, and prototyping kernels and visualization with Python ops.

The seed translates the TensorFlow 1 edition (placeholders, sessions, tf.py_func). That code
cannot run eagerly, so each program follows the author's own TensorFlow 2 edition of the same
section ("Effective TensorFlow 2", github.com/vahidk/EffectiveTensorflow) where it has one; the
static/dynamic shapes section, which the TF2 edition dropped, keeps its TF1 code and expresses
the placeholders' unknown dimensions with nf.function input signatures.

Run:  python -m ndflow.examples.effective_tf [--out DIR] [--quick]
      (or python examples/effective_tf.py; --quick or NDFLOW_QUICK=1: a few seconds)
With matplotlib installed it saves, under DIR (by default a new temporary directory; the path is
printed), the loss curves of the curve fit, the labelled images the Python op draws, and
TensorBoard logs of them (then: tensorboard --logdir DIR/logs).
"""
# DEVIATION: imports only: `import tensorflow as tf` -> `import ndflow as nf` (every `tf.` is `nf.`).
# DEVIATION: TF1 graph-mode code follows the author's TF2 edition: tf.random_normal /
#            tf.random_uniform -> nf.random.normal / nf.random.uniform; the curve fit uses
#            nf.Variable, nf.optimizers.Adam(0.1).minimize(loss_fn, [w]) and eager calls instead
#            of tf.placeholder, tf.get_variable, tf.train.AdamOptimizer, tf.Session and
#            tf.global_variables_initializer, then runs the edition's @nf.function train_step
#            too; the Python-op ReLU uses nf.custom_gradient + nf.py_function instead of
#            tf.py_func, tf.RegisterGradient and gradient_override_map, and checks its gradient
#            against a finite difference instead of tf.test.compute_gradient_error in a Session;
#            visualize_labeled_images uses nf.py_function; `print(...)` of each result as in the
#            TF2 edition.
# DEVIATION: static and dynamic shapes (TF1 edition only): `tf.placeholder(tf.float32, [None, 128])`
#            -> the argument of an nf.function with
#            input_signature=[nf.TensorSpec([None, 128], nf.float32)], called on a (32, 128) array;
#            the collapse examples likewise with [None, 10, 32], called on (5, 10, 32); and eagerly
#            on a (5, 10, 32) array ("this works whether the shapes are statically specified or
#            not"). The seed's `a.get_shape().as_list()`, `tf.shape(a)`, `a.set_shape(...)`,
#            `tf.reshape(a, ...)`, `tf.unstack` are kept.
# DEVIATION: fixed the TF1 edition's typos: `placeholder([None, ...])` without dtype and module,
#            `get_shape(tensor)` -> `get_shape(b)`, `tf.prod` -> `nf.reduce_prod`, and
#            `tf.reshape(b, [0, [1, 2]])` -> `reshape(b, [0, [1, 2]])` (the general reshape just
#            defined); `# c = a + tf.tile(a, [1, 2])` -> `tf.tile(b, ...)` as in the TF2 edition.
# DEVIATION: Keras is not part of ndflow: `tf.layers.dense(x, units, activation)` /
#            `tf.keras.layers.Dense(units, activation).apply(x)` -> `Dense(units, activation).apply(x)`,
#            a small stand-in below built on nf.Module, nf.Variable, nf.random.uniform (Glorot
#            uniform kernel, zero bias, like Keras) and nf.matmul. The TF1 edition's
#            `tile_concat_dense` is the TF2 edition's `merge` (same body).
# DEVIATION: visualize_labeled_images returns the uint8 image batch `figs` made by the Python
#            op (main() saves it as PNG files in the output directory); the seed's
#            `return tf.summary.image(name, figs)` is the last section of this file,
#            visualize_labeled_images_summary, run by tensorboard_visualization() (also inside
#            nf.function) with `image = tf.placeholder(...); tf.summary.image("image", image)` as
#            `nf.summary.image("image", image)` of a [k, h, w, 1] batch. It needs matplotlib (and
#            its PIL) and writes to DIR/logs (the output directory's).
# DEVIATION: the curve fit shows a progress bar on a terminal (ndflow.utils.progress), records
#            each step's loss, and saves both runs' loss curves as effective_tf_fit_loss.png in
#            the output directory (--out DIR, else a new temporary one; matplotlib, optional).
# DEVIATION: with NDFLOW_QUICK=1 the curve fit takes 200 steps (not 1000) in each of its two runs.
# DEVIATION: the programs run inside main() (so tests can import and run this file), with
#            4-space indentation; main() returns a dict of a few results for tests.
import io

import numpy as np
import ndflow as nf
from ndflow.examples._run import Output, quick as _quick, run_as_script
from ndflow.utils.plotting import save_loss_curve
from ndflow.utils.progress import progress


# ======================================================================================= Basics
def numpy_matmul():
    x = np.random.normal(size=[10, 10])
    y = np.random.normal(size=[10, 10])
    z = np.dot(x, y)

    print(z)
    return z


def ndflow_matmul():
    x = nf.random.normal([10, 10])
    y = nf.random.normal([10, 10])
    z = nf.matmul(x, y)

    print(z)
    print(z.numpy())
    return x, y, z


def fit_curve(steps=1000, compiled=False, losses=None):
    # Assuming we know that the desired function is a polynomial of 2nd degree, we
    # allocate a vector of size 3 to hold the coefficients and initialize it with
    # random noise.
    w = nf.Variable(nf.random.normal([3, 1]))

    # We use the Adam optimizer with learning rate set to 0.1 to minimize the loss.
    opt = nf.optimizers.Adam(0.1)

    def model(x):
        # We define yhat to be our estimate of y.
        f = nf.stack([nf.square(x), x, nf.ones_like(x)], 1)
        yhat = nf.squeeze(nf.matmul(f, w), 1)
        return yhat

    def compute_loss(y, yhat):
        # The loss is defined to be the l2 distance between our estimate of y and its
        # true value. We also added a shrinkage term, to ensure the resulting weights
        # would be small.
        loss = nf.nn.l2_loss(yhat - y) + 0.1 * nf.nn.l2_loss(w)
        return loss

    def generate_data():
        # Generate some training data based on the true function
        x = np.random.uniform(-10.0, 10.0, size=100).astype(np.float32)
        y = 5 * np.square(x) + 3
        return x, y

    def train_step():
        x, y = generate_data()
        seen = []   # DEVIATION: the step returns its loss, for the loss curve

        def _loss_fn():
            yhat = model(x)
            loss = compute_loss(y, yhat)
            seen.append(loss)
            return loss

        opt.minimize(_loss_fn, [w])
        return seen[-1]

    if compiled:
        # "To get all those benefits we simply need to decorate the train_step function with
        # nf.function decorator."
        train_step = nf.function(train_step)

    for _ in progress(range(steps), desc="fit 5x^2+3" + (" (nf.function)" if compiled else ""),
                      unit="step"):
        loss = train_step()
        if losses is not None:
            losses.append(float(loss))

    print(w.numpy())
    return w


# ========================================================== Understanding static and dynamic shapes
def get_shape(tensor):
    static_shape = tensor.get_shape().as_list()
    dynamic_shape = nf.unstack(nf.shape(tensor))
    dims = [s[1] if s[0] is None else s[0]
            for s in zip(static_shape, dynamic_shape)]
    return dims


def reshape(tensor, dims_list):
    shape = get_shape(tensor)
    dims_prod = []
    for dims in dims_list:
        if isinstance(dims, int):
            dims_prod.append(shape[dims])
        elif all([isinstance(shape[d], int) for d in dims]):
            dims_prod.append(np.prod([shape[d] for d in dims]))
        else:
            dims_prod.append(nf.reduce_prod([shape[d] for d in dims]))
    tensor = nf.reshape(tensor, dims_prod)
    return tensor


def static_and_dynamic_shapes():
    results = {}

    # `a = tf.placeholder(tf.float32, [None, 128])` is the argument of a function traced for
    # inputs of shape [None, 128].
    @nf.function(input_signature=[nf.TensorSpec([None, 128], nf.float32)])
    def static_and_dynamic_shape(a):
        static_shape = a.get_shape().as_list()  # returns [None, 128]
        print("static shape:", static_shape)  # runs while tracing

        dynamic_shape = nf.shape(a)

        a.set_shape([32, 128])
        print("static shape after set_shape:", a.get_shape().as_list())  # [32, 128]

        a = nf.reshape(a, [32, 128])
        return dynamic_shape, a

    dynamic_shape, a = static_and_dynamic_shape(nf.ones([32, 128]))
    print("dynamic shape:", dynamic_shape)
    results["dynamic_shape"] = dynamic_shape

    # `b = tf.placeholder(tf.float32, [None, 10, 32])`, likewise.
    @nf.function(input_signature=[nf.TensorSpec([None, 10, 32], nf.float32)])
    def collapse_with_get_shape(b):
        shape = get_shape(b)
        b = nf.reshape(b, [shape[0], shape[1] * shape[2]])
        return b

    @nf.function(input_signature=[nf.TensorSpec([None, 10, 32], nf.float32)])
    def collapse_with_reshape(b):
        b = reshape(b, [0, [1, 2]])
        return b

    b = collapse_with_get_shape(nf.ones([5, 10, 32]))
    print("collapsed with get_shape:", b.shape)
    c = collapse_with_reshape(nf.ones([5, 10, 32]))
    print("collapsed with reshape:", c.shape)

    # "Note that this works whether the shapes are statically specified or not."
    eager = reshape(nf.ones([5, 10, 32]), [0, [1, 2]])
    print("eager get_shape:", get_shape(nf.ones([5, 10, 32])), "collapsed:", eager.shape)
    results["collapsed"] = (b, c, eager)

    # DEVIATION: the same remark shown with two unknown sizes, `[None, None, 32]`: get_shape
    # gives run-time sizes for both, reshape multiplies them with nf.reduce_prod, and one trace
    # serves every size.
    @nf.function(input_signature=[nf.TensorSpec([None, None, 32], nf.float32)])
    def collapse_unknown(b):
        return reshape(b, [0, [1, 2]])

    unknown = [collapse_unknown(nf.ones([n, m, 32])) for n, m in ((5, 10), (2, 3))]
    print("collapsed with two unknown sizes:", [u.shape for u in unknown])
    results["collapsed_unknown"] = (unknown, collapse_unknown.experimental_get_tracing_count())
    return results


# ====================================================================== Broadcasting
class Dense(nf.Module):
    """Stand-in for tf.keras.layers.Dense (DEVIATION: Keras is not part of ndflow).

    Glorot-uniform kernel and zero bias, created on the first call from the input's last
    dimension; `apply(x)` is `self(x)`, as in Keras.
    """

    def __init__(self, units, activation=None):
        super().__init__()
        self.units = units
        self.activation = activation
        self.kernel = None
        self.bias = None

    def __call__(self, x):
        if self.kernel is None:
            fan_in = x.shape[-1]
            limit = np.sqrt(6.0 / (fan_in + self.units))
            self.kernel = nf.Variable(
                nf.random.uniform([fan_in, self.units], minval=-limit, maxval=limit))
            self.bias = nf.Variable(nf.zeros([self.units]))
        y = nf.matmul(x, self.kernel) + self.bias
        if self.activation is not None:
            y = self.activation(y)
        return y

    def apply(self, x):
        return self(x)


def merge(a, b, units, activation=None):
    pa = Dense(units).apply(a)
    pb = Dense(units).apply(b)
    c = pa + pb
    if activation is not None:
        c = activation(c)
    return c


def broadcasting():
    results = {}

    a = nf.constant([[1., 2.], [3., 4.]])
    b = nf.constant([[1.], [2.]])
    # c = a + nf.tile(b, [1, 2])
    c = a + b

    print(c)
    results["a_plus_b"] = c

    a = nf.random.uniform([5, 3, 5])
    b = nf.random.uniform([5, 1, 6])

    # concat a and b and apply nonlinearity
    tiled_b = nf.tile(b, [1, 3, 1])
    c = nf.concat([a, tiled_b], 2)
    d = Dense(10, activation=nf.nn.relu).apply(c)

    print(d)
    results["tile_concat_dense"] = d

    pa = Dense(10).apply(a)
    pb = Dense(10).apply(b)
    d = nf.nn.relu(pa + pb)

    print(d)
    results["broadcast_dense"] = d

    d = merge(a, b, 10, activation=nf.nn.relu)
    print(d)
    results["merge"] = d

    a = nf.constant([[1.], [2.]])
    b = nf.constant([1., 2.])
    c = nf.reduce_sum(a + b)

    print(c)
    results["ugly_sum"] = c

    a = nf.constant([[1.], [2.]])
    b = nf.constant([1., 2.])
    c = nf.reduce_sum(a + b, 0)

    print(c)
    results["explicit_sum"] = c
    return results


# ============================================ Prototyping kernels and visualization with Python ops
def relu(inputs):
    # Define the op in python
    def _py_relu(x):
        return np.maximum(x, 0.)

    # Define the op's gradient in python
    def _py_relu_grad(x):
        return np.float32(x > 0)

    @nf.custom_gradient
    def _relu(x):
        y = nf.py_function(_py_relu, [x], nf.float32)

        def _relu_grad(dy):
            return dy * nf.py_function(_py_relu_grad, [x], nf.float32)

        return y, _relu_grad

    return _relu(inputs)


def check_relu_gradient():
    # Compute analytical gradient
    x = nf.random.normal([10], dtype=np.float32)
    with nf.GradientTape() as tape:
        tape.watch(x)
        y = relu(x)
    g = tape.gradient(y, x)
    print(g)

    # Compute numerical gradient
    dx_n = 1e-5
    dy_n = relu(x + dx_n) - relu(x)
    g_n = dy_n / dx_n
    print(g_n)
    return x, y, g, g_n


def visualize_labeled_images(images, labels, max_outputs=3, name="image"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import PIL.Image

    def _visualize_image(image, label):
        # Do the actual drawing in python
        fig = plt.figure(figsize=(3, 3), dpi=80)
        ax = fig.add_subplot(111)
        ax.imshow(image[::-1, ...])
        ax.text(0, 0, str(label),
                horizontalalignment="left",
                verticalalignment="top")
        fig.canvas.draw()

        # Write the plot as a memory file.
        buf = io.BytesIO()
        data = fig.savefig(buf, format="png")  # noqa: F841
        buf.seek(0)
        plt.close(fig)

        # Read the image and convert to numpy array
        img = PIL.Image.open(buf)
        return np.array(img.getdata()).reshape(img.size[0], img.size[1], -1)

    def _visualize_images(images, labels):
        # Only display the given number of examples in the batch
        outputs = []
        for i in range(max_outputs):
            output = _visualize_image(images[i], labels[i])
            outputs.append(output)
        return np.array(outputs, dtype=np.uint8)

    # Run the python op.
    figs = nf.py_function(_visualize_images, [images, labels], nf.uint8)
    # DEVIATION: was `return tf.summary.image(name, figs)`.
    return figs


def _can_plot():
    try:
        import matplotlib  # noqa: F401
        import PIL  # noqa: F401
    except ImportError:
        return False
    return True


def main(out_dir=None):
    """Run the programs in order; pictures go to `out_dir` (default: a new temporary
    directory). Returns a dict of results for tests (examples/EXPECTED.md)."""
    out = Output("effective_tf", out_dir)
    steps = 200 if _quick() else 1000
    results = {}

    # ------------------------------------------------------------------------------ Basics
    results["numpy_matmul"] = numpy_matmul()
    results["ndflow_matmul"] = ndflow_matmul()
    curves = {"eager": [], "nf.function": []}
    results["fit_curve"] = fit_curve(steps, losses=curves["eager"])
    results["fit_curve_compiled"] = fit_curve(steps, compiled=True, losses=curves["nf.function"])
    results["fit_curve_losses"] = curves
    # the NumPy data are drawn at every eager step, but only once in the compiled step: NumPy
    # code runs while tracing, and its result becomes a constant of the graph
    legend = {"eager: new data at every step": curves["eager"],
              "nf.function: data drawn once, while tracing": curves["nf.function"]}
    results["fit_png"] = save_loss_curve(
        None, out.path("effective_tf_fit_loss.png"), series=legend,
        title="Fitting 5x² + 3 with Adam(0.1): loss per step (100 points each)",
        ylabel="l2_loss(yhat - y) + 0.1 * l2_loss(w)")

    # ------------------------------------------------------------- Static and dynamic shapes
    results["shapes"] = static_and_dynamic_shapes()

    # --------------------------------------------------------------------------- Broadcasting
    results["broadcasting"] = broadcasting()

    # ------------------------------------------------------------------------- Python ops
    results["relu_gradient"] = check_relu_gradient()

    if _can_plot():
        images = np.random.uniform(size=[3, 28, 28]).astype(np.float32)
        labels = np.array([3, 1, 4])
        figs = visualize_labeled_images(nf.convert_to_tensor(images), nf.convert_to_tensor(labels))
        print("visualized images:", figs.shape, figs.dtype)

        import PIL.Image
        for i, fig in enumerate(figs.numpy()):
            PIL.Image.fromarray(fig).save(out.path("effective_tf_image_%d.png" % i))
        results["figs"] = figs
        logs = tensorboard_visualization(out.path("logs"))
        results["logdir"] = logs and logs[0]

    out.report()
    return results


# =================================== Visualization through a Python op, written for TensorBoard
# The seed's visualize_labeled_images ends with `return tf.summary.image(name, figs)`: the
# images the Python op drew (labels and all) become an image summary. nf.summary writes it.
def visualize_labeled_images_summary(images, labels, max_outputs=3, name="image"):
    figs = visualize_labeled_images(images, labels, max_outputs, name)
    return nf.summary.image(name, figs, max_outputs=max_outputs)


def tensorboard_visualization(logdir=None, steps=2):
    """Write the seed's image summaries for TensorBoard: the input images
    (`tf.summary.image("image", image)`) and the labelled figures drawn by matplotlib in a
    Python op, eagerly (step 0) and from an nf.function at each call (steps 1..steps: the
    Python op and the summary run at every call, not once when tracing). Returns
    (logdir, results), or None (with a message) when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
        import PIL  # noqa: F401
    except ImportError:
        print("TensorBoard visualization skipped: it draws with matplotlib "
              "(pip install matplotlib)")
        return None
    logdir = logdir or Output("effective_tf").path("logs")
    writer = nf.summary.create_file_writer(logdir)
    images = np.random.uniform(size=[3, 28, 28]).astype(np.float32)
    labels = np.array([3, 1, 4])
    results = {}
    with writer.as_default(step=0):
        image = nf.convert_to_tensor(images[..., np.newaxis])
        results["image"] = nf.summary.image("image", image)
        results["labeled"] = visualize_labeled_images_summary(
            nf.convert_to_tensor(images), nf.convert_to_tensor(labels), name="labeled_image")

    step = nf.Variable(0, dtype="int64", trainable=False)

    @nf.function
    def log_predictions(images, labels):
        step.assign_add(1)
        return visualize_labeled_images_summary(images, labels, max_outputs=2,
                                                name="predictions")

    with writer.as_default(step=step):
        results["compiled"] = [log_predictions(nf.convert_to_tensor(images),
                                               nf.convert_to_tensor((labels + i) % 10))
                               for i in range(steps)]
    writer.close()
    print("TensorBoard logs in %s (tensorboard --logdir %s)" % (logdir, logdir))
    return logdir, results


if __name__ == "__main__":
    run_as_script(main, "Effective TensorFlow (seed 004) on ndflow.")
