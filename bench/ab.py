"""Run one bench alternately on two checkouts (A B A B ...) and print the same-run ratio.

    python bench/ab.py --baseline /path/to/old/checkout --rounds 4 bench/bench_ppo.py --seeds 1

The machine's speed drifts by 30 % and more, so only figures taken back to back compare: each round
runs the bench once on the baseline checkout (``A``) and once on this one (``B``), each in a fresh
process with that checkout first on ``PYTHONPATH``, and reads the bench's ``--json`` summary.  The
ratio is ``B / A`` of ``median_steps_per_s`` per round; the median over rounds is printed last.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(checkout: str, script: str, args: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=checkout + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, os.path.join(checkout, script), *args, "--json"], cwd=checkout,
                         env=env, capture_output=True, text=True, check=True)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the other checkout (A)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--key", default="median_steps_per_s", help="summary figure to compare")
    parser.add_argument("script", help="bench script, relative to each checkout")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the bench script")
    opts = parser.parse_args()
    ratios = []
    for r in range(opts.rounds):
        sa = run_once(os.path.abspath(opts.baseline), opts.script, opts.args)["summary"]
        sb = run_once(HERE, opts.script, opts.args)["summary"]
        a, b = sa[opts.key], sb[opts.key]
        ratios.append(b / a)
        print(f"round {r}: A {a:.1f}  B {b:.1f}  B/A {b / a:.3f}  (steps to solve A {sa['median_steps_to_solve']}, "
              f"B {sb['median_steps_to_solve']}; solved A {sa['solved']}, B {sb['solved']})", flush=True)
    print(f"median B/A over {opts.rounds} rounds: {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
