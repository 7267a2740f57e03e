"""PPO or DQN on CartPole-v1 against Stable-Baselines3 in one command: SB3 and note_rl alternate
(A B A B ...), each run in a fresh process, and each pair's ratio is printed.

    pip install stable-baselines3      # not a dependency of this project; only for this comparison
    python bench/vs_sb3.py ppo|dqn [--rounds 3] [--seed 0] [--seeds 1] [--plain-adam] [--jit] [--threads 1]

This machine's speed drifts by 30 % and more within minutes, so only a ratio of two runs taken back
to back is a figure; the median over rounds is the one to quote.  Both sides run rl-zoo3's settings
(``bench_sb3.py``, ``bench_ppo.py``, ``bench_dqn.py``) with one torch thread and the same seed in
every round (the seeded runs learn identically round to round; only the timing varies).
``--seeds k`` runs seeds ``seed .. seed + k - 1`` on each side of a round and compares the medians
over them: steps to solve vary by 2x and more from seed to seed, so a wall-time-to-solve ratio from
one seed says more about that seed than about the libraries.
``--sb3-flush-denormal`` lets SB3 flush subnormal floats to zero too, as note_rl's ``train()`` does
(not SB3's default; it shows how much of a ratio that setting is).
``--n-envs k`` (DQN) runs both with ``k`` vectorised env copies (SB3's ``train_freq`` set to
``256 // k`` vector steps, the same 256 env steps as ours).  ``--vanilla`` runs our DQN with SB3's target (max over the target network, not double DQN).
``--plain-adam`` gives note_rl a ``torch.optim.Adam(params, lr)`` as a user writes it (the default
is the benches' ``fused=True``); ``--jit`` trains with ``jit_compile=True`` (compile time included
in the wall time).  SAC and TD3 on Pendulum-v1 alternate the same way in ``bench_continuous.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run_json(args: list[str]) -> dict:
    """One bench in a fresh process; its ``--json`` summary line."""
    out = subprocess.run([sys.executable, *args, "--json"], capture_output=True, text=True, check=True)
    return json.loads([line for line in out.stdout.splitlines() if line.startswith("{")][-1])


def _side(result: dict) -> str:
    """One side of a round: its runs (steps, wall, solved) and, for several seeds, the medians."""
    runs = result["runs"]
    each = ", ".join(f"{r['env_steps']} steps {r['wall_s']:.2f} s{'' if r['solved'] else ' unsolved'}" for r in runs)
    if len(runs) == 1:
        return f"{runs[0]['steps_per_s']:.0f} env steps/s ({each})"
    summary = result["summary"]
    return (f"median {summary['median_steps_per_s']:.0f} env steps/s, median wall to solve "
            f"{summary['median_wall_to_solve_s']:.2f} s, solved {summary['solved']} ({each})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("algo", choices=["ppo", "dqn"])
    parser.add_argument("--rounds", type=int, default=3, help="SB3 / note_rl pairs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=1, help="seeds per side and round (medians compared)")
    parser.add_argument("--sb3-flush-denormal", action="store_true",
                        help="torch.set_flush_denormal(True) in SB3's process too (not its default)")
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
    seed = ["--seeds", str(opts.seeds), "--first-seed", str(opts.seed)]
    envs = ["--n-envs", str(opts.n_envs)] if opts.algo == "dqn" else []
    sb3 = [os.path.join(HERE, "bench_sb3.py"), opts.algo, *seed, *envs,
           *(["--flush-denormal"] if opts.sb3_flush_denormal else [])]
    ours = [os.path.join(HERE, f"bench_{opts.algo}.py"), *seed, "--threads", str(opts.threads),
            *(["--plain-adam"] if opts.plain_adam else []), *(["--jit"] if opts.jit else []),
            *(["--vanilla"] if opts.vanilla and opts.algo == "dqn" else []), *envs]
    speed, wall = [], []
    for r in range(opts.rounds):
        a, b = run_json(sb3), run_json(ours)
        sa, sb = a["summary"], b["summary"]
        speed.append(sb["median_steps_per_s"] / sa["median_steps_per_s"])
        both_solved = math.isfinite(sa["median_wall_to_solve_s"]) and math.isfinite(sb["median_wall_to_solve_s"])
        if both_solved:
            wall.append(sb["median_wall_to_solve_s"] / sa["median_wall_to_solve_s"])
        print(f"round {r}: SB3 {_side(a)}  note_rl {_side(b)}  speed ratio {speed[-1]:.2f}x"
              + (f"  wall ratio {wall[-1]:.2f}" if both_solved else ""), flush=True)
    line = (f"median over {opts.rounds} rounds: env steps/s note_rl / SB3 = {statistics.median(speed):.2f}x "
            f"(min {min(speed):.2f}, max {max(speed):.2f})")
    if wall:
        line += f"; wall to solve note_rl / SB3 = {statistics.median(wall):.2f} ({len(wall)} rounds both solved)"
    print(line)


if __name__ == "__main__":
    main()
