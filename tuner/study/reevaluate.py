"""Held-out re-evaluation: retrain a study's top configs on seeds no trial tuned on.

A trial's score is one training run (or ``n_seeds``) on its tuning seeds; with hundreds of trials
the best score is partly luck.  At the end of a study (and with ``note-tune reevaluate``) the top
``top_k`` distinct configs are retrained from scratch, each in a fresh process, on ``seeds``
held-out seeds (disjoint from every tuning seed), and each run's final policy plays ``episodes``
deterministic evaluation episodes on reset seeds of its own (:data:`HELDOUT_EVAL_SEED` onwards, far
from the tuning evaluations').  The config with the best held-out score is the study's answer:
``best_config.yaml`` is written from it.  A config's held-out score combines its seeds the way the
study's trial scores do (``tuner.aggregation``: the mean by default; a risk-averse study that scores
trials by their worst seed, ``min``, or a lower quantile also chooses its answer that way), unless
``tuner.reevaluate.aggregation`` names a way of its own (``lcb``: the mean less one standard error, so
that a finalist whose seeds disagree does not win on a lucky one).

Results live in the study itself, as study user attributes (``heldout:<trial>``, shown by
optuna-dashboard with a note on the study page): a finished Optuna trial cannot be changed.  A
re-run reuses every (config, seed) already scored with the same number of episodes, so resuming a
study or re-running ``reevaluate`` only trains what is missing.  Runs go to
``<study_dir>/heldout/<trial>/seed_<seed>/``.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import optuna
from omegaconf import OmegaConf
from optuna.trial import FrozenTrial, TrialState

from ..common.errors import ConfigError
from ..run.trial_worker import aggregate, standard_error
from .attrs import mapping, number, seed_list, stage_scores, text
from .jobs import Job, run_jobs
from .study_schema import aggregation_ok
from .supervisor import is_start

__all__ = ["ReevalSettings", "check_reeval", "reevaluate", "heldout_seeds", "top_configs", "start_trial",
           "format_reevaluation", "HELDOUT_EVAL_SEED", "ATTR_PREFIX"]

#: first reset seed of held-out evaluation episodes; run with seed s uses HELDOUT_EVAL_SEED + 1000 s ...
HELDOUT_EVAL_SEED = 2_000_000
#: first candidate held-out training seed (tuning seeds are the config's seed, 0 by default, onwards)
HELDOUT_SEED_BASE = 10_000
ATTR_PREFIX = "heldout:"


@dataclass
class ReevalSettings:
    """``tuner.reevaluate``: how many configs, seeds and episodes, and the stage's time limit."""

    top_k: int = 5           # configs retrained (0: no re-evaluation)
    seeds: Any = 3           # held-out seeds: a count, or a list of seeds
    episodes: int = 20       # deterministic evaluation episodes per retrained run
    timeout: Optional[float] = None  # seconds for the whole stage; then it stops with what it has
    n_jobs: Optional[int] = None     # runs at once (None: tuner.n_jobs)
    # what a retrained run's score is about: "final" (its final policy) or "best" (the weights of its
    # best evaluation, chosen on the config's own evaluation episodes, then scored on held-out ones)
    model: str = "final"
    # configs tied for the best held-out mean (CartPole's 500 saturates) race on up to this many more
    # held-out seeds, one at a time, until one is ahead (0: ties go to the better tuning trial)
    tie_seeds: int = 1
    # the one-standard-error rule against the starting config: a config replaces it as the answer only
    # when its held-out lead is more than keep_start standard errors of their paired per-seed
    # differences (0: the best held-out score wins, however small its lead)
    keep_start: float = 1.0
    # how a config's held-out seeds combine into the score the answer is chosen by (mean, median, min,
    # lcb, q<percent>); None: the study's own tuner.aggregation.  lcb (the mean less one standard error)
    # passes over a finalist whose seeds disagree: a 3-point lead of two seeds' means (93.7 / -121.6
    # against -7.5 / -26.5) chose a LunarLander policy that scored -1,206.5 on the test seeds, where the
    # other scored 22.4 (BENCHMARKS.md)
    aggregation: Optional[str] = None


MAX_COUNT = 1000  # configs, seeds, jobs or race seeds of one held-out stage
MAX_EPISODES = 100_000
MAX_TIMEOUT_S = 10 * 365 * 86400.0


