"""strategy=mirrored | multi_worker | parameter_server (backend=tf): tf.distribute strategies from
the tuner's config, as single runs (the cluster ones: one process per machine, here on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from note_rl.backends import missing_framework
from tests import cluster_procs
from tuner.common.errors import ConfigError
from tuner.config.schema import validate

from tests.tuner.conftest import REPO, TINY, compose_cfg, run_app

pytestmark = pytest.mark.skipif(missing_framework("tf") is not None, reason="TensorFlow is not installed")
TF_TINY = [*TINY, "backend=tf"]


@pytest.mark.parametrize("overrides, message", [
    (["strategy=mirrored", "backend=torch"],
     "strategy=mirrored: tf.distribute.MirroredStrategy needs backend=tf, not backend=torch "
     "(backend=torch's: ddp)"),
    (["strategy=multi_worker", "backend=tf"], "strategy=multi_worker: TF_CONFIG names no worker job"),
    (["strategy=parameter_server", "backend=tf"], "strategy=parameter_server: TF_CONFIG names no worker and no ps job"),
    (["strategy=parameter_server", "backend=tf", "tuner=optuna"],
     "strategy=parameter_server: a cluster strategy trains single runs"),
])
def test_bad_tf_strategy_settings_are_one_line(overrides, message, monkeypatch) -> None:
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ConfigError) as info:
        validate(compose_cfg(["agent=dqn", *overrides]), check_env=False)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


@pytest.mark.parametrize("device", ["auto", "cpu"])  # cpu: backend.device places the replicas (no GPU here)
def test_mirrored_run_on_two_logical_cpus(tmp_path, device) -> None:
    run_app([*TF_TINY, "strategy=mirrored", "strategy.logical_cpus=2", f"backend.device={device}"], cwd=str(tmp_path))
    (path,) = tmp_path.glob("outputs/*/*/result.json")
    result = json.loads(path.read_text())
    assert result["replicas"] == 2 and result["gradient_steps"] > 0 and result["env_steps"] == 300


def _free_ports(n: int) -> list[str]:
    from note_rl.distributed import free_port

    return [f"127.0.0.1:{free_port()}" for _ in range(n)]


def _app(args: list[str], cwd: str, tf_config: dict, log: str) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, PYTHONPATH=REPO, TF_CONFIG=json.dumps(tf_config), HYDRA_FULL_ERROR="0")
    return cluster_procs.start([sys.executable, "-m", "tuner", *args], log, cwd=cwd, env=env), log


def test_multi_worker_run_on_two_processes(tmp_path) -> None:
    """Two `note-tune strategy=multi_worker` processes (each its own working dir and TF_CONFIG task)
    train one DQN together: both end with the same weights.  With 3-step returns (CartPole's DQN
    preset) the workers store different numbers of windows; they still start training at the same
    env step (``learning_starts`` counts env steps), so their linearly decayed lrs agree step by step."""
    cluster = {"worker": _free_ports(2)}
    dirs = [tmp_path / f"worker{i}" for i in range(2)]
    procs = []
    for i, d in enumerate(dirs):
        d.mkdir()
        procs.append(_app([*TF_TINY, "strategy=multi_worker", "agent.num_steps=3"], str(d),
                          {"cluster": cluster, "task": {"type": "worker", "index": i}}, str(tmp_path / f"worker{i}.log")))
    try:
        cluster_procs.wait(procs, [])
    finally:
        cluster_procs.stop(procs)
    results = [json.loads(next(d.glob("outputs/*/*/result.json")).read_text()) for d in dirs]
    assert [r["replicas"] for r in results] == [2, 2]
    models = [np.load(r["model"]) for r in results]
    keys = [k for k in models[0].files if k.startswith("param")] or models[0].files
    for k in keys:
        np.testing.assert_array_equal(models[0][k], models[1][k])


def test_parameter_server_run(tmp_path) -> None:
    """`note-tune strategy=parameter_server` as the coordinator of 1 parameter server and 2 workers
    (`python -m note_rl.ps_server`, each with its TF_CONFIG task)."""
    cluster = {"ps": _free_ports(1), "worker": _free_ports(2), "chief": _free_ports(1)}
    env = dict(os.environ, PYTHONPATH=REPO)
    servers = []
    for job in ("ps", "worker"):
        for i in range(len(cluster[job])):
            log = str(tmp_path / f"{job}{i}.log")
            task_env = dict(env, TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": job, "index": i}}))
            servers.append((cluster_procs.start([sys.executable, "-m", "note_rl.ps_server"], log, cwd=REPO,
                                                env=task_env), log))
    coordinator: list = []
    try:
        cluster_procs.wait_listening(cluster["ps"] + cluster["worker"], servers)
        coordinator = [_app([*TF_TINY, "strategy=parameter_server"], str(tmp_path),
                            {"cluster": cluster, "task": {"type": "chief", "index": 0}}, str(tmp_path / "chief.log"))]
        cluster_procs.wait(coordinator, servers)
    finally:
        cluster_procs.stop(coordinator + servers)
    result = json.loads(next(tmp_path.glob("outputs/*/*/result.json")).read_text())
    assert result["gradient_steps"] > 0 and result["env_steps"] == 300
