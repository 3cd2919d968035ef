"""The AttributeError of a name ndflow does not have, pointing to the one a TensorFlow (or NumPy)
user should use instead: a table of TensorFlow names spelled otherwise here, then a look-up of
the name in the other namespaces (`nf.reduce_std` -> `ndflow.math.reduce_std`, `nf.arange` ->
`ndflow.numpy.arange`, `tnp.reduce_sum` -> `ndflow.reduce_sum`).

Loaded only when such an error is raised.
"""
import importlib

# TensorFlow's names (per namespace) with no function of that name here: what to use instead
_ELSEWHERE = {
    "ndflow": {
        "keras": "ndflow has no Keras: write models as classes over nf.Module and nf.Variable, "
                 "with nf.optimizers, nf.losses and nf.initializers",
        "data": "ndflow has no tf.data: iterate over NumPy arrays or Python generators",
        "string": "ndflow has no string tensors",
        "strings": "ndflow has no string tensors",
        "sparse": "ndflow has no sparse tensors: use dense arrays",
        "SparseTensor": "ndflow has no sparse tensors: use dense arrays",
        "ragged": "ndflow has no ragged tensors: pad to a rectangle (nf.pad) and keep a mask "
                  "(nf.sequence_mask)",
        "RaggedTensor": "ndflow has no ragged tensors: pad to a rectangle (nf.pad) and keep a "
                        "mask (nf.sequence_mask)",
        "strided_slice": "use Python slicing, x[begin:end:stride]",
        "linalg": "use ndflow.numpy.linalg (NumPy's names: inv, det, solve, cholesky, qr, svd, "
                  "eigh, norm ...)",
        "signal": "use ndflow.numpy.fft or ndflow.scipy.signal",
        "nest": "ndflow has no tf.nest: nf.function, nf.vectorized_map and tapes take nested "
                "lists, tuples and dicts as they are",
        "TensorArray": "collect values in a Python list and nf.stack them, or use nf.scan "
                       "inside nf.function",
        "control_dependencies": "not needed: ndflow runs operations in program order, also "
                                "inside nf.function",
        "py_func": "use nf.py_function or nf.numpy_function",
        "Graph": "ndflow has no tf.Graph: nf.function traces Python functions into graphs",
        "Session": "ndflow has no sessions: call functions (eagerly or with nf.function)",
        "placeholder": "ndflow has no placeholders: give nf.function an input_signature of "
                       "nf.TensorSpec",
        "dtypes": "dtypes are NumPy's, as nf.float32, nf.int32 ... (or ndflow.numpy.dtype)",
        "DType": "dtypes are NumPy's, as nf.float32, nf.int32 ... (or ndflow.numpy.dtype)",
        "saturate_cast": "use nf.cast(nf.clip_by_value(x, lo, hi), dtype)",
        "searchsorted": "use ndflow.numpy.searchsorted (on a 1-d sorted sequence)",
        "bincount": "use ndflow.numpy.bincount",
        "histogram_fixed_width": "use ndflow.numpy.histogram",
        "realdiv": "use nf.divide",
    },
    "ndflow.math": {
        "segment_max": "use ndflow.numpy.maximum.at on an array filled with -inf",
        "segment_min": "use ndflow.numpy.minimum.at on an array filled with inf",
        "unsorted_segment_max": "use ndflow.numpy.maximum.at on an array filled with -inf",
        "unsorted_segment_min": "use ndflow.numpy.minimum.at on an array filled with inf",
        "in_top_k": "compare the targets with the indices of ndflow.math.top_k",
        "bincount": "use ndflow.numpy.bincount",
        "invert_permutation": "use ndflow.numpy.argsort",
        "truncatediv": "for floats use ndflow.numpy.trunc(x / y)",
    },
}

# where else a name may be found, per namespace asked (module paths, searched in order)
_OTHER_PLACES = {
    "ndflow": ("ndflow.math", "ndflow.nn", "ndflow.numpy"),
    "ndflow.math": ("ndflow", "ndflow.nn", "ndflow.numpy"),
    "ndflow.nn": ("ndflow", "ndflow.math"),
    "ndflow.numpy": ("ndflow",),
}


def _has(module_path, name):
    """Whether the public namespace at `module_path` has `name` (lazy names count)."""
    try:
        mod = importlib.import_module(module_path)
    except ImportError:           # pragma: no cover  (every path above is part of ndflow)
        return False
    lazy = getattr(mod, "_LAZY", {})
    return name in lazy or (name in vars(mod) and not name.startswith("_"))


def missing(module_path, name):
    """The message of `AttributeError` for `module_path.name`, with where to look instead."""
    msg = f"module {module_path!r} has no attribute {name!r}"
    if name.startswith("_"):      # probes of tools (__wrapped__, _ipython_...) get the plain text
        return msg
    hint = _ELSEWHERE.get(module_path, {}).get(name)
    if hint is None:
        for other in _OTHER_PLACES.get(module_path, ()):
            if _has(other, name):
                hint = f"use {other}.{name}"
                break
    return msg if hint is None else f"{msg}; {hint}"
