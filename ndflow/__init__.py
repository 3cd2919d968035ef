"""ndflow: NumPy that differentiates, compiles, vectorizes and runs on accelerators.

    import ndflow as nf            # GradientTape, function, vectorized_map, device, Variable ...
    import ndflow.numpy as tnp     # the NumPy API
"""
import os as _os

from . import numpy  # noqa: F401  (registers primitives, the NumPy layer and ndarray methods)
from .numpy import ndarray, experimental_enable_numpy_behavior  # noqa: F401
from .core.ndarray import TensorShape  # noqa: F401
from .core.errors import TracingError  # noqa: F401
from .core.dtypes import (bool_ as bool, int8, int16, int32, int64, uint8, uint16, uint32,  # noqa
                          uint64, float16, float32, float64, complex64, complex128)
# device placement hooks itself into core's eager path when imported: it stays eager
from .backends.device import device  # noqa: F401
# einops' main entry takes ndflow arrays once einops is imported (einops itself stays unloaded)
from . import _einops
_einops.install()

if _os.environ.get("NDFLOW_DEBUG"):
    # parsed (and a typo reported) at import, as before; unset, parsing it changes nothing
    from .graph import debug as _debug  # noqa: F401

Tensor = ndarray
__version__ = "0.4.8"

# Loaded on first use (`nf.function`, `nf.GradientTape`, `nf.summary`, ...), to keep
# `import ndflow` close to `import numpy`: the NumPy layer above needs none of them. Each name
# maps to (module, attribute; None: the module itself). Modules holding primitives that a saved
# graph may name are loaded by the saved-model reader (`saved_model._graphio`).
_LAZY = {
    "autodiff": (".autodiff", None), "graph": (".graph", None),
    "vectorize": (".vectorize", None), "train": (".train", None),
    "autograph": (".autograph", None), "compat": (".compat", None),
    "config": (".config", None), "test": (".test", None), "nn": (".nn", None),
    "losses": (".losses", None), "random": (".random", None), "debugging": (".debugging", None),
    "errors": (".errors", None), "optimizers": (".train.optimizers", None),
    "initializers": (".train.initializers", None), "math": (".math", None),
    # saved_model (nf.saved_model.save / load), onnx (export; the onnx package itself is
    # imported only by export), summary (TensorBoard event files written by ndflow itself),
    # distribute (strategies; mpi4py and dask load on first use), scipy (special, stats,
    # linalg, integrate, signal)
    "saved_model": (".saved_model", None), "onnx": (".onnx", None),
    "summary": (".summary", None), "distribute": (".distribute", None),
    "scipy": (".scipy", None),
    "bfloat16": (".core.dtypes", "bfloat16"),      # ml_dtypes, imported on first use
    "print": (".debugging", "print_"),
}
for _mod, _names in (
        (".autodiff.tape", "GradientTape UnconnectedGradients"),
        (".autodiff.functional", "grad value_and_grad custom_gradient numpy_function"),
        (".autodiff.forward", "ForwardAccumulator jvp jacfwd jacrev hessian stop_gradient"),
        (".graph.function", "function jit TensorSpec"), (".graph.dynamic_shape", "shape"),
        (".vectorize.mapping", "vectorized_map vmap map_fn"),
        (".graph.control", "cond switch_case while_loop fori_loop scan"),
        (".train.variable", "Variable"), (".train.module", "Module"),
        (".compat", "constant convert_to_tensor cast reduce_sum reduce_mean reduce_max "
                    "reduce_min reduce_prod reduce_any reduce_all matmul reshape transpose "
                    "concat stack unstack tile square squeeze expand_dims argmax argmin ones "
                    "zeros fill ones_like zeros_like range identity py_function add_n abs exp "
                    "log sqrt maximum minimum where clip_by_value one_hot size rank"),
        (".array_ops", "gather gather_nd scatter_nd tensor_scatter_nd_update "
                       "tensor_scatter_nd_add tensor_scatter_nd_sub boolean_mask sequence_mask "
                       "reverse split slice pad sort argsort unique roll repeat broadcast_to "
                       "meshgrid eye linspace einsum clip_by_norm clip_by_global_norm "
                       "global_norm norm executing_eagerly is_tensor newaxis"),
        # the tf.math functions TensorFlow also has at the top level (tf.add, tf.sigmoid ...)
        (".math", "add subtract multiply divide truediv floordiv truncatemod scalar_mul pow "
                  "negative sign sin cos tan sinh cosh asin acos atan asinh acosh atanh atan2 "
                  "tanh sigmoid floor round equal not_equal less less_equal greater "
                  "greater_equal logical_and logical_or logical_not cumsum "
                  "reduce_logsumexp")):
    for _n in _names.split():
        _LAZY[_n] = (_mod, _n)
del _mod, _names, _n

# `from ndflow import *` gives what it gave when everything was imported eagerly; of the
# names added since, not those that would hide Python's own (`round`, `pow`, `slice`, `math`)
__all__ = sorted((set(n for n in globals() if not n.startswith("_")) | set(_LAZY))
                 - {"saved_model", "onnx", "summary", "distribute", "scipy"}
                 - {"math", "round", "pow", "slice"})


def __getattr__(name):
    import importlib
    where = _LAZY.get(name)
    if where is None:
        # a TensorFlow name ndflow spells otherwise: the error says where to look
        hints = importlib.import_module("._hints", __name__)
        raise AttributeError(hints.missing(__name__, name))
    value = importlib.import_module(where[0], __name__)
    if where[1] is not None:
        value = getattr(value, where[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
