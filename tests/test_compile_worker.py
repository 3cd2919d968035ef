"""Background compiles run in a helper process (`graph/kernels/compile_worker.py`): it puts
each kernel in the verified disk cache and checks NumPy's replicas; the caller only loads.

numba is a dependency, but these tests skip cleanly where it is not installed."""
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ndflow as nf

pytest.importorskip("numba")
from ndflow.graph.kernels import compile_worker, numba_compile, replica  # noqa: E402
from ndflow.graph.kernels import wait_for_compiles  # noqa: E402

from helpers import assert_bits_equal  # noqa: E402


def test_kernel_arguments_cross_the_pipe_as_json():
    ro = np.zeros((1, 1), np.float32)
    ro.flags.writeable = False
    args = [3, ro, np.zeros((1,), np.complex128), np.float64(0), np.int8(0), True, 2.5,
            np.zeros((1, 1, 1), np.bool_)]
    back = compile_worker.decode(json.loads(json.dumps(compile_worker.encode(args))))
    assert len(back) == len(args)
    for a, b in zip(args, back):
        assert type(a) is type(b)
        if isinstance(a, np.ndarray):
            assert (a.dtype, a.shape, a.flags.writeable) == (b.dtype, b.shape,
                                                             b.flags.writeable)
        elif isinstance(a, np.generic):
            assert a.dtype == b.dtype
        else:
            assert a == b
    with pytest.raises(TypeError, match="type object"):
        compile_worker.encode([object()])


_CHILD = """
import json, numpy as np, ndflow as nf, ndflow.numpy as tnp
from ndflow.graph.kernels import numba_compile, replica, wait_for_compiles
nf.config.settings.numba = "background"
numba_compile.cost = lambda prog: (0.0, 0.0)        # asked for at once
checked_here = []
verify = replica.verify
def spy(name, dtype):
    if (name, np.dtype(dtype)) not in replica._verified:
        checked_here.append(name)
    return verify(name, dtype)
replica.verify = spy
y = np.linspace(-30, 30, 20000).astype(np.float32)
f = nf.function(lambda a: 1 / (1 + tnp.exp(-a)) - a * 0.5)
for _ in range(nf.config.settings.hot_calls + 1):
    f(y)
wait_for_compiles()
r = f(y)
print(json.dumps({k: numba_compile.STATS[k] for k in ("compiles", "elsewhere", "loaded",
                                                       "failures")}
                 | {"checked_here": checked_here, "bits": np.asarray(r).tobytes().hex(),
                    "tier1": "tier 1 for" in nf.config.explain(f)}))
"""


def test_a_background_compile_is_made_in_the_worker_and_loaded_here(tmp_path):
    """End to end in a fresh process: the region's kernel is compiled by the worker into the
    cache and loaded by the caller (no compile of its own, no replica check of its own when
    the kernel uses one), and its result is NumPy's bit for bit."""
    env = dict(os.environ, NDFLOW_CACHE_DIR=str(tmp_path / "c"),
               PYTHONPATH=os.path.dirname(os.path.dirname(nf.__file__)))
    out = subprocess.run([sys.executable, "-c", _CHILD], env=env, timeout=300, check=True,
                         capture_output=True, text=True).stdout
    got = json.loads(out.strip().splitlines()[-1])
    assert got["failures"] == []
    # (one region where tier 1 has a replica of this machine's exp, else the regions around
    # NumPy's exp)
    assert got["tier1"] and got["compiles"] == got["elsewhere"] == got["loaded"] >= 1
    assert got["checked_here"] == []
    y = np.linspace(-30, 30, 20000).astype(np.float32)
    with np.errstate(all="ignore"):
        want = 1 / (1 + np.exp(-y)) - y * np.float32(0.5)
    assert_bits_equal(np.frombuffer(bytes.fromhex(got["bits"]), np.float32), want)


