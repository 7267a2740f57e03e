"""Functions run in every replica by test_distributed_torch.py (spawned processes import them by name)."""

from __future__ import annotations

import os
import signal

import numpy as np


def batches(n: int, size: int) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(0)
    return [[rng.normal(size=(size, 4)).astype(np.float32), rng.integers(0, 2, size).astype(np.int64),
             rng.normal(size=(size, 4)).astype(np.float32), rng.normal(size=size).astype(np.float32),
             (rng.random(size) < 0.1).astype(np.float32)] for _ in range(n)]


def updates(rank: int | None, world: int, max_grad_norm: float | None, device: str = "cpu") -> dict:
    """Six Adam steps of a DQN on the same 64-item batches: one process on the whole batch
    (``rank=None``) or replica ``rank`` of ``world`` on its slice of each batch."""
    import contextlib

    import torch

    from note_rl.agents.torch import DQN
    from note_rl.backends.torch_ddp import replica_group
    from note_rl.core.updater import Updater

    torch.set_num_threads(1)
    if device == "cuda" and rank is not None:  # one GPU per replica where there are several
        device = f"cuda:{rank % torch.cuda.device_count()}"
        torch.cuda.set_device(device)
    # replicas are built with different seeds: the broadcast from rank 0 must make them equal
    agent = DQN(4, 16, 2, seed=0 if not rank else 5, max_grad_norm=max_grad_norm, device=device)
    optimizer = torch.optim.Adam(agent.param, lr=1e-2)
    group = replica_group(agent) if rank is not None else contextlib.nullcontext()
    losses = []
    with group:
        updater = Updater(agent, optimizer, jit=False)
        for k, b in enumerate(batches(6, 64)):
            if rank is not None:
                size = 64 // world
                b = [a[rank * size:(rank + 1) * size] for a in b]
            losses.append(updater(k + 1, b, None).loss)
    return {"weights": [p.detach().cpu().numpy().copy() for p in agent.param], "losses": losses,
            "target": [p.detach().cpu().numpy().copy() for p in agent.target_q_net.parameters()]}


def replica_updates(rank: int, device: str = "cpu") -> dict:
    return {str(clip): updates(rank, 2, clip, device) for clip in (None, 0.05)}


def train(rank: int, folder: str, device: str = "cpu") -> dict:
    """DQN (replay, uneven episode budgets: rank 1 runs more episodes) then PPO (rollouts) with
    ``distributed_training``; rank 0 alone writes checkpoints.  ``device="cuda"``: replica r on GPU
    r % GPUs."""
    import torch

    from note_rl.agents.torch import DQN, PPO
    from note_rl.backends.torch_ddp import active
    from note_rl.policy import EpsGreedyQPolicy

    torch.set_num_threads(1)
    if device == "cuda":
        device = f"cuda:{rank % torch.cuda.device_count()}"
        torch.cuda.set_device(device)
    out: dict = {"device": device}
    resets: list = []
    dqn = DQN(4, 32, 2, env=_Resets(resets), seed=0, device=device)
    dqn.set(policy=EpsGreedyQPolicy(0.1), pool_size=2000, batch=32, learning_starts=32, update_steps=50)
    dqn.path = os.path.join(folder, f"dqn-rank{rank}.npz")
    seen = []
    dqn.callbacks = [_Probe(seen)]
    dqn.distributed_training(torch.optim.Adam(dqn.param, lr=1e-3), episodes=12 + 4 * rank, p=0)
    out["dqn"] = {"weights": [p.detach().cpu().numpy().copy() for p in dqn.param], "batch": dqn.batch,
                  "param_device": str(dqn.param[0].device),
                  "batch_counter": dqn.batch_counter, "episodes": dqn.total_episode,
                  "resets": resets[:2], "group": seen[0], "active_after": active() is not None}
    ppo = PPO(4, 32, 2, env="CartPole-v1", seed=0, n_steps=128, n_epochs=2, device=device)
    ppo.set(batch=64)
    ppo.distributed_training(torch.optim.Adam(ppo.backend.flatten(ppo.param), lr=3e-4), steps=512, p=0)
    stopper = DQN(4, 32, 2, env="CartPole-v1", seed=0, device=device)
    stopper.set(policy=EpsGreedyQPolicy(0.1), pool_size=2000, batch=32, learning_starts=32)
    stopper.callbacks = [_StopAt(3)] if rank == 0 else []  # rank 1 alone would run 500 episodes
    stopper.distributed_training(torch.optim.Adam(stopper.param, lr=1e-3), episodes=500, p=0)
    out["stopped"] = {"episodes": stopper.total_episode}
    out["ppo"] = {"weights": [p.detach().cpu().numpy().copy() for p in ppo.backend.flatten(ppo.param)],
                  "batch_counter": ppo.batch_counter}
    return out


