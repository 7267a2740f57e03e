"""The AutoRL protocol as a benchmark: tuning methods at equal budget on one task, every answer scored
on test seeds nothing was tuned on, beside the rl-zoo3 preset and ARLBench's published numbers.

    python bench/bench_autorl.py acrobot_dqn [--methods random,tpe,wilcoxon,pbt] [--repeats 1]
        [--trials 6] [--seeds 2] [--steps 30000] [--test-seeds 3] [--jobs 2] [--out bench_autorl]
        [--override 'search.values.agent.hidden_size="choice([64, 64])"' ...]
    python bench/bench_autorl.py acrobot_dqn --table bench_autorl/acrobot_dqn/results.json [more.json ...]

Tasks: the issue's four (LunarLander PPO, Acrobot DQN, Pendulum SAC, MountainCarContinuous SAC), each
starting from rl-zoo3's preset, ``mountain_car_continuous_ppo`` (rl-zoo3's PPO preset, with gSDE),
``lunar_lander_continuous_ppo`` (rl-zoo3's PPO preset), and
``acrobot_a2c``, which has no preset: its studies start from A2C's defaults, which learn and then fall
apart on Acrobot, so tuning has room to win there.

Methods (each a fresh study in ``<out>/<task>/<method>-r<repeat>``; ``--repeats`` runs each again with
another sampler seed):

- ``random``, ``tpe``: ``tuner=optuna`` with that sampler and the median pruner; ``--trials`` trials of
  ``--seeds`` seeds each (the objective is their mean), so a study's budget is trials x seeds full runs;
- ``wilcoxon``: TPE with ``pruner=wilcoxon`` (a trial's seeds are its instances; one losing to the best
  trial on the seeds run so far stops early), the same trials and seeds, so it uses at most that budget
  (it needs 5 seeds per trial to prune at all at p 0.1: ``--seeds 5``); with ``--equal-runs`` every
  Optuna study's budget is trials x seeds training runs instead (``tuner.max_runs``), so the runs
  Wilcoxon's pruning saves go to more trials: equal budget, as the protocol counts it; with
  ``--max-cpu S`` it is S CPU seconds of trial processes (``tuner.max_cpu_s``), and with ``--max-cpu pbt``
  the CPU the same repeat's PBT study used (PBT runs first): equal CPU, by design rather than after the fact;
- ``interleaved``: TPE with the median pruner and ``tuner.seed_order=interleaved``: a trial's seeds train
  in turns and the pruner reads their mean after every round (``tpe`` trains them one after another and
  the pruner reads one seed's curve at a time); ``wilcoxon_il``: the same with ``pruner=wilcoxon``, every
  evaluation of every seed an instance;
- ``pbt``: ``tuner=pbt`` with ``population = trials x seeds`` members (the same env steps in all),
  ``--generations`` segments each; ``--pbt-heldout K``: its held-out stage (tuner/study/pbt_heldout.py)
  chooses the answer among the top K members' schedules and the starting config on ``--heldout-seeds``
  seeds, as the Optuna studies' held-out stage chooses among their top 2 trials and trial 0;
  ``--pbt-seeds K``: each member trains K seeds of its own (``tuner.n_seeds``) and is ranked on their mean,
  so ``population = trials x seeds / K``: the same runs, K times fewer configs.

Every Optuna study runs the protocol (``tuner.seeds.test``): its answer (the held-out winner of the
top 2) and its starting config (trial 0: the rl-zoo3 preset, which conf/hyperparams holds for each task
here) are retrained on the test seeds and scored by 20 deterministic episodes; the starting config's
score is the preset's row.  PBT's answer is its schedule (``pbt_schedule.yaml``): its driver's test stage
(``tuner.seeds.test``, tuner/study/pbt_test.py) replays it from scratch on each test seed and scores the
final policy by the same 20 deterministic episodes, and replays the preset (member 0's first values) held
constant on the same seeds the same way: its preset row.  With both on every seed the table adds the
paired difference (answer - preset) and its standard error, and each method's answer against TPE's of
the same repeat on the same seeds (the issue's target: does a method beat plain TPE?).  The table is
printed and written to ``<out>/<task>/results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_SEEDS = list(range(20000, 20010))

# task -> (agent, env preset, full budget in env steps (ARLBench's = the preset's), solved at,
#          ARLBench's tuning-seed incumbents (RS, SMAC, PBT) and rl-zoo3's one SB3 run, as published, or None)
TASKS = {
    "lunar_lander_ppo": ("ppo", "lunar_lander", 1_000_000, 200.0,
                         {"RS": "199.3 ± 8.0", "SMAC": "222.8 ± 7.4", "PBT": "199.6 ± 22.2", "zoo": "242.1 ± 31.8"}),
    "acrobot_dqn": ("dqn", "acrobot", 100_000, -100.0,
                    {"RS": "−77.7 ± 1.2", "SMAC": "−74.6 ± 4.3", "PBT": "−80.4 ± 2.7", "zoo": "−76.6 ± 11.8"}),
    "pendulum_sac": ("sac", "pendulum", 20_000, -200.0,
                     {"RS": "−286 ± 131", "SMAC": "−292 ± 194", "PBT": "−1150 ± 67", "zoo": "−157.0 ± 88.7"}),
    "mountain_car_continuous_sac": ("sac", "mountain_car_continuous", 50_000, 90.0,
                                    {"RS": "18.8 ± 28.3", "SMAC": "−0.0", "PBT": "−0.0", "zoo": "94.7 ± 1.1"}),
    # rl-zoo3's PPO preset with gSDE (conf/hyperparams/ppo_mountain_car_continuous.yaml; ARLBench has no PPO run
    # on this task): it reaches the flag early and loses it again on some seeds (BENCHMARKS.md, bench_gsde.py)
    "mountain_car_continuous_ppo": ("ppo", "mountain_car_continuous", 20_000, 90.0, None),
    # rl-zoo3's PPO preset (conf/hyperparams/ppo_lunar_lander_continuous.yaml, the discrete task's settings);
    # ARLBench has no LunarLanderContinuous run.  At a fifth of its budget its long rollouts leave it few updates
    "lunar_lander_continuous_ppo": ("ppo", "lunar_lander_continuous", 1_000_000, 200.0, None),
    # not one of ARLBench's or rl-zoo3's: A2C has no Acrobot preset (trial 0 / member 0 are A2C's
    # defaults, rl-zoo3's CartPole settings, which learn and then fall apart here), so tuning has headroom
    "acrobot_a2c": ("a2c", "acrobot", 50_000, -100.0, None),
}
OPTUNA = {"random": ["tuner.sampler=random", "tuner.pruner=median"],
          "tpe": ["tuner.sampler=tpe", "tuner.pruner=median"],
          "wilcoxon": ["tuner.sampler=tpe", "tuner.pruner=wilcoxon"],
          "interleaved": ["tuner.sampler=tpe", "tuner.pruner=median", "tuner.seed_order=interleaved"],
          "wilcoxon_il": ["tuner.sampler=tpe", "tuner.pruner=wilcoxon", "tuner.seed_order=interleaved"]}


def note_tune(args: list[str], log: str) -> int:
    """``python -m tuner <args>`` with its output in ``log``; the exit code."""
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), WANDB_MODE="offline")
    with open(log, "a") as f:
        f.write(f"$ note-tune {' '.join(args)}\n")
        f.flush()
        return subprocess.run([sys.executable, "-m", "tuner", *args], stdout=f, stderr=subprocess.STDOUT,
                              env=env, cwd=REPO).returncode


def common(agent: str, env: str, a: argparse.Namespace) -> list[str]:
    """The overrides every method's study gets (``--override``: a reduced search space, say, stated with
    the results)."""
    return [f"agent={agent}", f"env={env}", f"budget.steps={a.steps}", "logger=none", f"tuner.n_jobs={a.jobs}",
            *a.override]


def budget(a: argparse.Namespace, cpu_s: float | None) -> list[str]:
    """An Optuna study's budget: ``cpu_s`` CPU seconds (``--max-cpu``; the trials as many as fit), else
    trials x seeds training runs (``--equal-runs``), else ``--trials`` trials."""
    if cpu_s is not None:
        return [f"tuner.max_cpu_s={cpu_s:.1f}", "tuner.n_trials=1000"]
    if a.equal_runs:
        return [f"tuner.n_trials={a.trials * a.seeds}", f"tuner.max_runs={a.trials * a.seeds}"]
    return [f"tuner.n_trials={a.trials}"]


def run_optuna(method: str, task: str, repeat: int, a: argparse.Namespace, where: str,
               cpu_s: float | None = None) -> dict:
    agent, env = TASKS[task][:2]
    test = TEST_SEEDS[:a.test_seeds]
    args = ["tuner=optuna", *common(agent, env, a), *OPTUNA[method], f"tuner.study_name={task}-{method}-r{repeat}",
            f"tuner.study_dir={where}", f"tuner.n_seeds={a.seeds}", *budget(a, cpu_s),
            f"tuner.sampler_seed={repeat}", f"tuner.n_startup_trials={a.startup}",
            f"tuner.seeds.test=[{','.join(map(str, test))}]",
            "tuner.reevaluate.top_k=2", f"tuner.reevaluate.seeds={a.heldout_seeds}"]
    started = time.monotonic()
    code = note_tune(args, os.path.join(where + ".log"))
    wall = time.monotonic() - started
    try:
        with open(os.path.join(where, "study.json")) as f:
            study = json.load(f)
    except OSError:
        return {"method": method, "repeat": repeat, "error": f"exit {code}, no study.json", "wall_s": wall}
    t = study.get("test") or {}
    answer = t.get("answer") or {}
    trials = study.get("n_trials") or study.get("trials")
    return {"method": method, "repeat": repeat, "wall_s": wall, "exit": code, "test_seeds": t.get("seeds"),
            "answer_trial": answer.get("trial"), "answer_tuning": answer.get("tuning_value"),
            "answer_test_mean": answer.get("mean"), "answer_test_scores": answer.get("scores"),
            **_start_row(t), "verdict": t.get("verdict"), "trials": trials, "seed_runs": _seed_runs(where),
            "cpu_s": _cpu_seconds(where)}


def _start_row(test: dict) -> dict:
    """The preset's columns from a test stage's summary (the Optuna protocol's or PBT's): the starting
    config's test mean and scores; when the answer is the starting config, its mean (it was not retrained twice)."""
    start, answer = test.get("start") or {}, test.get("answer") or {}
    mean = start.get("mean") if start else (answer.get("mean") if test.get("start_is_answer") else None)
    return {"start_test_mean": mean, "start_test_scores": start.get("scores")}


