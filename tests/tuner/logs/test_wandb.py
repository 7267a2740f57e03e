"""wandb runs of training runs and trials, written offline and read back with wandb's own reader."""

import json
import os

import pytest
from omegaconf import OmegaConf

from tests.tuner.conftest import NO_REEVAL, TINY, compose_cfg, run_app
from tests.tuner.wandb_read import offline_runs, read_run

# TINY without its logger=none: these tests choose the logger
BASE = [o for o in TINY if not o.startswith("logger=")]
ROW_KEYS = {"env_steps", "episode", "return", "mean_return", "lr", "batch", "eps", "env_steps_per_s"}


def _result(folder) -> dict:
    return json.loads((folder / "result.json").read_text())


def test_training_run_history_config_summary_and_artifacts(tmp_path) -> None:
    # prioritized replay + the ESS adjuster, so that adjuster values reach the history too
    run_app([*BASE, "logger=wandb", "logger.log_every=2", "logger.tags=[unit]", "logger.log_gif=true",
             "logger.gif_max_steps=20", "budget.steps=400", "buffer=prioritized", "adjuster.kind=ess",
             "+adjuster.every=5", "+adjuster.batch_params={min: 8, max: 64}"], cwd=str(tmp_path))
    run_dir = next(tmp_path.glob("outputs/*/*"))
    result = _result(run_dir)
    (path,) = offline_runs(str(run_dir))
    run = read_run(path)
    assert run["run"]["job_type"] == "train" and "unit" in run["run"]["tags"] and "dqn" in run["run"]["tags"]
    assert run["run"]["project"] == "note-rl-tuner"
    # config: the fully resolved config
    assert run["config"]["agent"]["hidden_size"] == [16] and run["config"]["budget"]["steps"] == 400
    assert run["config"]["buffer"]["name"] == "prioritized" and run["config"]["logger"]["log_every"] == 2
    # history: one row every 2 episodes, x-axis env steps increasing; evaluations in rows of their own
    evals = [row for row in run["history"] if "eval/mean_return" in row]
    assert [row["eval/mean_return"] for row in evals] == pytest.approx([e["mean"] for e in result["evaluations"]])
    assert summary_eval(run) == pytest.approx(result["final_eval_mean_return"])
    history = [row for row in run["history"] if "return" in row]
    assert len(history) == result["episodes"] // 2
    assert all(ROW_KEYS <= set(row) for row in history)
    assert [row["env_steps"] for row in history] == sorted(row["env_steps"] for row in history)
    assert any("loss" in row for row in history)
    assert any("adjust/ess" in row and "adjust/ess_ema" in row for row in history)
    assert history[-1]["return"] == result["returns"][2 * len(history) - 1]
    # summary
    summary = run["summary"]
    assert run["state"] == "finished" and run["exit_code"] == 0
    assert summary["state"] == "complete" and summary["env_steps"] == 400
    assert summary["final_mean_return"] == pytest.approx(result["final_mean_return"])
    assert summary["best_mean_return"] == pytest.approx(result["best_mean_return"])
    # artifacts: the best checkpoint and the animated agent, files kept in the run dir
    types = {a["type"]: a for a in run["artifacts"]}
    assert set(types) == {"model", "animation"}
    assert [c["path"] for c in types["model"]["manifest"]["contents"]] == ["best_model.npz"]
    assert "best" in types["model"]["aliases"]
    assert (run_dir / "best_model.npz").stat().st_size > 0 and (run_dir / "agent.gif").stat().st_size > 0


def summary_eval(run) -> float:
    return run["summary"]["eval_mean_return"]


def test_pruned_run_reports_its_state(tmp_path) -> None:
    from tuner.logs.wandb_logger import trial_meta
    from tuner.run.train import run_training

    # the training-mean protocol: a report (and here a prune) after the first episode
    cfg = OmegaConf.to_container(compose_cfg([*BASE, "logger=wandb", "logger.p=0", "objective.source=train"]),
                                 resolve=True)
    meta = trial_meta("unit_study", 7, {"optimizer.lr": 1e-3, "agent.gamma": 0.9})
    result = run_training(cfg, str(tmp_path), reporter=lambda step, value: True, report_every=1, meta=meta)
    assert result["status"] == "pruned"
    (path,) = offline_runs(str(tmp_path))
    run = read_run(path)
    assert run["run"]["run_group"] == "unit_study" and run["run"]["job_type"] == "trial"
    assert run["run"]["display_name"] == "unit_study#0007 gamma=0.9 lr=0.001"
    assert run["config"]["params"] == {"optimizer.lr": 1e-3, "agent.gamma": 0.9} and run["config"]["trial"] == 7
    assert run["summary"]["state"] == "pruned" and len(run["history"]) == result["episodes"] == 1


