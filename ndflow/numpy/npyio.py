"""File input and output as NumPy's: `save`, `load`, `savez`, `savez_compressed`, `loadtxt`,
`savetxt`, `genfromtxt`, `fromfile` (`fromregex` is left out: NumPy reads only into records,
which ndflow arrays cannot hold).

The formats are NumPy's own (`.npy`, `.npz`, text), written and read by NumPy on the host, so
files move freely between NumPy and ndflow. Nothing read is ever unpickled unless the caller
asks (`allow_pickle=True`, which `load` refuses by default as NumPy does; `save`/`savez` write no
pickles by default either, since ndflow arrays never hold Python objects). What is read comes
back as ndflow arrays; data an ndflow array cannot hold (structured records, strings, objects,
masked arrays) raises a TypeError naming the dtype rather than coming back as something else.
Values written must be concrete: inside `nf.function` use `nf.numpy_function`.
"""
import numpy as np

from ..core.ndarray import ndarray
from ..core.state import AST_LOCK
from ._core import asarray


def _host(x, name):
    """The NumPy value of an array argument to be written (NumPy arrays, lists as they are)."""
    if isinstance(x, ndarray):
        if x._t is not None:
            raise TypeError(f"{name}: cannot write a traced or batched value (inside "
                            f"nf.function or vectorized_map); return it and write it outside, "
                            f"or use nf.numpy_function")
        return x.numpy()
    return x        # NumPy arrays, lists, scalars; Variables convert through __array__


def _to_nf(r, name):
    """A NumPy result as an ndflow array, refusing what ndflow arrays cannot hold."""
    if isinstance(r, np.ma.MaskedArray):
        raise TypeError(f"{name}: ndflow arrays have no mask; call numpy.{name} with "
                        f"usemask=False, or numpy's own for a masked array")
    if r.dtype.fields is not None or r.dtype.kind in "OSUVMm":
        raise TypeError(f"{name}: ndflow arrays cannot hold dtype {r.dtype} (records, strings, "
                        f"objects, datetimes); read it with numpy.{name} instead")
    return asarray(r)


# ------------------------------------------------------------------ .npy / .npz
def save(file, arr, allow_pickle=False):
    """Write `arr` to a `.npy` file (NumPy's format; `.npy` is appended to a file name without
    it), as `numpy.save`. `allow_pickle` defaults to False: ndflow arrays never need it."""
    np.save(file, np.asarray(_host(arr, "save")), allow_pickle=allow_pickle)


def _savez(np_fn, name, file, args, kwds, allow_pickle):
    args = [np.asarray(_host(a, name)) for a in args]
    kwds = {k: np.asarray(_host(v, name)) for k, v in kwds.items()}
    np_fn(file, *args, allow_pickle=allow_pickle, **kwds)


def savez(file, *args, allow_pickle=False, **kwds):
    """Write several arrays to an uncompressed `.npz` archive (positional ones as `arr_0`,
    `arr_1`, ...; keyword ones by name), as `numpy.savez`."""
    _savez(np.savez, "savez", file, args, kwds, allow_pickle)


def savez_compressed(file, *args, allow_pickle=False, **kwds):
    """`savez` into a zip-deflated archive, as `numpy.savez_compressed`."""
    _savez(np.savez_compressed, "savez_compressed", file, args, kwds, allow_pickle)


class NpzFile:
    """The arrays of an `.npz` archive, read lazily by name as ndflow arrays (`f["x"]`,
    `f.files`, `f.keys()`, `f.items()`, `with load(...) as f:`), as NumPy's `NpzFile`."""

    def __init__(self, npz):
        self._npz = npz
        self.files = list(npz.files)

    def __getitem__(self, key):
        with AST_LOCK:          # (NumPy reads the array's header with ast.literal_eval)
            r = self._npz[key]
        return _to_nf(r, "load") if isinstance(r, np.ndarray) else r

    def __contains__(self, key):
        return key in self._npz

    def __iter__(self):
        return iter(self.files)

    def __len__(self):
        return len(self.files)

    def keys(self):
        """The array names."""
        return list(self.files)

    def values(self):
        """The arrays, in archive order."""
        return [self[k] for k in self.files]

    def items(self):
        """(name, array) pairs."""
        return [(k, self[k]) for k in self.files]

    def get(self, key, default=None):
        """The array named `key`, or `default`."""
        return self[key] if key in self else default

    def close(self):
        """Close the underlying file."""
        self._npz.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<ndflow NpzFile {self.files}>"