def _cpu_seconds(study_dir: str) -> float | None:
    """The trial processes' CPU seconds, as the study's report (its AutoRL checklist) states them."""
    try:
        with open(os.path.join(study_dir, "report", "report.md")) as f:
            found = re.search(r"([0-9.]+(?:e\+?[0-9]+)?) s CPU in trial processes", f.read())
    except OSError:
        return None
    return float(found.group(1)) if found else None


def _seed_runs(study_dir: str) -> int | None:
    """Tuning runs the study trained (trials x the seeds each ran before it ended or was pruned)."""
    path = os.path.join(study_dir, "trials")
    if not os.path.isdir(path):
        return None
    seeds = sum(1 for root, _, files in os.walk(path) if "result.json" in files and os.path.basename(root).startswith("seed_"))
    return seeds or sum(1 for root, _, files in os.walk(path) if "result.json" in files)


def run_pbt(task: str, repeat: int, a: argparse.Namespace, where: str) -> dict:
    """``tuner=pbt`` with its test stage (``tuner.seeds.test``): the driver replays the winner's schedule
    from scratch on each test seed and scores it as the Optuna studies' test stage does (pbt.json's ``test``)."""
    agent, env = TASKS[task][:2]
    population = a.trials * a.seeds // a.pbt_seeds
    test = TEST_SEEDS[:a.test_seeds]
    args = ["tuner=pbt", *common(agent, env, a), f"tuner.study_name={task}-pbt-r{repeat}", f"tuner.study_dir={where}",
            f"tuner.population={population}", f"tuner.n_seeds={a.pbt_seeds}", f"tuner.generations={a.generations}",
            f"tuner.interval={a.steps // a.generations}", f"tuner.seed={repeat}",
            f"tuner.seeds.test=[{','.join(map(str, test))}]",
            f"tuner.reevaluate.top_k={a.pbt_heldout}", f"tuner.reevaluate.seeds={a.heldout_seeds}"]
    started = time.monotonic()
    code = note_tune(args, where + ".log")
    wall = time.monotonic() - started
    try:
        with open(os.path.join(where, "pbt.json")) as f:
            pbt = json.load(f)
    except OSError:
        return {"method": "pbt", "repeat": repeat, "error": f"exit {code}, no pbt.json", "wall_s": wall}
    t = pbt.get("test") or {}
    answer = t.get("answer") or {}
    scores = {str(s): (answer.get("scores") or {}).get(str(s)) for s in test}  # None: that replay failed
    return {"method": "pbt", "repeat": repeat, "wall_s": wall, "exit": code, "test_seeds": t.get("seeds"),
            "answer_tuning": pbt.get("winner_score"), "answer_test_mean": answer.get("mean"),
            "answer_test_scores": scores, "seed_runs": population * a.pbt_seeds, "member_seeds": a.pbt_seeds,
            "verdict": t.get("verdict"),
            "cpu_s": _cpu_seconds(where),
            **_start_row(t)}  # the preset (member 0's first values) held constant, replayed on the same seeds


