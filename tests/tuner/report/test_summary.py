"""``note-tune summary``: a real multirun (2 configs x 2 seeds) summarized, its statistics checked
against values computed here from the jobs' result.json files; study dirs and run dirs; bad input is
one line and exit status 2."""

from __future__ import annotations

import csv
import json
import math
import os

import pytest

from tests.tuner.conftest import TINY, run_app
from tuner.cli.subcommands import main
from tuner.report.summary import t_interval

# the two-sided 95% Student-t critical values t(0.975, df), from a printed table
T975 = {1: 12.706204736174707, 2: 4.302652729911275, 3: 3.182446305284263}


def _read_csv(path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as f:
        return {row["config"]: row for row in csv.DictReader(f)}


def _stats(values: list[float]) -> tuple[float, float, float, float]:
    """Mean, sample std and the 95% t-interval, by hand."""
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = T975[n - 1] * std / math.sqrt(n)
    return mean, std, mean - half, mean + half


def test_t_interval_matches_the_table() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    low, high = t_interval(values)
    mean, std, hand_low, hand_high = _stats(values)
    assert (low, high) == pytest.approx((hand_low, hand_high), rel=1e-12)
    assert (low, high) == pytest.approx((2.5 - 3.182446305284263 * math.sqrt(5 / 3) / 2,
                                         2.5 + 3.182446305284263 * math.sqrt(5 / 3) / 2))
    assert t_interval([3.0]) is None


@pytest.mark.slow
def test_multirun_sweep_summary_matches_the_result_files(tmp_path) -> None:
    run_app(["-m", *TINY, "eval.episodes=3", "agent.lr=0.001,0.05", "seed=0,1", "hydra.sweep.dir=sweep"],
            cwd=str(tmp_path))
    sweep = tmp_path / "sweep"
    # a job that failed leaves a job dir without result.json: left out with a warning
    (sweep / "9" / ".hydra").mkdir(parents=True)
    out = run_app(["summary", "sweep"], cwd=str(tmp_path))
    assert "warning: sweep/9: no result.json" in out.stderr
    by_config: dict[str, list[tuple[int, float]]] = {}
    for job in sorted(os.listdir(sweep)):
        if not (sweep / job / "result.json").exists():
            continue
        result = json.loads((sweep / job / "result.json").read_text())
        lr = f"agent.lr={result['config']['agent']['lr']:g}"
        by_config.setdefault(lr, []).append((result["seed"], result["final_eval_mean_return"]))
    assert sorted(by_config) == ["agent.lr=0.001", "agent.lr=0.05"]
    table = _read_csv(sweep / "summary.csv")  # out= defaults to the first directory
    assert sorted(table) == sorted(by_config)
    for config, samples in by_config.items():
        values = [v for _, v in samples]
        mean, std, low, high = _stats(values)
        row = table[config]
        assert int(row["n"]) == 2 and sorted(int(s) for s in row["seeds"].split()) == [0, 1]
        assert float(row["mean"]) == pytest.approx(mean, rel=1e-12)
        assert float(row["std"]) == pytest.approx(std, rel=1e-12, abs=1e-12)
        assert float(row["ci95_low"]) == pytest.approx(low, rel=1e-9, abs=1e-9)
        assert float(row["ci95_high"]) == pytest.approx(high, rel=1e-9, abs=1e-9)
        assert (float(row["min"]), float(row["max"])) == (min(values), max(values))
        assert "seed=" not in row["overrides"] and row["overrides"].endswith(config)
        assert f"{mean:.4g}" in out.stdout  # the printed table
    md = (sweep / "summary.md").read_text()
    assert "| `agent.lr=0.05` | 2 |" in md and "Overrides shared by all: `agent=dqn" in md
    assert (sweep / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # another metric, and the files written where out= says
    run_app(["summary", "sweep", "metric=final_mean_return", "out=elsewhere"], cwd=str(tmp_path))
    table = _read_csv(tmp_path / "elsewhere" / "summary.csv")
    for config in by_config:
        values = [json.loads((sweep / j / "result.json").read_text())["final_mean_return"]
                  for j in sorted(os.listdir(sweep)) if (sweep / j / "result.json").exists()
                  and f"{json.loads((sweep / j / 'result.json').read_text())['config']['agent']['lr']:g}"
                  == config.split("=")[1]]
        assert float(table[config]["mean"]) == pytest.approx(sum(values) / len(values))


def _study(folder, name: str, best: float | None) -> None:
    folder.mkdir(parents=True)
    (folder / "study.json").write_text(json.dumps({"study_name": name, "best_value": best, "n_complete": 3}))


def _run(folder, value: float, seed: int, agent: str = "dqn", overrides: list[str] | None = None) -> None:
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({
        "final_eval_mean_return": value, "final_mean_return": value - 1, "seed": seed,
        "config": {"agent": {"name": agent}, "env": {"id": "CartPole-v1"}, "backend": {"name": "torch"}}}))
    if overrides is not None:
        (folder / ".hydra").mkdir()
        (folder / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))


