"""`python -m ndflow.tour` after `pip install`: the package is built as a wheel from a copy of
the checkout, installed into a directory of its own, and the tour run from an empty directory
outside the checkout with only that installation importable. Every section must run (the tour
once skipped the three that need the example programs, which then lived beside the package),
and its files must land in the directory it was given."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _source_files():
    """The checkout's files a fresh clone would have, plus new ones not yet committed (git's
    view: tracked and untracked, less the ignored)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, check=True)
    return [f for f in out.stdout.decode().split("\0")
            if f and os.path.isfile(os.path.join(ROOT, f))]


def _setuptools_can_build():
    """Whether this interpreter's setuptools meets the build requirement (>= 77), so that the
    wheel builds without downloading an isolated build environment."""
    try:
        import setuptools
    except ImportError:
        return False
    return int(setuptools.__version__.split(".")[0]) >= 77


@pytest.mark.slow     # builds a wheel and runs the whole quick tour: ~40 s on a busy machine
def test_tour_from_an_installed_wheel_runs_every_section(tmp_path):
    if shutil.which("git") is None or not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("needs the git checkout to know its files")
    src = tmp_path / "src"
    for f in _source_files():
        dst = src / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), dst)
    build = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q",
             "-w", str(tmp_path / "dist")]
    if _setuptools_can_build():
        build.append("--no-build-isolation")
    subprocess.run(build, check=True, cwd=tmp_path, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("ndflow-*.whl")
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(site), str(wheel)], check=True, timeout=300)

    run_dir, out_dir = tmp_path / "elsewhere", tmp_path / "tour-files"
    run_dir.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site), NDFLOW_QUICK="1", NDFLOW_PROGRESS="0")
    where = subprocess.run([sys.executable, "-c", "import ndflow.tour, ndflow.examples as e; "
                            "print(ndflow.tour.__file__); print(e.__file__)"],
                           cwd=run_dir, env=env, capture_output=True, text=True, check=True)
    assert all(p.startswith(str(site)) for p in where.stdout.split()), where.stdout
    tour = subprocess.run([sys.executable, "-m", "ndflow.tour", "--out", str(out_dir)],
                          cwd=run_dir, env=env, capture_output=True, text=True, timeout=900)
    assert tour.returncode == 0, tour.stdout[-3000:] + tour.stderr[-3000:]
    out = tour.stdout
    assert "6 of 6 sections ran" in out, out[-2000:]
    assert "skipping" not in out and "not found" not in out
    for title in ("TensorFlow NumPy guide (seed 001)", "second half (seed 000)",
                  "Keep, ship and see", "Mutation", "Devices", "Per-call cost"):
        assert title in out
    assert os.listdir(run_dir) == []            # nothing written where it ran
    files = set(os.listdir(out_dir))
    assert "train_export" in files
    assert {"saved_model", "checkpoints", "logs"} <= set(os.listdir(out_dir / "train_export"))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert {"tf_numpy_guide_hist.png", "tf_numpy_performance_sigmoid.png"} <= files