def load(file, mmap_mode=None, allow_pickle=False, fix_imports=True, encoding="ASCII", *,
         max_header_size=10000):
    """Read a `.npy` file (an ndflow array) or an `.npz` archive (an `NpzFile` of ndflow
    arrays), as `numpy.load`. Pickled contents are refused unless `allow_pickle=True`; a
    pickled object that is not an array is then returned as NumPy gives it."""
    with AST_LOCK:              # (NumPy reads the header with ast.literal_eval)
        r = np.load(file, mmap_mode=mmap_mode, allow_pickle=allow_pickle,
                    fix_imports=fix_imports, encoding=encoding, max_header_size=max_header_size)
    if isinstance(r, np.lib.npyio.NpzFile):
        return NpzFile(r)
    if isinstance(r, np.ndarray):
        if r.dtype.kind == "O" and allow_pickle:
            return r            # asked for: Python objects, which ndflow arrays cannot hold
        return _to_nf(r, "load")
    return r


# ------------------------------------------------------------------ text and raw files
def loadtxt(fname, dtype=float, comments="#", delimiter=None, converters=None, skiprows=0,
            usecols=None, unpack=False, ndmin=0, encoding=None, max_rows=None, *, quotechar=None,
            like=None):
    """Read a text file of numbers, as `numpy.loadtxt` (`unpack=True` gives a tuple of
    columns)."""
    r = np.loadtxt(fname, dtype=dtype, comments=comments, delimiter=delimiter,
                   converters=converters, skiprows=skiprows, usecols=usecols, unpack=unpack,
                   ndmin=ndmin, encoding=encoding, max_rows=max_rows, quotechar=quotechar)
    if isinstance(r, (tuple, list)):
        return tuple(_to_nf(c, "loadtxt") for c in r)
    return _to_nf(r, "loadtxt")


def genfromtxt(fname, dtype=float, comments="#", delimiter=None, skip_header=0, skip_footer=0,
               converters=None, missing_values=None, filling_values=None, usecols=None,
               names=None, excludelist=None, deletechars=" !#$%&'()*+,-./:;<=>?@[\\]^{|}~",
               replace_space="_", autostrip=False, case_sensitive=True, defaultfmt="f%i",
               unpack=None, usemask=False, loose=True, invalid_raise=True, max_rows=None,
               encoding=None, *, ndmin=0, like=None):
    """Read a text file with missing values filled (NaN for floats by default), as
    `numpy.genfromtxt`. Named columns (records) and masks are NumPy-only: they raise."""
    r = np.genfromtxt(fname, dtype=dtype, comments=comments, delimiter=delimiter,
                      skip_header=skip_header, skip_footer=skip_footer, converters=converters,
                      missing_values=missing_values, filling_values=filling_values,
                      usecols=usecols, names=names, excludelist=excludelist,
                      deletechars=deletechars, replace_space=replace_space, autostrip=autostrip,
                      case_sensitive=case_sensitive, defaultfmt=defaultfmt, unpack=unpack,
                      usemask=usemask, loose=loose, invalid_raise=invalid_raise,
                      max_rows=max_rows, encoding=encoding, ndmin=ndmin)
    if isinstance(r, (tuple, list)):
        return tuple(_to_nf(c, "genfromtxt") for c in r)
    return _to_nf(r, "genfromtxt")


def savetxt(fname, X, fmt="%.18e", delimiter=" ", newline="\n", header="", footer="",
            comments="# ", encoding=None):
    """Write a 1-D or 2-D array as text, as `numpy.savetxt`."""
    np.savetxt(fname, np.asarray(_host(X, "savetxt")), fmt=fmt, delimiter=delimiter,
               newline=newline, header=header, footer=footer, comments=comments,
               encoding=encoding)


def fromfile(file, dtype=float, count=-1, sep="", offset=0, *, like=None):
    """Read raw binary (`sep=""`) or text data from a file, as `numpy.fromfile` (the
    counterpart of `ndarray.tofile`)."""
    return _to_nf(np.fromfile(file, dtype=dtype, count=count, sep=sep, offset=offset),
                  "fromfile")
