"""Printing, floating-point error state and configuration, as NumPy's.

ndflow arrays print through NumPy's printer and compute with NumPy's kernels (eagerly and in
the code `nf.function` generates), so NumPy's print options and floating-point error state are
ndflow's: `set_printoptions` changes how ndflow arrays print, and `seterr(divide="raise")`
makes ndflow's divisions raise `FloatingPointError` as NumPy's do. The one place the state
cannot reach is a compiled function's body: kernels run when the function is called, not
while it is traced, so `errstate`/`seterr` inside a traced function raise a clear error
(set them around the call instead).
"""
import numpy as np

from ..core.ndarray import ndarray
from ..core.state import STATE
from ..backends import device as D


def _host(a):
    if isinstance(a, ndarray):
        return a.numpy()
    return a        # Variables convert through __array__


def _scalar(x):
    """A 0-d ndflow array as the NumPy scalar NumPy's scalar formatters take."""
    if isinstance(x, ndarray):
        return x.numpy()[()]
    return x


# ------------------------------------------------------------------ printing
set_printoptions = np.set_printoptions
get_printoptions = np.get_printoptions
printoptions = np.printoptions


def array2string(a, *args, **kwargs):
    """The text of `a`'s values, as `numpy.array2string` (all of its options)."""
    return np.array2string(np.asarray(_host(a)), *args, **kwargs)


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """NumPy's `repr` of `arr`'s values (`array([...])`), as `numpy.array_repr`."""
    return np.array_repr(np.asarray(_host(arr)), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """NumPy's `str` of `a`'s values, as `numpy.array_str`."""
    return np.array_str(np.asarray(_host(a)), max_line_width, precision, suppress_small)


def format_float_positional(x, *args, **kwargs):
    """A float scalar in positional notation, shortest round-trip by default, as
    `numpy.format_float_positional` (0-d ndflow arrays accepted)."""
    return np.format_float_positional(_scalar(x), *args, **kwargs)


def format_float_scientific(x, *args, **kwargs):
    """A float scalar in scientific notation, as `numpy.format_float_scientific`."""
    return np.format_float_scientific(_scalar(x), *args, **kwargs)


def base_repr(number, base=2, padding=0):
    """The digits of an integer in `base` (2 to 36), as `numpy.base_repr`."""
    return np.base_repr(_scalar(number), base, padding)


def binary_repr(num, width=None):
    """The binary digits of an integer (two's complement with `width`), as
    `numpy.binary_repr`."""
    return np.binary_repr(_scalar(num), width)


# ------------------------------------------------------------------ floating-point errors
def _refuse_in_trace(name):
    for t in STATE.traces:
        if getattr(t, "is_graph", False):
            raise RuntimeError(
                f"{name} inside nf.function: the function's kernels run when it is called, not "
                f"while it is traced, so an error state set here would not apply to them; set "
                f"it around the call (with tnp.errstate(...): f(x))")


class errstate(np.errstate):  # noqa: N801  (NumPy's name)
    """Floating-point error handling within a `with` block (or as a decorator), as
    `numpy.errstate`: ndflow's eager and compiled kernels honour it. Refused inside a traced
    function (see the module notes)."""

    def __enter__(self):
        _refuse_in_trace("errstate")
        return super().__enter__()


def seterr(all=None, divide=None, over=None, under=None, invalid=None):  # noqa: A002
    """Set how floating-point errors are handled ('ignore', 'warn', 'raise', 'call', 'print',
    'log'), returning the old settings, as `numpy.seterr`."""
    _refuse_in_trace("seterr")
    return np.seterr(all=all, divide=divide, over=over, under=under, invalid=invalid)


def geterr():
    """The current floating-point error handling, as `numpy.geterr`."""
    return np.geterr()


def seterrcall(func):
    """Set the callable (or object with `write`) used for the 'call' and 'log' modes, as
    `numpy.seterrcall`."""
    _refuse_in_trace("seterrcall")
    return np.seterrcall(func)


def geterrcall():
    """The callable used for the 'call' and 'log' error modes, as `numpy.geterrcall`."""
    return np.geterrcall()


def getbufsize():
    """The size of NumPy's ufunc buffer (in elements), which ndflow's kernels use, as
    `numpy.getbufsize`."""
    return np.getbufsize()


def setbufsize(size):
    """Set NumPy's ufunc buffer size, returning the old one, as `numpy.setbufsize`."""
    return np.setbufsize(size)


# ------------------------------------------------------------------ configuration
def _config():
    import importlib.util
    import platform
    import sys
    try:
        from importlib.metadata import version
        nf_version = version("ndflow")
    except Exception:  # noqa: BLE001  (not installed as a distribution: a source checkout)
        nf_version = "source checkout"
    optional = {name: importlib.util.find_spec(name) is not None
                for name in ("numba", "cupy", "onnx", "onnxruntime", "scipy")}
    return {
        "ndflow": nf_version, "numpy": np.__version__, "python": sys.version.split()[0],
        "platform": platform.platform(),
        "devices": [d.name for d in D._cpu_devices + D._gpus()],
        "optional packages": optional,
    }


def show_config(mode="stdout"):
    """ndflow's build and run configuration: versions, devices, which optional packages
    (numba, cupy, onnx, onnxruntime, scipy) are importable. `mode='dicts'` returns it instead
    of printing, as `numpy.show_config`."""
    if mode not in ("stdout", "dicts"):
        raise AttributeError(f"Invalid `mode`, use one of: stdout, dicts (got {mode!r})")
    cfg = _config()
    if mode == "dicts":
        return cfg
    for k, v in cfg.items():
        if isinstance(v, dict):
            v = ", ".join(f"{n} {'yes' if ok else 'no'}" for n, ok in v.items())
        elif isinstance(v, list):
            v = ", ".join(v)
        print(f"{k}: {v}")


def show_runtime():
    """What ndflow runs on now: `show_config` plus NumPy's SIMD and thread-pool report
    (`numpy.show_runtime`)."""
    show_config()
    np.show_runtime()
