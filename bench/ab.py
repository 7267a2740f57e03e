"""Run one bench alternately on two checkouts (A B A B ...) and print the same-run ratio.

    python bench/ab.py --baseline /path/to/old/checkout --rounds 4 bench/bench_ppo.py --seeds 1

The machine's speed drifts by 30 % and more, so only figures taken back to back compare: each round
runs the bench once on the baseline checkout (``A``) and once on this one (``B``), each in a fresh
process with that checkout first on ``PYTHONPATH``, and reads the bench's ``--json`` summary.  The
ratio is ``B / A`` of ``median_steps_per_s`` per round; the median over rounds is printed last.

``--cpu`` also prints each run's process CPU time (user + system of the bench process) and the ratio
``A / B`` of those: on a machine other work keeps busy, a run's wall time says as much about that work
as about the code, its CPU time far less (compare it only between runs of the same number of env
steps, e.g. the same seeds of a bench that did not stop early, or did so at the same step).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(checkout: str, script: str, args: list[str]) -> dict:
    """The bench's ``--json`` summary, plus ``cpu_s``: the CPU time its process took."""
    env = dict(os.environ, PYTHONPATH=checkout + os.pathsep + os.environ.get("PYTHONPATH", ""))
    before = _children_cpu_s()
    out = subprocess.run([sys.executable, os.path.join(checkout, script), *args, "--json"], cwd=checkout,
                         env=env, capture_output=True, text=True, check=True)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    return {**json.loads(lines[-1]), "cpu_s": _children_cpu_s() - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="the other checkout (A)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--key", default="median_steps_per_s", help="summary figure to compare")
    parser.add_argument("--cpu", action="store_true", help="also compare the runs' process CPU time")
    parser.add_argument("script", help="bench script, relative to each checkout")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the bench script")
    opts = parser.parse_args()
    ratios, cpu_ratios = [], []
    for r in range(opts.rounds):
        ra, rb = run_once(os.path.abspath(opts.baseline), opts.script, opts.args), run_once(HERE, opts.script, opts.args)
        sa, sb = ra["summary"], rb["summary"]
        a, b = sa[opts.key], sb[opts.key]
        ratios.append(b / a)
        cpu_ratios.append(ra["cpu_s"] / rb["cpu_s"])
        cpu = f"  CPU s A {ra['cpu_s']:.1f}  B {rb['cpu_s']:.1f}  A/B {cpu_ratios[-1]:.3f}" if opts.cpu else ""
        print(f"round {r}: A {a:.1f}  B {b:.1f}  B/A {b / a:.3f}  (steps to solve A {sa['median_steps_to_solve']}, "
              f"B {sb['median_steps_to_solve']}; solved A {sa['solved']}, B {sb['solved']}){cpu}", flush=True)
    print(f"median B/A over {opts.rounds} rounds: {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
    if opts.cpu:
        print(f"median CPU-time A/B over {opts.rounds} rounds: {statistics.median(cpu_ratios):.3f} "
              f"(min {min(cpu_ratios):.3f}, max {max(cpu_ratios):.3f})")


if __name__ == "__main__":
    main()
