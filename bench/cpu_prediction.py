"""How well a finished study's trials' CPU was foreseen when each started: by the finished trials'
median (``tuner.max_cpu_s``'s half-trial rule) or by the trial's own sampled config
(``tuner.study.runner.predicted_cpu``: ``trial_seconds`` of its values, calibrated on the trials that
had completed).

For every COMPLETE trial that recorded its CPU and started after some trial had finished, both
predictions are made from the trials finished before it started, as the driver made its decision, and
compared with the CPU it recorded: the median of |log(recorded / predicted)| per study and overall,
and how many fell within 1.5x.  The cost keys come from the study's first trial's saved config.  PBT
studies are skipped: their segments start a generation at a time, not by this rule.

    python bench/cpu_prediction.py /path/journal.log [more journals...]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import optuna  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from tuner.config.search_cost import cost_base, seconds_with  # noqa: E402
from tuner.study.runner import FINISHED, predicted_cpu, recorded_cpu  # noqa: E402


def errors(study: optuna.Study) -> list[tuple[float, float]] | None:
    """``(|log(recorded / own prediction)|, |log(recorded / finished median)|)`` for each trial that
    could be predicted; None for a PBT study (its segments start by generation, not by this rule) or
    one that saved no trial config."""
    trials = study.get_trials(deepcopy=False)
    if any("pbt_member" in t.user_attrs for t in trials):
        return None
    saved = next((t.user_attrs["run_dir"] for t in trials if isinstance(t.user_attrs.get("run_dir"), str)), None)
    path = os.path.join(saved, "config.yaml") if saved else None
    if path is None or not os.path.exists(path):
        return None
    cost_of = seconds_with(cost_base(OmegaConf.load(path)))
    out = []
    for t in trials:
        spent = recorded_cpu([t]) if t.state == TrialState.COMPLETE else []
        if not spent or t.datetime_start is None:
            continue
        before = [u for u in trials if u.datetime_complete is not None and u.datetime_complete < t.datetime_start]
        own = predicted_cpu(before, t.params, cost_of)
        finished = recorded_cpu([u for u in before if u.state in FINISHED])
        if own is None or not finished or spent[0] <= 0:
            continue
        out.append((abs(math.log(spent[0] / own)), abs(math.log(spent[0] / statistics.median(finished)))))
    return out


def summary(errs: list[tuple[float, float]]) -> str:
    within = math.log(1.5)
    own, median = [e[0] for e in errs], [e[1] for e in errs]
    return (f"{len(errs):3d} trials | own config: median |log| {statistics.median(own):.2f}, within 1.5x "
            f"{sum(e < within for e in own)} | finished median: {statistics.median(median):.2f}, within 1.5x "
            f"{sum(e < within for e in median)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("journals", nargs="+", help="study journal files (each study in them is read)")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    everything: list[tuple[float, float]] = []
    for journal in args.journals:
        storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(journal))
        for s in optuna.get_all_study_summaries(storage):
            errs = errors(optuna.load_study(study_name=s.study_name, storage=storage))
            if errs:
                print(f"{s.study_name:40s} {summary(errs)}")
                everything += errs
    if everything:
        print(f"{'all':40s} {summary(everything)}")


if __name__ == "__main__":
    main()