def _Resets(record: list):
    """CartPole-v1 that appends ``(seed, first observation)`` of every ``reset()`` to ``record``."""
    import gymnasium as gym

    class Resets(gym.Wrapper):
        def reset(self, *, seed=None, options=None):
            obs, info = self.env.reset(seed=seed, options=options)
            record.append((seed, np.asarray(obs).tolist()))
            return obs, info

    return Resets(gym.make("CartPole-v1"))


class _Probe:
    """Records the replica group's rank and world size seen during training."""

    def __init__(self, seen: list) -> None:
        self.seen = seen

    def on_episode_end(self, episode: int, logs: dict) -> None:
        from note_rl.backends.torch_ddp import active

        group = active()
        if not self.seen:
            self.seen.append((group.rank, group.world))


class _StopAt:
    def __init__(self, at: int) -> None:
        self.at = at
        self.agent = None

    def set_model(self, agent) -> None:
        self.agent = agent

    def on_episode_end(self, episode: int, logs: dict) -> None:
        if episode == self.at:
            self.agent.stop_training = True


def _cut_third_save(folder: str, victim: int) -> None:
    """Make this process's third checkpoint write SIGKILL replica ``victim`` after the data is in
    the temporary file and before the rename: ``victim`` 1 dies while rank 0 is mid-save (rank 0 then
    takes one more second to finish the file), ``victim`` 0 is rank 0 itself killed mid-save."""
    import time

    original, calls = np.savez, []

    def savez(file, *args, **kwargs):
        original(file, *args, **kwargs)
        calls.append(1)
        if len(calls) == 3:
            with open(os.path.join(folder, f"rank{victim}.pid")) as f:
                os.kill(int(f.read()), signal.SIGKILL)
            time.sleep(1.0)

    np.savez = savez  # this replica process only: checkpoint.write_npz calls np.savez


def killed(rank: int, folder: str, victim: int) -> None:
    """Rank 0 saves a full checkpoint (weights and replay buffer) every episode; during its third
    save replica ``victim`` is SIGKILLed (see ``_cut_third_save``)."""
    import torch

    from note_rl.agents.torch import DQN
    from note_rl.policy import EpsGreedyQPolicy

    torch.set_num_threads(1)
    pids = os.path.join(folder, "pids")
    os.makedirs(pids, exist_ok=True)
    with open(os.path.join(pids, f"rank{rank}.pid"), "w") as f:
        f.write(str(os.getpid()))
    if rank == 0:
        _cut_third_save(pids, victim)
    dqn = DQN(4, 32, 2, env="CartPole-v1", seed=0)
    dqn.set(policy=EpsGreedyQPolicy(0.1), pool_size=2000, batch=32, learning_starts=32)
    dqn.path = os.path.join(folder, "dqn.npz")
    dqn.distributed_training(torch.optim.Adam(dqn.param, lr=1e-3), episodes=200, p=0)


def world_of(rank: int, fail_on: int | None = None) -> tuple[int, int]:
    """This replica's (rank, world size) as its process group sees it; replica ``fail_on`` raises."""
    import torch.distributed as dist

    if rank == fail_on:
        raise ValueError(f"replica {rank} gives up")
    return dist.get_rank(), dist.get_world_size()
