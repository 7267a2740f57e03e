"""DQN on CartPole-v1 at rl-zoo3's tuned settings: env steps/s and steps / wall time to solve.

    python bench/bench_dqn.py [--backend torch|tf] [--seeds 3]

"Solved" means the mean return of the last 20 episodes reached 475 (training stops there); the
budget is 50,000 env steps.  Wall time is the whole ``train()`` call, including any compilation.

``--vanilla`` and ``--max-grad-norm 10`` bring the agent closer to SB3's DQN (max over the target
network instead of double DQN; gradient-norm clipping, read by the training loop from the agent's
``max_grad_norm`` attribute).  The issue's setting is the default: double DQN, no clipping.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CRITERION, TRIAL_COUNT, adam, agents_module, parse_args, report, result_of, train  # noqa: E402


def run(backend: str, seed: int, steps: int = 50_000, criterion: float | None = CRITERION,
        learning_starts: int = 1000, double: bool = True, max_grad_norm: float | None = None,
        n_envs: int = 1, **train_kwargs: object) -> object:
    """One training run; ``criterion=None`` runs the whole step budget."""
    from note_rl.policy import LinearEpsGreedyPolicy

    agent = agents_module(backend).DQN(4, [256, 256], 2, loss="huber", double=double, seed=seed)
    agent.max_grad_norm = max_grad_norm
    agent.set(policy=LinearEpsGreedyPolicy(1.0, 0.04, decay_steps=8000), pool_size=100_000, batch=64,
              train_freq=256, num_updates=128, update_steps=10, learning_starts=learning_starts,
              trial_count=TRIAL_COUNT, criterion=criterion, seed=seed, n_envs=n_envs)
    optimizer = adam(backend, agent.param, 2.3e-3)
    wall = train(agent, backend, optimizer, steps=steps, **train_kwargs)
    return result_of(agent, seed, wall, grad_steps=agent.batch_counter)


def _extra_args(parser: object) -> None:
    parser.add_argument("--vanilla", action="store_true", help="max over the target net (not double DQN)")
    parser.add_argument("--max-grad-norm", type=float, default=None)
    parser.add_argument("--n-envs", type=int, default=1, help="vectorised env copies (set(n_envs=...))")


def main() -> None:
    args = parse_args(__doc__.splitlines()[0], extra=_extra_args)
    results = [run(args.backend, seed, double=not args.vanilla, max_grad_norm=args.max_grad_norm, n_envs=args.n_envs)
               for seed in args.seed_list]
    variant = ("vanilla" if args.vanilla else "double") + f", max_grad_norm={args.max_grad_norm}, n_envs={args.n_envs}"
    report(f"DQN CartPole-v1 ({args.backend}, {variant})", results, args.json)


if __name__ == "__main__":
    main()
