"""Would another way of combining held-out seeds have chosen another answer, and how does that one test?

    python bench/heldout_choice.py list 'bench_*/*/journal.log'
    python bench/heldout_choice.py test bench_llw_r1/lunar_lander_ppo/journal.log \\
        lunar_lander_ppo-wilcoxon_il-r1 9 alt_r1_t9 [--seeds 20000,20001,20002]

``list``: for every finished study in the journals (the benchmark's, bench_autorl.py), the finalists'
held-out scores as the study stored them, and the winner each aggregation (mean, min, lcb: the mean
less one standard error) would choose among them; a line is marked where they differ.  It reads the
journals only.

``test``: the study's own test stage (:func:`tuner.study.protocol.run_test`) on a *copy* of its journal,
with ``trial`` as the answer: retrained on the test seeds and scored by 20 deterministic episodes of its
final policy, as bench_autorl.py scored the answer the study chose (so the two rows pair seed by seed).
The starting config is not retrained (its test row is the study's own); ``trial``'s stored test scores,
if any, are retrained rather than reused, so a run of the chosen answer checks that the scores reproduce.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import shutil
import sys

import numpy as np
import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

RULES = ("mean", "min", "lcb")


def _load(journal: str, name: str | None = None) -> list[optuna.Study]:
    storage = JournalStorage(JournalFileBackend(journal))
    names = [name] if name else [s.study_name for s in storage.get_all_studies()]
    return [optuna.load_study(study_name=n, storage=storage) for n in names]


def finalists(study: optuna.Study) -> dict[int, list[float]]:
    """Each finalist's held-out scores, on every held-out seed of the stage (incomplete ones left out),
    read as the stage reads its own records (:func:`tuner.study.attrs.stage_scores`)."""
    from tuner.study.attrs import mapping, seed_list, stage_scores

    seeds = seed_list(study.user_attrs.get("heldout_seeds")) or []
    out = {}
    for key, value in study.user_attrs.items():
        if not key.startswith("heldout:") or not key[8:].isdigit():
            continue
        record = mapping(value)
        scores = stage_scores(record, record.get("episodes"), record.get("model", "final"))
        if seeds and all(s in scores for s in seeds):
            out[int(key[8:])] = [scores[s] for s in seeds]
    return out


def list_choices(pattern: str) -> None:
    from tuner.run.trial_worker import aggregate

    for journal in sorted(glob.glob(pattern)):
        for study in _load(journal):
            held = finalists(study)
            if not held:
                continue
            sign = 1.0 if study.direction == optuna.study.StudyDirection.MAXIMIZE else -1.0
            chosen = {how: max(held, key=lambda t: sign * aggregate(held[t], how)) for how in RULES}
            differs = len(set(chosen.values())) > 1
            print(f"{study.study_name:36s} winner {study.user_attrs.get('heldout_winner')}  "
                  + "  ".join(f"{how}: {t}" for how, t in chosen.items()) + ("  <- differs" if differs else ""))
            if differs:
                for t, v in sorted(held.items(), key=lambda kv: -sign * np.mean(kv[1])):
                    sd = float(np.std(v, ddof=1)) if len(v) > 1 else math.nan
                    print(f"    trial {t:3d}  scores {', '.join(f'{x:.1f}' for x in v)}  mean {np.mean(v):.1f}"
                          f"  std {sd:.1f}  lcb {aggregate(v, 'lcb'):.1f}")


def test_trial(journal: str, name: str, trial: int, out: str, seeds: list[int]) -> None:
    from tuner.study import protocol
    from tuner.study.protocol import SeedSettings, run_test
    from tuner.study.reevaluate import ReevalSettings

    os.makedirs(out, exist_ok=True)
    copy = os.path.join(out, "journal.log")
    shutil.copy(journal, copy)
    study = _load(copy, name)[0]
    study.set_user_attr(f"{protocol.TEST_PREFIX}{trial:04d}", None)  # retrain it, do not reuse its scores
    protocol.start_trial = lambda s: None  # the starting config's test row is the study's own
    protocol._note = lambda *a: None  # the copy needs no dashboard note
    summary = run_test(study, out, SeedSettings(test=seeds), ReevalSettings(), {"winner": trial}, n_jobs=2)
    answer = summary["answer"]
    print(json.dumps({"study": name, "trial": trial, "scores": answer["scores"], "mean": answer["mean"]}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list")
    ls.add_argument("pattern")
    t = sub.add_parser("test")
    t.add_argument("journal")
    t.add_argument("study_name")
    t.add_argument("trial", type=int)
    t.add_argument("out")
    t.add_argument("--seeds", default="20000,20001,20002")
    a = p.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if a.command == "list":
        list_choices(a.pattern)
    else:
        test_trial(a.journal, a.study_name, a.trial, a.out, [int(s) for s in a.seeds.split(",")])


if __name__ == "__main__":  # the test stage's processes start from a forkserver that re-imports this module
    main()