def check_reeval(r: ReevalSettings) -> None:
    """One-line :class:`ConfigError` for a bad ``tuner.reevaluate`` value."""
    seeds = list(r.seeds) if isinstance(r.seeds, (list, tuple)) or OmegaConf.is_list(r.seeds) else r.seeds
    def whole(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    from ..config.schema import SEED_LIMIT

    # upper bounds keep a typo (top_k=10**20) from planning more runs than any study holds
    checks = [
        (whole(r.top_k) and 0 <= r.top_k <= MAX_COUNT,
         f"tuner.reevaluate.top_k: must be an integer >= 0 and <= {MAX_COUNT}, got {r.top_k!r}"),
        (whole(r.episodes) and 0 < r.episodes <= MAX_EPISODES,
         f"tuner.reevaluate.episodes: must be an integer > 0 and <= {MAX_EPISODES}, got {r.episodes!r}"),
        (r.timeout is None or (isinstance(r.timeout, (int, float)) and not isinstance(r.timeout, bool)
                               and math.isfinite(r.timeout) and 0 < r.timeout <= MAX_TIMEOUT_S),
         f"tuner.reevaluate.timeout: must be > 0 and at most {MAX_TIMEOUT_S:.0f} seconds, got {r.timeout!r}"),
        (r.n_jobs is None or (whole(r.n_jobs) and 0 < r.n_jobs <= MAX_COUNT),
         f"tuner.reevaluate.n_jobs: must be an integer > 0 and <= {MAX_COUNT}, got {r.n_jobs!r}"),
        (r.model in ("final", "best"), f"tuner.reevaluate.model: final or best, got {r.model!r}"),
        (whole(r.tie_seeds) and 0 <= r.tie_seeds <= MAX_COUNT,
         f"tuner.reevaluate.tie_seeds: must be an integer >= 0 and <= {MAX_COUNT}, got {r.tie_seeds!r}"),
        (isinstance(r.keep_start, (int, float)) and not isinstance(r.keep_start, bool)
         and math.isfinite(r.keep_start) and 0 <= r.keep_start <= 100,
         f"tuner.reevaluate.keep_start: must be a number of standard errors from 0 to 100, got {r.keep_start!r}"),
        (r.aggregation is None or (isinstance(r.aggregation, str) and aggregation_ok(r.aggregation)),
         f"tuner.reevaluate.aggregation: must be null (the study's tuner.aggregation), mean, median, min, lcb "
         f"(the mean less one standard error) or a lower quantile q<percent> (q25), got {r.aggregation!r}"),
    ]
    if isinstance(seeds, list):
        checks += [(bool(seeds) and len(seeds) <= MAX_COUNT and all(whole(s) and 0 <= s < SEED_LIMIT for s in seeds)
                    and len(set(seeds)) == len(seeds),
                    f"tuner.reevaluate.seeds: must be distinct seeds from 0 to {SEED_LIMIT - 1}, at most "
                    f"{MAX_COUNT} of them, got {seeds}")]
    else:
        checks += [(whole(seeds) and 0 < seeds <= MAX_COUNT,
                    f"tuner.reevaluate.seeds: must be a count > 0 (at most {MAX_COUNT}) or a list of seeds, "
                    f"got {seeds!r}")]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)


@dataclass(frozen=True)
class Trust:
    """What the configs read back from the trials' run dirs may name (:mod:`tuner.config.untrusted`): the
    project's own classes, the ``names`` of the command's own (trusted) config, or anything with
    ``code``."""

    names: frozenset[str] = frozenset()
    code: bool = False
    #: the command's own config: gives back the secrets a trial's config.yaml was written without
    config: Any = field(default=None, compare=False, hash=False)

    @classmethod
    def of(cls, trusted_cfg: Any) -> "Trust":
        """Every dotted name in a trusted config (its ``_target_``s, its search space's choices)."""
        import re

        from ..config.untrusted import walk

        return cls(frozenset(name for _, node in walk(trusted_cfg) if isinstance(node, str)
                             for name in re.findall(r"[\w.:/-]+", node)), config=trusted_cfg)