def paired(row: dict, other: dict | None = None) -> tuple[float, float, int, int] | None:
    """The answer's test scores minus the preset's (or ``other``'s answer's), seed by seed: (mean, standard
    error, seeds, seeds where the answer scored higher); ``None`` unless both scored the same two or more seeds."""
    a = row.get("answer_test_scores") or {}
    b = (other.get("answer_test_scores") if other else row.get("start_test_scores")) or {}
    seeds = [s for s in a if a[s] is not None and b.get(s) is not None]
    if len(seeds) < 2:
        return None
    d = [a[s] - b[s] for s in seeds]
    return statistics.fmean(d), statistics.stdev(d) / len(d) ** 0.5, len(d), sum(x > 0 for x in d)


def table(task: str, rows: list[dict], a: argparse.Namespace) -> str:
    def f(v):
        return "-" if v is None else f"{v:.1f}"

    agent, env, _, _, arl = TASKS[task]
    preset = os.path.exists(os.path.join(REPO, "conf", "hyperparams", f"{agent}_{env}.yaml"))
    starts = [r["start_test_mean"] for r in rows if r.get("start_test_mean") is not None]
    start = "rl-zoo3's preset" if preset else "the defaults"
    lines = [f"{task}: {a.steps} env steps per run (full budget {TASKS[task][2]}), {a.trials} trials x {a.seeds} seeds, "
             f"test seeds {TEST_SEEDS[:a.test_seeds]}" + (f", overrides {' '.join(a.override)}" if a.override else ""),
             "| method | repeat | answer's tuning score | answer's test mean | test scores | starting config's test mean "
             f"({start}, same study) | tuning runs | CPU in trials | wall |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['method']} | {r['repeat']} | error: {r['error']} | | | | | | {r['wall_s']:.0f} s |")
            continue
        scores = ", ".join(f(v) for v in (r.get("answer_test_scores") or {}).values())
        cpu = "-" if r.get("cpu_s") is None else f"{r['cpu_s']:.0f} s"
        method = r["method"] + (f" ({r['member_seeds']} seeds a member)" if (r.get("member_seeds") or 1) > 1 else "")
        lines.append(f"| {method} | {r['repeat']} | {f(r.get('answer_tuning'))} | **{f(r.get('answer_test_mean'))}** | "
                     f"{scores} | {f(r.get('start_test_mean'))} | {r.get('seed_runs') or '-'} | "
                     f"{cpu} | {r['wall_s'] / 60:.1f} min |")
    for r in rows:
        diff = paired(r)
        if diff is not None:
            lines.append(f"\n{r['method']} repeat {r['repeat']}: answer - start on the same {diff[2]} test seeds: "
                         f"{diff[0]:+.1f} +- {diff[1]:.1f} (standard error), answer higher on {diff[3]} of {diff[2]}")
    tpe = {r["repeat"]: r for r in rows if r["method"] == "tpe" and "error" not in r}
    for r in rows:  # the target: does a method beat plain TPE (the same repeat, the same test seeds)?
        diff = None if r["method"] == "tpe" or r["repeat"] not in tpe else paired(r, tpe[r["repeat"]])
        if diff is not None:
            lines.append(f"\n{r['method']} - tpe, repeat {r['repeat']}, on the same {diff[2]} test seeds: "
                         f"{diff[0]:+.1f} +- {diff[1]:.1f} (standard error), {r['method']} higher on {diff[3]} of {diff[2]}")
    if starts:
        lines.append(f"\nThe starting config, {start} (trial 0 of each study, retrained on the same test seeds): mean "
                     f"{statistics.fmean(starts):.1f} over {len(starts)} studies")
    if arl is None:
        lines.append("ARLBench publishes nothing for this task" + ("" if preset else
                     ", nor rl-zoo3: the starting config is the agent's defaults"))
    else:
        lines.append(f"ARLBench (tuning seeds, JAX envs, full budget): RS {arl['RS']}, SMAC {arl['SMAC']}, "
                     f"PBT {arl['PBT']}; rl-zoo3's one SB3 run {arl['zoo']}")
    return "\n".join(lines)


