"""Which estimate of a run's cost follows its measured wall time: the hidden layers' multiply-adds
(``tuner.config.search_cost.trial_cost``) or the time model on env steps, gradient updates and those
multiply-adds (``trial_seconds``).

Trains one short run per row of a grid (agents x envs x the values a search space varies: batch,
epochs, train_freq, num_updates, rollout length, network width) in this process, one framework
thread, no evaluation episodes, and prints each run's measured wall time beside both estimates, then
the rank correlation of each estimate with the measured times (overall and per agent) and a least
squares fit of wall = a x env steps + b x gradient updates + c x multiply-adds (all runs, and per
agent; every run has the same env steps, so a is not identified here: the model takes it from
LunarLanderContinuous's fit).

    python bench/bench_cost_model.py --steps 6000
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from _common import rank_correlation  # noqa: E402

#: (agent, env, overrides): the extremes a search space reaches, a few at a time
GRID: list[tuple[str, str, list[str]]] = [
    *[("dqn", "cartpole", [f"agent.train_freq={f}", f"agent.num_updates={n}", f"agent.batch={b}"])
      for f, n, b in [(1, 1, 32), (1, 1, 256), (4, 1, 64), (4, 4, 64), (16, 8, 128), (64, 32, 64), (256, 128, 64)]],
    *[("dqn", "acrobot", [f"agent.train_freq={f}", f"agent.num_updates={n}", "agent.batch=64"])
      for f, n in [(1, 1), (16, 8), (256, 128)]],
    *[("sac", "pendulum", [f"agent.train_freq={f}", f"agent.num_updates={n}", f"agent.batch={b}",
                           f"agent.hidden_size=[{h},{h}]"])
      for f, n, b, h in [(1, 1, 256, 256), (1, 1, 64, 64), (4, 1, 256, 256), (8, 8, 128, 256), (16, 4, 512, 64)]],
    *[("ppo", "cartpole", [f"agent.n_epochs={e}", f"agent.batch={b}", f"agent.n_steps={n}"])
      for e, b, n in [(1, 256, 32), (20, 256, 32), (10, 16, 32), (4, 64, 128), (20, 8, 16)]],
    *[("ppo", "pendulum", [f"agent.n_epochs={e}", f"agent.batch={b}", f"agent.hidden_size=[{h},{h}]", "agent.n_steps=256"])
      for e, b, h in [(1, 256, 64), (10, 32, 64), (10, 64, 256)]],
    *[("a2c", "cartpole", [f"agent.n_steps={n}", f"agent.n_envs={m}"]) for n, m in [(5, 8), (5, 1), (32, 8)]],
]


def _run(agent: str, env: str, extra: list[str], steps: int) -> tuple[float, dict[str, Any]]:
    """One run's wall time and its cost keys' values."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from tuner.common.files import CONF_DIR
    from tuner.config.schema import validate
    from tuner.config.search_cost import cost_base
    from tuner.run.train import run_training

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=[f"agent={agent}", f"env={env}", f"budget.steps={steps}", "logger=none",
                                           "backend.threads=1", *extra])
    cfg = validate(cfg)
    values = cost_base(cfg)
    with tempfile.TemporaryDirectory() as run_dir:
        result = run_training(OmegaConf.to_container(cfg, resolve=True), run_dir, evaluation=False)
    return float(result["wall_time_s"]), values


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=6000, help="env steps per run")
    a = ap.parse_args(argv)
    from tuner.config.search_cost import trial_seconds, trial_work

    rows = []
    print("| agent | env | values | env steps | updates | wall | multiply-adds (M) | trial_seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for agent, env, extra in GRID:
        wall, values = _run(agent, env, extra, a.steps)
        steps, updates, macs = trial_work(values)
        seconds = trial_seconds(values)
        rows.append((agent, wall, macs, seconds, steps, updates))
        print(f"| {agent} | {env} | {' '.join(e.split('.', 1)[1] for e in extra)} | {steps:,.0f} | {updates:,.0f} | "
              f"{wall:.1f} s | {macs / 1e6:,.0f} | {seconds:.1f} s |", flush=True)
    print("\n| runs | rank correlation with wall: multiply-adds (trial_cost) | trial_seconds "
          "| dearest / cheapest: measured | multiply-adds | trial_seconds |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in ["all", *dict.fromkeys(r[0] for r in rows)]:
        sel = [r for r in rows if name in ("all", r[0])]
        walls = [r[1] for r in sel]
        spreads = " | ".join(f"{max(r[i] for r in sel) / min(r[i] for r in sel):.1f}x" for i in (1, 2, 3))
        print(f"| {name} ({len(sel)}) | {rank_correlation(walls, [r[2] for r in sel]):.2f} | "
              f"{rank_correlation(walls, [r[3] for r in sel]):.2f} | {spreads} |")
    print("\n| runs | fit: per env step | per gradient update | per million multiply-adds | R^2 |")
    print("| --- | --- | --- | --- | --- |")
    for name in ["all", *dict.fromkeys(r[0] for r in rows)]:
        sel = [r for r in rows if name in ("all", r[0])]
        x = np.array([[r[4], r[5], r[2] / 1e6] for r in sel])
        y = np.array([r[1] for r in sel])
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        r2 = 1 - float(np.sum((y - x @ coef) ** 2)) / float(np.sum((y - y.mean()) ** 2))
        print(f"| {name} | {coef[0] * 1e6:.0f} us | {coef[1] * 1e3:.2f} ms | {coef[2] * 1e3:.2f} ms | {r2:.2f} |")


if __name__ == "__main__":
    main()
