"""TensorFlow's "NumPy API on TensorFlow" guide (first half), ported to ndflow.

Source: seed 001 (Spanish translation of https://www.tensorflow.org/guide/tf_numpy): setup,
enabling NumPy behavior, the ND array, type promotion, broadcasting, indexing, the example model,
NumPy interoperability and operator precedence. The second half of the guide (interop with
TensorFlow, gradients, tf.function, vectorized_map, devices, benchmark) is
ndflow/examples/tf_numpy_performance.py.

Run:  python -m ndflow.examples.tf_numpy_guide [--out DIR]    (or python examples/tf_numpy_guide.py)
The histogram of the guide's labels is saved as DIR/tf_numpy_guide_hist.png (by default DIR is a
new temporary directory; the path is printed) when matplotlib is installed.
"""
# DEVIATION: imports only: `import tensorflow as tf` -> `import ndflow as nf` (every `tf.` is
#            `nf.`, also inside printed strings and comments), and
#            `import tensorflow.experimental.numpy as tnp` -> `import ndflow.numpy as tnp`.
# DEVIATION: dropped `print("Using TensorFlow version %s" % tf.__version__)` (TensorFlow-only).
# DEVIATION: matplotlib is optional: the `plt.hist(labels)` cell draws on a figure of its own
#            (no pyplot state, never a window) with a title, axis labels and 30 bins, saved as
#            tf_numpy_guide_hist.png in the output directory (--out DIR, else a new temporary
#            one) instead of shown; without matplotlib a message says it is not drawn. It plots
#            `labels[0]`: `labels` has shape (1, 1000), and matplotlib reads a 2-D NumPy array
#            as 1000 data sets of one value each.
# DEVIATION: repaired the seed's machine-translation damage: `ones.form` -> `ones.shape`,
#            `ones.machine` -> `ones.device`, `dtype.identify` -> `dtype.name`,
#            `tnp.most(y, 0)` -> `tnp.maximum(y, 0)`, `measurement` -> `size`,
#            `Mannequin`/`mannequin` -> `Model`/`model`, `strive:`/`besides TypeError:` ->
#            `try:`/`except TypeError:`, and the lost backslashes ("%sn" -> "%s\n"); translated
#            words inside printed strings and comments restored to the English guide's wording
#            ("Kind promotion" -> "Type promotion", "Primary indexing" -> "Basic indexing",
#            "Superior indexing" -> "Advanced indexing", ...).
# DEVIATION: the guide's `try: tnp.arange(6)[1] = -1 / except TypeError: print("Currently,
#            TensorFlow NumPy does not support mutation.")` shows a TensorFlow limitation; ndflow
#            supports mutation (as NumPy), so the cell assigns into a named array and prints it.
# DEVIATION: the notebook cells run in order inside three functions that main() calls, one per
#            group of the guide's sections (so tests can import and run this file); the model
#            class is at module level; indentation normalized to 4 spaces; main() returns a dict
#            of a few results for tests.
import numpy as np
import ndflow as nf
import ndflow.numpy as tnp
import timeit  # noqa: F401  (imported by the guide's setup cell; used by its second half)

from ndflow.examples._run import Output, run_as_script
from ndflow.utils.plotting import new_figure, save_figure


# ---------------------------------------------------------------------------------- Example model
class Model(object):
    """Model with a dense and a linear layer."""

    def __init__(self):
        self.weights = None

    def predict(self, inputs):
        if self.weights is None:
            size = inputs.shape[1]
            # Note that type `tnp.float32` is used for performance.
            stddev = tnp.sqrt(size).astype(tnp.float32)
            w1 = tnp.random.randn(size, 64).astype(tnp.float32) / stddev
            bias = tnp.random.randn(64).astype(tnp.float32)
            w2 = tnp.random.randn(64, 2).astype(tnp.float32) / 8
            self.weights = (w1, bias, w2)
        else:
            w1, bias, w2 = self.weights

        y = tnp.matmul(inputs, w1) + bias
        y = tnp.maximum(y, 0)  # Relu
        return tnp.matmul(y, w2)  # Linear projection


