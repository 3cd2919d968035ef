"""TensorFlow's "NumPy API on TensorFlow" guide (second half), ported to ndflow.

Source: seed 000 (Russian translation of the second half of
https://www.tensorflow.org/guide/tf_numpy): ND arrays and tensors, TensorFlow interoperability,
gradients and batch jacobians with GradientTape, trace compilation with tf.function,
vectorization with tf.vectorized_map (per-example gradients, compared with tf.map_fn), device
placement (list devices, tf.device, tnp.copy) and the sigmoid benchmark (NumPy vs ndflow eager vs
compiled, plus GPU when one is present). It uses the model of the guide's "Example model"
section (seed 001), so that definition is included here.

Run:  python -m ndflow.examples.tf_numpy_performance [--out DIR] [--quick]
      (or python examples/tf_numpy_performance.py; --quick or NDFLOW_QUICK=1: a few seconds)
The sigmoid benchmark's figure is saved as DIR/tf_numpy_performance_sigmoid.png (by default DIR
is a new temporary directory; the path is printed) when matplotlib is installed.
"""
# DEVIATION: imports only: `import tensorflow as tf` -> `import ndflow as nf` (every `tf.` is
#            `nf.`, also inside printed strings and comments), and
#            `import tensorflow.experimental.numpy as tnp` -> `import ndflow.numpy as tnp`.
# DEVIATION: dropped `print("Using TensorFlow version %s" % tf.__version__)` (TensorFlow-only).
# DEVIATION: includes the guide's setup (`tnp.experimental_enable_numpy_behavior()`) and its
#            "Example model" section (`model = Model()`, first prediction, which also creates
#            the weights that compute_gradients asserts exist), from seed 001; the class Model
#            is the first half's (tf_numpy_guide.py), imported from there.
# DEVIATION: timings measure the steady state, and say so: the guide's
#            `timeit(..., number=10) * 100, "ms"` (the mean of 10 calls, the first compiled
#            call's tracing excluded by a warm-up call) becomes `steady_time` (_run.py beside it):
#            a warm-up call, a wait for the kernels compiled in the background (the compile
#            holds the interpreter lock and made compiled code look slower than eager code in
#            the first seconds), then the best of 5 runs of `number` calls, printed in ms per
#            call. The benchmark's warm-up and best-of-5 likewise.
#            With NDFLOW_QUICK=1, number=2 for the gradient timings, and the sigmoid benchmark
#            uses sizes 2**0..2**15 (not 2**20) with number=5 (not 30) and 10 (not 100) on GPU.
#            Batch sizes (32, 512, 128, 16, 5) are the guide's in both modes.
# DEVIATION: matplotlib is optional: plot() draws on a figure of its own (no pyplot state, never
#            a window), saved as tf_numpy_performance_sigmoid.png in the output directory (--out
#            DIR, else a new temporary one) instead of shown. Its axes are logarithmic (the
#            guide's linear axes hide every size below 2**15), and its title and legend name
#            ndflow (the guide's say "TF NumPy").
# DEVIATION: the benchmark's times are also printed as a table (the guide only plots them), so
#            that they are seen without matplotlib.
# DEVIATION: on a terminal, benchmark() shows a progress bar over the sizes (stderr;
#            ndflow.utils.progress).
# DEVIATION: each of the guide's sections is a function, run in order by main() (so tests can
#            import and run this file); the notebook's global `model` is passed to them, and its
#            helpers (create_batch, compute_gradients, benchmark, plot) are at module level;
#            indentation normalized to 4 spaces; main() returns a dict of a few results for tests.
import numpy as np
import ndflow as nf
import ndflow.numpy as tnp

from ndflow.examples.tf_numpy_guide import Model
from ndflow.examples._run import Output, busy_note, quick as _quick, run_as_script, steady_time
from ndflow.utils.plotting import new_figure, save_figure
from ndflow.utils.progress import progress


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

        # warmup (traces and compiles), then the best of 5 runs of `number` calls
        times.append(steady_time(_g, number) * 1000.)
    return times


