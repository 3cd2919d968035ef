"""A verified on-disk cache for numba kernels (imported only by numba_tier, which needs numba).

numba's own `cache=True` stores each compiled kernel as pickles (an index `.nbi` and data
`.nbc` files) and unpickles whatever it finds: any process that can write the cache directory
could run code in the next process that loads a kernel. Here numba's cache machinery is kept
(it saves the 0.3-1 s compile of each kernel) but its files are authenticated:

* the directory (NDFLOW_CACHE_DIR, default $XDG_CACHE_HOME/ndflow/kernels) is created 0700;
  one owned by another user, or writable by group or others, is refused (a warning, and
  kernels are compiled in memory only); on Windows, where modes do not show ACLs, the
  directory under the user's profile and the HMAC are what protect it;
* every file numba writes starts with an HMAC-SHA256 tag over its name and bytes, keyed by a
  per-user random key kept in the directory (0600, refused if anyone else can read it);
* a file is read into memory once, its tag checked, and only those verified bytes are ever
  unpickled; a file that fails the check is refused with a warning and the kernel recompiled
  (and the file rewritten).

Kernels are exec'd from source in memory (no module files to tamper with); the source, our
math library and numba's version form the stamp numba compares before using an entry.
"""
import hashlib
import hmac
import os
import pickle
import stat
import sys
import types
import warnings

from numba.core import caching

TAG = 32                 # bytes of HMAC-SHA256
_KEY_NAME = "hmac.key"
_dirs = {}               # path -> (usable dir or None, key)


class CacheRefused(RuntimeWarning):
    """A kernel cache directory or file that is not safe to load from."""


def default_dir():
    d = os.environ.get("NDFLOW_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "ndflow", "kernels")
    return d


def _private(st, what, mask):
    """Reason `st` is unsafe (another owner, or `mask` permission bits set), or None."""
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return "%s is owned by another user (uid %d)" % (what, st.st_uid)
    if st.st_mode & mask and sys.platform != "win32":   # Windows: st_mode says nothing of ACLs
        return "%s has mode %o (group/others may %s it)" % (
            what, stat.S_IMODE(st.st_mode), "write" if mask == 0o022 else "access")
    return None


def _open_dir(d):
    """(directory, key) if `d` is safe to use, else (None, None) after one warning."""
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        st = os.stat(d)
        if not stat.S_ISDIR(st.st_mode):
            raise OSError("not a directory")
        why = _private(st, "kernel cache directory %r" % d, 0o022)
        if why is None and stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(d, 0o700)           # ours, only readable by others: make it private
        if why is None:
            key_path = os.path.join(d, _KEY_NAME)
            try:
                fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(os.urandom(32))
            except FileExistsError:
                pass
            fd = os.open(key_path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as f:
                why = _private(os.fstat(f.fileno()), "key file %r" % key_path, 0o077)
                key = f.read()
            if why is None and len(key) != 32:
                why = "key file %r is damaged" % key_path
            if why is None:
                return d, key
    except OSError as e:
        why = "kernel cache directory %r: %s" % (d, e)
    warnings.warn("ndflow: not using the kernel cache (%s); kernels are compiled in memory "
                  "in each process" % why, CacheRefused, stacklevel=3)
    return None, None


def cache_dir():
    """(directory, key) of the verified cache, or (None, None) when there is none usable."""
    d = default_dir()
    r = _dirs.get(d)
    if r is None:
        r = _dirs[d] = _open_dir(d)
    return r


def _tag(key, name, payload):
    return hmac.new(key, name.encode() + b"\0" + payload, hashlib.sha256).digest()


class _VerifiedFile(caching.IndexDataCacheFile):
    """numba's index + data files, each prefixed with an HMAC tag that is checked before any
    byte of it is unpickled."""

    def __init__(self, cache_path, filename_base, source_stamp, key):
        super().__init__(cache_path, filename_base, source_stamp)
        self._key = key

    def _read(self, path):
        """The verified payload of `path`; None if it is absent or fails verification."""
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except FileNotFoundError:
            return None
        name = os.path.basename(path)
        if len(blob) < TAG or not hmac.compare_digest(blob[:TAG],
                                                      _tag(self._key, name, blob[TAG:])):
            warnings.warn("ndflow: kernel cache file %r failed verification (modified outside "
                          "ndflow?); not loaded, the kernel is recompiled" % path,
                          CacheRefused, stacklevel=2)
            return None
        return blob[TAG:]

    def _write(self, path, payload):
        with self._open_for_write(path) as f:
            f.write(_tag(self._key, os.path.basename(path), payload) + payload)

    def _load_index(self):
        payload = self._read(self._index_path)
        if payload is None:
            return {}
        version, data = pickle.loads(payload)
        if version != self._version:
            return {}
        stamp, overloads = pickle.loads(data)
        return overloads if stamp == self._source_stamp else {}

    def _save_index(self, overloads):
        data = self._dump((self._source_stamp, overloads))
        self._write(self._index_path, pickle.dumps((self._version, data), protocol=-1))

    def _load_data(self, name):
        payload = self._read(self._data_path(name))
        if payload is None:
            raise FileNotFoundError(name)      # `load` treats it as a missing entry
        return pickle.loads(payload)

    def _save_data(self, name, data):
        self._write(self._data_path(name), self._dump(data))


class _Locator(caching._CacheLocator):
    def __init__(self, path, stamp):
        self._path = path
        self._stamp = stamp

    def ensure_cache_path(self):
        pass                             # made (and checked) by cache_dir()

    def get_cache_path(self):
        return self._path

    def get_source_stamp(self):
        return self._stamp

    def get_disambiguator(self):
        return self._stamp[:16]

    @classmethod
    def from_function(cls, py_func, py_file):
        return None


class _Impl(caching.CompileResultCacheImpl):
    def __init__(self, py_func, locator, base):        # no locator search, no source file
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = locator
        self._filename_base = base


class _VerifiedCache(caching.FunctionCache):
    def __init__(self, py_func, path, key, stamp):
        self._name = repr(py_func)
        self._py_func = py_func
        base = _base(stamp)
        self._impl = _Impl(py_func, _Locator(path, stamp), base)
        self._cache_path = path
        self._cache_file = _VerifiedFile(path, base, stamp, key)
        self.enable()


def _stamp(src, stamp_extra):
    return hashlib.sha256((src + "\0" + stamp_extra).encode()).hexdigest()


def _base(stamp):
    return "k%s-py%d%d" % (stamp[:24], sys.version_info[0], sys.version_info[1])


def has(src, stamp_extra):
    """Whether the usable cache directory holds an index for the kernel source `src` (what
    `load` would look up; its entries are checked when loaded)."""
    path, _ = cache_dir()
    return path is not None and os.path.exists(
        os.path.join(path, _base(_stamp(src, stamp_extra)) + ".nbi"))


def load(src, name, stamp_extra, cache=True):
    """The numba dispatcher `name` defined by the kernel source `src` (which must not ask numba
    for `cache=True` itself), with the verified disk cache attached when one is usable."""
    stamp = _stamp(src, stamp_extra)
    modname = "ndflow_kernel_%s" % stamp[:20]
    mod = types.ModuleType(modname)
    exec(compile(src, "<ndflow kernel %s>" % stamp[:12], "exec"), mod.__dict__)
    disp = getattr(mod, name)
    if cache:
        # numba finds a kernel's globals through its module when it rebuilds a cached kernel
        sys.modules[modname] = mod
        path, key = cache_dir()
        if path is not None:
            disp._cache = _VerifiedCache(disp.py_func, path, key, stamp)
    return disp
