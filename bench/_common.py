"""Helpers shared by the bench scripts (argument parsing, agent construction, timing, output).

Frameworks are imported inside functions only: pool workers are ``spawn`` processes that re-import
the parent's ``__main__``, and importing TensorFlow or PyTorch there would cost seconds per worker.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

CRITERION = 475.0
TRIAL_COUNT = 20

#: how the benches build the optimizer and the step (set by :func:`parse_args`): ``plain_adam`` is
#: ``torch.optim.Adam(params, lr)`` as a user writes it (no ``fused=``), ``jit`` trains with
#: ``jit_compile=True``, ``no_jit`` with ``jit_compile=False`` (Keras: its graph step without XLA)
OPTIONS: dict[str, bool] = {"plain_adam": False, "jit": False, "no_jit": False}


@dataclass
class RunResult:
    """One training run: env steps, wall time, and whether the criterion was reached."""

    seed: int
    env_steps: int
    wall_s: float
    solved: bool
    episodes: int
    final_mean: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def steps_per_s(self) -> float:
        return self.env_steps / self.wall_s if self.wall_s > 0 else float("nan")


def parse_args(description: str, default_backend: str = "torch", extra: Callable[[Any], None] | None = None) -> Any:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--backend", choices=["torch", "tf"], default=default_backend)
    parser.add_argument("--seeds", type=int, default=3, help="number of seeds (first, first + 1, ...)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--plain-adam", action="store_true",
                        help="torch.optim.Adam(params, lr) as a user writes it (default: fused=True)")
    parser.add_argument("--jit", action="store_true", help="train(jit_compile=True)")
    parser.add_argument("--no-jit", action="store_true",
                        help="train(jit_compile=False): Keras's default is an XLA step")
    parser.add_argument("--threads", type=int, default=1,
                        help="framework threads (torch.set_num_threads / TF intra- and inter-op); "
                             "0 keeps the framework default")
    parser.add_argument("--json", action="store_true", help="also print the results as JSON")
    if extra is not None:
        extra(parser)
    args = parser.parse_args()
    args.seed_list = list(range(args.first_seed, args.first_seed + args.seeds))
    if args.jit and args.no_jit:
        parser.error("--jit and --no-jit contradict each other")
    OPTIONS.update(plain_adam=args.plain_adam, jit=args.jit, no_jit=args.no_jit)
    set_threads(args.backend, args.threads)
    print_machine(args.threads)
    return args


def machine_speed() -> dict[str, float]:
    """Two reference timings (framework-free), so figures taken at different times can be
    compared on a machine whose speed drifts: a 64x256 @ 256x256 float32 numpy matmul (median
    microseconds) and a pure-Python loop of one million additions (milliseconds)."""
    import numpy as np

    x, w = np.ones((64, 256), np.float32), np.ones((256, 256), np.float32)
    times = []
    for _ in range(300):
        started = time.perf_counter()
        x @ w
        times.append(time.perf_counter() - started)
    started = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i
    return {"matmul_us": float(np.median(times) * 1e6), "python_loop_ms": (time.perf_counter() - started) * 1e3}


def print_machine(threads: int | None = None) -> None:
    """One line: CPUs, load, framework threads and :func:`machine_speed`."""
    speed = machine_speed()
    print(f"# {os.cpu_count()} CPUs, 1-min load average {os.getloadavg()[0]:.2f}, threads={threads}; "
          f"reference: numpy matmul {speed['matmul_us']:.0f} us, python loop {speed['python_loop_ms']:.0f} ms")


def set_threads(backend: str, threads: int) -> None:
    """Limit the framework's CPU threads (before it runs anything).

    Why: the networks here are small, so intra-op parallelism gains little, and on a 2-core
    machine shared with other work a second thread that gets descheduled stalls every operation
    at its barrier (a 2 ms step becomes 20-50 ms).  One thread is the robust choice."""
    if threads <= 0:
        return
    if backend == "torch":
        import torch

        torch.set_num_threads(threads)
    else:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)


def agents_module(backend: str) -> Any:
    if backend == "torch":
        import note_rl.agents.torch as mod
    else:
        import note_rl.agents.keras as mod
    return mod


def adam(backend: str, params: Any, lr: float, eps: float | None = None) -> Any:
    """One Adam over all of ``params`` (nested lists are flattened); ``eps=None`` keeps the
    framework's default (torch 1e-8, Keras 1e-7).  torch uses ``fused=True``: the same update in
    one kernel instead of a dozen small ones per parameter (``--plain-adam``: left to torch's default,
    as a user writes it)."""
    flat = [p for g in params for p in g] if params and isinstance(params[0], (list, tuple)) else list(params)
    if backend == "torch":
        import torch

        fused = {} if OPTIONS["plain_adam"] else {"fused": True}
        return torch.optim.Adam(flat, lr=lr, **fused, **({} if eps is None else {"eps": eps}))
    import keras

    return keras.optimizers.Adam(learning_rate=lr, **({} if eps is None else {"epsilon": eps}))


def train(agent: Any, backend: str, optimizer: Any, **kwargs: Any) -> float:
    """``agent.train`` with each backend's positional contract; returns the wall time."""
    if OPTIONS["jit"] or OPTIONS["no_jit"]:
        kwargs.setdefault("jit_compile", bool(OPTIONS["jit"]))
    started = time.perf_counter()
    if backend == "torch":
        agent.train(optimizer, None, p=0, **kwargs)
    else:
        agent.train(None, optimizer, None, p=0, **kwargs)
    return time.perf_counter() - started


