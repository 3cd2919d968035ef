"""The `out=` argument, validated the NumPy way in one place: every function of the NumPy layer
that takes `out=` writes its result through `write_out`, so a wrong shape or dtype is NumPy's
error on every path instead of a write that broadcasts or casts silently."""
import numpy as np

from ..core.ndarray import ndarray
from ..primitives._util import broadcast_shapes


def _ufunc_casting_error(ufunc, frm, to, casting):
    """NumPy's own exception for a ufunc output it cannot cast (a TypeError subclass,
    UFuncTypeError), with its message."""
    try:
        np.add(np.zeros(1), np.zeros(1), out=np.zeros(1, np.int64))
    except TypeError as e:
        try:
            return type(e)(ufunc, casting, np.dtype(frm), np.dtype(to), 0)
        except Exception:   # noqa: BLE001 -- a NumPy whose class takes other arguments
            pass
    return TypeError(f"Cannot cast ufunc {ufunc.__name__!r} output from {np.dtype(frm)!r} to "
                     f"{np.dtype(to)!r} with casting rule {casting!r}")


def write_out(r, out, *, broadcast=False, casting="unsafe", ufunc=None, same_size=False):
    """`r` written into `out` (returned), or `r` when `out` is None. As NumPy:

    - `out` is an array (a tuple holding one array is accepted, as by ufuncs);
    - `broadcast=False` (reductions, take, concatenate, ...): `out` has exactly r's shape;
      `broadcast=True` (ufuncs and gufuncs: clip, matmul, isposinf ...): r broadcasts to
      `out`'s shape without changing it;
      `same_size`: that, and no more elements than r (numpy.round);
    - r's dtype casts to out's under `casting` (reductions: 'unsafe'; ufuncs, concatenate:
      'same_kind'; 'out_safe': out's dtype casts safely to r's, as NumPy's take, compress
      and argmax require); a ufunc's refusal is NumPy's UFuncTypeError naming `ufunc`.

    Sizes unknown while tracing are not compared (the write checks them when it runs)."""
    if out is None:
        return r
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"The 'out' tuple must have exactly one entry, got {len(out)}")
        out = out[0]
    if not isinstance(out, (ndarray, np.ndarray)):
        raise TypeError(f"return arrays must be of ArrayType, not {type(out).__name__}")
    rs, os_ = tuple(r.shape), tuple(out.shape)
    if broadcast:
        try:
            b = broadcast_shapes(rs, os_)
        except ValueError:
            b = None
        if b is None or len(b) != len(os_) or any(
                d is not None and e is not None and d != e for d, e in zip(b, os_)) or (
                same_size and None not in rs + os_ and np.prod(os_) != np.prod(rs)):
            raise ValueError(f"non-broadcastable output operand with shape {os_} doesn't "
                             f"match the broadcast shape {b if b is not None else rs}")
    elif len(rs) != len(os_) or any(d is not None and e is not None and d != e
                                    for d, e in zip(rs, os_)):
        raise ValueError(f"output array has the wrong shape: {os_}, the result's is {rs}")
    if casting == "out_safe":
        if not np.can_cast(out.dtype, r.dtype, "safe"):
            raise TypeError(f"Cannot cast array data from {np.dtype(out.dtype)!r} to "
                            f"{np.dtype(r.dtype)!r} according to the rule 'safe'")
    elif casting != "unsafe" and not np.can_cast(r.dtype, out.dtype, casting):
        if ufunc is not None:
            raise _ufunc_casting_error(ufunc, r.dtype, out.dtype, casting)
        raise TypeError(f"Cannot cast array data from {np.dtype(r.dtype)!r} to "
                        f"{np.dtype(out.dtype)!r} according to the rule {casting!r}")
    out[...] = r
    return out