def nd_array_and_type_promotion(results):
    """The guide's "TensorFlow NumPy ND array" and "Type promotion"."""
    # ------------------------------------------------------------ TensorFlow NumPy ND array
    # Create an ND array and check out different attributes.
    ones = tnp.ones([5, 3], dtype=tnp.float32)
    print("Created ND array with shape = %s, rank = %s, "
          "dtype = %s on device = %s\n" % (
              ones.shape, ones.ndim, ones.dtype, ones.device))

    # `ndarray` is just an alias to `nf.Tensor`.
    print("Is `ones` an instance of nf.Tensor: %s\n" % isinstance(ones, nf.Tensor))

    # Try commonly used member functions.
    print("ndarray.T has shape %s" % str(ones.T.shape))
    print("narray.reshape(-1) has shape %s" % ones.reshape(-1).shape)
    results["ones"] = ones

    # ------------------------------------------------------------------------- Type promotion
    print("Type promotion for operations")
    values = [tnp.asarray(1, dtype=d) for d in
              (tnp.int32, tnp.int64, tnp.float32, tnp.float64)]
    promotions = {}
    for i, v1 in enumerate(values):
        for v2 in values[i + 1:]:
            print("%s + %s => %s" %
                  (v1.dtype.name, v2.dtype.name, (v1 + v2).dtype.name))
            promotions[(v1.dtype.name, v2.dtype.name)] = (v1 + v2).dtype.name
    results["promotions"] = promotions

    print("Type inference during array creation")
    print("tnp.asarray(1).dtype == tnp.%s" % tnp.asarray(1).dtype.name)
    print("tnp.asarray(1.).dtype == tnp.%s\n" % tnp.asarray(1.).dtype.name)

    tnp.experimental_enable_numpy_behavior(prefer_float32=True)
    print("When prefer_float32 is True:")
    print("tnp.asarray(1.).dtype == tnp.%s" % tnp.asarray(1.).dtype.name)
    print("tnp.add(1., 2.).dtype == tnp.%s" % tnp.add(1., 2.).dtype.name)

    tnp.experimental_enable_numpy_behavior(prefer_float32=False)
    print("When prefer_float32 is False:")
    print("tnp.asarray(1.).dtype == tnp.%s" % tnp.asarray(1.).dtype.name)
    print("tnp.add(1., 2.).dtype == tnp.%s" % tnp.add(1., 2.).dtype.name)


def broadcasting_and_indexing(results):
    """The guide's "Broadcasting" and "Indexing"."""
    # ---------------------------------------------------------------------------- Broadcasting
    x = tnp.ones([2, 3])
    y = tnp.ones([3])
    z = tnp.ones([1, 2, 1])
    print("Broadcasting shapes %s, %s and %s gives shape %s" % (
        x.shape, y.shape, z.shape, (x + y + z).shape))
    results["broadcast"] = x + y + z

    # -------------------------------------------------------------------------------- Indexing
    x = tnp.arange(24).reshape(2, 3, 4)

    print("Basic indexing")
    print(x[1, tnp.newaxis, 1:3, ...], "\n")

    print("Boolean indexing")
    print(x[:, (True, False, True)], "\n")

    print("Advanced indexing")
    print(x[1, (0, 0, 1), tnp.asarray([0, 1, 1])])
    results["indexing"] = (x[1, tnp.newaxis, 1:3, ...],
                           x[:, (True, False, True)],
                           x[1, (0, 0, 1), tnp.asarray([0, 1, 1])])

    # Mutation: TensorFlow NumPy raised TypeError here ("Currently, TensorFlow NumPy does not
    # support mutation."); ndflow arrays are mutable, as NumPy's.
    x = tnp.arange(6)
    x[1] = -1
    print(x)
    results["mutation"] = x


def model_and_interoperability(results, out):
    """The guide's "Example model", "NumPy interoperability" and "Operator precedence"."""
    # --------------------------------------------------------------------------- Example model
    model = Model()
    # Create input data and compute predictions.
    print(model.predict(tnp.ones([2, 32], dtype=tnp.float32)))
    results["model"] = model

    # ------------------------------------------------------------------- NumPy interoperability
    # ND array passed into NumPy function.
    np_sum = np.sum(tnp.ones([2, 3]))
    print("sum = %s. Class: %s" % (float(np_sum), np_sum.__class__))

    # `np.ndarray` passed into TensorFlow NumPy function.
    tnp_sum = tnp.sum(np.ones([2, 3]))
    print("sum = %s. Class: %s" % (float(tnp_sum), tnp_sum.__class__))
    results["np_sum"], results["tnp_sum"] = np_sum, tnp_sum

    # It is easy to plot ND arrays, given the __array__ interface.
    labels = 15 + 2 * tnp.random.randn(1, 1000)
    fig = new_figure(what="the histogram of labels")
    if fig is not None:
        ax = fig.add_subplot(111)
        _ = ax.hist(labels[0], bins=30)
        ax.set(title="Histogram of 15 + 2 * tnp.random.randn(1, 1000)",
               xlabel="value (normal draws: mean 15, standard deviation 2)",
               ylabel="count (of 1000)")
        results["hist_png"] = save_figure(fig, out.path("tf_numpy_guide_hist.png"))
    results["labels"] = labels

    # ---------------------------------------------------------------------- Operator precedence
    x = tnp.ones([2]) + np.ones([2])
    print("x = %s\nclass = %s" % (x, x.__class__))
    results["precedence"] = x


def main(out_dir=None):
    """Run the guide's cells in order; files go to `out_dir` (default: a new temporary
    directory). Returns a dict of results for tests (examples/EXPECTED.md)."""
    out = Output("tf_numpy_guide", out_dir)
    results = {}

    # ------------------------------------------------------------------ Enabling NumPy behavior
    tnp.experimental_enable_numpy_behavior()

    nd_array_and_type_promotion(results)
    broadcasting_and_indexing(results)
    model_and_interoperability(results, out)

    out.report()
    return results


if __name__ == "__main__":
    run_as_script(main, "TensorFlow's NumPy guide (first half) on ndflow.")