def _config(trial: FrozenTrial, trust: Trust = Trust()) -> dict[str, Any] | None:
    from ..config.untrusted import UntrustedFileError, load_run_config

    folder = text(trial.user_attrs.get("run_dir"))
    if not os.path.isfile(os.path.join(folder, "config.yaml")):
        return None
    try:
        cfg, _ = load_run_config(folder, trust_code=trust.code, trusted=trust.names, name="config.yaml",
                                 secrets_from=trust.config)
    except UntrustedFileError as exc:
        raise ConfigError(f"trial {trial.number}: {exc}") from None
    return cfg


def tuning_seeds(study: optuna.Study, trust: Trust = Trust()) -> set[int]:
    """Every seed a trial of the study trained on (its ``tuning_seeds`` attribute, else its config's:
    also where the attribute is not a list of seeds, as in a hand-edited journal)."""
    used: set[int] = set()
    for t in study.get_trials(deepcopy=False):
        stored = seed_list(t.user_attrs.get("tuning_seeds"))
        if stored is not None:
            used.update(stored)
        else:
            cfg = _config(t, trust)
            if cfg is not None:
                used.add(int(cfg["seed"]))
    return used


def heldout_seeds(setting: Any, used: set[int]) -> list[int]:
    """``setting`` seeds from :data:`HELDOUT_SEED_BASE` on, skipping ``used``; or the given list,
    which must not contain a tuning seed."""
    return pick_seeds(setting, used, HELDOUT_SEED_BASE,
                      "tuner.reevaluate.seeds: seed {seed} was a tuning seed; held-out seeds must differ")


def pick_seeds(setting: Any, used: set[int], base: int, refused: str) -> list[int]:
    """A count ``setting``: that many seeds from ``base`` on, skipping ``used``; a list: those seeds,
    refused with ``refused.format(seed=...)`` when one of them was ``used``."""
    if not (isinstance(setting, (list, tuple)) or OmegaConf.is_list(setting)):
        seeds, s = [], base
        while len(seeds) < int(setting):
            if s not in used:
                seeds.append(s)
            s += 1
        return seeds
    seeds = [int(s) for s in setting]
    clash = sorted(set(seeds) & used)
    if clash:
        raise ConfigError(refused.format(seed=clash[0]))
    return seeds


def top_configs(study: optuna.Study, k: int, trust: Trust = Trust()) -> list[tuple[FrozenTrial, dict[str, Any]]]:
    """The ``k`` best COMPLETE trials with distinct parameters and a saved config, best first, each
    with that config."""
    done = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)) if t.value is not None]
    sign = -1.0 if study.direction == optuna.study.StudyDirection.MAXIMIZE else 1.0
    out, seen = [], set()
    for t in sorted(done, key=lambda t: (sign * t.value, t.number)):
        key = repr(sorted(t.params.items()))
        cfg = None if key in seen else _config(t, trust)
        if cfg is None:
            continue
        seen.add(key)
        out.append((t, cfg))
        if len(out) == k:
            break
    return out


def start_trial(study: optuna.Study) -> FrozenTrial | None:
    """The study's starting point: the trial that played the config's own values (the agent's
    defaults, or the env's preset), enqueued as trial 0 (``tuner.enqueue_defaults``), COMPLETE or
    PRUNED: a pruner reading one noisy curve can stop the known-good config (bench_autorl pruned
    rl-zoo3's MountainCarContinuous preset on its second seed at 92.8), and it still takes part in the
    held-out and test stages, so the answer is never compared with nothing."""
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
        if is_start(t):
            return t
    return None


def with_start(study: optuna.Study, top: list[tuple[FrozenTrial, dict[str, Any]]],
               trust: Trust = Trust()) -> list[tuple[FrozenTrial, dict[str, Any]]]:
    """``top`` plus the starting config (:func:`start_trial`) when it is not among them: the answer
    is then never worse than where the study started on held-out seeds without the stage showing it."""
    start = start_trial(study)
    if start is None or any(t.number == start.number or t.params == start.params for t, _ in top):
        return top
    cfg = _config(start, trust)
    return top if cfg is None else [*top, (start, cfg)]


