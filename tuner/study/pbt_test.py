"""PBT's test stage (``tuner=pbt`` with ``tuner.seeds.test``): the winner's schedule scored on seeds no
member trained on, as the AutoRL protocol scores a ``tuner=optuna`` study's answer (:mod:`.protocol`).

PBT's answer is not a config but a schedule (``pbt_schedule.yaml``: the winner's hyperparameters per
generation, following its lineage).  When the population has finished, the schedule is *replayed from
scratch* on each test seed with the replay machinery of ``replay_config.yaml`` (a ``tuner=pbt`` study in
replay mode), here with one member per test seed: member ``m`` trains seed ``test[m]``, every segment in
a fresh process, ``tuner.reevaluate.n_jobs`` (else ``tuner.n_jobs``) at once.  Test seeds come from
:func:`.protocol.pick_test_seeds` (a count: 20000, 20001, ... skipping every seed a member trained on; a
list holding such a seed is refused in one line before the population starts).

Score: the test stage's evaluation of ``tuner=optuna`` (:func:`.reevaluate._heldout_cfg`), by
``tuner.reevaluate.model``.  ``final`` (the default): the last segment of each replay ends with one
evaluation of ``tuner.reevaluate.episodes`` deterministic episodes of its final policy on the held-out reset
seeds of that seed.  ``best``: every segment evaluates as the members' segments did, and the last one starts
from the best evaluation of the replay's earlier segments (its weights and mean, ``best_so_far``:
:func:`tuner.run.train.carry_best`), so the weights scored on the held-out episodes are those of the
replay's best evaluation over the whole schedule (as a ``model=best`` retraining's are over its one run).
The earlier segments train and evaluate as the members' segments did.

Recorded as :mod:`.protocol` records its stage (study user attrs ``test`` and ``test:<trial>``, the
trial being the winner's last segment; ``pbt_answer`` names it, so :func:`.outputs.study_answer` and the
report's AutoRL checklist show its tuning score, test mean and gap), and in ``pbt.json``.

As in the Optuna protocol, the config the study started from takes part too: with
``tuner.enqueue_defaults`` member 0 began with the config's own values (the agent's defaults or the env's
preset), and that config held constant through every generation is replayed on the same test seeds by
the same machinery (so the two differ only in their schedules; twice the stage's runs), unless the
winner's schedule is that constant one; the verdict compares the two test means.

Replays live in ``<study_dir>/test/<trial>-<digest>/`` (a journal of their own, ``seed_<seed>/gen_<g>/``;
the digest: the episodes and the seeds replayed, and the model when it is ``best``).  As the protocol's
stage, a re-run reuses every seed already scored with the same episodes and model; a replay study killed
before its scores were stored resumes at its last complete segments.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import time
from typing import Any

from optuna.trial import TrialState

from ..run.train import BEST_MODEL
from .attrs import stage_scores, text
from .outputs import PBT_ANSWER
from .pbt import PbtDriver, PbtSettings
from .protocol import TEST_PREFIX, SeedSettings, _scored, _store, _verdict, no_test_stage, pick_test_seeds
from .reevaluate import _SCORE, ATTR_PREFIX, _Entry, _heldout_cfg, tuning_seeds

__all__ = ["TestReplayDriver", "run_pbt_test", "replay_missing", "held_constant"]

class TestReplayDriver(PbtDriver):
    """A replay-mode PBT study whose member ``m`` trains ``seeds[m]`` and whose last segments end with
    the test stage's evaluation (``episodes`` deterministic episodes on held-out reset seeds); the held-out
    stage (:mod:`.pbt_heldout`) replays its candidates with it too (``label``: its progress lines')."""

    __test__ = False  # not a pytest class

    def __init__(self, parent: PbtDriver, settings: PbtSettings, seeds: list[int], episodes: int,
                 model: str = "final", label: str = "test") -> None:
        self.test_seeds, self.episodes, self.model = list(seeds), episodes, model
        self.progress_label = f"  [{label}] "
        super().__init__(parent.cfg, settings, parent.compose, parent.overrides)

    def _run_dir(self, member: int, generation: int) -> str:
        return os.path.join(self.study_dir, f"seed_{self.test_seeds[member]}", f"gen_{generation}")

    def _member_seed(self, seed: int, member: int) -> int:
        return self.test_seeds[member]

    def _segment_config(self, plain: dict[str, Any], member: int, generation: int) -> dict[str, Any]:
        if generation < self.pbt.generations - 1:
            return plain
        out = dict(_heldout_cfg(plain, self.test_seeds[member], self.episodes, self.model), logger=plain["logger"])
        if self.model == "final":
            # one evaluation of its final policy, the normal test stage's; evaluations fall on multiples of
            # eval.every counted from step 0, and this segment starts at the checkpoint's step
            out["eval"].update(every=self.pbt.generations * self.pbt.interval + 1, answer="final")
            return out
        best = self._best_before(member, generation)
        return dict(out, best_so_far=best) if best else out

    def _best_before(self, member: int, generation: int) -> dict[str, Any] | None:
        """The best evaluation of this replay's segments before ``generation`` (``{"score", "model"}``; of
        equal means the later segment's, as one run's evaluator keeps the later of equal evaluations)."""
        best = None
        for g in range(generation):
            run_dir = self._run_dir(member, g)
            model = os.path.join(run_dir, BEST_MODEL)
            try:
                with open(os.path.join(run_dir, "result.json")) as f:
                    result = json.load(f)
            except (OSError, ValueError):
                continue
            score = result.get("best_eval_mean_return") if isinstance(result, dict) else None
            if isinstance(score, (int, float)) and math.isfinite(score) and os.path.exists(model) \
                    and (best is None or score >= best["score"]):
                best = {"score": float(score), "model": model}
        return best


def run_pbt_test(driver: PbtDriver, log: Any = print) -> dict[str, Any] | None:
    """Replay the winner's schedule on the test seeds not yet scored, then store and return the
    summary (``None``: no test stage, or no complete population).  On Ctrl-C / SIGTERM the scores so
    far are stored and handed over as ``exc.test`` before the interrupt goes on."""
    s = driver.pbt
    done = driver.segments()  # one read of the study for the answer and the starting config
    found = driver.answer(done)
    if s.replay or no_test_stage(s.seeds) or found is None or found[1] < s.generations - 1:
        return None
    winner, _, final, schedule = found
    driver.study.set_user_attr(PBT_ANSWER, final.number)  # the answer the outputs name
    seeds = pick_test_seeds(s.seeds.test, tuning_seeds(driver.study))
    params = [dict(e["params"]) for e in schedule]
    entry, start = _Entry(final, {}), _starting_segment(driver, done)
    start_is_answer = start is not None and all(p == start.params for p in params)
    replays = [(entry, params, f"the winner's schedule (member {winner}, {len(schedule)} segments)")]
    if start is not None and not start_is_answer:
        replays.append(held_constant(start, len(schedule)))
    entries = [e for e, _, _ in replays]
    started = time.monotonic()
    try:
        replay_missing(driver, replays, seeds, "test", log)
    except KeyboardInterrupt as exc:
        exc.test = _record(driver, entries, seeds, time.monotonic() - started, start_is_answer, interrupted=True)
        raise
    return _record(driver, entries, seeds, time.monotonic() - started, start_is_answer)


def _starting_segment(driver: PbtDriver, done: dict[tuple[int, int], Any]) -> Any | None:
    """Member 0's generation-0 segment (of ``done``, the study's complete segments) when it began with the
    config's own values (``tuner.enqueue_defaults``: the study's starting config); ``None`` otherwise."""
    return done.get((0, 0)) if driver.pbt.enqueue_defaults else None


def held_constant(start: Any, generations: int) -> tuple[_Entry, list[dict[str, Any]], str]:
    """The replay of the starting config held constant: member 0's first segment ``start``, its
    hyperparameters for each of ``generations`` segments, and how the progress lines name it."""
    return (_Entry(start, {}), [dict(start.params)] * generations,
            "the starting config (member 0's first hyperparameters, held constant)")


#: a stage's folder -> the prefix of its stored scores and the word its lines use
STAGES = {"test": (TEST_PREFIX, "test"), "heldout": (ATTR_PREFIX, "held-out")}


def replay_missing(driver: PbtDriver, replays: list[tuple[_Entry, list[dict[str, Any]], str]], seeds: list[int],
                   stage: str, log: Any = print) -> None:
    """Score each ``(entry, schedule, what)`` on ``seeds``: the scores ``stage`` stored before are reused
    (:func:`_reuse`), the seeds still missing are replayed from scratch (:func:`_replay`)."""
    prefix, word = STAGES[stage]
    for entry, plan, what in replays:
        _reuse(driver, entry, seeds, prefix)
        missing = [x for x in seeds if x not in entry.scores]
        if missing:
            log(f"{word} stage: {what} replayed from scratch on {len(missing)} {word} seeds {missing}", flush=True)
            _replay(driver, entry, missing, plan, stage)


def _reuse(driver: PbtDriver, entry: _Entry, seeds: list[int], prefix: str = TEST_PREFIX) -> None:
    """Scores a run before stored for this answer with the same episodes and model (the protocol's rule);
    ``prefix``: the stage's user attrs (``test:``, or the held-out stage's ``heldout:``)."""
    cached = stage_scores(driver.study.user_attrs.get(f"{prefix}{entry.trial.number:04d}"),
                          driver.pbt.reevaluate.episodes, driver.pbt.reevaluate.model)
    entry.scores.update({seed: score for seed, score in cached.items() if seed in seeds})


def _replay(driver: PbtDriver, entry: _Entry, seeds: list[int], schedule: list[dict[str, Any]],
            stage: str = "test") -> None:
    """One replay-mode study over ``seeds`` (named by them, so a re-run with the same ones resumes it), in
    ``<study_dir>/<stage>/``; each member's last segment score goes on ``entry``, a member that did not
    finish gets an error."""
    s = driver.pbt
    t = copy.deepcopy(s)
    # a study of its own for each answer, episodes and seeds: a re-run with the same ones resumes it, and a
    # changed answer or evaluation never reuses segments trained or scored for another
    model = s.reevaluate.model
    key = (s.reevaluate.episodes, seeds) if model == "final" else (s.reevaluate.episodes, seeds, model)
    digest = hashlib.sha1(repr(key).encode()).hexdigest()[:8]
    name = f"{entry.trial.number:04d}-{digest}"
    test_dir = os.path.join(driver.study_dir, stage, name)
    t.replay = os.path.join(driver.study_dir, "pbt_schedule.yaml")
    t.schedule, t.population, t.generations = schedule, len(seeds), len(schedule)
    t.study_name, t.study_dir = f"{s.study_name}-{stage}-{name}", test_dir
    t.storage = os.path.join(test_dir, "journal.log")  # its own journal, as the replay_config.yaml study's
    t.enqueue_defaults, t.seeds = False, SeedSettings(tuning=None, test=0)
    t.n_seeds = 1  # one member per seed here, whatever the population's members trained
    t.n_jobs = s.reevaluate.n_jobs or s.n_jobs
    t.timeout = s.reevaluate.timeout
    test = TestReplayDriver(driver, t, seeds, s.reevaluate.episodes, model, STAGES[stage][1])
    try:
        test.run()
    finally:  # interrupted too: the replays that finished count
        last = test.segments((TrialState.COMPLETE,))
        for m, seed in enumerate(seeds):
            score = _replay_score(last.get((m, t.generations - 1)), model)
            if score is not None:
                entry.scores[seed] = score
            else:
                entry.errors[seed] = f"replay incomplete (see {os.path.join(test_dir, f'seed_{seed}')}/gen_*/trial.log)"


def _replay_score(segment: Any, model: str) -> float | None:
    """A replay's score: its last segment's evaluation of ``model`` (``result.json``, as the protocol reads
    a run's)."""
    if segment is None:
        return None
    run_dir = text(segment.user_attrs.get("run_dir"))
    if not run_dir:
        return None
    try:
        with open(os.path.join(run_dir, "result.json")) as f:
            result = json.load(f)
    except (OSError, ValueError):
        return None
    score = result.get(_SCORE[model]) if isinstance(result, dict) else None
    return float(score) if isinstance(score, (int, float)) and math.isfinite(score) else None


def _record(driver: PbtDriver, entries: list[_Entry], seeds: list[int], wall: float, start_is_answer: bool,
            interrupted: bool = False) -> dict[str, Any]:
    """The summary in :mod:`.protocol`'s shape (``entries``: the answer, then the starting config when it
    was replayed), stored in the study as its test stage is."""
    answer = _scored(entries[0], seeds)
    held = driver.study.user_attrs.get(f"{ATTR_PREFIX}{entries[0].trial.number:04d}")  # the held-out stage's
    answer.update(source="pbt", heldout_mean=held.get("mean") if isinstance(held, dict) else None,
                  gap=answer["tuning_value"] - answer["mean"] if answer["mean"] is not None else None)
    start = _scored(entries[1], seeds) if len(entries) > 1 else None
    summary = {"seeds": seeds, "episodes": driver.pbt.reevaluate.episodes, "model": driver.pbt.reevaluate.model,
               "wall_time_s": wall,
               "interrupted": interrupted, "answer": answer, "start": start, "start_is_answer": start_is_answer,
               "verdict": _verdict(driver.study, answer, start, start_is_answer),
               "replayed": os.path.join(driver.study_dir, "pbt_schedule.yaml")}
    return _store(driver.study, summary)

