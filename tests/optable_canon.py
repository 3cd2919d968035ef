"""Canonical forms for comparing a device's results with NumPy's where NumPy leaves part of
the answer to the implementation (OpRecord.device_canon)."""
import numpy as np


def _segments_sorted(a, kth, axis):
    """`a` with each segment between the sorted `kth` positions sorted along `axis`: every
    valid partition of the same values gives the same array (the sorted one)."""
    a = np.moveaxis(np.asarray(a), axis, -1)
    n = a.shape[-1]
    ks = sorted({int(k) % n for k in np.atleast_1d(kth)}) if n else []
    out, start = a.copy(), 0
    for k in ks + [n]:
        out[..., start:k] = np.sort(a[..., start:k], axis=-1)
        start = k + 1
    return np.moveaxis(out, -1, axis)


def partition_canon(result, sample):
    axis = sample.kwargs.get("axis", -1)
    r = np.asarray(result)
    return _segments_sorted(r, sample.args[1], -1 if axis is None else axis)


def argpartition_canon(result, sample):
    """The values the indices select, canonicalized as partition's."""
    x, axis = np.asarray(sample.args[0]), sample.kwargs.get("axis", -1)
    r = np.asarray(result)
    vals = np.ravel(x)[r] if axis is None else np.take_along_axis(x, r, axis=axis)
    return _segments_sorted(vals, sample.args[1], -1 if axis is None else axis)


def _sign_canon(v, pair=None):
    """Columns of `v` (and rows of `pair`, V^H's) scaled by the unit factor that makes the
    first entry of each column within half of the column's largest magnitude real and
    positive: what an eigenvector or singular vector is up to."""
    v = np.asarray(v)
    mag = np.abs(v)
    pick = np.argmax(mag >= 0.5 * mag.max(axis=-2, keepdims=True), axis=-2)[..., None, :]
    ref = np.take_along_axis(v, pick, axis=-2)
    unit = np.where(ref == 0, 1, np.conj(ref) / np.where(ref == 0, 1, np.abs(ref)))
    if pair is None:
        return v * unit
    return v * unit, np.asarray(pair) * np.swapaxes(unit, -1, -2)


def eigh_canon(result, sample):
    w, v = result
    return np.asarray(w), _sign_canon(v)


def eig_canon(result, sample):
    """eig's results come split into real and imaginary parts (optable_linalg._split_call)."""
    parts = [np.asarray(p) for p in result]
    if len(parts) == 2:
        return parts[0], _sign_canon(parts[1])
    w_re, w_im, v_re, v_im = parts
    v = _sign_canon(v_re + 1j * v_im)
    return w_re, w_im, v.real, v.imag


def svd_canon(result, sample):
    if not isinstance(result, tuple) or len(result) != 3:
        return result
    u, s, vh = result
    u, vh = _sign_canon(u[..., : np.shape(s)[-1]], np.asarray(vh)[..., : np.shape(s)[-1], :])
    return u, np.asarray(s), vh
