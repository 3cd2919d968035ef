"""A lesson on tf.function (graphs), ported to ndflow.

Source: seed 003 (a Russian lesson on tf.function from a TensorFlow course). It starts from the
previous lesson's program, a two-layer dense network (tf.Module) classifying 28x28 digit images
with a hand-written training loop, and compiles its training step with @tf.function; then it
times a matrix function eagerly and as a graph (one call, then ten calls), shows that functions
called from a compiled function are compiled too, and that print() runs only while tracing.

Run:  python -m ndflow.examples.tf_function_lesson [--out DIR] [--quick]
      (or python examples/tf_function_lesson.py; --quick or NDFLOW_QUICK=1: a few seconds)
The loss curve is saved as DIR/tf_function_lesson_loss.png (by default DIR is a new temporary
directory; the path is printed) when matplotlib is installed.
"""
# DEVIATION: imports only: `import tensorflow as tf` -> `import ndflow as nf` (every `tf.` is `nf.`).
# DEVIATION: the lesson's `os.environ['TF_CPP_MIN_LOG_LEVEL'] = '2'` (TensorFlow logging) dropped.
# DEVIATION: the training program is the previous lesson's (the seed shows its training step and
#            loop and refers to `model`, `cross_entropy`, `opt`, `train_dataset`, `EPOCHS`); its
#            DenseNN/SequentialModule, loss, optimizer and accuracy code are that lesson's.
# DEVIATION: MNIST (`keras.datasets.mnist.load_data()`) is replaced with synthetic random NumPy
#            data of the same shapes and dtypes: uint8 images 28x28 (784 features after the
#            reshape) and uint8 labels of 10 classes, 60000 train / 10000 test images. Each image
#            is its class's fixed random prototype plus Gaussian noise, so the classes can be
#            learned and the accuracy means something.
# DEVIATION: `keras.utils.to_categorical(y, 10)` -> np.eye(10, dtype="float32")[y] (same result).
# DEVIATION: `tf.data.Dataset.from_tensor_slices((x, y)).shuffle(buffer_size=1024).batch(32)` ->
#            a small Python stand-in that reshuffles all the examples (a full shuffle, not a
#            1024-element buffer) each time it is iterated and yields (x_batch, y_batch) slices.
# DEVIATION: with NDFLOW_QUICK=1: 2048 train / 512 test images and EPOCHS = 2 (not 10), and
#            SIZE = 100 (not 1000) for the timed matrix function.
# DEVIATION: the training loop shows a progress bar per epoch on a terminal
#            (ndflow.utils.progress: tqdm when installed), keeps each batch's loss, and saves the
#            loss curve as tf_function_lesson_loss.png in the output directory (--out DIR, else a
#            new temporary one; matplotlib, optional).
# DEVIATION: each stage of the lesson (it redefines `function_tf` and `test_function` as it goes)
#            is one helper function, run in order by main(); indentation normalized to 4 spaces;
#            main() returns a dict of a few results for tests.
# DEVIATION: the lesson's Russian messages are translated ("Время обработки: {dt} сек" ->
#            "Processing time: {dt} s", "вызов функции print" -> "print() called"), and each
#            timing line says what it timed: the function (eager or nf.function), how many calls,
#            and that the first call of an nf.function traces and compiles it (the lesson's
#            point: one call of a graph costs more than an eager call, ten calls pay it back).
import time

import numpy as np
import ndflow as nf
from ndflow.examples._run import Output, busy_note, quick as _quick, run_as_script
from ndflow.utils.plotting import save_loss_curve
from ndflow.utils.progress import progress


# ===================================================================== The previous lesson's model
class DenseNN(nf.Module):
    def __init__(self, outputs, activate="relu"):
        super().__init__()
        self.outputs = outputs
        self.activate = activate
        self.fl_init = False

    def __call__(self, x):
        if not self.fl_init:
            self.w = nf.random.truncated_normal((x.shape[-1], self.outputs), stddev=0.1, name="w")
            self.b = nf.zeros([self.outputs], dtype=nf.float32, name="b")

            self.w = nf.Variable(self.w)
            self.b = nf.Variable(self.b)

            self.fl_init = True

        y = x @ self.w + self.b

        if self.activate == "relu":
            return nf.nn.relu(y)
        elif self.activate == "softmax":
            return nf.nn.softmax(y)

        return y


class SequentialModule(nf.Module):
    def __init__(self):
        super().__init__()
        self.layer_1 = DenseNN(128)
        self.layer_2 = DenseNN(10, activate="softmax")

    def __call__(self, x):
        return self.layer_2(self.layer_1(x))


