"""PBT's held-out stage (``tuner=pbt`` with ``tuner.reevaluate.top_k`` > 0): the answer chosen on seeds no
member trained on, as a ``tuner=optuna`` study's held-out stage chooses among its top trials
(:mod:`.reevaluate`).

PBT ranks members by one seed's segment score, and the member on top of a noisy ranking is often a lucky
seed: on LunarLander PPO the winner's score overstated its test mean by 60, on Acrobot DQN by 46, on
Acrobot A2C by 172 (BENCHMARKS.md).  So when the population has finished, the schedules of the last
generation's ``top_k`` members (distinct schedules, best score first; :func:`tuner.study.pbt.lineage`) and the
starting config held constant (member 0's first values with ``tuner.enqueue_defaults``: the defaults or
the preset) are each replayed from scratch on ``tuner.reevaluate.seeds`` held-out seeds (10000, 10001, ...
skipping every member's and every listed test seed) by the test stage's replay machinery
(:mod:`.pbt_test`), and scored by ``tuner.reevaluate.episodes`` deterministic episodes of
``tuner.reevaluate.model``.  The answer is the best held-out score (its seeds combined by
``tuner.reevaluate.aggregation``, else by PBT's ``tuner.aggregation``), under the one-standard-error
rule against the starting config (``tuner.reevaluate.keep_start``, :func:`.reevaluate.keep_start`); a
score only equal to the starting config's keeps the start.  Cost: (``top_k`` + 1) x seeds full runs.

Recorded as the Optuna held-out stage records its own (``heldout:<trial>``, ``heldout_winner``,
``heldout_seeds``: so the report, ``study_answer`` and the dashboard note show it), plus ``pbt_heldout``
(the generation it chose in and the winning trial), which :meth:`tuner.study.pbt.PbtDriver.answer` follows:
``pbt_schedule.yaml``, ``best_config.yaml``, ``replay_config.yaml`` and the test stage then hold the
held-out answer.  Replays live in ``<study_dir>/heldout/<trial>-<digest>/``; a re-run reuses every seed
already scored with the same episodes and model, and a replay killed midway resumes at its last
complete segments.
"""

from __future__ import annotations

import time
from typing import Any

from .pbt import HELDOUT_CHOICE, PbtDriver, lineage
from .pbt_test import _starting_segment, held_constant, replay_missing
from .protocol import no_test_stage
from .reevaluate import _Entry, _store, _summary, format_reevaluation, heldout_seeds, tuning_seeds

__all__ = ["run_pbt_heldout"]


def run_pbt_heldout(driver: PbtDriver, log: Any = print) -> dict[str, Any] | None:
    """Replay the candidates on the held-out seeds not yet scored, choose, store and return the summary
    (:func:`.reevaluate._summary`'s shape); ``None``: the stage is off (``top_k`` 0, a replay study) or the
    population has not finished."""
    s = driver.pbt
    if s.replay or s.reevaluate.top_k <= 0:
        return None
    done = driver.segments()
    last = s.generations - 1
    if any((m, last) not in done for m in range(s.population)):  # the population has not finished
        return None
    candidates, start = _candidates(driver, done, last)
    used = tuning_seeds(driver.study)
    if not no_test_stage(s.seeds) and isinstance(s.seeds.test, (list, tuple)):
        used |= {int(x) for x in s.seeds.test}
    seeds = heldout_seeds(s.reevaluate.seeds, used)
    what = "the starting config held constant among them" if start is not None else "no starting config"
    log(f"held-out stage: {len(candidates)} schedules (the best members' with distinct schedules, {what}) "
        f"replayed on seeds {seeds}: up to {len(candidates) * len(seeds)} replays of {last + 1} segments", flush=True)
    started = time.monotonic()
    replay_missing(driver, candidates, seeds, "heldout", log)
    summary = _summary(driver.study, [e for e, _, _ in candidates], seeds, s.reevaluate,
                       time.monotonic() - started, start=start)
    _store(driver.study, summary)
    driver.study.set_user_attr(HELDOUT_CHOICE, {"generation": last, "winner": summary["winner"]})
    log(format_reevaluation(summary), flush=True)
    return summary


def _candidates(driver: PbtDriver, done: dict[tuple[int, int], Any],
                last: int) -> tuple[list[tuple[_Entry, list[dict[str, Any]], str]], int | None]:
    """The replays: the ``top_k`` best members of generation ``last`` with distinct schedules, then the
    starting config held constant unless one of them is that schedule; and the trial number that stands
    for the starting config among them (``None``: no starting config)."""
    s = driver.pbt
    sign = 1.0 if s.direction == "maximize" else -1.0
    ranked = sorted(range(s.population), key=lambda m: (-sign * done[(m, last)].value, m))
    first = _starting_segment(driver, done)
    constant = None if first is None else repr([dict(first.params)] * (last + 1))
    out, seen, start = [], set(), None
    for m in ranked:
        plan = [dict(e["params"]) for e in lineage(done, m, last)]
        key = repr(plan)
        if key in seen:
            continue
        seen.add(key)
        final = done[(m, last)]
        if key == constant:
            start = final.number
        out.append((_Entry(final, {}), plan, f"member {m}'s schedule"))
        if len(out) == s.reevaluate.top_k:
            break
    if first is not None and start is None:
        out.append(held_constant(first, last + 1))
        start = first.number
    return out, start
