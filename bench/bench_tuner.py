"""Tuner overheads: per-trial fixed cost, trials per hour, and the sweeper against blocking batches.

    python bench/bench_tuner.py fixed-cost [--trials 8]
    python bench/bench_tuner.py throughput [--trials 8]
    python bench/bench_tuner.py sweeper [--trials 20]

Every figure comes from real studies run by ``python -m tuner`` in a temporary directory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import optuna

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = ["agent=dqn", "agent.hidden_size=[32]", "agent.batch=32", "agent.train_freq=4", "agent.num_updates=1",
         "agent.learning_starts=64", "buffer.pool_size=5000", "logger=none"]


def _run(args: list[str], cwd: str) -> float:
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "tuner", *args], cwd=cwd, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=REPO))
    if out.returncode != 0:
        raise SystemExit(f"tuner failed:\n{out.stderr[-3000:]}")
    return time.perf_counter() - started


def _study(folder: str, name: str) -> optuna.Study:
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    storage = JournalStorage(JournalFileBackend(os.path.join(folder, "studies", name, "journal.log")))
    return optuna.load_study(study_name=name, storage=storage)


def _study_args(name: str, n: int, extra: list[str]) -> list[str]:
    return ["tuner=optuna", f"tuner.study_name={name}", f"tuner.n_trials={n}", "tuner.pruner=none",
            "tuner.sampler=random", "search=none", "+search.values.agent.gamma='choice(0.98, 0.99)'", *extra]


def fixed_cost(trials: int) -> None:
    """Trial duration minus the child's own training time, with a 1-env-step budget."""
    cases = {"torch, forkserver preload": ["backend=torch", "tuner.preload=true"],
             "torch, spawn": ["backend=torch", "tuner.preload=false"],
             "tf, spawn": ["backend=tf"]}
    for label, extra in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            name = "fixed"
            _run(_study_args(name, trials, ["budget.steps=1", *SMALL, *extra]), tmp)
            study = _study(tmp, name)
            costs = [((t.datetime_complete - t.datetime_start).total_seconds() - t.user_attrs["wall_time_s"]) * 1000
                     for t in study.trials]
            # the first torch trial also starts the forkserver (one import of torch per study)
            print(f"{label:28s} per-trial fixed cost: median {statistics.median(costs):7.0f} ms, "
                  f"first {costs[0]:7.0f} ms, rest median {statistics.median(costs[1:]):7.0f} ms  (n={len(costs)})")


def throughput(trials: int) -> None:
    """Trials per hour for a fixed tiny budget (2,000 env steps of DQN) with n_jobs 1 and 2."""
    for n_jobs in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            wall = _run(_study_args("tp", trials, ["budget.steps=2000", f"tuner.n_jobs={n_jobs}", *SMALL]), tmp)
            print(f"n_jobs={n_jobs}: {trials} trials in {wall:6.1f} s -> {trials / wall * 3600:6.0f} trials/hour")


def sweeper(trials: int) -> None:
    """Our non-blocking sweeper against the same sweep run as blocking batches of 2."""
    space = ["optimizer.lr=tag(log, interval(1e-4, 1e-2))", "agent.num_updates=choice(1, 2, 4, 8)"]
    for blocking in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            args = ["-m", "hydra/sweeper=optuna", f"hydra.sweeper.n_trials={trials}", "hydra.sweeper.n_jobs=2",
                    "hydra.sweeper.pruner=none", "hydra.sweeper.sampler=random", "hydra.sweeper.sampler_seed=0",
                    f"hydra.sweeper.blocking={str(blocking).lower()}", f"hydra.sweep.dir={tmp}/sweep",
                    "budget.steps=1500", *space, *SMALL]
            wall = _run(args, tmp)
            mode = "blocking batches of 2" if blocking else "non-blocking (ours)"
            print(f"sweeper {mode:24s}: {trials} trials in {wall:6.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["fixed-cost", "throughput", "sweeper"])
    parser.add_argument("--trials", type=int, default=None)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    {"fixed-cost": lambda: fixed_cost(args.trials or 8), "throughput": lambda: throughput(args.trials or 8),
     "sweeper": lambda: sweeper(args.trials or 20)}[args.what]()


if __name__ == "__main__":
    main()
