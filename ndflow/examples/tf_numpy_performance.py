"""TensorFlow's "NumPy API on TensorFlow" guide (second half), ported to ndflow.

Source: seed 000 (Russian translation of the second half of
https://www.tensorflow.org/guide/tf_numpy): ND arrays and tensors, TensorFlow interoperability,
gradients and batch jacobians with GradientTape, trace compilation with tf.function,
vectorization with tf.vectorized_map (per-example gradients, compared with tf.map_fn), device
placement (list devices, tf.device, tnp.copy) and the sigmoid benchmark (NumPy vs ndflow eager vs
compiled, plus GPU when one is present). It uses the model of the guide's "Example model"
section (seed 001), so that definition is included here.

Run:  python examples/tf_numpy_performance.py
      NDFLOW_QUICK=1 python examples/tf_numpy_performance.py       (a few seconds)
      NDFLOW_PLOT_DIR=/tmp/plots python examples/tf_numpy_performance.py   (saves the plot)
"""
# DEVIATION: imports only: `import tensorflow as tf` -> `import ndflow as nf` (every `tf.` is
#            `nf.`, also inside printed strings and comments), and
#            `import tensorflow.experimental.numpy as tnp` -> `import ndflow.numpy as tnp`.
# DEVIATION: dropped `print("Using TensorFlow version %s" % tf.__version__)` (TensorFlow-only).
# DEVIATION: includes the guide's setup (`tnp.experimental_enable_numpy_behavior()`) and its
#            "Example model" section (class Model, `model = Model()`, first prediction, which
#            also creates the weights that compute_gradients asserts exist), from seed 001.
# DEVIATION: timings: `timeit(..., number=10) * 100, "ms"` is written
#            `timeit(..., number=number) * 1000 / number, "ms"` (the same value for number=10);
#            with NDFLOW_QUICK=1, number=2 for the gradient timings, and the sigmoid benchmark
#            uses sizes 2**0..2**15 (not 2**20) with number=5 (not 30) and 10 (not 100) on GPU.
#            Batch sizes (32, 512, 128, 16, 5) are the guide's in both modes.
# DEVIATION: matplotlib is optional and off by default: plot() only runs when NDFLOW_PLOT_DIR is
#            set and matplotlib is importable, and saves
#            $NDFLOW_PLOT_DIR/tf_numpy_performance_sigmoid.png instead of showing it.
# DEVIATION: the benchmark's times are also printed as a table (the guide only plots them), since
#            plotting is off by default.
# DEVIATION: on a terminal, benchmark() shows a progress bar over the sizes (stderr;
#            ndflow.utils.progress).
# DEVIATION: the notebook cells run inside main() (so tests can import and run this file, and
#            the helper functions close over `model` as the notebook's globals did); indentation
#            normalized to 4 spaces; main() returns a dict of a few results for tests.
import os
import timeit

import numpy as np
import ndflow as nf
import ndflow.numpy as tnp
from ndflow.utils.progress import progress


def _quick():
    return os.environ.get("NDFLOW_QUICK", "") == "1"


def _pyplot():
    """matplotlib.pyplot when plotting is enabled (NDFLOW_PLOT_DIR set) and available, else None."""
    if not os.environ.get("NDFLOW_PLOT_DIR"):
        return None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    os.makedirs(os.environ["NDFLOW_PLOT_DIR"], exist_ok=True)
    return plt


# ----------------------------------------------------------- Example model (from seed 001)
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