def _heldout_cfg(cfg: dict[str, Any], seed: int, episodes: int, model: str = "final") -> dict[str, Any]:
    cfg = dict(cfg, seed=seed, tuner={"name": "none"}, logger={"name": "none", "p": 0})
    steps = cfg["budget"].get("steps")
    heldout = HELDOUT_EVAL_SEED + 1000 * seed  # reset seeds of this run's own
    if model == "best":
        # the config's own evaluations pick the weights; the held-out episodes score them
        cfg["eval"] = dict(cfg.get("eval") or {}, answer="best", test_episodes=episodes, test_seed=heldout)
    else:  # one evaluation, of the final policy
        cfg["eval"] = dict(cfg.get("eval") or {}, episodes=episodes, seed=heldout,
                           every=int(steps) + 1 if steps else None, test_episodes=0)
    cfg["objective"] = dict(cfg["objective"], source="eval")
    return cfg


_SCORE = {"final": "final_eval_mean_return", "best": "test_mean_return"}  # result.json key of a run's score


@dataclass
class _Entry:
    trial: FrozenTrial
    cfg: dict[str, Any]
    scores: dict[int, float] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)


def reevaluate(study: optuna.Study, study_dir: str, settings: ReevalSettings, n_jobs: int = 1,
               job_timeout: float | None = None, memory_mb: int | None = None,
               log: Any = print, trust: Trust = Trust()) -> dict[str, Any] | None:
    """Retrain the study's top configs on held-out seeds (reusing scores already stored), let the
    configs tied for the best mean race on extra seeds, and store the results in the study; returns
    the summary that ``study.json`` holds (``None``: nothing to do).  The configs read back from
    the trials' run dirs may name only what ``trust`` allows."""
    check_reeval(settings)
    if settings.top_k == 0:
        return None
    top = with_start(study, top_configs(study, settings.top_k, trust), trust)
    if not top:
        return None
    used = tuning_seeds(study, trust)
    seeds = heldout_seeds(settings.seeds, used)
    entries = [_Entry(t, cfg) for t, cfg in top]
    started = time.monotonic()
    deadline = started + settings.timeout if settings.timeout else None
    run = _Runner(study, study_dir, settings, n_jobs, deadline, job_timeout, memory_mb, log)
    raced: list[int] = []
    try:
        run(entries, seeds, f"held-out re-evaluation: {len(entries)} configs x {len(seeds)} seeds")
        extra = [s for s in heldout_seeds(len(seeds) + settings.tie_seeds, used) if s not in seeds]
        for seed in extra[:settings.tie_seeds]:
            leaders = _leaders(study, entries, seeds, raced, settings)
            if len(leaders) < 2 or (deadline is not None and time.monotonic() >= deadline):
                break
            raced.append(seed)
            run(leaders, [seed], f"held-out tie: trials {', '.join(str(e.trial.number) for e in leaders)} "
                                 f"race on seed {seed}")
    except KeyboardInterrupt as exc:  # Ctrl-C / SIGTERM (tuner.common.interrupts): keep what was scored
        exc.heldout = _interrupted(study, entries, seeds, settings, time.monotonic() - started, raced, exc)
        raise
    summary = _summary(study, entries, seeds, settings, time.monotonic() - started, raced)
    _store(study, summary)
    return summary


def _interrupted(study: optuna.Study, entries: list[_Entry], seeds: list[int], settings: ReevalSettings,
                 wall: float, raced: list[int], exc: KeyboardInterrupt) -> dict[str, Any]:
    """The summary of a stage cut short by ``exc``, stored in the study like a finished one (a later
    ``reevaluate`` reuses its scores): the winner among the configs scored on every seed, else none
    (``best_config.yaml`` is then the best tuning trial's); ``interrupted`` and ``answer`` say so."""
    from ..common.interrupts import Terminated

    name = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
    summary = _summary(study, entries, seeds, settings, wall, raced)
    summary["interrupted"] = name
    summary["answer"] = (f"held-out winner among the configs scored on every seed before {name}"
                         if summary["winner"] is not None else
                         f"best tuning trial: {name} came before any config was scored on every held-out seed")
    _store(study, summary)
    return summary


