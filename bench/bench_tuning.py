"""A whole tuning job against rl-zoo3 ``-optimize``: wall time, trials, and how well the chosen config
does on seeds neither tool tuned on.

    python3 -m venv /work/zoo_venv && /work/zoo_venv/bin/pip install torch==2.13.0 rl_zoo3   # not a dependency
    python bench/bench_tuning.py --algo ppo --trials 30 --steps 50000 --zoo-python /work/zoo_venv/bin/python
    python bench/bench_tuning.py --algo sac --trials 6 --steps 10000 --reeval-top-k 2   # Pendulum-v1

Both tools get the same number of trials, env steps per trial, parallel jobs (2), evaluations per
trial (5, of 5 episodes) and a TPE sampler with a median pruner, each from its own default search
space (PPO and DQN on CartPole-v1, SAC and TD3 on Pendulum-v1).  The project's study includes its
held-out re-evaluation stage (top ``--reeval-top-k`` configs, default 5, x 3 seeds),
whose winner is its answer; rl-zoo3's answer is its best trial.  ``--answer best`` scores, on both
sides, the weights of each retrained run's best evaluation (5 evaluations of 5 episodes, SB3's
``EvalCallback`` best model, rl-zoo3's ``--load-best``) instead of its final weights, and the
project's trials are scored by their best evaluation (``eval.answer=best``; rl-zoo3's trials keep
their last evaluation, its ``-optimize`` has no such setting).  Then each answer is retrained from
scratch on ``--heldout`` seeds (default 20000-20002, apart from every seed either study used) and
scored by ``--episodes`` (20) deterministic episodes reset with seeds 3,000,000 + 1000 x seed + k, the
same episodes for both tools.  The tools run one after the other in this command (this machine's
speed drifts), project first.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVAL_BASE = 3_000_000
# algo -> (gymnasium id, the project's env preset, the held-out mean that counts as solved)
ENVS = {"ppo": ("CartPole-v1", "cartpole", 475.0), "dqn": ("CartPole-v1", "cartpole", 475.0),
        "sac": ("Pendulum-v1", "pendulum", -200.0), "td3": ("Pendulum-v1", "pendulum", -200.0)}


def _run(cmd: list[str], cwd: str, log: str, timeout: float | None = None) -> float:
    """Run ``cmd`` to the end (or kill its process group after ``timeout`` s); its wall time."""
    started = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
                                env=dict(os.environ, PYTHONPATH=REPO))
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed; see {log}")
    return time.perf_counter() - started


def _journal_study(path: str, name: str):  # noqa: ANN202 - optuna is imported lazily
    import optuna
    from optuna.storages.journal import JournalFileBackend, JournalStorage

    return optuna.load_study(study_name=name, storage=JournalStorage(JournalFileBackend(path)))


def project(a: argparse.Namespace, folder: str) -> dict:
    name = f"bench_{a.algo}"
    cmd = [sys.executable, "-m", "tuner", "tuner=optuna", f"agent={a.algo}", f"env={ENVS[a.algo][1]}",
           f"tuner.study_name={name}", f"tuner.n_trials={a.trials}", f"tuner.n_jobs={a.n_jobs}",
           f"budget.steps={a.steps}", "logger=none", f"tuner.sampler_seed={a.seed}",
           f"tuner.reevaluate.top_k={a.reeval_top_k}", f"tuner.reevaluate.model={a.answer}",
           *(["eval.answer=best"] if a.answer == "best" else [])]
    wall = _run(cmd, folder, os.path.join(folder, "project_study.log"))
    study_dir = os.path.join(folder, "studies", name)
    with open(os.path.join(study_dir, "study.json")) as f:
        summary = json.load(f)
    study = _journal_study(os.path.join(study_dir, "journal.log"), name)
    scores = []
    for seed in a.heldout:
        run = os.path.join(folder, f"project_heldout_{seed}")
        _run([sys.executable, "-m", "tuner", "--config-dir", study_dir, "--config-name", "best_config",
              f"seed={seed}", *_answer_overrides(a, seed), "logger.p=0",
              f"hydra.run.dir={run}"], folder, run + ".log")
        with open(os.path.join(run, "result.json")) as f:
            scores.append(json.load(f)["test_mean_return" if a.answer == "best" else "final_eval_mean_return"])
    re = summary.get("reevaluation") or {}
    return {"tool": "project", "wall_s": wall, "reeval_s": re.get("wall_time_s"), **_counts(study),
            "chosen_trial": summary["best_config_trial"], "heldout": scores}


def _answer_overrides(a: argparse.Namespace, seed: int) -> list[str]:
    """How a held-out run of the project's answer is scored: its final policy on the bench's episodes,
    or (``--answer best``) the weights of its best evaluation (the config's own 5 evaluations of 5
    episodes) on the bench's episodes."""
    if a.answer == "best":
        return ["eval.answer=best", f"eval.test_episodes={a.episodes}", f"eval.test_seed={EVAL_BASE + 1000 * seed}"]
    return [f"eval.episodes={a.episodes}", f"eval.seed={EVAL_BASE + 1000 * seed}"]