def test_studies_and_run_dirs_are_grouped_by_name_and_config(tmp_path, capsys) -> None:
    for i, best in enumerate([100.0, 140.0, 90.0]):
        _study(tmp_path / f"a{i}", "ppo_cartpole", best)
    _study(tmp_path / "b0", "dqn_cartpole", 50.0)
    _run(tmp_path / "r0", 10.0, 0)
    _run(tmp_path / "r1", 14.0, 1)
    dirs = [str(tmp_path / d) for d in ("a0", "a1", "a2", "b0", "r0", "r1")]
    assert main("summary", [*dirs, f"out={tmp_path / 'out'}"]) == 0
    table = _read_csv(tmp_path / "out" / "summary.csv")
    assert sorted(table) == ["agent=dqn env=CartPole-v1 backend=torch", "study dqn_cartpole", "study ppo_cartpole"]
    mean, std, low, high = _stats([100.0, 140.0, 90.0])
    row = table["study ppo_cartpole"]
    assert (int(row["n"]), float(row["mean"]), float(row["std"])) == (3, pytest.approx(mean), pytest.approx(std))
    assert (float(row["ci95_low"]), float(row["ci95_high"])) == (pytest.approx(low), pytest.approx(high))
    assert table["study dqn_cartpole"]["std"] == "" and table["study dqn_cartpole"]["ci95_low"] == ""
    assert float(table["agent=dqn env=CartPole-v1 backend=torch"]["mean"]) == 12.0
    printed = capsys.readouterr().out
    assert printed.index("study ppo_cartpole") < printed.index("study dqn_cartpole")  # best mean first
    assert "study rows: each study's best value" in printed

    # a folder of study dirs (./studies): one sample per study
    studies = tmp_path / "studies"
    for i, best in enumerate([100.0, 140.0]):
        _study(studies / f"s{i}", "ppo_cartpole", best)
    assert main("summary", [str(studies)]) == 0
    row = _read_csv(studies / "summary.csv")["study ppo_cartpole"]
    assert (int(row["n"]), float(row["mean"])) == (2, 120.0)


def test_a_password_in_the_overrides_stays_out_of_the_summary(tmp_path) -> None:
    secret = "s3cret-Pw-4711"
    url = f"tuner.storage=postgresql://bob:{secret}@db/optuna"
    _run(tmp_path / "sweep" / "0", 1.0, 0, overrides=[url, "seed=0"])
    _run(tmp_path / "sweep" / "1", 3.0, 1, overrides=[url, "seed=1"])
    assert main("summary", [str(tmp_path / "sweep")]) == 0
    for name in ("summary.csv", "summary.md"):
        text = (tmp_path / "sweep" / name).read_text()
        assert secret not in text and "postgresql://bob:***@db/optuna" in text


