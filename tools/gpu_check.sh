#!/usr/bin/env bash
# The prepared device check for issue 11 (GPU backend), one run on a lent GPU machine:
#
#   bash tools/gpu_check.sh            # logs and results under $OUT (default ./gpu_check_out)
#
# 1. the environment (nvidia-smi, CUDA version, what Python sees: numpy, cupy, jax, torch)
# 2. the GPU tests: pytest -m gpu (tests/test_gpu.py: the op table on GPU:0 eagerly and
#    compiled, fused regions as one CUDA kernel, no synchronization on compiled calls, DLPack
#    with torch and jax, random; tests/test_devices.py's GPU section)
#    then tools/gpu_probe.py (what the first run left open: a signed zero, copy bandwidth)
# 3. the GPU benchmarks (benchmarks/gpu.py): the sigmoid sweep to 2**26 with the device's copy
#    bandwidth measured in the same run (ratio printed), the MLP gradient at batch 512 and 8192,
#    per-example gradients at 128 and 1024, the digits classifier's step at 32, 256 and 8192;
#    ndflow beside CuPy, jax.jit and torch.compile
#
# Each step has its own time limit (about 9 minutes in all on an H100, worst case), so one
# slow step cannot take the others' results with it. Nothing is installed: the machine is
# expected to have CuPy (cupy-cuda13x or 12x), numpy, ml_dtypes, opt_einsum, pytest (and
# pytest-xdist, hypothesis; numba optional). The summary at the end says what passed.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-./gpu_check_out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"

# ndflow's own dependencies (ml_dtypes, opt_einsum) and the test tools may be missing on the GPU
# machine, which has no network: install them from .gpu_wheels (prepared on a networked
# machine, see the README's GPU section; run the check with carry=[".gpu_wheels"]) into a venv
# that still sees the machine's CuPy, JAX and PyTorch
if ! $PY -c "import ml_dtypes, opt_einsum, pytest, hypothesis" 2>/dev/null; then
  if [ -d .gpu_wheels ]; then
    $PY -m venv --system-site-packages "$OUT/.venv" >/dev/null 2>&1 || $PY -m venv --without-pip --system-site-packages "$OUT/.venv"
    "$OUT/.venv/bin/python" -m pip install -q --no-index --find-links .gpu_wheels \
      ml_dtypes opt_einsum pytest pytest-xdist hypothesis > "$OUT/pip.log" 2>&1 \
      || echo "pip install from .gpu_wheels failed (see pip.log)" | tee -a "$SUMMARY"
    PY="$OUT/.venv/bin/python"
  else
    echo "missing ml_dtypes/opt_einsum/pytest and no .gpu_wheels to install them from" | tee -a "$SUMMARY"
  fi
fi
step() {   # step NAME LIMIT_S COMMAND...: run, log to $OUT/NAME.log, note the outcome
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local what=ok
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && what="TIMED OUT after ${limit}s"
  [ $rc -ne 0 ] && [ "$what" = ok ] && what="FAILED (rc $rc)"
  echo "$name: $what in $((SECONDS - t0)) s" | tee -a "$SUMMARY"
  tail -n 3 "$OUT/$name.log" | sed 's/^/    /' | tee -a "$SUMMARY"
  return 0
}

step env 60 bash -c "
  date -u; nvidia-smi || echo 'nvidia-smi: not found';
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null;
  $PY - <<'PYEOF'
import importlib, sys
print('python', sys.version.split()[0])
for m in ('numpy', 'ml_dtypes', 'opt_einsum', 'numba', 'cupy', 'jax', 'torch', 'pytest',
          'xdist', 'hypothesis'):
    try:
        mod = importlib.import_module(m)
        print(m, getattr(mod, '__version__', '?'))
    except Exception as e:
        print(m, 'MISSING', type(e).__name__, e)
try:
    import cupy
    print('cupy CUDA runtime', cupy.cuda.runtime.runtimeGetVersion(),
          'driver', cupy.cuda.runtime.driverGetVersion())
except Exception as e:
    print('cupy unusable:', e)
import ndflow as nf
print('ndflow GPUs:', nf.config.list_physical_devices('GPU'))
from ndflow.backends import device as D
b = D.gpu_backend()
print('backend:', b and b.name, b and b.device_name(0), b and b.memory_info(0))
PYEOF"

# xdist spreads the op table over processes (CuPy compiles each new kernel once per process:
# NVRTC time dominates a fresh machine); without it, one process
XDIST=""
$PY -c "import xdist" 2>/dev/null && XDIST="-n ${GPU_CHECK_WORKERS:-8}"
step gpu_tests ${GPU_CHECK_TEST_S:-240} $PY -m pytest -q -m gpu $XDIST -p no:cacheprovider -rfE \
  --junitxml="$OUT/gpu_tests.xml" tests/test_gpu.py tests/test_devices.py

step probe 60 $PY tools/gpu_probe.py

step bench_sigmoid ${GPU_CHECK_BENCH_S:-100} $PY -m benchmarks.gpu --workloads sigmoid --out "$OUT"
step bench_mlp_grad ${GPU_CHECK_BENCH_S:-70} $PY -m benchmarks.gpu --workloads mlp_grad --out "$OUT"
step bench_per_example ${GPU_CHECK_BENCH_S:-70} $PY -m benchmarks.gpu --workloads per_example --out "$OUT"
step bench_classifier ${GPU_CHECK_BENCH_S:-80} $PY -m benchmarks.gpu --workloads classifier --out "$OUT"

echo "---- summary ($OUT/summary.txt)"
cat "$SUMMARY"
cat "$OUT"/gpu_bench_*.md 2>/dev/null
