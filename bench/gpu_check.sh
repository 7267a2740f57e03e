#!/usr/bin/env bash
# Issue 37's GPU checks in one command, for a GPU machine (run from the repo root):
#   the GPU tests (tests/tuner/study/test_gpu_real.py: four trials on one GPU, the compiled update step on
#   CUDA, NCCL; tests/note_rl/backends/test_distributed_torch.py's CUDA variants; the whole step as one CUDA
#   graph, tests/note_rl/backends/test_torch_graphs.py), then bench/bench_gpu.py (env steps/s: eager /
#   torch.compile / CUDA graphs of the loss / the whole step as a CUDA graph / SB3 on the GPU, then eager and
#   SB3 on the CPU).
# Where the machine lacks this project's pure-Python dependencies, put their wheels in .whl/ first.
# Everything it prints lands in $OUT (default /tmp/gpu_check) as it goes.
set -u
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:$PWD
else
    export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1 WANDB_MODE=offline
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    nproc
    python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.get_device_name(0))"
} 2>&1 | tee "$OUT/machine.txt"
timeout "${TESTS_S:-200}" python3 -m pytest -q -p no:cacheprovider -n 4 --durations=10 \
    tests/tuner/study/test_gpu_real.py tests/note_rl/backends/test_distributed_torch.py \
    tests/note_rl/backends/test_torch_graphs.py 2>&1 | tee "$OUT/tests.txt"
timeout "${BENCH_S:-290}" python3 bench/bench_gpu.py --device cuda --timeout 60 --json "$OUT/bench_gpu.json" \
    2>&1 | grep -v "^I0000\|^WARNING: All log\|^To enable" | tee "$OUT/bench.txt"
timeout "${CPU_S:-40}" python3 bench/bench_gpu.py --device cpu --algos ppo,sac --sides eager,sb3 --timeout 30 \
    --json "$OUT/bench_cpu.json" 2>&1 | tee "$OUT/bench_cpu.txt"