def tables(task: str, paths: list[str]) -> str:
    """The table of one or more earlier ``results.json`` files of ``task`` (the first one's arguments)."""
    rows, args = [], None
    for path in paths:
        with open(path) as f:
            done = json.load(f)
        if done["task"] != task:
            raise SystemExit(f"{path}: results of {done['task']}, not {task}")
        rows += done["rows"]
        args = args or argparse.Namespace(**done["args"])
    return table(task, rows, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--methods", default="random,tpe,wilcoxon,pbt")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--first-repeat", type=int, default=0,
                        help="number of the first repeat (a later session adds repeats 1, 2, ... beside repeat 0's "
                             "studies; each repeat seeds the sampler / PBT with its number)")
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--seeds", type=int, default=2, help="seeds per trial (wilcoxon needs 2 or more)")
    parser.add_argument("--steps", type=int, default=None, help="env steps per run (default: the full budget)")
    parser.add_argument("--generations", type=int, default=4, help="PBT segments per member")
    parser.add_argument("--test-seeds", type=int, default=3)
    parser.add_argument("--heldout-seeds", type=int, default=2,
                        help="held-out seeds per finalist (the top 2 and the starting config) in the Optuna studies")
    parser.add_argument("--pbt-heldout", type=int, default=0,
                        help="PBT's held-out stage: the top K members' schedules and the starting config replayed "
                             "on --heldout-seeds seeds, the answer chosen there (0: the best last score)")
    parser.add_argument("--pbt-seeds", type=int, default=1,
                        help="seeds each PBT member trains, ranked on their mean (tuner.n_seeds): a population of "
                             "trials x seeds / K members, the same training runs")
    parser.add_argument("--startup", type=int, default=None,
                        help="TPE's random startup trials (default: min(5, trials // 3); with Optuna's 5 and 6 "
                             "trials, TPE samples what random search samples)")
    parser.add_argument("--equal-runs", action="store_true",
                        help="budget the Optuna studies in training runs, trials x seeds (tuner.max_runs), not in "
                             "trials: a seed the pruner stopped counts one run, so pruning buys more trials")
    parser.add_argument("--max-cpu", default=None, metavar="SECONDS|pbt",
                        help="budget the Optuna studies in CPU seconds of their trial processes (tuner.max_cpu_s); "
                             "pbt: the CPU of the same repeat's PBT study, which then runs first")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(REPO, "bench_autorl"))
    parser.add_argument("--override", action="append", default=[],
                        help="a Hydra override for every study (repeatable)")
    parser.add_argument("--table", metavar="RESULTS_JSON", nargs="+",
                        help="print the table of earlier runs' results.json files (their rows together) and exit")
    a = parser.parse_args()
    if a.table:
        print(tables(a.task, a.table))
        return
    a.steps = a.steps or TASKS[a.task][2]
    a.startup = a.startup if a.startup is not None else min(5, max(1, a.trials // 3))
    folder = os.path.join(os.path.abspath(a.out), a.task)
    os.makedirs(folder, exist_ok=True)
    methods = a.methods.split(",")
    if a.max_cpu == "pbt":
        if "pbt" not in methods:
            parser.error("--max-cpu pbt: --methods must include pbt")
        methods = ["pbt"] + [m for m in methods if m != "pbt"]
    elif a.max_cpu is not None and not _positive_number(a.max_cpu):
        parser.error(f"--max-cpu: a number of seconds > 0 or pbt, got {a.max_cpu!r}")
    if a.pbt_seeds < 1 or (a.trials * a.seeds) % a.pbt_seeds:
        parser.error(f"--pbt-seeds: a count >= 1 that divides trials x seeds ({a.trials * a.seeds}), got {a.pbt_seeds}")
    rows = []
    for repeat in range(a.first_repeat, a.first_repeat + a.repeats):
        cpu_s = float(a.max_cpu) if a.max_cpu not in (None, "pbt") else None
        for method in methods:
            where = os.path.join(folder, f"{method}-r{repeat}")
            if method == "pbt":
                row = run_pbt(a.task, repeat, a, where)
                cpu_s = row.get("cpu_s") if a.max_cpu == "pbt" else cpu_s
            elif a.max_cpu == "pbt" and cpu_s is None:
                row = {"method": method, "repeat": repeat, "error": "PBT recorded no CPU to budget by"}
            else:
                row = run_optuna(method, a.task, repeat, a, where, cpu_s)
            rows.append(row)
            print(json.dumps(row), flush=True)
            with open(os.path.join(folder, "results.json"), "w") as f:
                json.dump({"task": a.task, "args": vars(a), "rows": rows}, f, indent=1)
    print(table(a.task, rows, a))


def _positive_number(text: str) -> bool:
    try:
        return 0 < float(text) < float("inf")
    except ValueError:
        return False


if __name__ == "__main__":
    main()
