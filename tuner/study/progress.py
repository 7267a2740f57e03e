"""Progress of a study: trials done / pruned / failed, the best value so far and, under a budget in
CPU seconds (``tuner.max_cpu_s``), the CPU spent against it.

On a terminal a tqdm bar (total ``n_trials``) is redrawn in place; otherwise (a log file, CI) one
plain line is printed each time a trial finishes.  The driver calls :meth:`StudyProgress.update`
after every wake-up (``Driver.run(on_change=...)``), so the counts are read from the storage and
include trials finished by other drivers of the same study.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

import optuna
from optuna.trial import TrialState

from note_rl.core.progress import use_bar

from .runner import cpu_spent

__all__ = ["StudyProgress"]


class StudyProgress:
    """Counts of the study's trials, printed when they change.

    :param study: the study (its storage is read on every update)
    :param n_trials: the number of finished trials the study aims for (the bar's total)
    :param quiet: print nothing
    :param max_cpu_s: the study's budget in CPU seconds, shown beside the CPU spent (None: not shown)
    """

    def __init__(self, study: optuna.Study, n_trials: int, quiet: bool = False,
                 stream: TextIO | None = None, max_cpu_s: float | None = None) -> None:
        self.study, self.n_trials, self.quiet, self.max_cpu_s = study, n_trials, quiet, max_cpu_s
        self.stream = stream or sys.stdout
        self.bar: Any = None
        self.last: tuple[Any, ...] | None = None
        if not quiet and use_bar(self.stream):
            from tqdm import tqdm

            self.bar = tqdm(total=n_trials, desc=f"study {study.study_name}", unit="trial",
                            file=self.stream, dynamic_ncols=True)
        if not quiet:
            # a resumed study starts from its stored trials
            self.last = self._counts(self.study.get_trials(deepcopy=False))
            if self.bar is not None:
                self.bar.update(min(self.last[0] + self.last[1], n_trials))

    def _counts(self, trials: list[optuna.trial.FrozenTrial]) -> tuple[int, int, int, int, float | None, int | None]:
        count = {s: sum(t.state == s for t in trials) for s in TrialState}
        done = [t for t in trials if t.state == TrialState.COMPLETE and t.value is not None]
        best = None
        if done:
            pick = max if self.study.direction == optuna.study.StudyDirection.MAXIMIZE else min
            best = pick(done, key=lambda t: t.value)
        return (count[TrialState.COMPLETE], count[TrialState.PRUNED], count[TrialState.FAIL],
                count[TrialState.RUNNING], best.value if best else None, best.number if best else None)

    def update(self) -> None:
        """Read the counts; redraw or print when a trial has finished since the last call."""
        if self.quiet:
            return
        trials = self.study.get_trials(deepcopy=False)  # one read of the storage per update
        counts = self._counts(trials)
        if counts[:3] == (self.last or (None,) * 3)[:3]:
            return
        complete, pruned, failed, running, best, number = counts
        best_text = "-" if best is None else f"{best:.4g} (trial {number})"
        cpu_text = "" if self.max_cpu_s is None else \
            f"  CPU {cpu_spent(trials):.0f} of {self.max_cpu_s:g} s"
        if self.bar is not None:
            previous = (self.last[0] + self.last[1]) if self.last else 0
            self.bar.update(max(0, min(complete + pruned, self.n_trials) - min(previous, self.n_trials)))
            self.bar.set_postfix_str(f"complete {complete} pruned {pruned} failed {failed} best {best_text}{cpu_text}")
        else:
            print(f"[study] {complete + pruned}/{self.n_trials} finished: complete {complete}  pruned {pruned}"
                  f"  failed {failed}  running {running}  best {best_text}{cpu_text}", file=self.stream, flush=True)
        self.last = counts

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
