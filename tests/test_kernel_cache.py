"""The numba kernel cache on disk: private directory, authenticated files, refused tampering.

numba is a dependency, but these tests skip cleanly where it is not installed."""
import os
import stat
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ndflow as nf

pytest.importorskip("numba")
from ndflow.graph.kernels import kernel_cache  # noqa: E402  (imports numba)

SRC = ("from numba import njit\n"
       "@njit(error_model='numpy', nogil=True)\n"
       "def k(x, o):\n"
       "    for i in range(x.shape[0]):\n"
       "        o[i] = x[i] * 2.0 + 1.0\n"
       "    return 0\n")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "kernels"
    monkeypatch.setenv("NDFLOW_CACHE_DIR", str(d))
    monkeypatch.setattr(kernel_cache, "_dirs", {})
    return d


def _run(src=SRC, extra="t"):
    """Compile (or load) the kernel in a fresh dispatcher; (hits, misses) of that call."""
    k = kernel_cache.load(src, "k", extra)
    x = np.arange(5.0)
    o = np.empty(5)
    k(x, o)
    np.testing.assert_array_equal(o, x * 2.0 + 1.0)
    return sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values())


def _files(d):
    return sorted(p for p in os.listdir(d) if p.endswith((".nbi", ".nbc")))


def test_private_directory_and_key(cache):
    assert _run() == (0, 1)
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(cache / "hmac.key").st_mode) == 0o600
    assert len(_files(cache)) == 2
    kernel_cache._dirs.clear()
    assert _run() == (1, 0)             # a new dispatcher loads the verified entry


@pytest.mark.parametrize("which", [".nbc", ".nbi"])
def test_tampered_file_is_refused_and_recompiled(cache, which):
    _run()
    path = cache / [f for f in _files(cache) if f.endswith(which)][0]
    blob = bytearray(path.read_bytes())
    blob[-3] ^= 0x55
    path.write_bytes(bytes(blob))
    with pytest.warns(kernel_cache.CacheRefused, match="failed verification"):
        assert _run() == (0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _run() == (1, 0)         # rewritten, verified again


def test_planted_pickle_never_loaded(cache, tmp_path):
    """A file written by someone without the key (here: a pickle that would create a marker
    file when unpickled) is refused before unpickling."""
    _run()
    marker = tmp_path / "pwned"
    import pickle

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))
    for f in _files(cache):
        (cache / f).write_bytes(b"\0" * kernel_cache.TAG + pickle.dumps(Evil()))
    with pytest.warns(kernel_cache.CacheRefused):
        assert _run() == (0, 1)
    assert not marker.exists()


def test_group_writable_directory_refused(cache):
    cache.mkdir(mode=0o700)
    os.chmod(cache, 0o775)
    with pytest.warns(kernel_cache.CacheRefused, match="mode 775"):
        assert _run() == (0, 1)
    assert _files(cache) == []          # nothing written there


def test_directory_of_another_user_refused(cache, monkeypatch):
    if not hasattr(os, "getuid"):
        pytest.skip("no POSIX owners")
    cache.mkdir(mode=0o700)
    uid = os.getuid()
    monkeypatch.setattr(kernel_cache.os, "getuid", lambda: uid + 1)
    with pytest.warns(kernel_cache.CacheRefused, match="owned by another user"):
        assert _run() == (0, 1)
    assert _files(cache) == []


def test_readable_key_refused(cache):
    _run()
    os.chmod(cache / "hmac.key", 0o644)
    kernel_cache._dirs.clear()
    with pytest.warns(kernel_cache.CacheRefused, match="key file"):
        assert _run() == (0, 1)


def test_own_readable_directory_made_private(cache):
    cache.mkdir(mode=0o755)
    os.chmod(cache, 0o755)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _run()
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700


def test_fused_kernel_through_the_cache_in_two_processes(tmp_path):
    """End to end: a compiled rational function's numba kernel is written by one process and
    loaded, verified, by the next; results are equal to the first process's. (Arithmetic only:
    the exact tier compiles exp only where it has NumPy's own algorithm, test_replica.py.)"""
    code = ("import numpy as np, ndflow as nf, ndflow.numpy as tnp, warnings\n"
            "warnings.simplefilter('error')\n"
            "from ndflow.graph.kernels import numba_compile\n"
            "nf.config.settings.numba = 'sync'\n"
            "f = nf.function(lambda y: 1 / (1 + y * y) - y * 0.5)\n"
            "y = tnp.asarray(np.linspace(-30, 30, 20000))\n"
            "for _ in range(5): r = f(y)\n"
            "k, = numba_compile._KERNELS.values()\n"
            "print(sum(k.stats.cache_hits.values()), np.asarray(r).tobytes().hex()[:4000])\n")
    env = dict(os.environ, NDFLOW_CACHE_DIR=str(tmp_path / "c"),
               PYTHONPATH=os.path.dirname(os.path.dirname(nf.__file__)))
    outs = [subprocess.run([sys.executable, "-c", code], env=env, timeout=300, check=True,
                           capture_output=True, text=True).stdout.split() for _ in range(2)]
    assert outs[0][0] == "0" and outs[1][0] == "1"
    assert outs[0][1] == outs[1][1]
