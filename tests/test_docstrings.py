"""Every example in ndflow's docstrings runs and prints what it shows; the most used names have
one; and `help()` shows real parameters.

The examples are found with `doctest` in every module of the package (so an example added
anywhere is run), one test per docstring; each runs with `nf`, `tnp` and `np` already imported
(the examples import them too, for readers who copy them).
"""
import doctest
import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import ndflow
import ndflow.numpy as tnp

# modules that need an optional package at import (their examples run where it is installed)
_OPTIONAL = {"ndflow.distribute.dask": "dask", "ndflow.onnx._proto": "onnx"}


def _modules():
    names = ["ndflow"]
    for info in pkgutil.walk_packages(ndflow.__path__, "ndflow."):
        names.append(info.name)
    return sorted(names)


def _docstring_tests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    found, seen = {}, set()
    for name in _modules():
        try:
            mod = importlib.import_module(name)
        except ImportError:
            if name in _OPTIONAL:
                continue
            raise
        for test in finder.find(mod, name):
            # an object re-exported by another module is found there too: run it once
            if test.examples and test.name.startswith(name):
                found.setdefault(test.name, test)
        # objects with a docstring of their own (the ufuncs, tnp.add ...), which the finder
        # does not look into
        for attr, obj in sorted(vars(mod).items()):
            if ("__doc__" in getattr(obj, "__dict__", {}) and not inspect.isclass(obj)
                    and not inspect.ismodule(obj) and id(obj) not in seen
                    and type(obj).__module__.startswith("ndflow.")):
                seen.add(id(obj))
                for test in finder.find(obj, f"{name}.{attr}", module=False, globs={}):
                    if test.examples:
                        found.setdefault(test.name, test)
    return found


TESTS = _docstring_tests()
FLAGS = doctest.ELLIPSIS


@pytest.mark.parametrize("name", sorted(TESTS))
def test_docstring_example(name):
    test = TESTS[name]
    test.globs = dict(test.globs, nf=ndflow, tnp=tnp, np=np)
    out = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    try:
        result = runner.run(test, out=out.append, clear_globs=False)
    finally:
        test.globs = {}
        tnp.random.seed(None)
    assert result.failed == 0, "".join(out)


def test_examples_are_found_everywhere():
    # a finder that sees nothing would make the test above pass vacuously
    assert len(TESTS) > 250
    assert sum(len(t.examples) for t in TESTS.values()) > 600
    for name in ("ndflow.numpy.creation.zeros", "ndflow.compat.reduce_sum",
                 "ndflow.graph.function.function", "ndflow.math.cumsum", "ndflow.numpy.add",
                 "ndflow.math.sin", "ndflow.numpy.reductions.max"):
        assert name in TESTS


# The names people use most: each docstring has an Examples section that runs (above)
MOST_USED = """
numpy.array numpy.asarray numpy.zeros numpy.ones numpy.empty numpy.full numpy.zeros_like
numpy.ones_like numpy.full_like numpy.arange numpy.linspace numpy.eye numpy.identity numpy.copy
numpy.astype numpy.reshape numpy.ravel numpy.transpose numpy.swapaxes numpy.moveaxis
numpy.expand_dims numpy.squeeze numpy.broadcast_to numpy.concatenate numpy.stack numpy.vstack
numpy.hstack numpy.split numpy.where numpy.take numpy.take_along_axis numpy.nonzero
numpy.argwhere numpy.prod numpy.mean numpy.std numpy.var numpy.max numpy.min
numpy.argmax numpy.argmin numpy.cumsum numpy.any numpy.all numpy.add numpy.subtract
numpy.multiply numpy.divide numpy.power numpy.exp numpy.log numpy.sqrt numpy.abs numpy.sin
numpy.cos numpy.tanh numpy.maximum numpy.minimum numpy.clip numpy.round numpy.matmul numpy.dot
numpy.einsum numpy.outer numpy.tensordot numpy.sort numpy.argsort numpy.unique numpy.isnan
numpy.isclose numpy.allclose numpy.count_nonzero numpy.linalg.norm numpy.linalg.inv
numpy.linalg.solve numpy.linalg.det numpy.random.seed numpy.random.randn numpy.random.uniform
numpy.ndarray GradientTape function vectorized_map Variable Module constant convert_to_tensor
cast reduce_sum reduce_mean reduce_max matmul reshape concat stack gather one_hot where
clip_by_value clip_by_global_norm custom_gradient stop_gradient device cond while_loop map_fn
range shape print optimizers.SGD optimizers.Adam zeros ones argmax reduce_min reduce_prod
expand_dims squeeze transpose tile unstack scatter_nd boolean_mask split sort nn.log_softmax
nn.leaky_relu math.reduce_std math.cumsum
train.Checkpoint train.CheckpointManager saved_model.save saved_model.load nn.relu nn.softmax
nn.sigmoid nn.sparse_softmax_cross_entropy_with_logits losses.mean_squared_error random.normal
random.uniform math.reduce_logsumexp config.list_logical_devices ForwardAccumulator
debugging.check_numerics
""".split()


def _resolve(path):
    obj = ndflow
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _own_doc(obj):
    return obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__


@pytest.mark.parametrize("path", MOST_USED)
def test_most_used_names_have_an_example(path):
    doc = _own_doc(_resolve(path)) or ""
    assert "Examples\n" in inspect.cleandoc(doc) or ">>>" in doc, path
    assert ">>> " in doc, path


def test_most_used_list_is_long_enough():
    assert len(set(MOST_USED)) >= 100


@pytest.mark.parametrize("obj,params", [
    (lambda: ndflow.Variable, ["initial_value", "trainable", "name", "dtype", "shape"]),
    (lambda: ndflow.function, ["func", "input_signature", "autograph", "jit_compile"]),
    (lambda: ndflow.function(lambda x, y=2: x), ["x", "y"]),
    (lambda: ndflow.grad(lambda x, y=2: x), ["x", "y"]),
    (lambda: ndflow.vmap(lambda x, y=2: x), ["x", "y"]),
    (lambda: ndflow.math.add, ["x", "y", "name"]),
    (lambda: ndflow.gather, ["params", "indices", "validate_indices", "axis", "batch_dims"]),
])
def test_wrappers_show_their_real_parameters(obj, params):
    sig = inspect.signature(obj())
    assert list(sig.parameters)[:len(params)] == params
    assert "(*args, **kwargs)" not in str(sig)
