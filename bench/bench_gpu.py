"""Env steps/s of PPO, DQN, SAC and TD3 on one device: note_rl eager, note_rl with a compiled update,
and Stable-Baselines3, each run in a fresh process, one after another.  The compiled sides:
``compiled`` (``jit_compile=True``: ``torch.compile`` of each loss), ``graphs``
(``jit_compile="reduce-overhead"``: the loss's compiled graphs under CUDA graphs), ``stepgraph``
(``jit_compile="cudagraph"``: the whole step, optimizer included, captured as one CUDA graph, as LeanRL's
CudaGraphModule) and ``cstepgraph`` (``"compile+cudagraph"``: the compiled loss inside that graph, as
LeanRL's fastest runs).

    pip install stable-baselines3      # not a dependency of this project; only for this comparison
    python bench/bench_gpu.py --device cuda [--algos ppo,dqn,sac,td3]
                              [--sides eager,compiled,graphs,stepgraph,cstepgraph,sb3] [--json out.json]

Settings: rl-zoo3's CartPole-v1 PPO and DQN (as ``bench_ppo.py`` / ``bench_dqn.py``) and Pendulum-v1
SAC and TD3 (as ``bench_continuous.py``), except that SAC and TD3 start learning after 100 steps
(TD3's preset waits 10,000 random steps, which would time the env alone) and that every run has a
fixed step budget (no stop at the criterion), so each side does the same work.  One torch thread on
every side.  ``steps/s`` divides the env steps by the training call's wall time minus the first
steps' compile time (printed beside it), so it is the steady speed; the compile cost is a one-off
per process.  Only ratios of runs in the same command are figures: the card and the host's load
move absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

STEPS = {"ppo": 20_480, "dqn": 12_000, "sac": 2_000, "td3": 2_000}
SIDES = ("eager", "compiled", "graphs", "stepgraph", "cstepgraph", "sb3")
JIT = {"eager": False, "compiled": True, "graphs": "reduce-overhead", "stepgraph": "cudagraph",
       "cstepgraph": "compile+cudagraph"}


def ours(algo: str, device: str, steps: int, jit: bool | str) -> dict:
    import torch

    from note_rl.agents.torch import DQN, PPO, SAC, TD3
    from note_rl.noise import GaussianWhiteNoiseProcess
    from note_rl.policy import LinearEpsGreedyPolicy

    if algo == "ppo":
        agent = PPO(4, [64, 64], 2, clip=0.2, entropy_coef=0.0, gamma=0.98, lam=0.8, n_steps=32, n_envs=8,
                    n_epochs=20, max_grad_norm=0.5, linear_decay=True, activation="tanh", ortho_init=True,
                    seed=0, device=device)
        agent.set(batch=256, seed=0)
        optimizers = torch.optim.Adam([p for group in agent.param for p in group], lr=1e-3, eps=1e-5)
    elif algo == "dqn":
        agent = DQN(4, [256, 256], 2, loss="huber", seed=0, device=device)
        agent.set(policy=LinearEpsGreedyPolicy(1.0, 0.04, decay_steps=8000), pool_size=100_000, batch=64,
                  train_freq=256, num_updates=128, update_steps=10, learning_starts=1000, seed=0)
        optimizers = torch.optim.Adam(agent.param, lr=2.3e-3)
    elif algo == "sac":
        agent = SAC(hidden_size=[256, 256], env="Pendulum-v1", seed=0, device=device)
        agent.set(pool_size=1_000_000, batch=256, learning_starts=100, seed=0)
        optimizers = [torch.optim.Adam(p, lr=1e-3) for p in agent.param]
    else:
        agent = TD3(hidden_size=[400, 300], gamma=0.98, env="Pendulum-v1", seed=0, device=device)
        agent.set(noise=GaussianWhiteNoiseProcess(sigma=0.1, size=agent.action_dim), pool_size=200_000,
                  batch=256, learning_starts=100, seed=0)
        optimizers = [torch.optim.Adam(p, lr=1e-3) for p in agent.param]
    started = time.perf_counter()
    agent.fit(optimizers, None, steps=steps, p=0, jit_compile=jit)
    wall = time.perf_counter() - started
    first = agent.param[0] if isinstance(agent.param[0], (list, tuple)) else agent.param
    return {"wall_s": wall, "compile_s": agent.compile_time or 0.0, "env_steps": agent.step_counter,
            "grad_steps": agent.batch_counter, "param_device": str(first[0].device)}


def sb3(algo: str, device: str, steps: int) -> dict:
    import numpy as np
    import torch
    from stable_baselines3 import DQN, PPO, SAC, TD3
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.noise import NormalActionNoise

    if algo == "ppo":
        lin = lambda start: (lambda progress: progress * start)  # noqa: E731 - rl-zoo's lin_ schedules
        model = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=8, seed=0), n_steps=32, batch_size=256,
                    gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0, learning_rate=lin(1e-3),
                    clip_range=lin(0.2), seed=0, device=device, policy_kwargs=dict(activation_fn=torch.nn.Tanh))
    elif algo == "dqn":
        model = DQN("MlpPolicy", "CartPole-v1", learning_rate=2.3e-3, batch_size=64, buffer_size=100_000,
                    learning_starts=1000, gamma=0.99, target_update_interval=10, train_freq=256, gradient_steps=128,
                    exploration_fraction=0.16, exploration_final_eps=0.04, policy_kwargs=dict(net_arch=[256, 256]),
                    seed=0, device=device)
    elif algo == "sac":
        model = SAC("MlpPolicy", "Pendulum-v1", learning_rate=1e-3, learning_starts=100, seed=0, device=device)
    else:
        model = TD3("MlpPolicy", "Pendulum-v1", learning_rate=1e-3, gamma=0.98, buffer_size=200_000,
                    learning_starts=100, action_noise=NormalActionNoise(np.zeros(1), 0.1 * np.ones(1)),
                    policy_kwargs=dict(net_arch=[400, 300]), seed=0, device=device)
    started = time.perf_counter()
    model.learn(total_timesteps=steps)
    wall = time.perf_counter() - started
    return {"wall_s": wall, "compile_s": 0.0, "env_steps": int(model.num_timesteps),
            "param_device": str(next(model.policy.parameters()).device)}


def one(algo: str, side: str, device: str, steps: int) -> dict:
    import torch

    torch.set_num_threads(1)
    out = sb3(algo, device, steps) if side == "sb3" else ours(algo, device, steps, JIT[side])
    steady = out["wall_s"] - out["compile_s"]
    out.update(algo=algo, side=side, device=device, steps_per_s=out["env_steps"] / steady if steady > 0 else None)
    return out


def run_one(algo: str, side: str, device: str, steps: int, timeout: float) -> dict:
    """One run in a fresh process (its JSON line), or why it gave none."""
    cmd = [sys.executable, os.path.abspath(__file__), "--one", algo, side, "--device", device, "--steps", str(steps)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"algo": algo, "side": side, "device": device, "error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"algo": algo, "side": side, "device": device, "error": f"exit {proc.returncode}: {tail[:300]}"}
    return json.loads(lines[-1])


def _line(r: dict, eager: dict | None) -> str:
    if "error" in r:
        return f"{r['algo']:4s} {r['side']:10s} {r['device']:6s} error: {r['error']}"
    ratio = ""
    if eager and eager.get("steps_per_s") and r.get("steps_per_s") and r["side"] != "eager":
        ratio = f"  {r['steps_per_s'] / eager['steps_per_s']:.2f}x eager"
    return (f"{r['algo']:4s} {r['side']:10s} {r['device']:6s} {r['steps_per_s']:9.1f} env steps/s "
            f"({r['env_steps']} steps, {r['wall_s']:.1f} s, compile {r['compile_s']:.1f} s, "
            f"weights on {r['param_device']}){ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--algos", default="ppo,sac,dqn,td3")
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--steps", type=int, default=None, help="env steps per run (default: per algorithm)")
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds per run")
    parser.add_argument("--json", default=None, help="also write every run's figures to this file")
    parser.add_argument("--one", nargs=2, metavar=("ALGO", "SIDE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        algo, side = args.one
        print(json.dumps(one(algo, side, args.device, args.steps or STEPS[algo])), flush=True)
        return
    rows = []
    for algo in args.algos.split(","):
        eager = None
        for side in args.sides.split(","):
            r = run_one(algo, side, args.device, args.steps or STEPS[algo], args.timeout)
            eager = r if side == "eager" else eager
            rows.append(r)
            print(_line(r, eager), flush=True)
            if args.json:  # after every run: a command cut short keeps what it measured
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
