"""ndflow: NumPy that differentiates, compiles, vectorizes and runs on accelerators.

    import ndflow as nf            # GradientTape, function, vectorized_map, device, Variable ...
    import ndflow.numpy as tnp     # the NumPy API
"""
from . import numpy  # noqa: F401  (registers primitives, the NumPy layer and ndarray methods)
from .numpy import ndarray, experimental_enable_numpy_behavior  # noqa: F401
from .core.ndarray import TracingError  # noqa: F401
from .core.dtypes import (bool_ as bool, int8, int16, int32, int64, uint8, uint16, uint32,  # noqa
                          uint64, float16, bfloat16, float32, float64, complex64, complex128)
from .autodiff.tape import GradientTape, UnconnectedGradients  # noqa: F401
from .autodiff.functional import (grad, value_and_grad, custom_gradient,  # noqa: F401
                                  numpy_function)
from .autodiff.forward import (ForwardAccumulator, jvp, jacfwd, jacrev, hessian,  # noqa: F401
                               stop_gradient)
from .graph.function import function, jit, TensorSpec, shape  # noqa: F401
from .vectorize.batching import vectorized_map, vmap, map_fn  # noqa: F401
from .graph.control import cond, switch_case, while_loop, fori_loop, scan  # noqa: F401
from .train.variable import Variable  # noqa: F401
from .train.module import Module  # noqa: F401
from .train import optimizers, initializers  # noqa: F401
from .backends.device import device  # noqa: F401
from . import config, test, autograph  # noqa: F401
from .core.ndarray import TensorShape  # noqa: F401
from .compat import (constant, convert_to_tensor, cast, reduce_sum, reduce_mean,  # noqa: F401
                     reduce_max, reduce_min, reduce_prod, reduce_any, reduce_all, matmul,
                     reshape, transpose, concat, stack, unstack, tile, square, squeeze,
                     expand_dims, argmax, argmin, ones, zeros, fill, ones_like, zeros_like, range,
                     identity, py_function, add_n, abs, exp, log, sqrt, maximum, minimum, where,
                     clip_by_value, one_hot, size, rank)
from . import nn, losses, random  # noqa: F401
from . import debugging, errors  # noqa: F401  (nf.debugging, nf.errors)
from .debugging import print_ as print  # noqa: F401,A001  (tf.print)

Tensor = ndarray
__version__ = "0.1.0"

# Loaded on first use (`nf.summary`, ...), to keep `import ndflow` close to `import numpy`:
# saved_model (nf.saved_model.save / load), onnx (export; the onnx package itself is imported
# only by export), summary (TensorBoard event files written by ndflow itself), distribute
# (strategies; mpi4py and dask load on first use), scipy (special, stats, linalg, integrate,
# signal). A saved function that holds one of their primitives loads it (saved_model).
_LAZY = ("saved_model", "onnx", "summary", "distribute", "scipy")


def __getattr__(name):
    if name in _LAZY:
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'ndflow' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
