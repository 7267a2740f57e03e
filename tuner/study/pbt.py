"""Population-based training on an Optuna study (``tuner=pbt``; Jaderberg et al. 2017,
https://arxiv.org/abs/1711.09846).

``tuner.population`` members train side by side in segments of ``tuner.interval`` env steps, for
``tuner.generations`` segments each.  After every generation the members are ranked by their segment
score; the bottom quantile copies the weights, optimizer state and hyperparameters of a top member
(exploit) and perturbs the hyperparameters (explore): :mod:`tuner.study.pbt_rules`, seeded, pure.
With ``tuner.n_seeds`` > 1 a member is its config and schedule trained on that many seeds, each with its
own weights (seed ``i`` continues its parent's seed ``i``), and its score their ``tuner.aggregation``:
exploit then ranks members on several seeds, not on one seed's luck.

Design (the simplest that fits this project's study driver):

* **one Optuna trial per member segment**, in the configured storage (the journal by default): params =
  the hyperparameters in force, value = the segment's score, user attrs ``pbt_member``,
  ``pbt_generation``, ``pbt_parent`` (the member it continued from: itself unless it exploited),
  ``pbt_parent_trial``, ``pbt_changes`` (what explore perturbed), ``init_from`` and ``checkpoint`` (and
  ``checkpoints``, one per seed, when a member trains several); so
  optuna-dashboard shows the population, and the storage *is* the PBT state;
* every segment trains in a fresh process through the same :class:`~tuner.study.runner.TrialRunner` as
  every ``tuner=optuna`` trial (liveness, heartbeats, timeouts, ``n_jobs`` at once, Ctrl-C), and writes
  ``<study_dir>/members/<member>/gen_<g>/`` (``config.yaml``, ``result.json``, ``model.npz`` and the full
  ``checkpoint.npz`` the next generation starts from: :func:`tuner.run.train.continue_from`);
* generations are synchronous: a generation's segments start once every segment of the one before is
  COMPLETE; its plan is recomputed from the stored scores and the seed whenever it is needed, so a
  driver killed at any point and re-run with the same command reuses every COMPLETE segment, fails the
  RUNNING ones the dead driver left (the runner's zombie check) and runs them again;
* a generation waits for its slowest member, so its segments start dearest first (estimated by
  :func:`tuner.config.search_cost.trial_seconds`: a member with small minibatches and many epochs
  makes several times the gradient updates of another), and the cheap ones fill the other slots.

At the end ``pbt_schedule.yaml`` (the winner's hyperparameters per generation, following its lineage),
``best_config.yaml`` (the winner's last segment's config) and ``pbt.json`` are written to the study dir;
with ``tuner.seeds.test`` the schedule, and the starting config held constant, are then replayed on test seeds
and scored (:mod:`tuner.study.pbt_test`).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field, fields
from typing import Any, Sequence

import optuna
import yaml
from omegaconf import DictConfig, OmegaConf
from optuna.trial import TrialState

from ..common.errors import ConfigError, first_line
from ..common.messages import TrialSpec
from ..common.redact import scrub
from ..config.schema import validate
from ..config.search import default_params, distributions, suggest_conditional, to_overrides
from ..config.search_cost import cost_base, seconds_with
from ..logs.results import write_json
from ..logs.wandb_logger import trial_meta
from .attrs import integer, mapping, text
from .best_config import trial_config_body
from .driver import Composer, Driver
from .pb2 import pb2_explore, pb2_rng
from .pbt_rules import Step, exploit_explore, initial_population
from .protocol import no_test_stage, pick_test_seeds
from .runner import DONE, HEARTBEAT_GRACE_S, NO_DRIVER_GRACE_S, OPEN, WAIT, RunLimits, TrialRunner
from .settings import TunerSettings, tuner_settings

__all__ = ["PbtSettings", "pbt_settings", "PbtDriver", "lineage", "check_test_seeds", "member_checkpoints"]

MEMBER, GENERATION, PARENT = "pbt_member", "pbt_generation", "pbt_parent"
#: study user attr of the held-out stage's choice (tuner/study/pbt_heldout.py): {"generation", "winner"}
HELDOUT_CHOICE = "pbt_heldout"
#: parameters explore leaves alone by default: they change a network's or a buffer's shape, which a
#: copied checkpoint cannot take (exploit still copies them from the parent); SAC's use_sde changes
#: the actor's output layer and adds its gSDE log std, and its ent_coef "auto" adds the temperature
FROZEN = ("agent.hidden_size", "agent.activation", "agent.n_steps", "agent.n_envs", "buffer.pool_size",
          "agent.use_sde", "agent.n_critics", "agent.ent_coef")


@dataclass
class PbtSettings(TunerSettings):
    """``tuner=pbt``: the study settings of ``tuner=optuna`` (:class:`TunerSettings`, with the keys every
    study shares from :mod:`tuner.study.study_schema`) and the population's own."""

    population: int = 4
    generations: int = 4
    interval: int = 2000
    quantile: float = 0.25
    resample_p: float = 0.25
    explore: str = "pbt"  # pbt: x0.8 / x1.2 and neighbours; pb2: intervals from a GP bandit (tuner/study/pb2.py)
    frozen: list[str] = field(default_factory=lambda: list(FROZEN))
    seed: int | None = None  # null: the config's seed
    # a pbt_schedule.yaml: train one member through its hyperparameters generation by generation
    replay: str | None = None
    schedule: list[dict[str, Any]] = field(default_factory=list)  # read from ``replay``


