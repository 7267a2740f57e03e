"""``logger=csv`` and ``logger=tensorboard``, and several loggers at once: the files are read back with
the csv module and with TensorBoard's own EventAccumulator, and compared with the run's result.json
and with the wandb history of the same run."""

from __future__ import annotations

import csv
import json
import os

import pytest

from tests.tuner.conftest import TINY, compose_cfg, run_app
from tests.tuner.wandb_read import offline_runs, read_run
from tuner.config.schema import validate
from tuner.logs.metrics import logger_kinds

BASE = [o for o in TINY if not o.startswith("logger=")]
PASSWORD = "s3cret-Pw-4711"


def _events(folder: str):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(folder, size_guidance={"scalars": 0, "tensors": 0})  # 0: keep every point
    acc.Reload()
    return acc


def _csv_rows(path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


@pytest.mark.parametrize("overrides, kinds", [
    (["logger=[wandb,csv]"], ["wandb", "csv"]),
    (["logger=[console,csv,tensorboard]"], ["console", "csv", "tensorboard"]),
    (["logger=tensorboard", "+logger.kinds.csv=true"], ["csv", "tensorboard"]),
    (["logger=csv"], ["csv"]),
    (["logger=none"], []),
    (["tuner=optuna"], ["wandb"]),  # a study's default logger, as before
])
def test_logger_selection_composes(overrides, kinds) -> None:
    from omegaconf import OmegaConf

    cfg = validate(compose_cfg(overrides))
    assert logger_kinds(OmegaConf.to_container(cfg.logger)) == kinds


def test_an_unknown_logger_kind_is_one_line(tmp_path) -> None:
    out = run_app([*BASE, "logger=csv", "+logger.kinds.mlflow=true"], cwd=str(tmp_path), check=False)
    assert out.returncode == 2
    assert out.stderr.strip() == "error: logger.kinds.mlflow: 'mlflow' is not one of console, wandb, csv, tensorboard"


def test_tensorboard_without_its_extra_is_one_line_before_training(tmp_path) -> None:
    from tests.tuner.cli.test_packaging import _run

    out = _run(tmp_path, "tensorboardX", ["-m", "tuner", *BASE, "logger=[console,tensorboard]"])
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "error: logger: tensorboard needs tensorboardX, which is not installed: pip install "
        "'note-rl-tuner[tensorboard]' (in a checkout: pip install -e '.[tensorboard]')"], out.stderr
    assert not list(tmp_path.glob("outputs/*/*/result.json"))


@pytest.mark.slow
def test_csv_tensorboard_and_wandb_from_one_run_agree(tmp_path) -> None:
    run_app([*BASE, "logger=[wandb,csv,tensorboard]", "budget.steps=400", "hydra.run.dir=run"], cwd=str(tmp_path))
    run = tmp_path / "run"
    result = json.loads((run / "result.json").read_text())
    header, rows = _csv_rows(run / "progress.csv")
    # SB3's progress.csv: one header with every key, a row per episode and one per evaluation
    assert header[:3] == ["env_steps", "episode", "return"]
    assert {"mean_return", "loss", "lr", "batch", "eps", "env_steps_per_s", "eval/mean_return",
            "eval/std_return"} <= set(header)
    episodes = [r for r in rows if r["return"] != ""]
    evals = [r for r in rows if r["eval/mean_return"] != ""]
    assert len(rows) == len(episodes) + len(evals)
    assert [float(r["return"]) for r in episodes] == result["returns"]
    assert [int(r["episode"]) for r in episodes] == list(range(1, result["episodes"] + 1))
    steps = [int(r["env_steps"]) for r in episodes]
    assert steps == sorted(steps) and steps[-1] <= result["env_steps"]
    assert [(int(r["env_steps"]), float(r["eval/mean_return"])) for r in evals] == \
        [(e["step"], e["mean"]) for e in result["evaluations"]]
    losses = [float(r["loss"]) for r in episodes if r["loss"] != ""]
    assert losses == [v for v in result["losses"] if v is not None]

    # TensorBoard: the same points at the same env steps (float32 in the event file)
    (events_file,) = os.listdir(run / "tensorboard")
    assert events_file.startswith("events.out.tfevents.")
    acc = _events(str(run / "tensorboard"))
    scalars = acc.Tags()["scalars"]
    assert {"return", "mean_return", "loss", "lr", "eval/mean_return", "eval/std_return"} <= set(scalars)
    ret = acc.Scalars("return")
    assert [e.step for e in ret] == steps
    assert [e.value for e in ret] == pytest.approx(result["returns"], rel=1e-6)
    assert [(e.step, e.value) for e in acc.Scalars("eval/mean_return")] == \
        [(s, pytest.approx(m, rel=1e-6)) for s, m in ((e["step"], e["mean"]) for e in result["evaluations"])]
    config = _config_text(acc)
    assert "agent:" in config and "hidden_size" in config

    # wandb's history of the same run holds the same rows (one row builder for every logger)
    (path,) = offline_runs(str(run))
    history = [row for row in read_run(path)["history"] if "return" in row]
    assert [row["return"] for row in history] == pytest.approx(result["returns"])
    assert [row["env_steps"] for row in history] == steps