def test_without_a_worker_the_background_thread_compiles(monkeypatch, nf_settings, tmp_path):
    """Where the worker cannot start, the compile runs in the caller's background thread as
    before, and the reason is recorded."""
    def cannot(*a, **k):
        raise OSError("no processes here")
    monkeypatch.setenv("NDFLOW_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setattr(compile_worker, "_start", cannot)
    monkeypatch.setattr(compile_worker, "_proc", None)
    monkeypatch.setattr(compile_worker, "_broken", None)
    monkeypatch.setattr(numba_compile, "cost", lambda prog: (0.0, 0.0))
    nf_settings(numba="background")
    before = dict(numba_compile.STATS, failures=list(numba_compile.STATS["failures"]))
    x = np.linspace(-3, 3, 1 << 14)
    f = nf.function(lambda a: a * 2.5 - a * a * a)
    for _ in range(nf.config.settings.hot_calls + 1):
        f(x)
    wait_for_compiles()
    r = f(x)
    assert_bits_equal(r.numpy(), x * 2.5 - x * x * x)
    assert "tier 1 for" in nf.config.explain(f)
    assert numba_compile.STATS["elsewhere"] == before["elsewhere"]
    assert numba_compile.STATS["compiles"] == before["compiles"] + 1
    assert "no processes here" in compile_worker.usable()
    assert any("no processes here" in f for f in numba_compile.STATS["failures"])


def test_the_worker_runs_at_low_priority_and_ends_with_its_stdin():
    p = compile_worker._start()
    try:
        if hasattr(os, "getpriority"):
            p.stdin.write(b'{"verify": []}\n')
            p.stdin.flush()
            assert json.loads(p.stdout.readline()) == {"verified": []}   # main() has run
            assert os.getpriority(os.PRIO_PROCESS, p.pid) == 19
        p.stdin.write(b'{"no such": "job"}\n')
        p.stdin.flush()
        assert "error" in json.loads(p.stdout.readline())
        p.stdin.close()
        assert p.wait(timeout=120) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=60)
        p.stdout.close()


def test_a_replica_check_is_taken_only_for_the_same_numpy_loop(monkeypatch):
    monkeypatch.setattr(replica, "_verified", {})
    replica.accept("exp", "<f4", "differs", "SOME_OTHER_LOOP")
    assert ("exp", np.dtype(np.float32)) not in replica._verified
    here = replica.dispatch_target("exp", np.float32)
    if here is None:
        pytest.skip("this NumPy does not say which exp loop it runs")
    replica.accept("exp", "<f4", "differs", here)
    assert replica._verified[("exp", np.dtype(np.float32))] == "differs"
    replica.accept("exp", "<f4", None, here)            # a finding of this process stays
    assert replica._verified[("exp", np.dtype(np.float32))] == "differs"


def test_a_worker_that_died_is_not_asked_again(monkeypatch):
    """A worker gone mid-run (killed, crashed) makes `ask` answer None from then on; the
    background thread then compiles itself."""
    monkeypatch.setattr(compile_worker, "_proc", None)
    monkeypatch.setattr(compile_worker, "_broken", None)
    assert compile_worker.ask({"verify": []}) == {"verified": []}
    p = compile_worker._proc
    try:
        p.kill()
        p.wait(timeout=60)
        assert compile_worker.ask({"verify": []}) is None
        assert compile_worker.usable() is not None
        assert compile_worker.ask({"verify": []}) is None
    finally:
        for f in (p.stdin, p.stdout):
            try:
                f.close()
            except OSError:
                pass


def test_a_line_that_is_no_reply_stops_the_worker_being_asked(monkeypatch):
    """What is not a JSON object on the worker's stdout (something else printed there) ends
    its use: the background thread compiles itself from then on."""
    class Talker:
        def __init__(self, said):
            self.stdin, self.stdout = io.BytesIO(), io.BytesIO(said)

        def poll(self):
            return None
    for said in (b"hello\n", b"[1, 2]\n"):
        monkeypatch.setattr(compile_worker, "_proc", Talker(said))
        monkeypatch.setattr(compile_worker, "_broken", None)
        assert compile_worker.ask({"verify": []}) is None
        assert "wrote" in compile_worker.usable()


def test_a_replica_found_to_differ_keeps_every_kernel_that_calls_it_off(monkeypatch):
    """A finding already known (from this process or the worker) is checked again for each
    kernel source: one that calls a replica found to differ is refused (tier 0 stays)."""
    monkeypatch.setattr(replica, "_verified", {("exp", np.dtype(np.float32)): "differs here"})
    src = "y = %s(x)\n" % replica.kernel_name("exp", np.float32)
    with pytest.raises(RuntimeError, match="differs here"):
        numba_compile._verify_replicas(src)
    numba_compile._verify_replicas("y = x + 1\n")          # a kernel without it is made
