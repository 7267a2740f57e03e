"""A corpus of bad command-line values: each is one line naming its key (exit 2 from the app), checked
in-process for the bulk and through real subprocesses for a few, against an existing study that must
stay byte-for-byte unchanged."""

from __future__ import annotations

import functools

import pytest
from omegaconf import OmegaConf

from tests.tuner.conftest import NO_REEVAL, TINY, compose_cfg, run_app
from tuner.schema import CHOICES, NON_NEGATIVE, POSITIVE, UNIT, ConfigError, validate
from tuner.settings import tuner_settings

AGENTS = {"dqn": [], "ppo": [], "td3": ["env=pendulum"], "ddpg": ["env=pendulum"], "sac": ["env=pendulum"]}
_NOWHERE = object()


@functools.lru_cache(maxsize=None)
def _defaults(agent: str):
    return compose_cfg([f"agent={agent}", *AGENTS[agent]])


def _base(key: str) -> list[str] | None:
    """Overrides of the first agent whose config has ``key``."""
    for agent, extra in AGENTS.items():
        if OmegaConf.select(_defaults(agent), key, default=_NOWHERE) is not _NOWHERE:
            return [f"agent={agent}", *extra]
    return None


def _cases() -> list[tuple[str, str]]:
    cases = [(k, v) for k in POSITIVE for v in ("0", "-1")]
    cases += [(k, "-1") for k in NON_NEGATIVE]
    cases += [(k, v) for k, (low, high, _) in UNIT.items() for v in (str(low - 0.5), str(high + 0.5))]
    cases += [(k, "bogus") for k in CHOICES]
    cases += [(k, v) for k in ("optimizer.lr", "agent.gamma", "agent.max_grad_norm", "agent.lr", "eval.every",
                               "agent.tau", "agent.lam", "agent.clip", "agent.entropy_coef", "agent.vf_coef",
                               "optimizer.weight_decay", "optimizer.eps", "agent.target_policy_noise")
              for v in ("nan", "inf", "-inf")]
    cases += [("agent.hidden_size", "[1000000,1000000]"), ("buffer.pool_size", "100000000000"),
              ("agent.hidden_size", "[0]"), ("agent.hidden_size", "[]"), ("seed", "${seed}"),
              ("agent.gamma", "abc"), ("budget.steps", "1.5e3x"), ("agent.batch", "[1,2]")]
    return cases


CASES = [(k, v) for k, v in _cases() if _base(k) is not None]


@pytest.mark.parametrize("key,value", CASES, ids=[f"{k}={v}" for k, v in CASES])
def test_bad_value_is_one_line_naming_its_key(key, value) -> None:
    with pytest.raises(ConfigError) as info:
        validate(compose_cfg([*_base(key), f"{key}={value}"]), check_env=False)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{key.split('[')[0]}"), message


TUNER = [("percentile", "150"), ("percentile", "-1"), ("n_warmup_steps", "-1"), ("timeout", "-1"),
         ("timeout", "0"), ("max_failures", "-1"), ("n_startup_trials", "-1"), ("sampler_seed", "-1"),
         ("n_trials", "0"), ("n_jobs", "0"), ("n_seeds", "0"), ("report_every", "0"),
         ("max_total_trials", "0"), ("trial_timeout", "-5"), ("trial_memory_mb", "0"), ("sampler", "bogus"),
         ("pruner", "bogus"), ("direction", "sideways"), ("aggregation", "max"), ("study_name", "../x"),
         ("study_name", "''"), ("max_cost_ratio", "0.5"), ("reevaluate.top_k", "-1"), ("reevaluate.episodes", "0"),
         ("reevaluate.seeds", "0"), ("reevaluate.timeout", "-1"), ("reevaluate.n_jobs", "0"),
         ("storage", "mysql://u@h/db"), ("storage", "sqlite://"), ("n_trials", "many")]