def result_of(agent: Any, seed: int, wall: float, start_steps: int = 0, **extra: Any) -> RunResult:
    rewards = agent.reward_list
    final = float(sum(rewards[-TRIAL_COUNT:]) / max(1, len(rewards[-TRIAL_COUNT:])))
    solved = len(rewards) >= TRIAL_COUNT and final >= CRITERION
    return RunResult(seed, agent.step_counter - start_steps, wall, solved, agent.total_episode, final, extra)


def rank_correlation(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation of ``a`` and ``b`` (no ties expected: measured times); NaN under 3 pairs."""
    import numpy as np

    if len(a) < 3:
        return float("nan")
    ranks = [np.argsort(np.argsort(np.asarray(x))) for x in (a, b)]
    return float(np.corrcoef(*ranks)[0, 1])


def median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def report(title: str, results: list[RunResult], as_json: bool = False) -> dict[str, Any]:
    """Print one line per seed and the medians; returns the summary."""
    print(f"== {title} (1-min load average at the end: {os.getloadavg()[0]:.2f})")
    for r in results:
        extra = " ".join(f"{k}={v}" for k, v in r.extra.items())
        print(f"seed {r.seed}: env_steps={r.env_steps} wall={r.wall_s:.2f}s steps/s={r.steps_per_s:.0f} "
              f"solved={r.solved} episodes={r.episodes} last20_mean={r.final_mean:.1f} {extra}".rstrip())
    summary = {
        "median_steps_per_s": median([r.steps_per_s for r in results]),
        # an unsolved run counts as infinitely slow, so the median is still defined when most solve
        "median_steps_to_solve": median([r.env_steps if r.solved else float("inf") for r in results]),
        "median_wall_to_solve_s": median([r.wall_s if r.solved else float("inf") for r in results]),
        "solved": f"{sum(r.solved for r in results)}/{len(results)}",
    }
    print("median: " + " ".join(f"{k}={_fmt(v)}" for k, v in summary.items()))
    if as_json:
        print(json.dumps({"title": title, "runs": [asdict(r) | {"steps_per_s": r.steps_per_s} for r in results],
                          "summary": summary}))
    return summary


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v == float("inf"):
            return "unsolved"
        return f"{v:.2f}" if v < 100 else f"{v:.0f}"
    return str(v)