_PBT_KEYS = ("population", "generations", "interval", "quantile", "resample_p", "explore", "frozen", "seed", "replay")


def pbt_settings(node: Any) -> PbtSettings:
    """Typed, checked settings of ``tuner=pbt``: the study settings (:func:`tuner_settings`) plus PBT's."""
    if OmegaConf.is_config(node):
        node = OmegaConf.to_container(node, resolve=True)
    node = dict(node)
    own = {k: node.pop(k) for k in _PBT_KEYS if k in node}
    # no test stage unless tuner.seeds.test asks for one (conf/tuner/pbt.yaml says 0; tuner=optuna's default is 3)
    node["seeds"] = {"test": 0, **dict(node.get("seeds") or {})}
    node["name"] = "optuna"
    base = tuner_settings(node)
    s = PbtSettings(**{f.name: getattr(base, f.name) for f in fields(base)})
    s.name = "pbt"
    for key, value in own.items():
        setattr(s, key, list(value) if key == "frozen" and value is not None else value)
    if s.replay:
        _read_schedule(s)
    checks = [
        (isinstance(s.population, int) and (s.population >= 2 or s.replay), f"tuner.population: must be an integer >= 2, got {s.population}"),
        (isinstance(s.generations, int) and s.generations >= 1, f"tuner.generations: must be an integer >= 1, got {s.generations}"),
        (isinstance(s.interval, int) and s.interval >= 1, f"tuner.interval: must be a number of env steps >= 1, got {s.interval}"),
        (0.0 < s.quantile <= 0.5, f"tuner.quantile: must be in (0, 0.5], got {s.quantile}"),
        (0.0 <= s.resample_p <= 1.0, f"tuner.resample_p: must be in [0, 1], got {s.resample_p}"),
        (s.explore in ("pbt", "pb2"), f"tuner.explore: must be pbt or pb2, got {s.explore!r}"),
        # tuner.n_seeds' range is the shared search keys' check (tuner_settings above)
        (not s.seeds.tuning, "tuner.seeds.tuning: PBT members train seeds of their own (seed + member x "
                             "tuner.n_seeds + i); leave the list empty and set tuner.n_seeds"),
    ]
    for ok, message in checks:
        if not ok:
            raise ConfigError(message)
    s.pruner = "none"  # a member is never stopped early: the bottom quantile is replaced instead
    return s


def check_test_seeds(settings: PbtSettings, seed: int) -> None:
    """:class:`ConfigError` (one line) when a listed test seed is one a member trains on (``seed + k`` for
    the population's ``population x n_seeds`` seeds)."""
    if not no_test_stage(settings.seeds):
        pick_test_seeds(settings.seeds.test, {seed + k for k in range(settings.population * settings.n_seeds)})


def _read_schedule(s: PbtSettings) -> None:
    """``tuner.replay``: one member, one generation per schedule entry, the schedule's interval."""
    try:
        with open(s.replay) as f:
            doc = yaml.safe_load(f.read(1 << 20))
        schedule, interval = doc["schedule"], int(doc["interval"])
        if not isinstance(schedule, list) or not schedule or not all(isinstance(e.get("params"), dict) for e in schedule):
            raise ValueError("no schedule entries with params")
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"tuner.replay: {s.replay} is not a readable pbt_schedule.yaml ({first_line(exc)})") from None
    s.schedule = [dict(e["params"]) for e in schedule]
    s.population, s.generations, s.interval = 1, len(schedule), interval


