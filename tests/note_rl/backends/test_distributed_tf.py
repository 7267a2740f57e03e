"""``distributed_training`` with ``tf.distribute.MirroredStrategy`` over two logical CPU devices (run
in a fresh process, see mirrored_child.py) and with ``MultiWorkerMirroredStrategy`` over two worker
processes on 127.0.0.1 (multiworker_child.py): an update on a global batch split over two replicas
equals the one-device update on the whole batch."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests import cluster_procs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> dict:
    folder = str(tmp_path_factory.mktemp("finders"))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "note_rl", "mirrored_child.py"), folder],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("clip", ["None", "0.05"])
def test_two_replicas_match_one_device(result, clip) -> None:
    """Six Adam updates of a DQN on the same 64-item batches (with and without gradient clipping,
    which needs the global gradient): weights, losses and the TD errors prioritized replay receives
    (gathered in batch order) agree to float32 rounding."""
    assert result["replicas"] == 2
    single, mirrored = result[f"single_{clip}"], result[f"mirrored_{clip}"]
    for a, b in zip(single["weights"], mirrored["weights"], strict=True):
        np.testing.assert_allclose(np.array(b), np.array(a), atol=1e-5)
    np.testing.assert_allclose(mirrored["losses"], single["losses"], rtol=1e-5)
    np.testing.assert_allclose(mirrored["td"], single["td"], atol=1e-5)
    assert len(single["td"]) == 64


def test_seed_snippet_trains_with_prioritized_replay(result) -> None:
    trained = result["trained"]
    assert trained["episodes"] == 10 and trained["batch_counter"] > 0 and trained["td_written"]


def test_finders_train_candidates_in_the_strategy(result) -> None:
    """The seeds' ``lr_finder.find(..., strategy=strategy)`` and ``opt_finder.find(..., strategy=strategy)``:
    each candidate's fresh process rebuilds the MirroredStrategy (two logical CPUs) and trains in it."""
    assert result["finders"]["lr"] == [["COMPLETE", 2]]
    assert result["finders"]["opt"] == [["COMPLETE", 2], ["COMPLETE", 2]]


@functools.cache
def _tf_gpus() -> int:
    """GPUs TensorFlow sees, asked in a fresh process (TF is not imported into the test process)."""
    code = "import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    return int(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else 0


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_seed_examples_and_restore_in_scope(result, device, tmp_path) -> None:
    """The seeds' three MirroredStrategy examples (DQN, PPO with two optimizers, pool network) run as
    the seed writes them with ``note_rl.examples.keras`` for ``Note_rl.examples.keras`` (20 or 8
    episodes, 2 processes: see mirrored_child.seed_examples), so does Note_rl 001's positional
    ``distributed_training(GLOBAL_BATCH_SIZE, optimizer, strategy, episodes)``; a checkpoint restored
    inside strategy.scope() has the saved weights and goes on training.  CPU: two logical CPUs;
    GPU: the seed's own ``MirroredStrategy()`` on every GPU (skipped, with the reason, without one)."""
    if device == "cpu":
        got = result["seed_examples"]
        assert got["replicas"] == 2
    else:
        if not _tf_gpus():
            pytest.skip("no GPU visible to TensorFlow (tf.config.list_physical_devices('GPU') is empty): "
                        "the GPU variant runs where one is")
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "note_rl", "mirrored_child.py"),
                               str(tmp_path), "gpu"], capture_output=True, text=True, timeout=600, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr[-3000:]
        got = json.loads(proc.stdout.strip().splitlines()[-1])["seed_examples"]
        assert got["replicas"] == _tf_gpus() and all("GPU" in d for d in got["devices"]), got["devices"]
    for key, episodes in (("dqn", 20), ("ppo", 12), ("pool", 8), ("positional", 20)):
        assert got[key][0] == episodes and got[key][1] > 0, (key, got[key])
    assert got["positional"][2] == 64 * got["replicas"]  # GLOBAL_BATCH_SIZE became the global batch
    assert got["restored"] == [True, 10, True]
    assert got["shims"] == {
        "DQN": ["note_rl.agents.keras.DQN", True], "PPO": ["note_rl.agents.keras.PPO", True],
        "DDPG_HER": ["note_rl.agents.keras.DDPG", False],  # a subclass: a goal env by default
        "MADDPG": ["note_rl.agents.keras.MADDPG", True], "pool_network.DQN": ["note_rl.agents.keras.DQN", True],
        "pool_network.DDPG_HER": ["note_rl.agents.keras.DDPG", False],
        "pool_network.DQN_pr": ["note_rl.agents.keras.DQN", True]}


def test_misuse_is_one_clear_error(result) -> None:
    errors = result["errors"]
    assert "created outside MirroredStrategy.scope()" in errors["outside"]
    assert "batch=63 does not split evenly over 2 replicas" in errors["odd_batch"]
    assert "pass a tf.distribute strategy" in errors["no_strategy"]
    assert errors["batch_kept"] == 64


@pytest.fixture(scope="module")
def workers(tmp_path_factory) -> tuple[list[dict], str]:
    """Two MultiWorkerMirroredStrategy workers on 127.0.0.1 ports, one process each."""
    from note_rl.distributed import free_port

    folder = str(tmp_path_factory.mktemp("multiworker"))
    ports = [str(free_port()), str(free_port())]
    child = os.path.join(ROOT, "tests", "note_rl", "multiworker_child.py")
    procs = [(cluster_procs.start([sys.executable, child, str(i), *ports, os.path.join(folder, f"out{i}.json")],
                                  os.path.join(folder, f"worker{i}.log"), cwd=ROOT), os.path.join(folder, f"worker{i}.log"))
             for i in range(2)]
    try:
        cluster_procs.wait(procs, [])
    finally:
        cluster_procs.stop(procs)
    return [json.load(open(os.path.join(folder, f"out{i}.json"))) for i in range(2)], folder


