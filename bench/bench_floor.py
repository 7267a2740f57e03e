"""The machine's floor for the CartPole benches: what a minimal plain-PyTorch implementation of
the same updates, plus bare gymnasium env stepping, can reach here, with no framework around them.

    python bench/bench_floor.py [--threads 1] [--reps 2000]

It times, with nothing from ``note_rl``:

- one double-DQN gradient step as in ``bench_dqn.py`` (256x256 ReLU net, batch 64, Huber loss,
  online and target forward passes, fused Adam);
- one PPO gradient step as in ``bench_ppo.py`` (64x64 tanh actor and critic, batch 256, clipped
  surrogate + value loss, gradient-norm clipping, fused Adam);
- one ``CartPole-v1`` step (random actions; ``gymnasium.make``'s wrappers included), alone and in a
  ``SyncVectorEnv`` of 8.

From these it prints the ceiling of env steps/s at each bench's schedule: DQN does 128 gradient
steps per 256 env steps (24,576 in 50,000), PPO 20 per rollout of 8 x 32 = 256 env steps.  The
ceiling leaves out acting (the policy's forward pass), storage and sampling, so a real
implementation stays below it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import print_machine, set_threads  # noqa: E402

DQN_GRAD_PER_ENV = 128 / 256
PPO_GRAD_PER_ENV = 20 / 256


def per_call(fn: Callable[[], object], reps: int, warmup: int = 100) -> float:
    """Mean seconds per call after a warm-up."""
    for _ in range(warmup):
        fn()
    started = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - started) / reps


def dqn_step() -> Callable[[], float]:
    import torch

    def mlp() -> torch.nn.Module:
        return torch.nn.Sequential(torch.nn.Linear(4, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                   torch.nn.ReLU(), torch.nn.Linear(256, 2))

    q, target = mlp(), mlp()
    opt = torch.optim.Adam(q.parameters(), lr=2.3e-3, fused=True)
    s, s2 = torch.randn(64, 4), torch.randn(64, 4)
    a, r, d = torch.randint(0, 2, (64, 1)), torch.randn(64), torch.zeros(64)

    def step() -> float:
        q_sa = q(s).gather(1, a).squeeze(1)
        with torch.no_grad():
            best = q(s2).argmax(1, keepdim=True)
            y = r + 0.99 * target(s2).gather(1, best).squeeze(1) * (1 - d)
        loss = torch.nn.functional.huber_loss(q_sa, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return float(loss.detach())

    return step


def ppo_step() -> Callable[[], float]:
    import torch

    def mlp(out: int) -> torch.nn.Module:
        return torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64),
                                   torch.nn.Tanh(), torch.nn.Linear(64, out))

    actor, critic = mlp(2), mlp(1)
    params = list(actor.parameters()) + list(critic.parameters())
    opt = torch.optim.Adam(params, lr=1e-3, eps=1e-5, fused=True)
    s, a = torch.randn(256, 4), torch.randint(0, 2, (256, 1))
    logp_old, adv, ret = torch.randn(256) * 0.1 - 0.7, torch.randn(256), torch.randn(256)

    def step() -> float:
        logp = torch.log_softmax(actor(s), -1).gather(1, a).squeeze(1)
        ratio = torch.exp(logp - logp_old)
        policy_loss = -torch.min(ratio * adv, torch.clamp(ratio, 0.8, 1.2) * adv).mean()
        loss = policy_loss + 0.5 * ((ret - critic(s)[:, 0]) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 0.5, foreach=True)
        opt.step()
        return float(loss.detach())

    return step


def env_step(n_envs: int) -> Callable[[], object]:
    """One step of ``n_envs`` CartPole-v1 envs with random actions (auto-reset)."""
    import gymnasium as gym
    import numpy as np

    rng = np.random.default_rng(0)
    if n_envs == 1:
        env = gym.make("CartPole-v1")
        env.reset(seed=0)

        def single() -> object:
            _, _, terminated, truncated, _ = env.step(int(rng.integers(2)))
            if terminated or truncated:
                env.reset()
            return terminated

        return single
    vec = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(n_envs)])
    vec.reset(seed=0)
    return lambda: vec.step(rng.integers(0, 2, n_envs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    set_threads("torch", args.threads)
    print_machine(args.threads)
    t_dqn = per_call(dqn_step(), args.reps)
    t_ppo = per_call(ppo_step(), args.reps)
    t_env = per_call(env_step(1), args.reps * 5)
    t_vec = per_call(env_step(8), args.reps) / 8
    print(f"DQN gradient step {t_dqn * 1e3:.3f} ms, PPO gradient step {t_ppo * 1e3:.3f} ms")
    print(f"CartPole step {t_env * 1e6:.1f} us alone, {t_vec * 1e6:.1f} us per env in SyncVectorEnv(8)")
    dqn = 1.0 / (DQN_GRAD_PER_ENV * t_dqn + t_env)
    ppo = 1.0 / (PPO_GRAD_PER_ENV * t_ppo + t_vec)
    print(f"ceiling: DQN {dqn:,.0f} env steps/s (updates alone {1 / (DQN_GRAD_PER_ENV * t_dqn):,.0f}); "
          f"PPO {ppo:,.0f} env steps/s (updates alone {1 / (PPO_GRAD_PER_ENV * t_ppo):,.0f})")


if __name__ == "__main__":
    main()