def plot(ax, sizes, np_times, tnp_times, compiled_tnp_times, has_gpu, tnp_times_gpu):
    """Plot the different runtimes (log-log: the sizes span six orders of magnitude)."""
    def us(times):  # the times are in ms
        return [t * 1e3 for t in times]
    ax.set_xlabel("input size (float32 elements)")
    ax.set_ylabel("time per call (µs, best of 5 runs after a warm-up)")
    ax.set_title("Sigmoid benchmark 1 / (1 + exp(-y)): ndflow and NumPy")
    ax.plot(sizes, us(np_times), marker="o", label="NumPy")
    ax.plot(sizes, us(tnp_times), marker="o", label="ndflow eager (CPU)")
    ax.plot(sizes, us(compiled_tnp_times), marker="o", label="ndflow nf.function (CPU)")
    if has_gpu:
        ax.plot(sizes, us(tnp_times_gpu), marker="o", label="ndflow nf.function (GPU)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()


def tf_numpy_and_tensorflow(results):
    """The guide's "TF NumPy and TensorFlow": ND arrays and tensors, interoperability."""
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


def gradients_and_jacobians(results, model):
    """The guide's "Gradients and Jacobians: tf.GradientTape"."""
    # ----------------------------------------------------- Gradients and Jacobians: GradientTape
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


def trace_compilation(results, model, number):
    """The guide's "Trace compilation: tf.function"."""
    # ------------------------------------------------------- Trace compilation: nf.function
    inputs, labels = create_batch(512)
    print("Eager performance")
    print(steady_time(lambda: compute_gradients(model, inputs, labels),
                      number=number) * 1000, "ms")

    print("\nnf.function compiled performance")
    compiled_compute_gradients = nf.function(compute_gradients)
    # steady_time's first call is the warmup: it traces and compiles
    print(steady_time(lambda: compiled_compute_gradients(model, inputs, labels),
                      number=number) * 1000, "ms")
    results["compiled_gradients"] = (inputs, labels,
                                     compute_gradients(model, inputs, labels),
                                     compiled_compute_gradients(model, inputs, labels))


def vectorization(results, model, number):
    """The guide's "Vectorization: tf.vectorized_map"."""
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
    print(steady_time(lambda: vectorized_per_example_gradients(inputs, labels),
                      number=number) * 1000, "ms")

    print("\nRunning unvectorized computation")
    per_example_gradients = unvectorized_per_example_gradients(inputs, labels)
    print(steady_time(lambda: unvectorized_per_example_gradients(inputs, labels),
                      number=number) * 1000, "ms")
    results["map_fn_gradients"] = per_example_gradients


def device_placement(results, model):
    """The guide's "Device placement"."""
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


def performance_comparisons(results, quick, out):
    """The guide's "Performance comparisons": the sigmoid benchmark and its figure."""
    # ================================================================= Performance comparisons
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

    busy = busy_note()
    print("Sigmoid: time per call, best of 5 runs after a warm-up (compiles finished)"
          + ("; " + busy if busy else ""))
    for row in zip(sizes, np_times, tnp_times, compiled_tnp_times,
                   tnp_times_gpu or [None] * len(sizes)):
        print("size %8d: NumPy %.4f ms, ndflow eager %.4f ms, nf.function %.4f ms, GPU %s" % (
            row[0], row[1], row[2], row[3],
            "n/a" if row[4] is None else "%.4f ms" % row[4]))

    fig = new_figure(7, 4.5, what="the sigmoid benchmark's figure")
    if fig is not None:
        plot(fig.add_subplot(111), sizes, np_times, tnp_times, compiled_tnp_times, has_gpu,
             tnp_times_gpu)
        if busy:   # DEVIATION: a contended measurement says so on its figure
            fig.text(0.01, 0.01, busy, fontsize=7, color="firebrick")
        results["sigmoid_png"] = save_figure(fig, out.path("tf_numpy_performance_sigmoid.png"))
    results["sigmoid"] = (np_sigmoid, tnp_sigmoid, compiled_tnp_sigmoid)
    results["benchmark"] = dict(sizes=sizes, np_times=np_times, tnp_times=tnp_times,
                                compiled_tnp_times=compiled_tnp_times,
                                tnp_times_gpu=tnp_times_gpu)


def main(out_dir=None):
    """Run the guide's cells in order; the figure goes to `out_dir` (default: a new temporary
    directory). Returns a dict of results for tests (examples/EXPECTED.md)."""
    out = Output("tf_numpy_performance", out_dir)
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

    tf_numpy_and_tensorflow(results)
    gradients_and_jacobians(results, model)
    trace_compilation(results, model, number)
    vectorization(results, model, number)
    device_placement(results, model)
    performance_comparisons(results, quick, out)

    out.report()
    return results


if __name__ == "__main__":
    run_as_script(main, "TensorFlow's NumPy guide (second half) on ndflow.")
