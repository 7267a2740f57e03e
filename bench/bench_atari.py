"""Atari env steps/s against Stable-Baselines3 at rl-zoo3's Breakout settings, in one command.

    pip install stable-baselines3 "gymnasium[atari]"   # SB3 only for this comparison
    python bench/bench_atari.py [--rounds 2] [--dqn-steps 4000] [--learning-starts 1000] [--ppo-rollouts 2]

Each round runs SB3 and then note_rl (A B A B ...), each in a fresh process with one torch thread,
and prints the pair's ratio: this machine's speed drifts by 30 % and more within minutes, so only
figures taken back to back compare.  Both sides run ALE/Breakout-v5 preprocessed the same way (4
frames per action, no sticky actions, up to 30 no-ops, 84x84 grey frames, 4 stacked, the Nature
CNN) at rl-zoo3's ``atari`` hyperparameters: note_rl from its presets
(conf/hyperparams/dqn_atari_breakout.yaml, ppo_atari_breakout.yaml, composed as ``note-tune`` does),
SB3 with ``make_atari_env`` + ``VecFrameStack``.  Only the budget is shortened: DQN collects
``--learning-starts`` random steps and then ``--dqn-steps`` steps of training (an update every 4),
PPO ``--ppo-rollouts`` rollouts of 8 envs x 128 steps (4 epochs of 256-transition mini-batches
each).  The wall time is the whole ``learn()`` / ``fit()`` call, building excluded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 0


def _ours(algo: str, steps: int, learning_starts: int) -> tuple[int, float]:
    """note_rl (torch): the preset composed as the command line does; (env steps, wall of fit)."""
    sys.path.insert(0, os.path.dirname(HERE))
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from tuner.cli.app import CONF_DIR
    from tuner.config.schema import validate
    from tuner.run.train import run_training

    overrides = [f"agent={algo}", "env=atari_breakout", f"budget.steps={steps}", "logger=none",
                 "eval.every=null", "backend=torch", "backend.threads=1", f"seed={SEED}"]
    if algo == "dqn":
        overrides.append(f"agent.learning_starts={learning_starts}")
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = validate(compose("config", overrides=overrides))
    result = run_training(OmegaConf.to_container(cfg, resolve=True), None, evaluation=False)
    return int(result["env_steps"]), float(result["wall_time_s"])


def _sb3(algo: str, steps: int, learning_starts: int) -> tuple[int, float]:
    """SB3 at rl-zoo3's hyperparams/dqn.yml / ppo.yml ``atari`` entries; (env steps, wall of learn)."""
    import ale_py
    import gymnasium as gym
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack

    gym.register_envs(ale_py)
    # v5 ids skip frames and repeat actions themselves: off, so that AtariWrapper does it as on NoFrameskip-v4
    kwargs = {"frameskip": 1, "repeat_action_probability": 0.0}
    n_envs = 1 if algo == "dqn" else 8
    env = VecFrameStack(make_atari_env("ALE/Breakout-v5", n_envs=n_envs, seed=SEED, env_kwargs=kwargs), 4)
    if algo == "dqn":
        model = DQN("CnnPolicy", env, learning_rate=1e-4, buffer_size=100_000, learning_starts=learning_starts,
                    batch_size=32, target_update_interval=1000, train_freq=4, gradient_steps=1,
                    exploration_fraction=0.1, exploration_final_eps=0.01, optimize_memory_usage=False,
                    seed=SEED, device="cpu")
    else:
        lin = lambda start: (lambda progress: progress * start)  # rl-zoo3's lin_ schedules
        model = PPO("CnnPolicy", env, n_steps=128, n_epochs=4, batch_size=256, learning_rate=lin(2.5e-4),
                    clip_range=lin(0.1), vf_coef=0.5, ent_coef=0.01, seed=SEED, device="cpu")
    started = time.perf_counter()
    model.learn(total_timesteps=steps)
    return int(model.num_timesteps), time.perf_counter() - started


def one_side(side: str, algo: str, steps: int, learning_starts: int, profile: str | None) -> dict:
    """Run one side in this process (optionally under cProfile) and return its figures."""
    import torch

    torch.set_num_threads(1)
    run = _ours if side == "ours" else _sb3
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        env_steps, wall = profiler.runcall(run, algo, steps, learning_starts)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
    else:
        env_steps, wall = run(algo, steps, learning_starts)
    return {"side": side, "algo": algo, "env_steps": env_steps, "wall_s": wall, "steps_per_s": env_steps / wall}


def _fresh(side: str, algo: str, steps: int, learning_starts: int) -> dict:
    """One side in a fresh process; its JSON line."""
    out = subprocess.run([sys.executable, __file__, "--side", side, "--algo", algo, "--steps", str(steps),
                          "--learning-starts", str(learning_starts)], capture_output=True, text=True, check=True)
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


def compare(algo: str, steps: int, learning_starts: int, rounds: int) -> None:
    """SB3 then note_rl, ``rounds`` times; each round's figures, ratio, and the median ratio."""
    ratios = []
    for r in range(rounds):
        a, b = _fresh("sb3", algo, steps, learning_starts), _fresh("ours", algo, steps, learning_starts)
        ratios.append(b["steps_per_s"] / a["steps_per_s"])
        print(f"{algo} round {r}: SB3 {a['steps_per_s']:.0f} env steps/s ({a['env_steps']} steps {a['wall_s']:.1f} s)"
              f"  note_rl {b['steps_per_s']:.0f} env steps/s ({b['env_steps']} steps {b['wall_s']:.1f} s)"
              f"  ratio {ratios[-1]:.2f}x", flush=True)
    print(f"{algo}: median note_rl / SB3 over {rounds} rounds = {statistics.median(ratios):.2f}x "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f})", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="SB3 / note_rl pairs per agent")
    parser.add_argument("--algo", choices=["dqn", "ppo", "both"], default="both")
    parser.add_argument("--dqn-steps", type=int, default=4000, help="DQN env steps after learning_starts")
    parser.add_argument("--learning-starts", type=int, default=1000, help="DQN: random steps before updates")
    parser.add_argument("--ppo-rollouts", type=int, default=2, help="PPO rollouts of 8 envs x 128 steps")
    parser.add_argument("--side", choices=["ours", "sb3"], help="run one side here (what each round calls)")
    parser.add_argument("--steps", type=int, help="with --side: the total env steps")
    parser.add_argument("--profile", action="store_true", help="with --side: print cProfile's top functions")
    opts = parser.parse_args()
    if opts.side:
        print(json.dumps(one_side(opts.side, opts.algo, opts.steps, opts.learning_starts, opts.profile)))
        return
    sys.path.insert(0, HERE)
    from _common import print_machine

    print_machine(1)
    if opts.algo in ("dqn", "both"):
        compare("dqn", opts.learning_starts + opts.dqn_steps, opts.learning_starts, opts.rounds)
    if opts.algo in ("ppo", "both"):
        compare("ppo", 8 * 128 * opts.ppo_rollouts, 0, opts.rounds)


if __name__ == "__main__":
    main()