def _config_text(acc) -> str:
    from tensorboard.util import tensor_util

    (event,) = acc.Tensors("config/text_summary")
    return tensor_util.make_ndarray(event.tensor_proto).item().decode()


def test_secrets_never_reach_the_csv_or_the_event_files(tmp_path) -> None:
    """A storage password in the config (or a secret-named key) is masked in what the loggers write;
    the real writers, the files read back."""
    from tuner.logs.file_loggers import CsvCallback, TensorboardCallback

    cfg = {"logger": {"name": "csv", "kinds": {"csv": True, "tensorboard": True}, "log_every": 1, "dir": None},
           "tuner": {"storage": f"postgresql://bob:{PASSWORD}@db:5432/optuna"},
           "extra": {"api_key": "abcd-9876-key", "note": f"see postgresql://u@h/d?password={PASSWORD}"}}
    loggers = [CsvCallback(cfg, str(tmp_path)), TensorboardCallback(cfg, str(tmp_path))]
    for i, mean in enumerate([1.5, 2.5]):
        for cb in loggers:
            cb.log_evaluation({"step": 100 * (i + 1), "mean": mean, "std": 0.5})
    for cb in loggers:
        cb.on_train_end()
        assert not cb.failed and cb.rows == 2
    header, rows = _csv_rows(tmp_path / "progress.csv")
    assert header == ["env_steps", "eval/mean_return", "eval/std_return"]
    assert [(r["env_steps"], r["eval/mean_return"]) for r in rows] == [("100", "1.5"), ("200", "2.5")]
    acc = _events(str(tmp_path / "tensorboard"))
    assert [(e.step, e.value) for e in acc.Scalars("eval/mean_return")] == [(100, 1.5), (200, 2.5)]
    config = _config_text(acc)
    assert "postgresql://bob:***@db:5432/optuna" in config and "api_key: '***'" in config
    for root, _, files in os.walk(tmp_path):
        for name in files:
            data = open(os.path.join(root, name), "rb").read()
            assert PASSWORD.encode() not in data and b"abcd-9876-key" not in data, name


def test_a_logger_that_cannot_write_warns_once_and_training_goes_on(tmp_path, capsys) -> None:
    from tuner.logs.file_loggers import CsvCallback

    blocker = tmp_path / "file"
    blocker.write_text("")
    cb = CsvCallback({"logger": {"name": "csv", "dir": str(blocker / "sub")}}, str(tmp_path))
    cb.log_evaluation({"step": 1, "mean": 1.0, "std": 0.0})
    cb.log_evaluation({"step": 2, "mean": 1.0, "std": 0.0})
    cb.on_train_end()
    err = capsys.readouterr().err
    assert cb.failed and err.count("warning: csv logging stopped, training continues") == 1