@dataclass
class _Runner:
    """Trains ``entries`` x ``seeds`` (those not already scored with the same settings) in fresh
    processes and records each score on its entry.  Before it starts it prints how many runs and
    its estimate of their time (from the study's own trials); as each run ends, a progress line.
    ``prefix`` / ``folder`` / ``label``: where scores are kept (study user attrs), where runs go
    (``<study_dir>/<folder>/<trial>/seed_<seed>``) and what the lines call the stage."""

    study: optuna.Study
    study_dir: str
    settings: ReevalSettings
    n_jobs: int
    deadline: float | None
    job_timeout: float | None
    memory_mb: int | None
    log: Any
    prefix: str = ATTR_PREFIX
    folder: str = "heldout"
    label: str = "held-out"

    def __call__(self, entries: list[_Entry], seeds: list[int], title: str) -> None:
        s = self.settings
        jobs: list[tuple[_Entry, int, Job]] = []
        for entry in entries:  # best config first: under a time limit the top configs finish first
            cached = stage_scores(self.study.user_attrs.get(f"{self.prefix}{entry.trial.number:04d}"),
                                  s.episodes, s.model)
            for seed in seeds:
                if seed in cached:
                    entry.scores[seed] = cached[seed]
                    continue
                run_dir = os.path.join(self.study_dir, self.folder, f"{entry.trial.number:04d}", f"seed_{seed}")
                jobs.append((entry, seed, Job(_heldout_cfg(entry.cfg, seed, s.episodes, s.model), run_dir,
                                              os.path.join(run_dir, "train.log"))))
        if not jobs:
            return
        n_jobs = s.n_jobs or self.n_jobs
        self.log(f"{title} ({len(jobs)} runs to train, {s.episodes} deterministic episodes each"
                 f"{estimate(self.study, len(jobs), n_jobs)})", flush=True)
        by_job = {id(job): (entry, seed) for entry, seed, job in jobs}
        done = [0]

        def progress(job: Job) -> None:
            done[0] += 1
            entry, seed = by_job[id(job)]
            score = (job.result or {}).get(_SCORE[s.model])
            what = f"{score:.4g}" if isinstance(score, (int, float)) else (job.error or "no evaluation")
            self.log(f"  [{self.label}] {done[0]}/{len(jobs)} runs done (trial {entry.trial.number}, seed {seed}: "
                     f"{what})", flush=True)

        try:
            run_jobs([j for _, _, j in jobs], n_jobs=n_jobs, deadline=self.deadline,
                     job_timeout=self.job_timeout, memory_mb=self.memory_mb, on_done=progress)
        finally:  # interrupted too: the runs that finished count (run_jobs killed the others)
            for entry, seed, job in jobs:
                score = (job.result or {}).get(_SCORE[s.model])
                if score is not None and math.isfinite(score):
                    entry.scores[seed] = float(score)
                else:
                    entry.errors[seed] = job.error or "no evaluation"


def estimate(study: optuna.Study, runs: int, n_jobs: int) -> str:
    """``"; about N s at n_jobs=J"``: ``runs`` retrainings at the median time per seed of the study's
    complete trials (each trains the same budget), ``n_jobs`` at a time; empty without such trials."""
    per_seed = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        seeds = len(seed_list(t.user_attrs.get("tuning_seeds")) or [0])
        wall = number(t.user_attrs.get("wall_time_s"))
        if wall is None and t.duration is not None:
            wall = t.duration.total_seconds()
        if wall is not None and wall > 0:
            per_seed.append(wall / max(1, seeds))
    if not per_seed:
        return ""
    seconds = math.ceil(runs / max(1, n_jobs)) * float(np.median(per_seed))
    return f"; about {seconds:.0f} s at n_jobs={n_jobs}" if seconds >= 1 else f"; under a second at n_jobs={n_jobs}"


def selection_of(study: optuna.Study, settings: ReevalSettings) -> str:
    """How the held-out stage combines a config's seeds: ``tuner.reevaluate.aggregation``, else the
    study's own (:func:`aggregation_of`).  The setting was checked by :func:`check_reeval`."""
    return settings.aggregation or aggregation_of(study)


def aggregation_of(study: optuna.Study) -> str:
    """How the study combines a config's seeds (``tuner.aggregation``, recorded by the driver with the
    optimiser); ``mean`` for a study that recorded none (a PBT study, an older one) or a value the setting's
    own check refuses (the storage is data: ``qxyz`` there must not crash the stage)."""
    how = mapping(study.user_attrs.get("optimiser")).get("aggregation")
    return how if isinstance(how, str) and aggregation_ok(how) else "mean"