@pytest.mark.parametrize("key,value", TUNER, ids=[f"{k}={v}" for k, v in TUNER])
def test_bad_study_setting_is_one_line_naming_its_key(key, value) -> None:
    with pytest.raises(ConfigError) as info:
        tuner_settings(validate(compose_cfg(["tuner=optuna", f"tuner.{key}={value}"]), check_env=False).tuner)
    assert str(info.value).startswith(f"tuner.{key}") and "\n" not in str(info.value), str(info.value)


def test_corpus_size() -> None:
    assert len(CASES) + len(TUNER) >= 150


def test_bad_commands_leave_an_existing_study_unchanged(tmp_path) -> None:
    common = ["tuner=optuna", NO_REEVAL, "tuner.study_name=keep", "search=none", "tuner.pruner=none",
              "+search.values.agent.gamma='choice(0.9, 0.99)'", *TINY]
    run_app(common + ["tuner.n_trials=1"], cwd=str(tmp_path))
    study_dir = tmp_path / "studies" / "keep"
    before = {p.name: p.read_bytes() for p in study_dir.iterdir() if p.is_file()}
    bad = [(["optimizer.lr=nan"], "error: optimizer.lr: must be a finite number"),
           (["tuner.percentile=150"], "error: tuner.percentile: must be in [0, 100]"),
           (["tuner.direction=minimize"], "error: tuner.direction: study 'keep' was created to maximize"),
           (["+search.values.agent.tau='interval(0.1, 0.9)'", "search.values.agent.gamma='interval(0.9, 0.99)'"],
            "error: search.agent.gamma: study 'keep' searched it as choice(0.9, 0.99)"),
           (["seed=${seed}"], "error: seed: ")]
    for extra, message in bad:
        out = run_app(common + ["tuner.n_trials=2", *extra], cwd=str(tmp_path), check=False)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith(message), (extra, out.stderr)
        assert "Traceback" not in out.stdout + out.stderr
        assert {p.name: p.read_bytes() for p in study_dir.iterdir() if p.is_file()} == before


def test_bad_config_dirs_storages_and_study_dirs_are_one_line(tmp_path) -> None:
    broken = tmp_path / "broken"
    (broken / "agent").mkdir(parents=True)
    (broken / "agent" / "mine.yaml").write_text("name: mine\nhidden_size: [1, 2\n")
    shadowed = tmp_path / "shadowed"
    shadowed.mkdir()
    (shadowed / "config.yaml").write_text("seed: 5\n")
    (tmp_path / "afile").write_text("x")
    cases = [(["--config-dir", str(broken)], f"error: --config-dir: {broken}/agent/mine.yaml line 3: expected ','"),
             (["--config-dir", str(shadowed)], f"error: --config-dir: {shadowed}/config.yaml would be ignored"),
             (["tuner=optuna", f"tuner.storage='sqlite:///{tmp_path}/afile/x.db'"],
              "error: tuner.storage: cannot create the SQLite file's directory"),
             (["tuner=optuna", f"tuner.study_dir={tmp_path}/afile/study"],
              f"error: tuner.study_dir: cannot create {tmp_path}/afile/study"),
             (["report", "study_name=x", f"storage={tmp_path / 'afile'}"],
              f"error: storage: {tmp_path / 'afile'} is not an Optuna journal file"),
             (["tuner=parallel_finder", "tuner.candidates=[['agent.nope=1']]"],
              "error: tuner.candidates: candidate agent.nope=1: agent.nope: no such config key"),
             (["tuner=parallel_finder", "tuner.candidates=[['optimizer=bogus']]"],
              "error: tuner.candidates: candidate optimizer=bogus: optimizer: no option 'bogus'")]
    for args, message in cases:
        out = run_app([*args, *([] if args[0] == "report" else TINY)], cwd=str(tmp_path), check=False)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and lines[0].startswith(message), (args, out.stderr)
    assert (tmp_path / "afile").read_text() == "x"  # not "repaired"
    # a SQLite file in a directory that does not exist yet: the directory is made, as for a journal
    run_app(["tuner=optuna", NO_REEVAL, f"tuner.storage='sqlite:///{tmp_path}/new/dir/t.db'", "tuner.n_trials=1",
             "search=none", *TINY], cwd=str(tmp_path))
    assert (tmp_path / "new" / "dir" / "t.db").exists()