def test_two_workers_match_one_device(workers) -> None:
    """Each worker steps on its 32-item half of six 64-item batches (built with another seed, the
    weights come from worker 0): both end with the one-device weights on the whole batches, and each
    gets the TD errors of its own 32 items."""
    (w0, w1), _ = workers
    assert w0["replicas"] == 2
    for single, a, b in zip(w0["single"], w0["worker"], w1["worker"], strict=True):
        np.testing.assert_allclose(np.array(a), np.array(single), atol=1e-5)
        np.testing.assert_array_equal(np.array(a), np.array(b))
    assert w0["td_len"] == w1["td_len"] == 32


def test_workers_train_dqn_to_identical_weights(workers) -> None:
    """The seed's MultiWorker DQN with num_episodes and prioritized replay; worker 1 runs 4 more
    episodes (worker 0 shadows its steps), both end with the same weights, and only worker 0
    writes checkpoints."""
    (w0, w1), folder = workers
    t0, t1 = w0["trained"], w1["trained"]
    assert (t0["episodes"], t1["episodes"]) == (12, 16)
    assert t0["batch_counter"] > 0 and t1["batch_counter"] >= t0["batch_counter"]
    assert t0["batch"] == t1["batch"] == 64 and t0["td_written"] and t1["td_written"]
    for a, b in zip(t0["weights"], t1["weights"], strict=True):
        np.testing.assert_array_equal(np.array(a), np.array(b))
    assert os.path.exists(os.path.join(folder, "ckpt-worker0.npz"))
    assert not os.path.exists(os.path.join(folder, "ckpt-worker1.npz"))


def test_killed_worker_is_one_clear_error(tmp_path) -> None:
    """MultiWorkerMirroredStrategy: worker 1 is SIGKILLed mid-run while worker 0 saves every
    episode.  Worker 0 does not hang in the collective: within seconds it raises one ReplicaLost
    line naming worker 1, and its checkpoint is complete (no temporary file left)."""
    import time

    from note_rl.core.checkpoint import read_npz
    from note_rl.distributed import free_port

    ports = [str(free_port()), str(free_port())]
    child = os.path.join(ROOT, "tests", "note_rl", "multiworker_child.py")
    procs = [cluster_procs.start([sys.executable, child, str(i), *ports, str(tmp_path / "out.json"), "killed"],
                                 str(tmp_path / f"worker{i}.log"), cwd=ROOT) for i in range(2)]
    try:
        deadline = time.monotonic() + 240
        while procs[0].poll() is None and time.monotonic() < deadline:
            time.sleep(0.3)
        log = cluster_procs.tail(str(tmp_path / "worker0.log"))
        assert procs[0].poll() == 0, f"worker 0 still running or failed:\n{log}"
        assert procs[1].wait(timeout=10) == -9  # killed, as planned
    finally:
        cluster_procs.stop([(p, "") for p in procs])
    got = json.loads((tmp_path / "out.json").read_text())
    message = got["error"]
    assert message is not None and "\n" not in message, message
    assert message.startswith("distributed_training: worker 0 of 2 lost contact with worker 1 during "), message
    assert got["after_s"] < 60  # since its last checkpoint: a clear error, not a hang until a timeout
    files = sorted(os.listdir(tmp_path))
    assert not [f for f in files if ".tmp-" in f], files
    meta, _ = read_npz(str(tmp_path / "ckpt.npz"))
    assert meta["counters"]["total_episode"] >= 1


def test_parameter_server_strategy_trains(tmp_path) -> None:
    """1 parameter server + 2 workers (tf.distribute.Server processes) and this test's coordinator
    process: the agent's variables live on the parameter server, each gradient step is scheduled on a
    worker, and the seeds' DQN with prioritized replay trains for its num_episodes."""
    from note_rl.distributed import free_port

    cluster = {"ps": [f"127.0.0.1:{free_port()}"], "worker": [f"127.0.0.1:{free_port()}" for _ in range(2)],
               "chief": [f"127.0.0.1:{free_port()}"]}
    servers = [(cluster_procs.start([sys.executable, "-m", "note_rl.ps_server", "--cluster", json.dumps(cluster),
                                     "--job", job, "--index", str(i)], str(tmp_path / f"{job}{i}.log"), cwd=ROOT),
                str(tmp_path / f"{job}{i}.log"))
               for job in ("ps", "worker") for i in range(len(cluster[job]))]
    out = tmp_path / "out.json"
    coordinator: list = []
    try:
        cluster_procs.wait_listening(cluster["ps"] + cluster["worker"], servers)
        coordinator = [(cluster_procs.start([sys.executable, os.path.join(ROOT, "tests", "note_rl", "ps_child.py"),
                                             json.dumps(cluster), str(out)], str(tmp_path / "chief.log"), cwd=ROOT),
                        str(tmp_path / "chief.log"))]
        cluster_procs.wait(coordinator, servers)
    finally:
        cluster_procs.stop(coordinator + servers)
    result = json.loads(out.read_text())
    assert result["devices"] == ["/job:ps/replica:0/task:0/device:CPU:0"]
    assert result["episodes"] == 10 and result["batch_counter"] > 0
    assert result["changed"] > 0 and result["td_written"]
