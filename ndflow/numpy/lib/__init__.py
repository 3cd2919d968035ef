"""`ndflow.numpy.lib`: NumPy's `numpy.lib` submodules ndflow offers (`stride_tricks`)."""
from . import stride_tricks  # noqa: F401