def _leaders(study: optuna.Study, entries: list[_Entry], seeds: list[int], raced: list[int],
             settings: ReevalSettings) -> list[_Entry]:
    """The configs still tied for the best: scored on every base seed and every raced seed so far,
    with the best score over those (exactly equal scores: a saturated return such as CartPole's 500)."""
    sign = -1.0 if study.direction == optuna.study.StudyDirection.MAXIMIZE else 1.0
    all_seeds, how = [*seeds, *raced], selection_of(study, settings)
    scores = {id(e): aggregate([e.scores[s] for s in all_seeds], how)
              for e in entries if all(s in e.scores for s in all_seeds)}
    if not scores:
        return []
    best = min(sign * m for m in scores.values())
    return [e for e in entries if id(e) in scores and sign * scores[id(e)] == best]


def _summary(study: optuna.Study, entries: list[_Entry], seeds: list[int], s: ReevalSettings,
             wall: float, raced: list[int] | None = None, start: int | None = None) -> dict[str, Any]:
    """The stage's summary: every config's held-out scores and the winner.  ``start``: the trial that
    stands for the starting config (``None``: the one :func:`is_start` marks; a PBT study names its own)."""
    configs, how = [], selection_of(study, s)
    for e in entries:
        values = [e.scores[seed] for seed in seeds if seed in e.scores]
        mean = float(np.mean(values)) if values else None
        extra = [e.scores[seed] for seed in raced or [] if seed in e.scores]
        failed = any(seed in e.errors for seed in raced or [])  # a run that failed loses the race
        configs.append({
            "trial": e.trial.number, "params": e.trial.params, "tuning_value": e.trial.value,
            "scores": {str(seed): e.scores[seed] for seed in [*seeds, *(raced or [])] if seed in e.scores},
            "errors": {str(seed): msg for seed, msg in e.errors.items()},
            "mean": mean, "std": float(np.std(values)) if values else None,
            "score": aggregate(values, how) if values else None,  # what the answer is chosen by
            "gap": e.trial.value - mean if mean is not None and e.trial.value is not None else None,
            "complete": len(values) == len(seeds),
            "start": is_start(e.trial) if start is None else e.trial.number == start,  # the study's starting config
            # the mean over the base seeds and the seeds it raced on (ties between equal scores), and
            # the score there
            "race_mean": float(np.mean(values + extra)) if extra and not failed else None,
            "race_score": aggregate(values + extra, how) if extra and not failed else None,
            "race_failed": failed,
        })
    sign = -1.0 if study.direction == optuna.study.StudyDirection.MAXIMIZE else 1.0
    # equal base scores are ordered by the race (a config that raced further and stayed ahead wins;
    # one that never raced keeps its base score)
    def race(c: dict[str, Any]) -> float:
        if c["race_failed"]:
            return math.inf
        return sign * (c["race_score"] if c["race_score"] is not None else c["score"])

    # configs still tied after the race: the starting config first (tuning has to beat it; in a tuner=optuna
    # study it is trial 0, first anyway), then the lower trial number
    ranked = sorted((c for c in configs if c["complete"]),
                    key=lambda c: (sign * c["score"], race(c), not c["start"], c["trial"]))
    kept = keep_start(ranked, seeds, sign, s.keep_start)
    return {"seeds": seeds, "tie_seeds": list(raced or []), "episodes": s.episodes, "model": s.model,
            "aggregation": how,
            "top_k": s.top_k, "timeout": s.timeout, "wall_time_s": wall,
            "complete": all(c["complete"] for c in configs), "keep_start": s.keep_start, "kept_start": kept,
            "winner": (kept["start"] if kept else ranked[0]["trial"]) if ranked else None, "configs": configs}


