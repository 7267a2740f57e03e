"""strategy=ddp: a run, and a study's trials, trained by two data-parallel replicas (torch
DistributedDataParallel-style gradient averaging over gloo on 127.0.0.1)."""

from __future__ import annotations

import json

import optuna
import pytest
from optuna.trial import TrialState

from note_rl.backends import missing_framework
from tuner.common.errors import ConfigError
from tuner.config.schema import validate

from tests.tuner.conftest import NO_REEVAL, TINY, compose_cfg, run_app


@pytest.mark.parametrize("overrides, message", [
    (["strategy.replicas=3", "agent.batch=64"],
     "strategy.replicas=3: agent.batch=64 does not split evenly over the replicas; make it a multiple of 3"),
    (["strategy.comm=mpi"], "strategy.comm=mpi: choose gloo, nccl (GPUs) or null"),
    (["strategy.replicas=0"], "strategy.replicas"),
])
def test_bad_ddp_settings_are_one_line(overrides, message) -> None:
    with pytest.raises(ConfigError) as info:
        validate(compose_cfg(["agent=dqn", "strategy=ddp", *overrides]), check_env=False)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.skipif(missing_framework("tf") is not None, reason="TensorFlow is not installed")
def test_ddp_needs_the_torch_backend() -> None:
    with pytest.raises(ConfigError, match=r"^strategy=ddp: data-parallel replicas over torch.distributed needs "
                                          r"backend=torch, not backend=tf \(backend=tf's: mirrored, multi_worker, "
                                          r"parameter_server\)$"):
        validate(compose_cfg(["agent=dqn", "strategy=ddp", "backend=tf"]), check_env=False)


def test_single_run_with_two_replicas(tmp_path) -> None:
    out = run_app([*TINY, "strategy=ddp", "budget.steps=600"], cwd=str(tmp_path))
    assert "final mean return" in out.stdout
    (result_path,) = tmp_path.glob("outputs/*/*/result.json")
    result = json.loads(result_path.read_text())
    assert result["replicas"] == 2 and result["env_steps"] == 600 and result["gradient_steps"] > 0
    assert result["threads"] == 1  # the cores shared out over the replicas
    assert (result_path.parent / "model.npz").exists()


def test_study_trials_run_as_replica_groups(tmp_path) -> None:
    """Two trials, each two replicas; the second is pruned (a threshold no return reaches), which
    stops its other replica too, and the study goes on."""
    run_app(["tuner=optuna", *NO_REEVAL, "tuner.study_name=ddp", "search=none", "tuner.n_trials=2",
             "+search.values.agent.gamma='choice(0.9, 0.99)'", "tuner.sampler=grid", *TINY,
             "strategy=ddp", "budget.steps=800", "tuner.pruner=threshold", "tuner.threshold_lower=1e9",
             "tuner.report_every=1", "tuner.n_warmup_steps=0"], cwd=str(tmp_path))
    study = optuna.load_study(study_name="ddp", storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "studies" / "journal.log"))))
    assert [t.state for t in study.trials] == [TrialState.PRUNED, TrialState.PRUNED]
    for t in study.trials:
        assert t.user_attrs["env_steps"] < 800
