"""The study report's AutoRL checklist: what a reader needs to judge a tuning result.

Following the AutoRL protocol (Eimer et al. 2023; ARLBench): the search space, the budget counted
in full training runs x seeds, the seeds of each job (tuning, held-out, test), the optimiser, the
answer's tuning score beside its test score and the gap between them, the starting config's test
score, and the wall and CPU time spent.  Everything is read off the study (trials and user
attributes), so ``note-tune report`` on a study made elsewhere writes the same section.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna.trial import TrialState

from ..study.attrs import integer, mapping, number, seed_list, text
from ..study.outputs import SOURCES, format_cell, study_answer
from ..study.runner import cpu_refusal, recorded_cpu, runs_spent

__all__ = ["checklist"]


def _seeds(values: list[int]) -> str:
    """``0-4`` for a run of consecutive seeds, else the list (at most 10 shown)."""
    values = sorted(set(values))
    if not values:
        return "-"
    if len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}-{values[-1]} ({len(values)} seeds)"
    shown = ", ".join(map(str, values[:10]))
    return shown + (f", ... ({len(values)} seeds)" if len(values) > 10 else "")


def _space(study: optuna.Study) -> list[str]:
    """One row per searched parameter: its distribution as Optuna stores it."""
    dists: dict[str, Any] = {}
    for t in study.get_trials(deepcopy=False):
        dists.update(t.distributions)
    rows = []
    for name, d in sorted(dists.items()):
        if isinstance(d, optuna.distributions.CategoricalDistribution):
            text = "choice(" + ", ".join(map(repr, d.choices)) + ")"
        else:
            text = f"{'log-' if getattr(d, 'log', False) else ''}{type(d).__name__.replace('Distribution', '').lower()}" \
                   f"[{d.low}, {d.high}]" + (f" step {d.step}" if getattr(d, "step", None) not in (None, 1) else "")
        rows.append(f"| `{name}` | {text} |")
    return rows


def _times(study: optuna.Study) -> tuple[float | None, float | None]:
    """Wall seconds from the first trial's start to the last one's end, and the trials' CPU seconds."""
    trials = study.get_trials(deepcopy=False)
    starts = [t.datetime_start for t in trials if t.datetime_start]
    ends = [t.datetime_complete for t in trials if t.datetime_complete]
    wall = (max(ends) - min(starts)).total_seconds() if starts and ends else None
    cpu = recorded_cpu(trials)
    cpu_total = sum(cpu) if cpu else None
    return wall, cpu_total


def trained_steps(trials: list[Any]) -> int:
    """Env steps the trials trained.  A PBT segment starts from its parent segment's checkpoint and
    records the step counter it ended at, so only the steps past its parent's count."""
    by_number = {t.number: t for t in trials}
    total = 0
    for t in trials:
        steps = number(t.user_attrs.get("env_steps")) or 0
        parent = by_number.get(integer(t.user_attrs.get("pbt_parent_trial")))
        if parent is not None:
            steps -= number(parent.user_attrs.get("env_steps")) or 0
        total += max(int(steps), 0)
    return total


def _waiting(trials: list[optuna.trial.FrozenTrial]) -> str:
    """"; trial 9 not started (...)" for the trials the CPU budget left waiting, else ""."""
    numbers = [str(t.number) for t in trials if cpu_refusal(t) is not None]
    if not numbers:
        return ""
    return (f"; trial{'s' if len(numbers) > 1 else ''} {', '.join(numbers)} not started (the config's predicted "
            "CPU did not fit what was left)")


def checklist(study: optuna.Study) -> list[str]:
    """Markdown lines of the checklist section."""
    trials = study.get_trials(deepcopy=False)
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    tuning = [s for t in trials for s in seed_list(t.user_attrs.get("tuning_seeds")) or []]
    per_trial = max((len(seed_list(t.user_attrs.get("tuning_seeds")) or [0]) for t in finished), default=1)
    steps = trained_steps(trials)
    heldout = seed_list(study.user_attrs.get("heldout_seeds")) or []
    test = mapping(study.user_attrs.get("test"))
    opt = mapping(study.user_attrs.get("optimiser"))
    answer = study_answer(study)
    wall, cpu = _times(study)
    n_complete = sum(t.state == TrialState.COMPLETE for t in trials)
    lines = ["## AutoRL checklist", "",
             f"- optimiser: sampler {opt.get('sampler', '?')}, pruner {opt.get('pruner', '?')}, "
             f"{opt.get('n_jobs', '?')} trials at a time; trial score = {opt.get('aggregation', 'mean')} over "
             f"{per_trial} seed(s)",
             f"- budget: {len(finished)} trials ({n_complete} complete, {len(finished) - n_complete} pruned) x "
             f"{per_trial} seed(s) = up to {len(finished) * per_trial} training runs ({runs_spent(trials)} trained"
             + (f" of {text(opt.get('max_runs_key'), 'tuner.max_runs')}={opt['max_runs']}" if opt.get("max_runs") else "")
             + f"); {steps} env steps in trials",
             f"- seeds: tuning {_seeds(tuning)}; held-out (choosing among the top configs) {_seeds(heldout)}; "
             f"test (scoring only) {_seeds(seed_list(test.get('seeds')) or [])}",
             f"- time: {format_cell(wall)} s wall for the trials, {format_cell(cpu)} s CPU in trial processes"
             + (f" (of {text(opt.get('max_cpu_s_key'), 'tuner.max_cpu_s')}={format_cell(number(opt['max_cpu_s']))})"
                if number(opt.get("max_cpu_s")) else "")
             + _waiting(trials)
             + (f"; test stage {format_cell(number(test.get('wall_time_s')))} s wall" if test else "")]
    if answer is not None:
        how = SOURCES.get(answer["source"], answer["source"])
        gap = answer["tuning_value"] - answer["test_mean"] if answer.get("test_mean") is not None \
            and answer.get("tuning_value") is not None else None
        lines += [f"- answer: trial {answer['trial']} ({how}): tuning score {format_cell(answer['tuning_value'])}, "
                  f"held-out mean {format_cell(answer.get('heldout_mean'))}, test mean {format_cell(answer.get('test_mean'))}, "
                  f"gap (tuning - test) {format_cell(gap)}",
                  f"- starting config (trial {format_cell(answer.get('start_trial'))}): test mean "
                  f"{format_cell(answer.get('start_test_mean'))}" + (f"; {answer['verdict']}" if answer.get("verdict") else "")]
    space = _space(study)
    if space:
        lines += ["", "Search space:", "", "| parameter | distribution |", "| --- | --- |", *space]
    return lines