# ========================================================== Stand-ins for keras / tf.data (DEVIATION)
def load_synthetic_digits(n_train=60000, n_test=10000, seed=0):
    """Stand-in for keras.datasets.mnist.load_data(): same shapes and dtypes, synthetic content.

    Returns ((x_train, y_train), (x_test, y_test)): uint8 images (n, 28, 28), uint8 labels (n,)
    in 0..9. Each image is its class's random prototype plus Gaussian noise (std 64), clipped.
    """
    rng = np.random.default_rng(seed)
    prototypes = rng.integers(0, 256, size=(10, 28, 28)).astype(np.float32)

    def make(n):
        y = rng.integers(0, 10, size=n).astype(np.uint8)
        noise = rng.standard_normal((n, 28, 28), dtype=np.float32) * 64
        x = np.clip(prototypes[y] + noise, 0, 255).astype(np.uint8)
        return x, y

    return make(n_train), make(n_test)


def to_categorical(y, num_classes):
    """Stand-in for keras.utils.to_categorical: one-hot float32 rows."""
    return np.eye(num_classes, dtype="float32")[np.asarray(y)]


class TrainDataset:
    """Stand-in for tf.data.Dataset.from_tensor_slices((x, y)).shuffle(...).batch(batch_size).

    Each iteration (epoch) reshuffles all the examples and yields (x_batch, y_batch).
    """

    def __init__(self, x, y, batch_size):
        self.x = nf.convert_to_tensor(x)
        self.y = nf.convert_to_tensor(y)
        self.batch_size = batch_size

    def __iter__(self):
        n = self.x.shape[0]
        order = np.random.permutation(n)
        for start in range(0, n, self.batch_size):
            idx = order[start:start + self.batch_size]
            yield self.x[idx], self.y[idx]


