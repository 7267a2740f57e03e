"""A user's own agent class, named with ``agent._target_`` in a user config dir: trained by
``note-tune`` and tuned in a study (its own fields searched), from a package outside the project."""

import json
import os
import shutil

import optuna
import pytest

from tests.tuner.conftest import NO_REEVAL, REPO, run_app

EXAMPLE = os.path.join(REPO, "examples", "custom_agent")
FAST = ["budget.steps=400", "agent.learning_starts=64", "agent.batch=16", "logger=none"]


@pytest.fixture()
def user_project(tmp_path):
    """The example copied into a temp folder: a package (``pkg/my_agents``) and a config dir."""
    shutil.copytree(os.path.join(EXAMPLE, "my_agents"), tmp_path / "pkg" / "my_agents")
    shutil.copytree(os.path.join(EXAMPLE, "conf"), tmp_path / "conf")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "pkg"), REPO, os.environ.get("PYTHONPATH", "")])}
    return tmp_path, env


@pytest.mark.slow
def test_custom_agent_trains_and_is_tuned(user_project) -> None:
    root, env = user_project
    args = ["--config-dir", str(root / "conf"), "agent=dueling", *FAST]
    run_app([*args, "agent.hidden=24"], cwd=str(root), env=env)
    (result_path,) = root.glob("outputs/*/*/result.json")
    result = json.loads(result_path.read_text())
    assert result["config"]["agent"]["_target_"] == "my_agents.DuelingDQN"
    assert result["config"]["agent"]["hidden"] == 24 and result["env_steps"] == 400
    assert result["gradient_steps"] > 0 and result["final_mean_return"] is not None

    run_app([*args, "tuner=optuna", *NO_REEVAL, "tuner.n_trials=3", "tuner.sampler=random"], cwd=str(root), env=env)
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(root / "studies" / "journal.log")))
    study = optuna.load_study(study_name="dueling_CartPole-v1", storage=storage)
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3
    for t in study.trials:
        assert {"agent.hidden", "agent.tau", "optimizer.lr"} == set(t.params)
        trained = json.loads((root / "studies" / "dueling_CartPole-v1" / "trials" / f"{t.number:04d}" /
                              "result.json").read_text())["config"]["agent"]
        assert trained["hidden"] == t.params["agent.hidden"] and trained["tau"] == t.params["agent.tau"]


@pytest.mark.parametrize("override,first_line", [
    ("agent.hiddn=3", "error: agent.hiddn: no such config key"),
    ("agent.hidden=abc", "error: agent.hidden: Value 'abc' of type 'str' could not be converted to Integer"),
    ("agent._target_=my_agents.Nope", "error: agent._target_: cannot import 'my_agents.Nope'"),
    ("+agent.policy.final_epss=0.1", "error: agent.policy.final_epss: not an argument of note_rl.policy.LinearEpsGreedyPolicy"),
    ("backend=tf", "error: agent._target_: my_agents.DuelingDQN is not a note_rl.keras.RL subclass"),
])
def test_custom_agent_config_errors_are_one_line(user_project, override, first_line) -> None:
    root, env = user_project
    out = run_app(["--config-dir", str(root / "conf"), "agent=dueling", *FAST, override], cwd=str(root),
                  env=env, check=False)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith(first_line), out.stderr[-2000:]
    assert not list(root.glob("outputs/*/*/result.json"))


def test_the_next_commands_of_a_custom_agent_run_work_as_printed(tmp_path) -> None:
    """The printed next: lines of a run of one's own agent once dropped PYTHONPATH, --config-dir and
    trust_code=true, so each of them failed when pasted; each now runs as printed (eval here)."""
    import shlex
    import shutil
    import subprocess
    import sys

    example = os.path.join(REPO, "examples", "custom_agent")
    shutil.copytree(example, tmp_path / "custom_agent")
    root = tmp_path / "custom_agent"
    out = run_app(["--config-dir", "conf", "agent=dueling", "budget.steps=400", "logger=none", "hydra.run.dir=run"],
                  cwd=str(root), env={"PYTHONPATH": "."})
    lines = out.stdout.split("next:", 1)[1].splitlines()
    evaluate = next(line for line in lines if "eval model=" in line).strip().split("   ")[0]
    tune = next(line for line in lines if "tuner=optuna" in line).strip().split("   ")[0]
    assert evaluate == "PYTHONPATH=. note-tune eval model=run/model.npz trust_code=true"
    assert tune.startswith("PYTHONPATH=. note-tune --config-dir conf agent=dueling ")
    words = shlex.split(evaluate)
    ran = subprocess.run([sys.executable, "-m", "tuner", *words[2:], "episodes=1"], cwd=str(root), capture_output=True,
                         text=True, timeout=300, env=dict(os.environ, PYTHONPATH=os.pathsep.join([".", REPO])))
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "mean" in ran.stdout