def test_study_trials_are_grouped_and_failures_reach_wandb(tmp_path) -> None:
    # logger=wandb is the default of tuner=optuna; one trial completes, one crashes inside training
    envs = "choice(CartPole-v1, Crash-v0)"
    run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=wb", "search=none", f"+search.values.env.id='{envs}'",
             "env.module=tests.tuner.faulty_envs", "tuner.sampler=grid", "tuner.n_trials=2",
             "tuner.max_total_trials=2", "tuner.pruner=none", *BASE], cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "wb"
    runs = {}
    for trial_dir in sorted((study_dir / "trials").iterdir()):
        (path,) = offline_runs(str(trial_dir))
        runs[trial_dir.name] = read_run(path)
    by_env = {r["config"]["params"]["env.id"]: r for r in runs.values()}
    assert sorted(by_env) == ["CartPole-v1", "Crash-v0"]
    for number, run in runs.items():
        assert run["run"]["run_group"] == "wb" and run["run"]["job_type"] == "trial"
        assert run["run"]["display_name"].startswith(f"wb#{number}")
        assert run["config"]["trial"] == int(number) and run["config"]["tuner"] == {"name": "none"}
    ok, crash = by_env["CartPole-v1"], by_env["Crash-v0"]
    assert ok["summary"]["state"] == "complete" and ok["exit_code"] == 0
    assert [a["type"] for a in ok["artifacts"]] == ["model"]
    assert crash["summary"]["state"] == "failed" and crash["exit_code"] == 1 and not crash["artifacts"]
    assert crash["summary"]["fail_reason"] == "RuntimeError: the env exploded"
    # the study's own run: job_type study, the trials table and the report's plots
    (path,) = offline_runs(str(study_dir))
    study_run = read_run(path)
    assert study_run["run"]["job_type"] == "study" and study_run["run"]["run_group"] == "wb"
    (row,) = study_run["history"]  # the reader flattens logged media to "<key>.<field>"
    assert row["plots/optimization_history._type"] == "image-file"
    assert row["trials._type"] == "table-file" and row["trials.nrows"] == 2
    table = json.loads(open(os.path.join(path, "files", row["trials.path"])).read())
    rows = {r[table["columns"].index("state")]: dict(zip(table["columns"], r)) for r in table["data"]}
    assert rows["FAIL"]["fail_reason"] == "RuntimeError: the env exploded" and rows["COMPLETE"]["value"] > 0
    assert study_run["summary"]["n_complete"] == 1 and study_run["summary"]["n_failed"] == 1
    assert study_run["summary"]["best_params"] == {"env.id": "CartPole-v1"}
    assert "report" in [a["type"] for a in study_run["artifacts"]]  # (the table adds a run_table one)


def test_wandb_failures_warn_once_and_training_results_stay(tmp_path) -> None:
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where wandb's directory should be")
    out = run_app([*BASE, "logger=wandb", f"logger.dir={blocker}/runs", "budget.steps=200"], cwd=str(tmp_path))
    assert out.stderr.count("warning: wandb logging disabled") == 1
    result = _result(next(tmp_path.glob("outputs/*/*")))
    assert result["status"] == "complete" and result["env_steps"] == 200 and result["final_mean_return"] > 0
    assert not list(tmp_path.rglob("offline-run-*"))
    # online mode without an API key (and no network): the same one warning, the same results
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "WANDB_API_KEY": "", "WANDB_MODE": "", "WANDB_CONFIG_DIR": str(home)}
    out = run_app([*BASE, "logger=wandb", "logger.mode=online", "logger.init_timeout=20", "budget.steps=200",
                   "hydra.run.dir=online"], cwd=str(tmp_path), env=env)
    assert out.stderr.count("warning: wandb logging disabled") == 1
    assert _result(tmp_path / "online")["env_steps"] == 200