def keep_start(ranked: list[dict[str, Any]], seeds: list[int], sign: float, margin: float) -> dict[str, Any] | None:
    """The one-standard-error rule (Hastie et al., *Elements of Statistical Learning*, 7.10): when the
    best held-out config leads the starting config by no more than ``margin`` standard errors of their
    paired per-seed differences (both trained on the same held-out seeds), the answer stays the
    starting config.  The best of several noisy held-out scores is biased upwards (the winner's
    curse), and the starting config, the defaults or a preset, is the prior that tuning must beat by
    more than the seeds' noise: a 20-minute Acrobot study answered with a config 10.9 ahead of the
    defaults on 3 held-out seeds (standard error 11.5) that scored 26.7 below them on 10 test seeds.

    The lead is the difference of the two held-out scores (the stage's aggregation); the standard
    error is that of the mean of the per-seed differences.  Returns what the decision rests on, or
    ``None`` when the rule does not apply: it is off (``margin`` 0), the best config is the start, the
    start did not finish every seed, their scores tie (a race decides that, as between any tied
    configs) or there are fewer than 2 seeds (no spread to measure)."""
    start = next((c for c in ranked if c["start"]), None)
    if margin <= 0 or not ranked or start is None or ranked[0] is start or len(seeds) < 2:
        return None
    best = ranked[0]
    lead = sign * (start["score"] - best["score"])  # > 0: the best is ahead
    if lead <= 0:
        return None
    diffs = np.array([-sign * (best["scores"][str(k)] - start["scores"][str(k)]) for k in seeds])
    se = standard_error(diffs)
    if lead > margin * se:
        return None
    return {"start": start["trial"], "candidate": best["trial"], "lead": float(lead), "se": se, "margin": margin}


def _store(study: optuna.Study, summary: dict[str, Any]) -> None:
    """Per-config results and the winner as study user attributes, and a note for the dashboard."""
    for c in summary["configs"]:
        study.set_user_attr(f"{ATTR_PREFIX}{c['trial']:04d}", {
            "scores": c["scores"], "episodes": summary["episodes"], "model": summary["model"], "mean": c["mean"], "std": c["std"],
            "tuning_value": c["tuning_value"], "gap": c["gap"]})
    study.set_user_attr("heldout_winner", summary["winner"])
    study.set_user_attr("heldout_seeds", summary["seeds"])
    try:
        from optuna_dashboard import save_note
    except ImportError:  # the dashboard is optional for this: the attributes hold everything
        return
    save_note(study, "## Held-out re-evaluation\n\n```\n" + format_reevaluation(summary) + "\n```\n")


def format_reevaluation(summary: dict[str, Any]) -> str:
    """A plain-text table of a re-evaluation summary (best held-out score first; the score is the mean
    unless the study aggregates its seeds otherwise, then a column of its own)."""
    how = summary.get("aggregation", "mean")
    rows = [["trial", "tuning", "held-out mean", "std", "gap", "per seed"]]
    if how != "mean":
        rows[0].insert(2, f"held-out {how}")
    key = lambda c: (c.get("score", c["mean"]) is None, -(c.get("score", c["mean"]) or 0.0))  # noqa: E731
    for c in sorted(summary["configs"], key=key):
        per_seed = ", ".join(f"{s}: {v:.4g}" for s, v in c["scores"].items())
        if c["errors"]:
            per_seed += ("; " if per_seed else "") + "; ".join(f"{s}: {m}" for s, m in c["errors"].items())
        rows.append([str(c["trial"]) + (" (start)" if c.get("start") else ""), _fmt(c["tuning_value"]), _fmt(c["mean"]), _fmt(c["std"]), _fmt(c["gap"]),
                     per_seed])
        if how != "mean":
            rows[-1].insert(2, _fmt(c.get("score")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join([c.ljust(w) for c, w in zip(r, widths)] + [r[-1]]) for r in rows]
    head = (f"held-out re-evaluation: seeds {summary['seeds']}, {summary['episodes']} deterministic episodes "
            f"per run ({summary.get('model', 'final')} weights), {summary['wall_time_s']:.1f} s"
            + (f"; the answer is the best held-out {how} over seeds" if how != "mean" else "")
            + (f"; configs tied for the best raced on seeds {summary['tie_seeds']}" if summary.get("tie_seeds") else "")
            + ("" if summary["complete"] else f" (interrupted by {summary['interrupted']}: incomplete)"
               if summary.get("interrupted") else " (time limit: incomplete)"))
    tail = (f"held-out winner: trial {summary['winner']}" if summary["winner"] is not None
            else "no config finished every held-out seed")
    kept = summary.get("kept_start")
    if kept:
        tail += (f" (the starting config: trial {kept['candidate']}'s lead of {kept['lead']:.4g} is within "
                 f"{kept['margin']:g} standard error{'' if kept['margin'] == 1 else 's'} of their per-seed "
                 f"differences, {kept['se']:.4g}; "
                 "tuner.reevaluate.keep_start)")
    return "\n".join([head, *lines, tail])


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.4g}"