# ============================================================ Stage 1: compiling the training step
def train_digits_classifier(quick, out=None):
    if quick:
        (x_train, y_train), (x_test, y_test) = load_synthetic_digits(2048, 512)
    else:
        (x_train, y_train), (x_test, y_test) = load_synthetic_digits()

    x_train = x_train / 255
    x_test = x_test / 255

    x_train = nf.reshape(nf.cast(x_train, nf.float32), [-1, 28*28])
    x_test = nf.reshape(nf.cast(x_test, nf.float32), [-1, 28*28])

    y_train = to_categorical(y_train, 10)

    model = SequentialModule()

    cross_entropy = lambda y_true, y_pred: nf.reduce_mean(nf.losses.categorical_crossentropy(y_true, y_pred))  # noqa: E731
    opt = nf.optimizers.Adam(learning_rate=0.001)

    BATCH_SIZE = 32
    EPOCHS = 2 if quick else 10
    TOTAL = x_train.shape[0]  # noqa: F841  (defined by the lesson, unused)

    train_dataset = TrainDataset(x_train, y_train, BATCH_SIZE)

    @nf.function
    def train_batch(x_batch, y_batch):
        with nf.GradientTape() as tape:
            f_loss = cross_entropy(y_batch, model(x_batch))

        grads = tape.gradient(f_loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))

        return f_loss

    epoch_losses = []
    batch_losses = []
    n_batches = -(-x_train.shape[0] // BATCH_SIZE)
    for n in range(EPOCHS):
        loss = 0
        bar = progress(train_dataset, total=n_batches, desc=f"epoch {n + 1}/{EPOCHS}",
                       unit="batch")
        epoch_batch_losses = []     # arrays: read back once per epoch, not at every step
        for x_batch, y_batch in bar:
            batch_loss = train_batch(x_batch, y_batch)
            loss += batch_loss
            epoch_batch_losses.append(batch_loss)
            if len(epoch_batch_losses) % 50 == 0:
                bar.set_postfix(loss=float(batch_loss), refresh=False)
        batch_losses += [float(v) for v in epoch_batch_losses]

        print(loss.numpy())
        epoch_losses.append(float(loss.numpy()))
    plot_losses(batch_losses, out, "tf_function_lesson_loss.png",
                "Digits classifier (seed 003): training loss per batch",
                "batch (32 images each)", "cross-entropy (batch mean)")

    y = model(x_test)
    y2 = nf.argmax(y, axis=1).numpy()
    acc = len(y_test[y_test == y2])/y_test.shape[0] * 100
    print(acc)

    return dict(model=model, epoch_losses=epoch_losses, batch_losses=batch_losses, accuracy=acc)


def plot_losses(losses, out, filename, title, xlabel, ylabel="loss"):
    """Save the loss curve as `filename` in the output directory `out` (an Output; None: no
    picture). Returns its path, or None without matplotlib."""
    if out is None:
        return None
    return save_loss_curve(losses, out.path(filename), title=title, xlabel=xlabel,
                           ylabel=ylabel)


# ================================================================ Stage 2: one call, eager vs graph
def time_one_call(SIZE):
    def function_tf(x, y):
        s = nf.zeros_like(x, dtype=nf.float32)
        s = s + nf.matmul(x, y)
        for n in range(10):
            s = s + nf.matmul(s, y) * x

        return s

    def test_function(fn):
        def wrapper(*args, **kwargs):
            start = time.time()
            fn(*args, **kwargs)
            dt = time.time() - start
            # original: print(f"Время обработки: {dt} сек")
            print(f"Processing time ({_what(fn)}, 1 call{_first(fn)}): {dt} s")
        return wrapper

    x = nf.ones((SIZE, SIZE), dtype=nf.float32)
    y = nf.ones_like(x, dtype=nf.float32)

    function_tf_graph = nf.function(function_tf)

    test_function(function_tf)(x, y)
    test_function(function_tf_graph)(x, y)

    return dict(function_tf=function_tf, function_tf_graph=function_tf_graph, x=x, y=y)


# ================================================================ Stage 3: ten calls, eager vs graph
def _what(fn):
    """What a timing line timed: an nf.function or the Python function itself (eager)."""
    return "nf.function" if hasattr(fn, "get_concrete_function") else "eager"


def _first(fn):
    """The note a timing line needs when its calls include an nf.function's first (the lesson
    times it so: the cost of tracing, paid once, is what ten calls pay back)."""
    return ", tracing and compiling included" if _what(fn) == "nf.function" else ""


def test_function(fn):
    def wrapper(*args, **kwargs):
        start = time.time()
        for n in range(10):
            fn(*args, **kwargs)
        dt = time.time() - start
        # original: print(f"Время обработки: {dt} сек")
        print(f"Processing time ({_what(fn)}, 10 calls{_first(fn)}): {dt} s")
    return wrapper


def time_ten_calls(SIZE):
    def function_tf(x, y):
        s = nf.zeros_like(x, dtype=nf.float32)
        s = s + nf.matmul(x, y)
        for n in range(10):
            s = s + nf.matmul(s, y) * x

        return s

    x = nf.ones((SIZE, SIZE), dtype=nf.float32)
    y = nf.ones_like(x, dtype=nf.float32)

    function_tf_graph = nf.function(function_tf)

    test_function(function_tf)(x, y)
    test_function(function_tf_graph)(x, y)


# ========================================== Stage 4: functions called by a compiled one are compiled
def function_for(s, x, y):
    for n in range(10):
        s = s + nf.matmul(s, y) * x
    return s


def function_tf_split(x, y):
    s = nf.zeros_like(x, dtype=nf.float32)
    s = s + nf.matmul(x, y)
    return function_for(s, x, y)


def time_split_function(SIZE):
    function_tf = function_tf_split

    x = nf.ones((SIZE, SIZE), dtype=nf.float32)
    y = nf.ones_like(x, dtype=nf.float32)

    function_tf_graph = nf.function(function_tf)

    test_function(function_tf)(x, y)
    test_function(function_tf_graph)(x, y)

    return dict(eager=function_tf(x, y), graph=function_tf_graph(x, y))


# ========================================================= Stage 5: print() runs only when tracing
def function_tf_print(x, y):
    print("print() called")  # original: print("вызов функции print")
    s = nf.zeros_like(x, dtype=nf.float32)
    s = s + nf.matmul(x, y)
    return function_for(s, x, y)


def print_only_when_tracing(SIZE):
    function_tf = function_tf_print

    x = nf.ones((SIZE, SIZE), dtype=nf.float32)
    y = nf.ones_like(x, dtype=nf.float32)

    function_tf_graph = nf.function(function_tf)

    # Ten messages from the direct calls, only one from the graph (printed while tracing).
    test_function(function_tf)(x, y)
    test_function(function_tf_graph)(x, y)


def main(out_dir=None):
    """Run the lesson's stages in order; the loss curve goes to `out_dir` (default: a new
    temporary directory). Returns a dict of results for tests (examples/EXPECTED.md)."""
    out = Output("tf_function_lesson", out_dir)
    quick = _quick()
    SIZE = 100 if quick else 1000

    results = {}
    results["training"] = train_digits_classifier(quick, out)
    if busy_note():   # DEVIATION: timings taken on a busy machine say so
        print(busy_note())
    results["one_call"] = time_one_call(SIZE)
    time_ten_calls(SIZE)
    results["split"] = time_split_function(SIZE)
    print_only_when_tracing(SIZE)
    results["SIZE"] = SIZE
    out.report()
    return results


if __name__ == "__main__":
    run_as_script(main, "The tf.function lesson (seed 003) on ndflow.")
