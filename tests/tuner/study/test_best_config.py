"""A study's ``best_config.yaml`` is a Hydra primary config with a defaults list (tuner/study/best_config.py):
re-run unchanged it composes exactly the trial's config, as the flat dump it replaced did; a group override
(``logger=...``, ``backend=...``, ``env=...``) swaps that group's defaults and keeps the study's values; a
bad group option is one line, exit 2."""

from __future__ import annotations

import json

import pytest
import yaml
from omegaconf import OmegaConf

from tests.tuner.conftest import NO_REEVAL, TINY, run_app
from tuner.cli.precheck import _precheck
from tuner.config.schema import validate


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """One finished study (one trial, gamma searched) in its own working directory."""
    cwd = tmp_path_factory.mktemp("best")
    run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=b", "search=none", "tuner.sampler=grid",
             "+search.values.agent.gamma='choice(0.99)'", "tuner.n_trials=1", "tuner.pruner=none", *TINY], cwd=str(cwd))
    return cwd, cwd / "studies" / "b"


def _composed(argv: list[str]) -> dict:
    """What the app composes for ``note-tune <argv>`` (its pre-check composes as ``@hydra.main`` does),
    validated as a run validates it, interpolations kept."""
    composed: list = []
    _precheck(argv, composed)
    assert len(composed) == 1
    cfg = OmegaConf.create(OmegaConf.to_container(composed[0], resolve=False))
    del cfg["hydra"]
    return OmegaConf.to_container(validate(cfg, check_env=False), resolve=False)


def _flat(study_dir, folder) -> str:
    """The flat ``best_config.yaml`` written before: the trial's config for a plain run (logger.p 10)."""
    cfg = OmegaConf.load(study_dir / "trials" / "0000" / "config.yaml")
    cfg.tuner, cfg.logger.p = {"name": "none"}, 10
    folder.mkdir()
    (folder / "flat_config.yaml").write_text(OmegaConf.to_yaml(cfg))
    return str(folder)


def _without(cfg: dict, *keys: str) -> dict:
    return {k: v for k, v in cfg.items() if k not in keys}


def test_best_config_has_a_defaults_list_and_composes_the_trials_config(study, tmp_path) -> None:
    _, study_dir = study
    doc = yaml.safe_load((study_dir / "best_config.yaml").read_text())
    assert doc["defaults"][-1] == "_self_"
    assert {"agent": "dqn"} in doc["defaults"] and {"env": "cartpole"} in doc["defaults"]
    assert {"logger": "none"} in doc["defaults"] and {"tuner": "none"} in doc["defaults"]
    assert doc["agent"]["gamma"] == 0.99 and doc["budget"]["steps"] == 300  # the study's values
    new = _composed(["--config-dir", str(study_dir), "--config-name", "best_config"])
    old = _composed(["--config-dir", _flat(study_dir, tmp_path / "flat"), "--config-name", "flat_config"])
    assert new == old  # exactly what the flat file composed
    assert new["agent"]["hidden_size"] == [16] and new["logger"]["p"] == 10 and new["tuner"] == {"name": "none"}


@pytest.mark.parametrize("override,group,check", [
    ("logger=console", "logger", lambda c: c["logger"]["name"] == "console"),
    ("backend=tf", "backend", lambda c: c["backend"]["name"] == "tf"),
    ("env=acrobot", "env", lambda c: c["env"]["id"] == "Acrobot-v1"),
])
def test_a_group_override_swaps_that_group_and_keeps_the_studys_values(study, override, group, check) -> None:
    _, study_dir = study
    base = ["--config-dir", str(study_dir), "--config-name", "best_config"]
    plain, swapped = _composed(base), _composed([*base, override])
    assert check(swapped) and not check(plain)
    if group == "env":  # the env's preset (hyperparams/dqn_acrobot) comes with it; the tuned values stay
        assert swapped["agent"]["gamma"] == 0.99 and swapped["agent"]["hidden_size"] == [16]
        assert swapped["budget"] == plain["budget"] and swapped["buffer"]["pool_size"] == 1000
        assert _without(swapped, "env", "agent", "buffer", "optimizer") == _without(plain, "env", "agent", "buffer",
                                                                                    "optimizer")
    else:  # nothing else changes
        assert _without(swapped, group) == _without(plain, group)
        assert swapped[group]["p" if group == "logger" else "device"] == plain[group]["p" if group == "logger"
                                                                                   else "device"]


def test_runs_of_best_config_with_group_overrides(study) -> None:
    """Real runs: unchanged (the trial's config), and with env and logger swapped."""
    cwd, study_dir = study
    base = ["--config-dir", str(study_dir), "--config-name", "best_config", "budget.steps=200"]
    for extra in ([], ["env=acrobot", "logger=console"]):
        before = set(cwd.glob("outputs/*/*/result.json"))
        run_app([*base, *extra], cwd=str(cwd))
        (result,) = set(cwd.glob("outputs/*/*/result.json")) - before
        cfg = json.loads(result.read_text())["config"]
        assert cfg["agent"]["gamma"] == 0.99 and cfg["agent"]["hidden_size"] == [16] and cfg["budget"]["steps"] == 200
        assert (cfg["env"]["id"], cfg["logger"]["name"]) == (("Acrobot-v1", "console") if extra else
                                                            ("CartPole-v1", "none"))


def test_a_bad_group_option_is_one_line(study) -> None:
    cwd, study_dir = study
    out = run_app(["--config-dir", str(study_dir), "--config-name", "best_config", "env=bogus"], cwd=str(cwd),
                  check=False)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith("error: env: no option 'bogus' (available: acrobot,")
    assert "Traceback" not in out.stdout + out.stderr


def test_without_recorded_choices_the_file_is_flat() -> None:
    """A study whose trials recorded no groups' options (made before they were): the flat dump as before."""
    from tuner.study.best_config import best_config_body

    assert best_config_body({"seed": 1, "agent": {"gamma": 0.9}}, None) == "seed: 1\nagent:\n  gamma: 0.9\n"


def test_a_config_its_defaults_cannot_give_is_written_flat(study, capsys) -> None:
    """A study whose groups the app's conf/ cannot compose (an option from the study command's own
    --config-dir, not in the re-run's search path) gets the flat file, which re-runs anywhere, with a warning."""
    from tuner.study.best_config import best_config_body

    _, study_dir = study
    plain = OmegaConf.to_container(OmegaConf.load(study_dir / "trials" / "0000" / "config.yaml"))
    plain["tuner"] = {"name": "none"}
    choices = {"backend": "torch", "optimizer": "adam", "agent": "dqn", "buffer": "uniform", "strategy": "single",
               "env": "cartpole", "adjuster": "none", "logger": "none", "tuner": "none", "search": "none",
               "hyperparams": "dqn_cartpole", "hyperparams/optimizer@optimizer": "dqn_adam"}
    assert best_config_body(plain, choices, ["agent.gamma"]).splitlines()[1] == "defaults:"
    assert not capsys.readouterr().err
    text = best_config_body(plain, dict(choices, env="my_own_env"))
    assert "defaults:" not in text and yaml.safe_load(text) == plain
    assert "warning: best_config.yaml written without a defaults list" in capsys.readouterr().err
