#!/usr/bin/env bash
# bench/bench_autorl.py's studies side by side on a many-core machine (run from the repo root): one
# bench_autorl.py process per (method, repeat), each with JOBS trial processes of one framework thread,
# all on the CPU (a GPU machine's cores, say; the GPU does not pay for these small networks, BENCHMARKS.md).
#
#   TASK=lunar_lander_continuous_ppo REPEATS="2 3" JOBS=4 bash bench/autorl_many_cores.sh
#
# TPE: TRIALS x SEEDS (6 x 4); PBT: PBT_TRIALS x SEEDS members (4 x 4 = 16, two thirds of TPE's 24 runs:
# PBT's 24 members used 1.6x and 3.1x TPE's CPU on this task; 16 still used more, BENCHMARKS.md), GENERATIONS
# segments; STEPS env steps per run; TEST test seeds.  Where the machine lacks this project's pure-Python
# dependencies, put their wheels in .whl/ first.  The machine and every process's table land in
# $OUT/tables.txt (default OUT /tmp/autorl_many_cores), and each process's studies in $OUT/<method><repeat>.tar.gz:
# reports, results, logs, journals and the segments' checkpoints (no models or plots), so that a study the
# time limit (LIMIT_S) cut off resumes elsewhere: unpack it under the same WORK path (the studies record their
# paths) and run the same bench_autorl.py command (its note-tune command heads the study's .log).
set -u
OUT=${OUT:-/tmp/autorl_many_cores}
TASK=${TASK:-lunar_lander_continuous_ppo}
REPEATS=${REPEATS:-"2 3"}
JOBS=${JOBS:-4}
STEPS=${STEPS:-196608}
TRIALS=${TRIALS:-6}
PBT_TRIALS=${PBT_TRIALS:-4}
SEEDS=${SEEDS:-4}
GENERATIONS=${GENERATIONS:-3}
TEST=${TEST:-5}
LIMIT_S=${LIMIT_S:-480}
WORK=${WORK:-/tmp/autorl_studies}
mkdir -p "$OUT" "$WORK"
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:$PWD || exit 1
else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 WANDB_MODE=offline
{ nproc; grep -m1 "model name" /proc/cpuinfo; python3 -V; git log -1 --format=%h 2>/dev/null; } | tee "$OUT/tables.txt"
# a missing package or an unknown TASK shows here in seconds, before any study starts: the task's study
# config composed and checked (its env made, its search space parsed) as each study's driver will
python3 - "$TASK" > "$WORK/preflight.txt" 2>&1 <<'EOF' || { tail -20 "$WORK/preflight.txt"; exit 1; }
import sys
sys.path.insert(0, "bench")
from bench_autorl import TASKS
from hydra import compose, initialize_config_dir
from tuner.common.files import CONF_DIR
from tuner.config.schema import validate
agent, env = TASKS[sys.argv[1]][:2]
with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
    validate(compose("config", overrides=["tuner=optuna", f"agent={agent}", f"env={env}", "backend.device=cpu"]))
print("preflight ok:", agent, env)
EOF
common=(--steps "$STEPS" --seeds "$SEEDS" --test-seeds "$TEST" --jobs "$JOBS"
        --override backend.device=cpu --override backend.threads=1)
for r in $REPEATS; do
    timeout "$LIMIT_S" python3 bench/bench_autorl.py "$TASK" --methods tpe --first-repeat "$r" --trials "$TRIALS" \
        "${common[@]}" --out "$WORK/tpe$r" > "$WORK/tpe$r.txt" 2>&1 &
    timeout "$LIMIT_S" python3 bench/bench_autorl.py "$TASK" --methods pbt --first-repeat "$r" --trials "$PBT_TRIALS" \
        --generations "$GENERATIONS" "${common[@]}" --out "$WORK/pbt$r" > "$WORK/pbt$r.txt" 2>&1 &
done
wait
cat "$WORK"/tpe*.txt "$WORK"/pbt*.txt | grep -v '^{' | tee -a "$OUT/tables.txt"
for r in $REPEATS; do
    for m in tpe pbt; do
        tar -czf "$OUT/$m$r.tar.gz" -C "$WORK" --exclude='model.npz' --exclude='best_eval_model.npz' \
            --exclude='*.png' --exclude='*.gif' "$m$r" "$m$r.txt"
    done
done
ls -la "$OUT"