def test_wandb_is_not_imported_without_logger_wandb(tmp_path) -> None:
    import subprocess
    import sys

    code = ("import sys, note_rl, tuner.run.train, tuner.study.driver, tuner.report.report, tuner.logs.wandb_logger; "
            "print('wandb' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=os.getcwd())
    assert out.stdout.strip() == "False", out.stderr


def test_lr_finder_command_logs_reward_and_loss_against_lr_and_a_study_report(tmp_path) -> None:
    from PIL import Image

    from tests.tuner.finders.test_finders import run_command

    # no logger override: finder studies log to wandb (offline) by default
    run_command("note-lr-finder", ["tuner.study_name=lrf", "tuner.N=30", "tuner.episodes=12", "tuner.window_size=3",
                                   *BASE], cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "lrf"
    (path,) = offline_runs(str(study_dir / "trials" / "0000"))
    run = read_run(path)
    assert run["run"]["job_type"] == "lr_finder" and run["run"]["run_group"] == "lrf"
    assert run["run"]["display_name"] == "lrf#0000"
    # reward and loss against the learning rate: lr is the x-axis of every row and it grows
    assert {"glob_name": "*", "options": {"defined": True, "step_sync": True}, "step_metric": "lr"} in run["metrics"]
    history = run["history"]
    lrs = [row["lr"] for row in history]
    assert len(lrs) == run["summary"]["episodes"] and lrs == sorted(lrs) and lrs[-1] > lrs[0]
    assert all({"normalized_reward", "return", "env_steps"} <= set(row) for row in history)
    assert any("loss" in row for row in history)
    # the same points as the finder's own record (the normalised reward, not the raw return)
    found = json.loads((study_dir / "lr_finder.json").read_text())
    assert [row["normalized_reward"] for row in history] == pytest.approx(found["normalized_rewards"])
    assert lrs == pytest.approx(found["episode_lrs"])
    # the end-of-study report, with the LR-finder curves of this study, and the study's wandb run
    assert (study_dir / "report" / "report.md").exists()
    for name in ("lr_finder", "optimization_history"):
        with Image.open(study_dir / "report" / f"{name}.png") as img:
            assert img.format == "PNG" and img.size[0] >= 400
            img.verify()
    (path,) = offline_runs(str(study_dir))
    study_run = read_run(path)
    assert study_run["run"]["job_type"] == "study" and study_run["run"]["run_group"] == "lrf"
    assert study_run["history"][0]["plots/lr_finder._type"] == "image-file"


def test_gns_adjuster_noise_signal_and_adjusted_batch_reach_the_history(tmp_path) -> None:
    # B_simple of a tiny DQN on CartPole is ~2: from batch 64 the GNS rule walks the batch down
    run_app([*BASE, "logger=wandb", "budget.steps=400", "agent.batch=64", "agent.learning_starts=64",
             "adjuster=gns", "adjuster.every=5"], cwd=str(tmp_path))
    (path,) = offline_runs(str(next(tmp_path.glob("outputs/*/*"))))
    history = read_run(path)["history"]
    adjusted = [row for row in history if "adjust/batch" in row]
    assert adjusted and history[0]["batch"] == 64
    for row in adjusted:  # the signal and what the adjuster set, as it was at the episode's end
        assert {"adjust/noise", "adjust/noise_ema", "adjust/b_simple", "adjust/noise_ratio", "adjust/lr"} <= set(row)
        assert row["batch"] == row["adjust/batch"] and row["lr"] == pytest.approx(row["adjust/lr"])
    assert adjusted[-1]["batch"] < 64


def test_python_api_lr_finder_wandb_opt_in_with_two_optimizers(tmp_path) -> None:
    import torch

    import tests.note_rl.envs  # noqa: F401 - registers Corridor-v0
    from note_rl.policy import SoftmaxPolicy
    from tests.conftest import agents_module
    from tuner.finders import LRFinder

    agent = agents_module("torch").PPO(6, 16, 2, gamma=0.9, env="Corridor-v0", seed=0)
    agent.set(policy=SoftmaxPolicy(), batch=16, pool_size=1000, learning_starts=16, seed=0)
    agent.optimizer = [torch.optim.Adam(agent.param[0]), torch.optim.Adam(agent.param[1])]  # actor, critic
    finder = LRFinder(agent)
    finder.find(N=8, per="episode", window_size=3, episodes=10, study_dir=str(tmp_path / "lrw"), study_name="lrw",
                wandb=dict(project="unit", tags=["api"]))
    (path,) = offline_runs(str(tmp_path / "lrw" / "trials" / "0000"))
    run = read_run(path)
    assert run["run"]["job_type"] == "lr_finder" and run["run"]["run_group"] == "lrw"
    assert run["run"]["project"] == "unit" and "api" in run["run"]["tags"] and "PPO" in run["run"]["tags"]
    assert run["config"]["finder"]["N"] == 8 and run["config"]["optimizers"] == ["Adam(lr=0.001)"] * 2
    # a list of optimizers: plain `lr` (the x-axis) for the first, `lr/1` for the second
    assert any(m.get("step_metric") == "lr" for m in run["metrics"])
    history = run["history"]
    assert [row["lr"] for row in history] == pytest.approx(finder.episode_lrs)
    assert all(row["lr/1"] == pytest.approx(row["lr"]) and "lr/0" not in row for row in history)
    assert [row["normalized_reward"] for row in history] == pytest.approx(finder.normalized)
    assert run["summary"]["state"] == "complete"
    # without the opt-in a Python-API finder makes no wandb run
    LRFinder(agent).find(N=3, per="episode", episodes=4, study_dir=str(tmp_path / "off"), study_name="off")
    assert not offline_runs(str(tmp_path / "off" / "trials" / "0000"))
