"""DQN trained by data-parallel replicas over torch.distributed (gloo on CPU, NCCL on GPU).

Every process runs this script; each collects CartPole episodes with its own seeds, and every
gradient step averages the replicas' gradients, so all end with the same weights.  ``batch`` is
the global batch (each replica samples ``batch / N``); rank 0 alone writes the checkpoint::

    torchrun --standalone --nproc-per-node 2 examples/ddp_dqn.py --episodes 400

meets its criterion (a mean return of 200 over 10 episodes) in about 330 episodes per replica, 90 s
here with both cores busy.

The same without torchrun, from Python: ``note_rl.distributed.launch(fn, nprocs=2)`` runs
``fn(rank)`` in each replica (see ``main_launch`` below: ``python examples/ddp_dqn.py --launch``).
"""

from __future__ import annotations

import argparse
import os

import numpy as np
import torch

from note_rl.agents.torch import DQN
from note_rl.policy import EpsGreedyQPolicy


def train(rank: int = 0, episodes: int = 400, path: str = "ddp_dqn.npz") -> dict:
    torch.set_num_threads(1)  # one thread per replica: the replicas share the cores
    # on a GPU machine, replica r on GPU r (mod the GPU count; with fewer GPUs than replicas they share
    # one, and distributed_training talks over gloo, since NCCL wants one GPU per replica)
    local = int(os.environ.get("LOCAL_RANK", rank))
    device = f"cuda:{local % torch.cuda.device_count()}" if torch.cuda.is_available() else "cpu"
    model = DQN(4, 128, 2, env="CartPole-v1", seed=0, device=device)
    model.set(policy=EpsGreedyQPolicy(0.01), pool_size=10000, batch=64, update_steps=10,
              trial_count=10, criterion=200)
    model.path = path
    optimizer = torch.optim.Adam(model.param, lr=1e-3)
    model.distributed_training(optimizer, episodes=episodes, p=0)
    mean = float(np.mean(model.reward_list[-10:]))
    digest = float(sum(p.detach().double().sum() for p in model.param))
    print(f"rank {model.rank if model.rank else os.environ.get('RANK', rank)}: {model.total_episode} episodes, "
          f"{model.batch_counter} gradient steps, mean return of the last 10: {mean:.1f}, weights sum {digest:.6f}", flush=True)
    return {"episodes": model.total_episode, "mean": mean, "weights_sum": digest}


def main_launch(episodes: int, path: str) -> list[dict]:
    from note_rl.distributed import launch

    return launch(train, nprocs=2, args=(episodes, path))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--path", default="ddp_dqn.npz")
    parser.add_argument("--launch", action="store_true", help="start the replicas from Python, not torchrun")
    args = parser.parse_args()
    if args.launch:
        main_launch(args.episodes, args.path)
    else:
        train(episodes=args.episodes, path=args.path)
