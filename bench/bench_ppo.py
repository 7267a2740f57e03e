"""PPO on CartPole-v1 at rl-zoo3's tuned settings: env steps/s and steps / wall time to solve.

    python bench/bench_ppo.py [--backend torch|tf] [--seeds 3]

rl-zoo3 settings: 8 envs, n_steps 32, batch 256, 20 epochs, gamma 0.98, GAE lambda 0.8, lr 1e-3
and clip 0.2 both decayed linearly over the 100,000-step budget, no entropy bonus, SB3's defaults
for the rest (tanh 64x64 networks, orthogonal init, max_grad_norm 0.5, Adam eps 1e-5).  "Solved"
means the mean return of the last 20 episodes reached 475 (training stops there).  Wall time is the
whole ``train()`` call, including any compilation.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CRITERION, TRIAL_COUNT, adam, agents_module, parse_args, report, result_of, train  # noqa: E402


def make_agent(backend: str, seed: int, criterion: float | None = CRITERION) -> object:
    agent = agents_module(backend).PPO(4, [64, 64], 2, clip=0.2, entropy_coef=0.0, gamma=0.98, lam=0.8,
                                       n_steps=32, n_envs=8, n_epochs=20, max_grad_norm=0.5,
                                       linear_decay=True, activation="tanh", ortho_init=True, seed=seed)
    agent.set(batch=256, trial_count=TRIAL_COUNT, criterion=criterion, seed=seed)
    return agent


def run(backend: str, seed: int, steps: int = 100_000, criterion: float | None = CRITERION,
        **train_kwargs: object) -> object:
    """One training run; ``criterion=None`` runs the whole step budget."""
    agent = make_agent(backend, seed, criterion)
    optimizer = adam(backend, agent.param, 1e-3, eps=1e-5)
    wall = train(agent, backend, optimizer, steps=steps, **train_kwargs)
    return result_of(agent, seed, wall, grad_steps=agent.batch_counter)


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    results = [run(args.backend, seed) for seed in args.seed_list]
    report(f"PPO CartPole-v1 ({args.backend})", results, args.json)


if __name__ == "__main__":
    main()
