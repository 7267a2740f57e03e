"""``distributed_training`` over torch.distributed (gloo, two processes on 127.0.0.1): gradient
steps averaged across replicas equal one process's steps on the whole batch, replicas end with
identical weights, rank 0 alone writes checkpoints, and a killed replica is one clear error."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("torch")

from note_rl.distributed import ReplicaFailed, launch  # noqa: E402

from tests.note_rl import ddp_replicas  # noqa: E402


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


_CUDA = pytest.param("cuda", marks=pytest.mark.skipif(
    _gpus() == 0, reason="no CUDA device on this machine: the GPU variant runs where one is"))


@pytest.fixture(scope="module", params=["cpu", _CUDA])
def trained(request, tmp_path_factory) -> tuple[list[dict], str]:
    """``ddp_replicas.train`` in two replicas, on the CPU or (replica r on GPU r % GPUs) on CUDA."""
    device = request.param
    folder = str(tmp_path_factory.mktemp(f"ddp-{device}"))
    comm = "nccl" if device == "cuda" and _gpus() >= 2 else "gloo"
    return launch(ddp_replicas.train, nprocs=2, args=(folder, device), backend=comm), folder


@pytest.mark.parametrize("clip", ["None", "0.05"])
@pytest.mark.parametrize("device", ["cpu", _CUDA])
def test_two_replicas_match_one_process_on_the_global_batch(clip, device) -> None:
    """Six Adam updates: replica r of 2 steps on its 32-item half of each 64-item batch, one process
    on the whole batch; weights (also clipped by the global gradient's norm) agree to float32
    rounding, and the replicas started from rank 0's weights though they were built with other seeds.
    On a GPU machine the replicas run on CUDA (NCCL with two GPUs, gloo's CUDA path with one)."""
    comm = "nccl" if device == "cuda" and _gpus() >= 2 else "gloo"
    replicas = launch(ddp_replicas.replica_updates, nprocs=2, args=(device,), backend=comm)
    single = ddp_replicas.updates(None, 1, None if clip == "None" else 0.05)
    for rep in replicas:
        got = rep[clip]
        for a, b in zip(single["weights"], got["weights"], strict=True):
            np.testing.assert_allclose(b, a, atol=1e-5 if device == "cpu" else 1e-4)
    for a, b in zip(replicas[0][clip]["weights"], replicas[1][clip]["weights"], strict=True):
        np.testing.assert_array_equal(a, b)  # bitwise: the same averaged gradient on both
    for a, b in zip(replicas[0][clip]["target"], replicas[1][clip]["target"], strict=True):
        np.testing.assert_array_equal(a, b)  # target networks broadcast too


def test_replicas_train_to_identical_weights(trained) -> None:
    (r0, r1), _ = trained
    if r0["device"] != "cpu":  # the CUDA variant trains on the GPUs
        assert r0["dqn"]["param_device"].startswith("cuda") and r1["dqn"]["param_device"].startswith("cuda")
    assert r0["dqn"]["group"] == [0, 2] or tuple(r0["dqn"]["group"]) == (0, 2)
    assert tuple(r1["dqn"]["group"]) == (1, 2)
    assert (r0["dqn"]["episodes"], r1["dqn"]["episodes"]) == (12, 16)  # uneven budgets, no deadlock
    assert r0["dqn"]["batch_counter"] > 0
    assert r0["dqn"]["batch"] == r1["dqn"]["batch"] == 32  # the global batch is restored after the call
    # each replica collects with its own seeds: rank r resets its env from seed + 10_000 * r, so the
    # first episodes start from different states
    (seed0, obs0), (seed1, obs1) = r0["dqn"]["resets"][0], r1["dqn"]["resets"][0]
    assert (seed0, seed1) == (0, 10_000)
    assert obs0 != obs1
    assert not r0["dqn"]["active_after"]
    for key in ("dqn", "ppo"):
        for a, b in zip(r0[key]["weights"], r1[key]["weights"], strict=True):
            np.testing.assert_array_equal(a, b)
    assert r0["stopped"]["episodes"] == 4  # stop_training on rank 0 stopped rank 1 too
    assert r1["stopped"]["episodes"] < 100
    # PPO: 512 steps in 128-step rollouts, 2 epochs of 32-item local mini-batches (64 global)
    assert r0["ppo"]["batch_counter"] == r1["ppo"]["batch_counter"] == 4 * 2 * 4


def test_rank_zero_alone_writes_checkpoints(trained) -> None:
    _, folder = trained
    assert os.path.exists(os.path.join(folder, "dqn-rank0.npz"))
    assert not os.path.exists(os.path.join(folder, "dqn-rank1.npz"))


def test_a_tf_strategy_is_one_clear_error() -> None:
    """``strategy=`` is the Keras agent's argument: a PyTorch agent refuses it (keyword, or the seeds'
    positional ``(optimizer, strategy, episodes)``) in one ValueError line before joining any
    process group, instead of a TypeError from ``train()``."""
    import torch
    import torch.distributed as dist

    from note_rl.agents.torch import DQN

    class MirroredStrategy:  # stands in for tf.distribute.MirroredStrategy (TF is not imported here)
        num_replicas_in_sync = 2

    agent = DQN(4, 16, 2)
    optimizer = torch.optim.Adam(agent.param)
    for call in (lambda: agent.distributed_training(optimizer, strategy=MirroredStrategy(), episodes=1),
                 lambda: agent.distributed_training(optimizer, MirroredStrategy(), 1)):
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith("distributed_training(strategy=MirroredStrategy): a PyTorch agent trains "
                                  "data-parallel over torch.distributed"), message
        assert "torchrun" in message
    assert not dist.is_initialized()


def _files(folder: str) -> list[str]:
    return sorted(os.listdir(folder))  # dot files included: a temporary checkpoint is ``.dqn.npz.tmp-PID``


def test_replica_killed_while_rank_zero_saves_is_one_clear_error(tmp_path) -> None:
    """Rank 1 is SIGKILLed while rank 0 is writing its third checkpoint: one ReplicaFailed line,
    rank 0 finishes that file (launch() gives the survivors a grace period before SIGTERM, which
    a replica turns into SystemExit so a save in progress removes its temporary file), and the
    folder holds one complete checkpoint and no temporary file."""
    with pytest.raises(ReplicaFailed) as info:
        launch(ddp_replicas.killed, nprocs=2, args=(str(tmp_path), 1))
    message = str(info.value)
    assert "\n" not in message
    assert "replica 1 of 2 died (killed by SIGKILL)" in message or "lost contact" in message, message
    assert _files(str(tmp_path)) == ["dqn.npz", "pids"]
    from note_rl.core.checkpoint import read_npz

    meta, _ = read_npz(str(tmp_path / "dqn.npz"))
    assert meta["counters"]["total_episode"] == 3  # the save rank 1 died during is complete


def test_rank_zero_killed_mid_save_leaves_the_previous_checkpoint(tmp_path) -> None:
    """Rank 0 is SIGKILLed in the middle of its third save (data written, not yet renamed): one
    ReplicaFailed line naming it; the real name still holds the second, complete checkpoint, and
    the dead writer's temporary file is a dot file that the next save of that name (here a resumed
    run's) deletes."""
    import torch

    from note_rl.agents.torch import DQN

    with pytest.raises(ReplicaFailed) as info:
        launch(ddp_replicas.killed, nprocs=2, args=(str(tmp_path), 0))
    message = str(info.value)
    assert "\n" not in message
    assert "replica 0 of 2 died (killed by SIGKILL)" in message or "lost contact" in message, message
    left = _files(str(tmp_path))
    assert left[1:] == ["dqn.npz", "pids"] and left[0].startswith(".dqn.npz.tmp-"), left
    resumed = DQN(4, 32, 2, env="CartPole-v1", seed=0)
    resumed.restore(str(tmp_path / "dqn.npz"), torch.optim.Adam(resumed.param, lr=1e-3))
    assert resumed.total_episode == 2
    resumed.save(str(tmp_path / "dqn.npz"))
    assert _files(str(tmp_path)) == ["dqn.npz", "pids"]


def test_torchrun_runs_the_example(tmp_path) -> None:
    """examples/ddp_dqn.py as docs/core/distributed.md runs it, under torchrun: both replicas end with the same
    weights and one checkpoint is written."""
    import re
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    out = subprocess.run([torchrun, "--standalone", "--nproc-per-node", "2", os.path.join(root, "examples", "ddp_dqn.py"),
                          "--episodes", "12", "--path", str(tmp_path / "model.npz")],
                         capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-3000:]
    sums = {m.group(1): m.group(2) for m in re.finditer(r"rank (\d): 12 episodes, .*?weights sum (-?\d+\.\d{6})", out.stdout)}
    assert set(sums) == {"0", "1"} and sums["0"] == sums["1"], out.stdout
    assert os.listdir(tmp_path) == ["model.npz"]


def test_default_backend_is_gloo_off_the_gpu() -> None:
    import torch

    from note_rl.backends.torch_ddp import default_backend

    assert default_backend([torch.zeros(1)], {"WORLD_SIZE": "2"}) == "gloo"
    assert default_backend([], {}) == "gloo"


def test_the_launching_process_can_be_rank_zero() -> None:
    """``launch(..., rank0=callable)`` (the tuner's strategy=ddp): the calling process joins the group as
    rank 0 and runs the callable, which need not be picklable, and leaves the group afterwards; a
    failed replica's ReplicaFailed says which and how, for the caller to word its own line."""
    import torch.distributed as dist

    seen = []

    def here() -> tuple[int, int]:
        seen.append((dist.get_rank(), dist.get_world_size()))
        return seen[-1]

    assert launch(ddp_replicas.world_of, nprocs=3, rank0=here) == [(0, 3), (1, 3), (2, 3)]
    assert not dist.is_initialized()
    with pytest.raises(ReplicaFailed) as info:
        launch(ddp_replicas.world_of, nprocs=2, args=(1,), rank0=lambda: None)
    failed = info.value
    assert (failed.rank, failed.world, failed.error) == (1, 2, "ValueError: replica 1 gives up"), str(failed)
    assert str(failed) == "distributed replica 1 of 2 failed: ValueError: replica 1 gives up"
    assert not dist.is_initialized()