@pytest.mark.parametrize("make, args, message", [
    (None, ["missing"], "error: {tmp}/missing: not a directory"),
    ("empty", ["empty"], "error: {tmp}/empty: no result.json, study.json or multirun job dirs in it (give a run "
                         "dir, a study dir or a multirun sweep dir)"),
    ("badjson", ["badjson"], "error: {tmp}/badjson/0/result.json: not JSON (Expecting value at line 1)"),
    ("nonumber", ["nonumber"], "error: {tmp}/nonumber/result.json: final_eval_mean_return: 'high' is not a finite "
                               "number"),
    ("nostudy", ["nostudy"], "error: {tmp}/nostudy/study.json: best_value: None is not a finite number (no "
                             "completed trial?)"),
    ("deep", ["deep"], "error: {tmp}/deep/result.json: nested more than 64 levels deep"),
    ("empty", ["empty", "metric=loss"], "error: metric: 'loss' is not one of final_eval_mean_return, "
                                        "best_eval_mean_return, test_mean_return, objective, final_mean_return, "
                                        "best_mean_return"),
    (None, [], "error: summary: give at least one directory (a multirun sweep dir, a run dir or a study dir)"),
    ("empty", ["empty", "outdir=x"], "error: summary: unknown argument 'outdir=x' (expected directories, out=, "
                                     "metric=)"),
    ("run", ["run", "out={tmp}/run/result.json/x"], "error: out: cannot make {tmp}/run/result.json/x "
                                                    "({tmp}/run/result.json is not a writable directory)"),
])
def test_bad_input_is_one_line_naming_the_path(tmp_path, capsys, make, args, message) -> None:
    if make == "empty":
        (tmp_path / "empty").mkdir()
    elif make == "badjson":
        (tmp_path / "badjson" / "0").mkdir(parents=True)
        (tmp_path / "badjson" / "0" / "result.json").write_text("")
    elif make == "nonumber":
        (tmp_path / "nonumber").mkdir()
        (tmp_path / "nonumber" / "result.json").write_text(json.dumps({"config": {}, "final_eval_mean_return": "high"}))
    elif make == "nostudy":
        _study(tmp_path / "nostudy", "s", None)
    elif make == "run":
        _run(tmp_path / "run", 1.0, 0)
    elif make == "deep":
        (tmp_path / "deep").mkdir()
        (tmp_path / "deep" / "result.json").write_text("[" * 100 + "]" * 100)
    argv = [str(tmp_path / a) if "=" not in a else a.format(tmp=tmp_path) for a in args]
    assert main("summary", argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == message.format(tmp=tmp_path) and len(err.strip().splitlines()) == 1


def test_bad_dir_from_the_console_is_exit_2_and_one_line(tmp_path) -> None:
    out = run_app(["summary", "nowhere"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2 and out.stderr.strip() == "error: nowhere: not a directory" and not out.stdout


@pytest.mark.slow
def test_a_real_study_is_one_sample_of_its_best_value_and_its_trials_log_csv(tmp_path) -> None:
    from tests.tuner.conftest import NO_REEVAL

    args = [*[o for o in TINY if not o.startswith("logger=")], "logger=[console,csv]", "tuner=optuna",
            "tuner.n_trials=2", *NO_REEVAL, "tuner.study_dir=studies/s1"]
    run_app(args, cwd=str(tmp_path))
    study = json.loads((tmp_path / "studies" / "s1" / "study.json").read_text())
    for trial in ("0000", "0001"):  # each trial process wrote its own progress.csv
        with open(tmp_path / "studies" / "s1" / "trials" / trial / "progress.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        result = json.loads((tmp_path / "studies" / "s1" / "trials" / trial / "result.json").read_text())
        assert [float(r["return"]) for r in rows if r["return"]] == result["returns"]
    out = run_app(["summary", "studies", "out=cmp"], cwd=str(tmp_path))
    row = _read_csv(tmp_path / "cmp" / "summary.csv")[f"study {study['study_name']}"]
    assert (int(row["n"]), float(row["mean"])) == (1, study["best_value"])
    assert "study rows: each study's best value" in out.stdout
