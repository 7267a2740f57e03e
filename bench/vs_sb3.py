"""PPO or DQN on CartPole-v1 against Stable-Baselines3 in one command: SB3 and note_rl alternate
(A B A B ...), each run in a fresh process, and each pair's ratio is printed.

    pip install stable-baselines3      # not a dependency of this project; only for this comparison
    python bench/vs_sb3.py ppo|dqn [--rounds 3] [--seed 0] [--plain-adam] [--jit] [--threads 1]

This machine's speed drifts by 30 % and more within minutes, so only a ratio of two runs taken back
to back is a figure; the median over rounds is the one to quote.  Both sides run rl-zoo3's settings
(``bench_sb3.py``, ``bench_ppo.py``, ``bench_dqn.py``) with one torch thread and the same seed in
every round (the seeded runs learn identically round to round; only the timing varies).
``--n-envs k`` (DQN) runs both with ``k`` vectorised env copies (SB3's ``train_freq`` set to
``256 // k`` vector steps, the same 256 env steps as ours).  ``--vanilla`` runs our DQN with SB3's target (max over the target network, not double DQN).
``--plain-adam`` gives note_rl a ``torch.optim.Adam(params, lr)`` as a user writes it (the default
is the benches' ``fused=True``); ``--jit`` trains with ``jit_compile=True`` (compile time included
in the wall time).  SAC and TD3 on Pendulum-v1 alternate the same way in ``bench_continuous.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run_json(args: list[str]) -> dict:
    """One bench in a fresh process; its ``--json`` summary line."""
    out = subprocess.run([sys.executable, *args, "--json"], capture_output=True, text=True, check=True)
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algo", choices=["ppo", "dqn"])
    parser.add_argument("--rounds", type=int, default=3, help="SB3 / note_rl pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plain-adam", action="store_true")
    parser.add_argument("--jit", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--vanilla", action="store_true",
                        help="DQN: max over the target network, as SB3's DQN (default: our double DQN)")
    parser.add_argument("--n-envs", type=int, default=1, help="DQN: vectorised env copies on both sides")
    opts = parser.parse_args()
    sys.path.insert(0, HERE)
    from _common import print_machine

    print_machine(opts.threads)
    seed = ["--seeds", "1", "--first-seed", str(opts.seed)]
    envs = ["--n-envs", str(opts.n_envs)] if opts.algo == "dqn" else []
    sb3 = [os.path.join(HERE, "bench_sb3.py"), opts.algo, *seed, *envs]
    ours = [os.path.join(HERE, f"bench_{opts.algo}.py"), *seed, "--threads", str(opts.threads),
            *(["--plain-adam"] if opts.plain_adam else []), *(["--jit"] if opts.jit else []),
            *(["--vanilla"] if opts.vanilla and opts.algo == "dqn" else []), *envs]
    speed, wall = [], []
    for r in range(opts.rounds):
        a, b = run_json(sb3), run_json(ours)
        ra, rb = a["runs"][0], b["runs"][0]
        speed.append(rb["steps_per_s"] / ra["steps_per_s"])
        both_solved = ra["solved"] and rb["solved"]
        if both_solved:
            wall.append(rb["wall_s"] / ra["wall_s"])
        print(f"round {r}: SB3 {ra['steps_per_s']:.0f} env steps/s ({ra['env_steps']} steps, {ra['wall_s']:.2f} s, "
              f"solved {ra['solved']})  note_rl {rb['steps_per_s']:.0f} ({rb['env_steps']} steps, "
              f"{rb['wall_s']:.2f} s, solved {rb['solved']})  speed ratio {speed[-1]:.2f}x"
              + (f"  wall ratio {wall[-1]:.2f}" if both_solved else ""), flush=True)
    line = (f"median over {opts.rounds} rounds: env steps/s note_rl / SB3 = {statistics.median(speed):.2f}x "
            f"(min {min(speed):.2f}, max {max(speed):.2f})")
    if wall:
        line += f"; wall to solve note_rl / SB3 = {statistics.median(wall):.2f} ({len(wall)} rounds both solved)"
    print(line)


if __name__ == "__main__":
    main()
