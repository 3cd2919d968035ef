"""einops' backend for ndflow arrays, so `einops.rearrange/reduce/repeat/einsum` take them.

einops finds a framework by the subclasses of `einops._backends.AbstractBackend` whose
`framework_name` is an imported module. Defining the subclass needs einops, which `import
ndflow` does not load: `install()` defines it now when einops is already imported, or else when
einops' backend module is first imported (a finder that only watches for that one name).
Everything is composed from `ndflow.numpy`, so tapes, `nf.function` and `vectorized_map` see
ordinary operations.
"""
import importlib.abc
import importlib.util
import sys

from . import numpy as tnp
from .core.ndarray import ndarray

_WATCHED = "einops._backends"
# the backend class, held: einops finds it through `__subclasses__`, which holds it weakly
BACKEND = None


def _define():
    global BACKEND
    from einops._backends import AbstractBackend     # (einops is imported by now)

    class NdflowBackend(AbstractBackend):
        framework_name = "ndflow"

        def is_appropriate_type(self, tensor):
            return isinstance(tensor, ndarray)

        def from_numpy(self, x):
            return tnp.asarray(x)

        def to_numpy(self, x):
            return x.numpy()

        def arange(self, start, stop):
            return tnp.arange(start, stop)

        def reshape(self, x, shape):
            return tnp.reshape(x, shape)

        def transpose(self, x, axes):
            return tnp.transpose(x, axes)

        def reduce(self, x, operation, axes):
            return getattr(tnp, operation)(x, axis=axes)

        def stack_on_zeroth_dimension(self, tensors):
            return tnp.stack(tensors)

        def tile(self, x, repeats):
            return tnp.tile(x, repeats)

        def concat(self, tensors, axis):
            return tnp.concatenate(tensors, axis=axis)

        def is_float_type(self, x):
            return x.dtype.kind == "f" or x.dtype.name == "bfloat16"

        def add_axis(self, x, new_position):
            return tnp.expand_dims(x, new_position)

        def einsum(self, pattern, *x):
            return tnp.einsum(pattern, *x)

    BACKEND = NdflowBackend


class _Loader(importlib.abc.Loader):
    """einops' own loader, then the backend's definition."""

    def __init__(self, inner):
        self._inner = inner

    def create_module(self, spec):
        return self._inner.create_module(spec)

    def exec_module(self, module):
        self._inner.exec_module(module)
        _define()


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != _WATCHED:
            return None
        sys.meta_path.remove(self)           # (find einops' own spec, once)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install():
    """Make the backend known to einops, now or when einops is imported."""
    if _WATCHED in sys.modules:
        _define()
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
