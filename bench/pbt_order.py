"""How long a finished PBT study's generations would have taken had their segments started in
another order, from the segments' measured wall times.

A generation waits for its slowest member.  With ``n_jobs`` slots, the order in which segments start
decides the generation's span: the driver used to start them by member number; it now starts the
dearest first (``tuner.study.pbt.PbtDriver.dearest``, estimated by
``tuner.config.search_cost.trial_seconds``).  This replays each generation's measured segment times
through ``n_jobs`` slots (a segment starts when a slot frees) in three orders: by member, dearest
first by the estimate, and dearest first by the measured times (the best a start order can do for
this greedy schedule).  It assumes a segment takes as long whatever runs beside it.

    python bench/pbt_order.py --storage /path/journal.log --study NAME --n-jobs 2
"""

from __future__ import annotations

import argparse
import heapq
import os
import sys
from typing import Any, Callable, Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import optuna  # noqa: E402
from _common import rank_correlation  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from tuner.config.search_cost import trial_seconds  # noqa: E402
from tuner.study.pbt import segment_cost_base  # noqa: E402


def span(times: Sequence[float], order: Sequence[int], slots: int) -> float:
    """The wall time of running ``times`` in ``order`` on ``slots`` slots, each next one in the first free slot."""
    free = [0.0] * slots
    for i in order:
        heapq.heappush(free, heapq.heappop(free) + times[i])
    return max(free)


def estimate(trial: Any, interval: int) -> float:
    """``trial_seconds`` of a segment of ``interval`` env steps, from its saved config and searched values."""
    cfg = OmegaConf.load(os.path.join(trial.user_attrs["run_dir"], "config.yaml"))
    return trial_seconds({**segment_cost_base(cfg, interval), **trial.params})


def generations(study: optuna.Study) -> dict[int, list[Any]]:
    """``generation -> its COMPLETE segments, by member``."""
    out: dict[int, list[Any]] = {}
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if "pbt_generation" in t.user_attrs:
            out.setdefault(int(t.user_attrs["pbt_generation"]), []).append(t)
    return {g: sorted(ts, key=lambda t: t.user_attrs["pbt_member"]) for g, ts in sorted(out.items())}


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--storage", required=True, help="the study's journal file (or an RDB URL)")
    ap.add_argument("--study", required=True)
    ap.add_argument("--n-jobs", type=int, required=True, help="slots to replay the segments through")
    a = ap.parse_args(argv)
    storage: Any = a.storage
    if "://" not in storage:
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(storage))
    study = optuna.load_study(study_name=a.study, storage=storage)
    orders: dict[str, Callable[[list[float], list[float]], list[int]]] = {
        "by member": lambda t, e: list(range(len(t))),
        "dearest first (estimate)": lambda t, e: sorted(range(len(t)), key=lambda i: (-e[i], i)),
        "dearest first (measured)": lambda t, e: sorted(range(len(t)), key=lambda i: (-t[i], i)),
    }
    interval = int(study.user_attrs["pbt"]["interval"])
    totals = dict.fromkeys(orders, 0.0)
    pairs: list[tuple[float, float]] = []
    print(f"| generation | segments | {' | '.join(orders)} |")
    print(f"| --- | --- | {' | '.join('---' for _ in orders)} |")
    for g, trials in generations(study).items():
        times = [(t.datetime_complete - t.datetime_start).total_seconds() for t in trials]
        est = [estimate(t, interval) for t in trials]
        pairs += zip(times, est)
        spans = {name: span(times, order(times, est), a.n_jobs) for name, order in orders.items()}
        for name, s in spans.items():
            totals[name] += s
        print(f"| {g} | {len(trials)} | {' | '.join(f'{s:,.0f} s' for s in spans.values())} |")
    base = totals["by member"]
    # rounded first, + 0.0: a sum in another order off by 1e-16 must not print as "-0%"
    print(f"| all | | {' | '.join(f'{s:,.0f} s ({round(s / base - 1, 2) + 0.0:+.0%})' for s in totals.values())} |")
    measured, estimated = (list(column) for column in zip(*pairs))
    print(f"rank correlation of estimated and measured segment times: {rank_correlation(measured, estimated):.2f}")


if __name__ == "__main__":
    main()