def main():
    quick = _quick()
    number = 2 if quick else 10
    results = {}

    # Setup (seed 001).
    tnp.experimental_enable_numpy_behavior()

    # Example model (seed 001).
    model = Model()
    # Create input data and compute predictions.
    print(model.predict(tnp.ones([2, 32], dtype=tnp.float32)))
    results["model"] = model

    # =================================================================== TF NumPy and TensorFlow
    # ------------------------------------------------------------------ nf.Tensor and ND array
    x = nf.constant([1, 2])
    print(x)

    # `asarray` and `convert_to_tensor` here are no-ops.
    tnp_x = tnp.asarray(x)
    print(tnp_x)
    print(nf.convert_to_tensor(tnp_x))

    # Note that nf.Tensor.numpy() will continue to return `np.ndarray`.
    print(x.numpy(), x.numpy().__class__)
    results["constant"] = x

    # ---------------------------------------------------------------- TensorFlow interoperability
    # ND array passed into TensorFlow function.
    tf_sum = nf.reduce_sum(tnp.ones([2, 3], tnp.float32))
    print("Output = %s" % tf_sum)

    # `nf.Tensor` passed into TensorFlow NumPy function.
    tnp_sum = tnp.sum(nf.ones([2, 3]))
    print("Output = %s" % tnp_sum)
    results["tf_sum"], results["tnp_sum"] = tf_sum, tnp_sum

    # ----------------------------------------------------- Gradients and Jacobians: GradientTape
    def create_batch(batch_size=32):
        """Creates a batch of input and labels."""
        return (tnp.random.randn(batch_size, 32).astype(tnp.float32),
                tnp.random.randn(batch_size, 2).astype(tnp.float32))

    def compute_gradients(model, inputs, labels):
        """Computes gradients of squared loss between model prediction and labels."""
        with nf.GradientTape() as tape:
            assert model.weights is not None
            # Note that `model.weights` need to be explicitly watched since they
            # are not nf.Variables.
            tape.watch(model.weights)
            # Compute prediction and loss
            prediction = model.predict(inputs)
            loss = tnp.sum(tnp.square(prediction - labels))
        # This call computes the gradient through the computation above.
        return tape.gradient(loss, model.weights)

    inputs, labels = create_batch()
    gradients = compute_gradients(model, inputs, labels)

    # Inspect the shapes of returned gradients to verify they match the
    # parameter shapes.
    print("Parameter shapes:", [w.shape for w in model.weights])
    print("Gradient shapes:", [g.shape for g in gradients])
    # Verify that gradients are of type ND array.
    assert isinstance(gradients[0], tnp.ndarray)
    results["gradients"] = (inputs, labels, gradients)

    # Computes a batch of jacobians. Each row is the jacobian of an element in the
    # batch of outputs w.r.t. the corresponding input batch element.
    def prediction_batch_jacobian(inputs):
        with nf.GradientTape() as tape:
            tape.watch(inputs)
            prediction = model.predict(inputs)
        return prediction, tape.batch_jacobian(prediction, inputs)

    inp_batch = tnp.ones([16, 32], tnp.float32)
    output, batch_jacobian = prediction_batch_jacobian(inp_batch)
    # Note how the batch jacobian shape relates to the input and output shapes.
    print("Output shape: %s, input shape: %s" % (output.shape, inp_batch.shape))
    print("Batch jacobian shape:", batch_jacobian.shape)
    results["batch_jacobian"] = (inp_batch, output, batch_jacobian)

    # ------------------------------------------------------- Trace compilation: nf.function
    inputs, labels = create_batch(512)
    print("Eager performance")
    compute_gradients(model, inputs, labels)
    print(timeit.timeit(lambda: compute_gradients(model, inputs, labels),
                        number=number) * 1000 / number, "ms")

    print("\nnf.function compiled performance")
    compiled_compute_gradients = nf.function(compute_gradients)
    compiled_compute_gradients(model, inputs, labels)  # warmup
    print(timeit.timeit(lambda: compiled_compute_gradients(model, inputs, labels),
                        number=number) * 1000 / number, "ms")
    results["compiled_gradients"] = (inputs, labels,
                                     compute_gradients(model, inputs, labels),
                                     compiled_compute_gradients(model, inputs, labels))

    # ---------------------------------------------------------- Vectorization: nf.vectorized_map
    @nf.function
    def vectorized_per_example_gradients(inputs, labels):
        def single_example_gradient(arg):
            inp, label = arg
            return compute_gradients(model,
                                     tnp.expand_dims(inp, 0),
                                     tnp.expand_dims(label, 0))
        # Note that a call to `nf.vectorized_map` semantically maps
        # `single_example_gradient` over each row of `inputs` and `labels`.
        # The interface is similar to `nf.map_fn`.
        # The underlying machinery vectorizes away this map loop which gives
        # nice speedups.
        return nf.vectorized_map(single_example_gradient, (inputs, labels))

    batch_size = 128
    inputs, labels = create_batch(batch_size)

    per_example_gradients = vectorized_per_example_gradients(inputs, labels)
    for w, p in zip(model.weights, per_example_gradients):
        print("Weight shape: %s, batch size: %s, per example gradient shape: %s " % (
            w.shape, batch_size, p.shape))
    results["per_example_gradients"] = (inputs, labels, per_example_gradients)

    # Benchmark the vectorized computation above and compare with
    # unvectorized sequential computation using `nf.map_fn`.
    @nf.function
    def unvectorized_per_example_gradients(inputs, labels):
        def single_example_gradient(arg):
            inp, label = arg
            return compute_gradients(model,
                                     tnp.expand_dims(inp, 0),
                                     tnp.expand_dims(label, 0))

        return nf.map_fn(single_example_gradient, (inputs, labels),
                         fn_output_signature=(nf.float32, nf.float32, nf.float32))

    print("Running vectorized computation")
    print(timeit.timeit(lambda: vectorized_per_example_gradients(inputs, labels),
                        number=number) * 1000 / number, "ms")

    print("\nRunning unvectorized computation")
    per_example_gradients = unvectorized_per_example_gradients(inputs, labels)
    print(timeit.timeit(lambda: unvectorized_per_example_gradients(inputs, labels),
                        number=number) * 1000 / number, "ms")
    results["map_fn_gradients"] = per_example_gradients

    # ========================================================================= Device placement
    # ------------------------------------------------------------------------------ List devices
    print("All logical devices:", nf.config.list_logical_devices())
    print("All physical devices:", nf.config.list_physical_devices())

    # Try to get the GPU device. If unavailable, fallback to CPU.
    try:
        device = nf.config.list_logical_devices(device_type="GPU")[0]
    except IndexError:
        device = "/device:CPU:0"

    # -------------------------------------------------------- Placing operations: nf.device
    print("Using device: %s" % str(device))
    # Run operations in the `nf.device` scope.
    # If a GPU is available, these operations execute on the GPU and outputs are
    # placed on the GPU memory.
    with nf.device(device):
        prediction = model.predict(create_batch(5)[0])

    print("prediction is placed on %s" % prediction.device)

    # -------------------------------------------- Copying ND arrays across devices: tnp.copy
    with nf.device("/device:CPU:0"):
        prediction_cpu = tnp.copy(prediction)
    print(prediction.device)
    print(prediction_cpu.device)
    results["devices"] = (device, prediction, prediction_cpu)

    # ================================================================= Performance comparisons
    def benchmark(f, inputs, number=30, force_gpu_sync=False):
        """Utility to benchmark `f` on each value in `inputs`."""
        times = []
        for inp in progress(inputs, desc=getattr(f, "__name__", "benchmark"), unit="size",
                            leave=False):
            def _g():
                if force_gpu_sync:
                    one = tnp.asarray(1)
                f(inp)
                if force_gpu_sync:
                    with nf.device("CPU:0"):
                        tnp.copy(one)  # Force a sync for GPU case

            _g()  # warmup
            t = timeit.timeit(_g, number=number)
            times.append(t * 1000. / number)
        return times

    def plot(np_times, tnp_times, compiled_tnp_times, has_gpu, tnp_times_gpu):
        """Plot the different runtimes."""
        plt.xlabel("size")
        plt.ylabel("time (ms)")
        plt.title("Sigmoid benchmark: TF NumPy vs NumPy")
        plt.plot(sizes, np_times, label="NumPy")
        plt.plot(sizes, tnp_times, label="TF NumPy (CPU)")
        plt.plot(sizes, compiled_tnp_times, label="Compiled TF NumPy (CPU)")
        if has_gpu:
            plt.plot(sizes, tnp_times_gpu, label="TF NumPy (GPU)")
        plt.legend()

    # Define a simple implementation of `sigmoid`, and benchmark it using
    # NumPy and TensorFlow NumPy for different input sizes.

    def np_sigmoid(y):
        return 1. / (1. + np.exp(-y))

    def tnp_sigmoid(y):
        return 1. / (1. + tnp.exp(-y))

    @nf.function
    def compiled_tnp_sigmoid(y):
        return tnp_sigmoid(y)

    if quick:
        sizes = (2 ** 0, 2 ** 5, 2 ** 10, 2 ** 15)
        bench_number, gpu_number = 5, 10
    else:
        sizes = (2 ** 0, 2 ** 5, 2 ** 10, 2 ** 15, 2 ** 20)
        bench_number, gpu_number = 30, 100
    np_inputs = [np.random.randn(size).astype(np.float32) for size in sizes]
    np_times = benchmark(np_sigmoid, np_inputs, bench_number)

    with nf.device("/device:CPU:0"):
        tnp_inputs = [tnp.random.randn(size).astype(np.float32) for size in sizes]
        tnp_times = benchmark(tnp_sigmoid, tnp_inputs, bench_number)
        compiled_tnp_times = benchmark(compiled_tnp_sigmoid, tnp_inputs, bench_number)

    has_gpu = len(nf.config.list_logical_devices("GPU"))
    if has_gpu:
        with nf.device("/device:GPU:0"):
            tnp_inputs = [tnp.random.randn(size).astype(np.float32) for size in sizes]
            tnp_times_gpu = benchmark(compiled_tnp_sigmoid, tnp_inputs, gpu_number, True)
    else:
        tnp_times_gpu = None

    for row in zip(sizes, np_times, tnp_times, compiled_tnp_times,
                   tnp_times_gpu or [None] * len(sizes)):
        print("size %8d: NumPy %.4f ms, TF NumPy (CPU) %.4f ms, compiled %.4f ms, GPU %s" % (
            row[0], row[1], row[2], row[3],
            "n/a" if row[4] is None else "%.4f ms" % row[4]))

    plt = _pyplot()
    if plt is not None:
        plot(np_times, tnp_times, compiled_tnp_times, has_gpu, tnp_times_gpu)
        plt.savefig(os.path.join(os.environ["NDFLOW_PLOT_DIR"],
                                 "tf_numpy_performance_sigmoid.png"))
        plt.close()
    results["sigmoid"] = (np_sigmoid, tnp_sigmoid, compiled_tnp_sigmoid)
    results["benchmark"] = dict(sizes=sizes, np_times=np_times, tnp_times=tnp_times,
                                compiled_tnp_times=compiled_tnp_times,
                                tnp_times_gpu=tnp_times_gpu)

    return results


if __name__ == "__main__":
    main()