def zoo(a: argparse.Namespace, folder: str) -> dict:
    journal = os.path.join(folder, "zoo.log")
    cmd = [a.zoo_python, "-m", "rl_zoo3.train", "--algo", a.algo, "--env", ENVS[a.algo][0], "-optimize",
           "--n-trials", str(a.trials), "--n-jobs", str(a.n_jobs), "--n-timesteps", str(a.steps),
           "--sampler", "tpe", "--pruner", "median", "--n-evaluations", "5", "--eval-episodes", "5",
           "--storage", journal, "--study-name", "zoo", "--no-optim-plots", "--num-threads", "1",
           "-f", os.path.join(folder, "zoo_logs"), "--seed", str(a.seed), "--verbose", "0"]
    wall = _run(cmd, folder, os.path.join(folder, "zoo_study.log"), a.zoo_timeout)
    study = _journal_study(journal, "zoo")
    stopped = a.zoo_timeout is not None and wall >= a.zoo_timeout
    scores = []
    for seed in a.heldout:
        out = subprocess.run([a.zoo_python, os.path.join(REPO, "bench", "_zoo_heldout.py"), "--journal", journal,
                              "--study", "zoo", "--algo", a.algo, "--env", ENVS[a.algo][0], "--steps", str(a.steps),
                              "--seed", str(seed),
                              "--episodes", str(a.episodes), "--eval-seed", str(EVAL_BASE + 1000 * seed),
                              *(["--best"] if a.answer == "best" else [])],
                             capture_output=True, text=True, cwd=folder)
        if out.returncode != 0:
            raise SystemExit(f"rl-zoo3 held-out run failed:\n{out.stderr[-2000:]}")
        scores.append(json.loads(out.stdout.strip().splitlines()[-1])["mean"])
    return {"tool": "rl-zoo3" + (f" (stopped at {a.zoo_timeout:.0f} s)" if stopped else ""), "wall_s": wall,
            "reeval_s": None, **_counts(study), "chosen_trial": study.best_trial.number, "heldout": scores}


def _counts(study) -> dict:  # noqa: ANN001
    states = [t.state.name for t in study.trials]
    return {"trials": len(states), "complete": states.count("COMPLETE"), "pruned": states.count("PRUNED"),
            "failed": states.count("FAIL")}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algo", choices=tuple(ENVS), default="ppo")
    p.add_argument("--trials", type=int, default=30)
    p.add_argument("--steps", type=int, default=50_000)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--heldout", type=lambda s: [int(v) for v in s.split(",")], default=[20000, 20001, 20002])
    p.add_argument("--episodes", type=int, default=20)
    p.add_argument("--reeval-top-k", type=int, default=5, help="configs the project's held-out stage retrains")
    p.add_argument("--answer", choices=("final", "best"), default="final",
                   help="a run's answer: its final policy, or the weights of its best evaluation (both tools; "
                        "scored on the held-out episodes, apart from the evaluations that chose them)")
    p.add_argument("--zoo-python", default="/work/zoo_venv/bin/python")
    p.add_argument("--only", choices=("project", "zoo"), default=None)
    p.add_argument("--zoo-timeout", type=float, default=None,
                   help="stop rl-zoo3's study after this many seconds; its best trial so far is retrained")
    p.add_argument("--keep", default=None, help="a new folder to keep the studies in (default: a temporary one)")
    a = p.parse_args()
    folder = a.keep or tempfile.mkdtemp(prefix="bench_tuning_")
    if os.path.exists(os.path.join(folder, "studies")) or os.path.exists(os.path.join(folder, "zoo.log")):
        # the studies would resume: the trials already there would not be timed again
        raise SystemExit(f"--keep {folder}: it already holds a study; name a new folder")
    os.makedirs(folder, exist_ok=True)
    env_id, _, solved_at = ENVS[a.algo]
    print(f"# {a.algo} on {env_id}: {a.trials} trials x {a.steps} env steps, n_jobs {a.n_jobs}; held-out seeds "
          f"{a.heldout}, {a.episodes} deterministic episodes each of the {a.answer} weights; project's held-out stage: top "
          f"{a.reeval_top_k}; files in {folder}", flush=True)
    rows = []
    for tool in ("project", "zoo"):
        if a.only in (None, tool):
            rows.append((project if tool == "project" else zoo)(a, folder))
            print(json.dumps(rows[-1]), flush=True)
    print("| tool | study wall | of which held-out stage | trials complete / pruned / failed | held-out mean "
          f"(per seed) | solved (>= {solved_at:g}) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        solved = sum(s >= solved_at for s in r["heldout"])
        stage = f"{r['reeval_s']:.0f} s" if r["reeval_s"] is not None else "-"
        print(f"| {r['tool']} | {r['wall_s']:.0f} s | {stage} | {r['complete']} / {r['pruned']} / {r['failed']} | "
              f"{statistics.mean(r['heldout']):.1f} ({', '.join(f'{s:.1f}' for s in r['heldout'])}) | "
              f"{solved}/{len(r['heldout'])} |")


if __name__ == "__main__":
    main()