class PbtDriver(Driver):
    """Runs a PBT study to its last generation (see the module docstring)."""

    progress_label = ""  # what each generation's line starts with

    def __init__(self, cfg: DictConfig, settings: PbtSettings, compose: Composer, overrides: list[str]) -> None:
        self.pbt = settings
        self.seed = int(settings.seed if settings.seed is not None else cfg.seed)
        if not settings.replay:  # a test seed a member trains on: one line before anything is made
            check_test_seeds(settings, int(cfg.seed))
        super().__init__(cfg, settings, compose, overrides)
        self.members_dir = os.path.join(self.study_dir, "members")
        try:  # the study driver made trials/ for its trials; a PBT study's segments live in members/
            os.rmdir(os.path.join(self.study_dir, "trials"))
        except OSError:
            pass
        self._plans: dict[int, list[Step]] = {}
        self._cost_of = seconds_with(segment_cost_base(cfg, settings.interval))

    def _enqueue(self, cfg: DictConfig, settings: TunerSettings) -> None:
        s = self.pbt
        mine = {"population": s.population, "interval": s.interval, "quantile": s.quantile,
                "resample_p": s.resample_p, "frozen": list(s.frozen), "seed": self.seed,
                "replay": s.schedule or None, "enqueue_defaults": settings.enqueue_defaults, "n_seeds": s.n_seeds}
        old = mapping(self.study.user_attrs.get("pbt"))  # an odd record (a hand-edited journal) checks nothing
        if old and settings.resume != "force":
            old = {"n_seeds": 1, **old}  # studies from before members could train several seeds trained one
            # tuner.generations may grow (train on); anything else would change segments already recorded
            for key, value in mine.items():
                if key in old and old[key] != value:
                    raise ConfigError(f"tuner.{key}: PBT study {settings.study_name!r} ran with {old[key]!r}, this "
                                      f"command gives {value!r} (keep it, use another tuner.study_name, or "
                                      "tuner.resume=force)")
        self.study.set_user_attr("pbt", {**mine, "generations": s.generations})
        # the report's AutoRL checklist names the optimiser: PBT's, not the Optuna sampler it never asks
        self.study.set_user_attr("optimiser", {"sampler": s.explore, "pruner": "none (exploit replaces the bottom "
                                               "quantile)", "n_jobs": s.n_jobs, "aggregation": s.aggregation})
        self.first = default_params(self.space, cfg) if settings.enqueue_defaults else {}
        # a config-group choice (optimizer, buffer) builds other objects, whose state a copied checkpoint
        # cannot fill: exploit copies it, explore leaves it alone
        self.frozen = [*s.frozen, *(p.name for p in self.space if p.is_group)]

    # -- the state, read from the study --------------------------------------------------------
    def segments(self, states: Sequence[TrialState] = (TrialState.COMPLETE,)) -> dict[tuple[int, int], Any]:
        """``(member, generation) -> trial`` of the study's segments in ``states`` (the first of each)."""
        out: dict[tuple[int, int], Any] = {}
        for t in self.study.get_trials(deepcopy=False, states=tuple(states)):
            key = segment_key(t)
            if key is not None:
                out.setdefault(key, t)
        return out

    def plan(self, generation: int, done: dict[tuple[int, int], Any]) -> list[Step]:
        """Generation ``generation``'s steps (generation 0: the initial population; later: exploit and
        explore on the scores of the generation before, all of which must be COMPLETE)."""
        if generation not in self._plans:
            s = self.pbt
            if s.replay:  # each member (one; a test stage: one per test seed) follows the schedule from its own checkpoint
                steps = [Step(m, m, dict(s.schedule[generation])) for m in range(s.population)]
            elif generation == 0:
                pop = initial_population(self.space, s.population, self.seed, self.first)
                steps = [Step(m, m, p) for m, p in enumerate(pop)]
            else:
                before = [done[(m, generation - 1)] for m in range(s.population)]
                steps = exploit_explore([t.value for t in before], [t.params for t in before], self.space,
                                        self.seed, generation, s.quantile, s.resample_p,
                                        s.direction == "maximize", self.frozen)
                if s.explore == "pb2":  # the exploiting members' intervals from the GP bandit instead
                    history = {k: (t.value, parent_of(t, k, done), t.params) for k, t in done.items() if k[1] < generation}
                    steps = pb2_explore(steps, history, self.space, pb2_rng(self.seed, generation), generation,
                                        self.frozen, s.direction == "maximize")
            self._plans[generation] = steps
        return self._plans[generation]

    # -- the runner's callbacks ----------------------------------------------------------------
    def _ask(self) -> tuple[str, optuna.Trial | None]:
        """The next segment to run: the first generation not yet COMPLETE; WAIT while it runs."""
        done = self.segments()
        running = set(self.segments((TrialState.RUNNING,)))
        for g in range(self.pbt.generations):
            missing = [m for m in range(self.pbt.population) if (m, g) not in done]
            if not missing:
                continue
            todo = [m for m in missing if (m, g) not in running]
            if not todo:
                return WAIT, None
            return OPEN, self._new_segment(self.dearest(self.plan(g, done), todo), g, done, running)
        return DONE, None

    def dearest(self, steps: list[Step], todo: list[int]) -> Step:
        """The step of ``todo``'s members estimated dearest (a tie: the lowest member)."""
        return steps[max(todo, key=lambda m: (self._cost_of(steps[m].params), -m))]

    def _new_segment(self, step: Step, g: int, done: dict, running: set) -> optuna.Trial:
        """A trial for ``step`` (enqueued with its params, then asked).  A queued segment that a killed
        driver left WAITING comes out of ``ask()`` first: it is used when still needed (its params are
        the plan's), else failed."""
        attrs = {MEMBER: step.member, GENERATION: g, PARENT: step.parent}
        queued = [t for t in self.study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
                  if segment_key(t) == (step.member, g)]
        if not queued:  # ours is in the queue, so the loop below ends at it at the latest
            self.study.enqueue_trial(step.params, user_attrs=attrs)
        while True:
            trial = self.study.ask(distributions(self.space))
            suggest_conditional(trial, self.space)  # the enqueued values of e.g. buffer.alpha under buffer=prioritized
            key = segment_key(trial)
            if key is not None and key not in done and key not in running:
                return trial
            self.study._storage.set_trial_user_attr(trial._trial_id, "fail_reason", "stale queued PBT segment")
            self.study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)

    def _prepare(self, trial: optuna.Trial) -> TrialSpec:
        m, g = trial.user_attrs[MEMBER], trial.user_attrs[GENERATION]
        step = self.plan(g, self.segments())[m]
        run_dir = self._run_dir(m, g)
        n = self.pbt.n_seeds
        init_from: list[str | None] = [None] * n
        if g > 0:
            parent = self.segments()[(step.parent, g - 1)]
            init_from = member_checkpoints(parent)
            trial.set_user_attr("pbt_parent_trial", parent.number)
            if len(init_from) != n:
                raise ConfigError(f"member {step.parent}'s segment of generation {g - 1} saved {len(init_from)} "
                                  f"checkpoint(s); a member of this study trains {n} seeds")
            missing = [p for p in init_from if not p or not os.path.isfile(p)]
            if missing:
                raise ConfigError(f"member {step.parent}'s checkpoint of generation {g - 1} is missing: {missing[0]}")
        trial.set_user_attr("pbt_changes", {k: list(v) for k, v in step.changes.items()})
        trial.set_user_attr("run_dir", run_dir)
        trial.set_user_attr("init_from", init_from[0] if n == 1 else init_from)
        overrides = to_overrides(trial.params, self.space)
        trial.set_user_attr("overrides", overrides)
        cfg = validate(self._compose_trial(trial, overrides), check_env=False)
        cfg.tuner = {"name": "none"}
        cfg.logger.p = 0
        # each member its own seeds (evaluations share eval.seed): seed i of a member continues seed i of
        # its parent, so a member of several seeds is several runs of one schedule, scored by their aggregate
        first = self._member_seed(int(cfg.seed), m)
        cfg.seed = first
        # values relative to the budget (${budget_fraction:...}: DQN's epsilon decay) and linear_decay's
        # schedules span the member's whole training, as in one run of that length; the segment trains
        # its interval of it (the saved config.yaml is the member's whole run)
        whole = cfg.budget.steps = self.pbt.generations * self.pbt.interval
        os.makedirs(run_dir, exist_ok=True)
        OmegaConf.save(OmegaConf.create(scrub(OmegaConf.to_container(cfg), ())), os.path.join(run_dir, "config.yaml"))
        plain = OmegaConf.to_container(cfg, resolve=True)
        plain["budget"]["steps"], plain["schedule_steps"] = self.pbt.interval, whole
        configs = []
        for i in range(n):
            # read by tuner.run.train only (not the config's init_from: that warm start of weights applies
            # too, before this full checkpoint replaces them)
            one = self._segment_config(copy.deepcopy(plain), m, g)
            one.update(seed=first + i, continue_from=init_from[i], save_checkpoint=True)
            configs.append(one)
        # the trial worker trains a config per seed in <run_dir>/seed_<seed>/ when there are several
        saved = [os.path.join(run_dir, *([f"seed_{c['seed']}"] if n > 1 else []), "checkpoint.npz") for c in configs]
        trial.set_user_attr("checkpoint", saved[0])  # the member's weights (its first seed's), as the outputs name them
        if n > 1:
            trial.set_user_attr("checkpoints", saved)
        trial.set_user_attr("tuning_seeds", [c["seed"] for c in configs])
        return TrialSpec(trial=trial.number, backend=plain["backend"]["name"], run_dir=run_dir, configs=configs,
                         report_every=self.s.report_every, aggregation=self.pbt.aggregation,
                         memory_mb=self.s.trial_memory_mb, log_path=os.path.join(run_dir, "trial.log"),
                         wandb=trial_meta(self.s.study_name, trial.number, trial.params))

    def _run_dir(self, member: int, generation: int) -> str:
        """Where a segment trains (a test stage's driver names it by the seed)."""
        return os.path.join(self.members_dir, str(member), f"gen_{generation}")

    def _member_seed(self, seed: int, member: int) -> int:
        """The first seed member ``member`` trains on: the config's ``seed + member x n_seeds`` (its others
        follow it)."""
        return seed + member * self.pbt.n_seeds

    def _segment_config(self, plain: dict[str, Any], member: int, generation: int) -> dict[str, Any]:
        """A hook on a segment's resolved config (a test stage's driver sets its last evaluation)."""
        return plain

    def run(self, on_change: Any = None) -> None:
        s = self.pbt
        limits = RunLimits(n_jobs=s.n_jobs, trial_timeout=s.trial_timeout,
                           max_failures=s.max_failures if s.max_failures is not None else s.population,
                           timeout=s.timeout, preload=s.preload,
                           heartbeat_grace_s=HEARTBEAT_GRACE_S, no_driver_grace_s=NO_DRIVER_GRACE_S)
        self.runner = TrialRunner(self.study, self.lock, limits)
        self._said = -1
        self._progress()
        self.runner.run(self._ask, self._prepare, self._progress)

    def _progress(self) -> None:
        """One line per newly complete generation: its scores and who copied whom."""
        done, s = self.segments(), self.pbt
        for g in range(self._said + 1, s.generations):
            if not all((m, g) in done for m in range(s.population)):
                break
            segs = [done[(m, g)] for m in range(s.population)]
            parents = [parent_of(t, (m, g), done) for m, t in enumerate(segs)]
            copies = ", ".join(f"{m}<-{p}" for m, p in enumerate(parents) if p != m)
            print(f"{self.progress_label}generation {g}: scores {' '.join(f'{t.value:.4g}' for t in segs)}"
                  f"{f' (copied: {copies})' if copies else ''}", flush=True)
            self._said = g

    # -- outputs -------------------------------------------------------------------------------
    def answer(self, done: dict[tuple[int, int], Any] | None = None) -> tuple[int, int, Any, list[dict[str, Any]]] | None:
        """The answer: the member the held-out stage chose for the last complete generation
        (:mod:`tuner.study.pbt_heldout`), else the best-scoring member of that generation; that generation,
        the member's segment in it and its schedule (:func:`lineage`).  When the held-out stage chose the
        starting config, member 0's first segment and its first hyperparameters held for every generation.
        ``None`` while no generation is complete.  ``done``: the study's complete segments when the caller
        has read them already."""
        done = self.segments() if done is None else done
        s = self.pbt
        last = max((g for g in range(s.generations) if all((m, g) in done for m in range(s.population))),
                   default=None)
        if last is None:
            return None
        chosen = self._heldout_choice(done, last)
        if chosen == "start":
            first = done[(0, 0)]
            step = {"member": 0, "trial": first.number, "score": first.value, "params": dict(first.params), "parent": 0}
            return 0, last, first, [{"generation": g, **step} for g in range(last + 1)]
        if chosen is not None:
            return chosen, last, done[(chosen, last)], lineage(done, chosen, last)
        scores = [done[(m, last)].value for m in range(s.population)]
        maximize = s.direction == "maximize"
        winner = max(range(s.population), key=lambda m: (scores[m] if maximize else -scores[m], -m))
        return winner, last, done[(winner, last)], lineage(done, winner, last)

    def _heldout_choice(self, done: dict[tuple[int, int], Any], last: int) -> int | str | None:
        """The held-out stage's choice for generation ``last``: a member, ``"start"`` (the starting config
        held constant) or ``None`` (no stage, or one that chose for another generation: the population
        has trained on since).  The stored attr is data: anything else is no choice."""
        choice = self.study.user_attrs.get(HELDOUT_CHOICE)
        if not isinstance(choice, dict) or choice.get("generation") != last or not isinstance(choice.get("winner"), int):
            return None
        for m in range(self.pbt.population):
            if done[(m, last)].number == choice["winner"]:
                return m
        first = done.get((0, 0))
        return "start" if self.pbt.enqueue_defaults and first is not None and first.number == choice["winner"] else None

    def write_outputs(self, test: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """``pbt_schedule.yaml``, ``best_config.yaml`` and ``pbt.json`` (with ``test``, the test stage's
        summary: :mod:`tuner.study.pbt_test`) from the study's segments; ``None`` while no generation
        is complete."""
        done, s = self.segments(), self.pbt
        found = self.answer(done)  # one read of the study's segments for the answer and the summary
        if found is None:
            return None
        winner, last, final, schedule = found
        scores = [done[(m, last)].value for m in range(s.population)]
        held_out = self._heldout_choice(done, last) is not None
        # the answer's PBT weights (none when it is the starting config held constant: no member trained that)
        weights = (text(final.user_attrs.get("checkpoint")) or None) if final is done[(winner, last)] else None
        schedule_doc = {"winner": winner, "generation": last, "score": final.value, "interval": s.interval,
                        "chosen_by": "held-out seeds" if held_out else "score", "schedule": schedule}
        with open(os.path.join(self.study_dir, "pbt_schedule.yaml"), "w") as f:
            f.write("# the winning member's hyperparameters per generation (each segment: tuner.interval env steps),\n"
                    "# following its lineage back through the members it copied (exploit); chosen_by: the last\n"
                    "# generation's best score, or the held-out stage (tuner.reevaluate.top_k)\n")
            yaml.safe_dump(schedule_doc, f, sort_keys=False)
        run_dir = text(final.user_attrs.get("run_dir"))  # "" (a bad record) must not read ./config.yaml
        config = os.path.join(run_dir, "config.yaml") if run_dir else ""
        cfg = None
        if config and os.path.isfile(config):
            cfg = OmegaConf.load(config)
            cfg.budget.steps = (last + 1) * s.interval  # what the winner trained in all
            with open(os.path.join(self.study_dir, "best_config.yaml"), "w") as f:
                if weights:
                    f.write(f"# PBT winner: member {winner}'s hyperparameters in its last generation ({last}), trained "
                            f"from scratch for the\n# whole budget (not its schedule: pbt_schedule.yaml); its PBT "
                            f"weights: {weights}\n")
                else:
                    f.write("# PBT's answer, chosen on held-out seeds: the starting config (member 0's first "
                            "hyperparameters), trained\n# from scratch for the whole budget\n")
                f.write(trial_config_body(OmegaConf.to_container(cfg), final, "none"))
        summary = {"study_name": s.study_name, "storage": self.storage_desc, "population": s.population,
                   "generations_complete": last + 1, "generations": s.generations, "winner": winner,
                   "winner_score": final.value, "chosen_by": schedule_doc["chosen_by"], "winner_checkpoint": weights,
                   "scores_last_generation": scores, "schedule": schedule,
                   "segments": [{"member": m, "generation": g, "trial": t.number, "value": t.value,
                                 "parent": parent_of(t, (m, g), done), "params": t.params}
                                for (m, g), t in sorted(done.items(), key=lambda kv: (kv[0][1], kv[0][0]))],
                   **({"test": test} if test is not None else {})}
        write_json(os.path.join(self.study_dir, "pbt.json"), summary)
        if cfg is not None and not s.replay:
            self._write_replay(cfg, final, os.path.join(self.study_dir, "pbt_schedule.yaml"))
        return summary

    def _write_replay(self, cfg: DictConfig, trial: Any, schedule: str) -> None:
        """``replay_config.yaml``: the winner's config as a ``tuner=pbt`` run of one member that follows
        ``schedule`` (its own study in ``<study_dir>/replay``)."""
        s = self.pbt
        cfg = OmegaConf.create(OmegaConf.to_container(cfg))
        # the command's whole tuner node (every key tuner=pbt composes, so the file's defaults list composes
        # back to it), with the replay's own settings over it
        node = OmegaConf.to_container(self.cfg.tuner, resolve=True)
        cfg.tuner = {**node, "name": "pbt", "replay": os.path.abspath(schedule), "study_name": f"{s.study_name}-replay",
                     "study_dir": os.path.join(self.study_dir, "replay"),
                     # a journal of its own: the replay's study is no sibling of the studies beside the PBT dir
                     "storage": os.path.join(self.study_dir, "replay", "journal.log"), "population": 1,
                     "interval": s.interval, "n_jobs": 1, "enqueue_defaults": False,
                     "max_cost_ratio": s.max_cost_ratio,
                     # the replay is the test stage's run, not a study with a test stage of its own
                     "seeds": {**dict(node.get("seeds") or {}), "test": 0}}
        with open(os.path.join(self.study_dir, "replay_config.yaml"), "w") as f:
            f.write("# trains one member from scratch through the PBT winner's hyperparameter schedule "
                    "(pbt_schedule.yaml):\n# note-tune --config-dir <this dir> --config-name replay_config\n")
            f.write(trial_config_body(OmegaConf.to_container(cfg), trial, "pbt"))


def segment_cost_base(cfg: Any, interval: int) -> dict[str, Any]:
    """The cost keys of a member's segment (``trial_seconds`` over these and the member's params): its
    ``interval`` env steps whatever the member's values (the budget's cap spans the whole run)."""
    return {**cost_base(cfg), "budget.steps": interval, "budget.max_updates": None}


def lineage(done: dict[tuple[int, int], Any], member: int, generation: int) -> list[dict[str, Any]]:
    """The hyperparameters in force for ``member``'s weights in each generation up to ``generation``:
    following each segment's ``pbt_parent`` back (an exploiting member's earlier weights are its
    parent's), oldest first."""
    out = []
    m = member
    for g in range(generation, -1, -1):
        t = done[(m, g)]
        parent = parent_of(t, (m, g), done)
        out.append({"generation": g, "member": m, "trial": t.number, "score": t.value,
                    "params": dict(t.params), "parent": parent})
        m = parent
    return out[::-1]


def member_checkpoints(segment: Any) -> list[str]:
    """The checkpoints a segment saved, one per seed of its member (``checkpoints``; a member of one seed
    records only ``checkpoint``).  Stored attrs are data: anything but paths reads as none."""
    many = segment.user_attrs.get("checkpoints")
    if isinstance(many, list):
        return [text(p) for p in many]
    return [text(segment.user_attrs.get("checkpoint"))]


def segment_key(t: Any) -> tuple[int, int] | None:
    """A trial's ``(member, generation)`` record; None when either is not a count (stored attrs are
    data: a trial of a hand-edited journal whose record is odd is no segment, and PBT runs that one
    again)."""
    member, generation = integer(t.user_attrs.get(MEMBER)), integer(t.user_attrs.get(GENERATION))
    if member is None or generation is None or member < 0 or generation < 0:
        return None
    return member, generation


def parent_of(t: Any, key: tuple[int, int], done: dict[tuple[int, int], Any]) -> int:
    """The member whose weights segment ``t`` (``key``: its member and generation) started from
    (``pbt_parent``): a member with a complete segment in the generation before; else (generation 0,
    or an odd record) its own member."""
    member, generation = key
    parent = integer(t.user_attrs.get(PARENT))
    return parent if parent is not None and (parent, generation - 1) in done else member
