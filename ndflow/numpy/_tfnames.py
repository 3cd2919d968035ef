"""The AttributeError of a name `ndflow.numpy` does not have: TensorFlow's names that people try
on tnp point to NumPy's spelling here, or to the TensorFlow-style function of `ndflow`.

Loaded only when such an error is raised.
"""
import sys

# TensorFlow's names -> how NumPy (and so tnp) spells them
_NUMPY_SPELLING = {
    "reduce_sum": "sum", "reduce_mean": "mean", "reduce_max": "max", "reduce_min": "min",
    "reduce_prod": "prod", "reduce_any": "any", "reduce_all": "all", "reduce_std": "std",
    "reduce_variance": "var", "reduce_logsumexp": "logaddexp.reduce", "gather": "take",
    "gather_nd": "x[tuple(indices[..., i] for i in ...)]", "cast": "asarray(x, dtype=...)",
    "constant": "array", "convert_to_tensor": "asarray", "range": "arange", "fill": "full",
    "reverse": "flip", "boolean_mask": "x[mask]", "clip_by_value": "clip", "rank": "ndim",
    "is_nan": "isnan", "is_inf": "isinf", "is_finite": "isfinite", "floordiv": "floor_divide",
    "floormod": "remainder", "truediv": "true_divide", "squared_difference": "square(x - y)",
    "rsqrt": "1 / sqrt(x)",
}


def missing(name):
    """The message of `AttributeError` for `ndflow.numpy.name`."""
    msg = f"module 'ndflow.numpy' has no attribute {name!r}"
    if name.startswith("_"):
        return msg
    hint = _NUMPY_SPELLING.get(name)
    if hint is not None:
        hint = f"NumPy's name is ndflow.numpy.{hint}"
    # the package above is imported before this one: its table of names is there to read
    nf = sys.modules.get("ndflow")
    if nf is not None and (name in getattr(nf, "_LAZY", {}) or name in vars(nf)):
        tf = f"TensorFlow's is ndflow.{name}"
        hint = tf if hint is None else f"{hint}; {tf}"
    return msg if hint is None else f"{msg}; {hint}"
