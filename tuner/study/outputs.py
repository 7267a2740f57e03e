"""What a study leaves in its directory: ``study.json``, ``best_config.yaml`` and a summary table."""

from __future__ import annotations

import os
from typing import Any

import optuna
from omegaconf import OmegaConf
from optuna.trial import TrialState

from ..common.redact import redact_text, scrub
from ..logs.results import write_json
from .attrs import integer, mapping, number, seed_list, text, trial_index
from .best_config import trial_config_body

__all__ = ["study_summary", "write_outputs", "summary_table", "rerun_command", "study_answer", "format_cell",
           "SOURCES", "PBT_ANSWER", "record_optimiser"]

#: how the outputs name where the study's answer was chosen (its ``source``)
SOURCES = {"heldout": "held-out winner", "tuning": "best tuning score", "pbt": "PBT winner's schedule"}
#: study user attr of a PBT study whose test stage ran: the winner's last segment (:mod:`tuner.study.pbt_test`)
PBT_ANSWER = "pbt_answer"


def record_optimiser(study: optuna.Study, settings: Any, prefix: str, sampler: Any, n_startup_trials: int) -> None:
    """Record how a study searches (user attr ``optimiser``: the report's AutoRL checklist shows it beside
    the budget; the held-out stage reads its ``aggregation``).  ``settings`` gives the pruner, n_jobs,
    aggregation, max_runs and max_cpu_s (``tuner=optuna``'s settings or the sweeper's conf); ``prefix`` names the
    budget's key as the user typed it (``tuner``, ``hydra.sweeper``)."""
    def plain(node: Any) -> Any:  # a config node as plain containers, which a study attribute can hold
        return OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node

    study.set_user_attr("optimiser", {"sampler": plain(sampler), "pruner": plain(settings.pruner),
                                      "n_startup_trials": n_startup_trials, "n_jobs": settings.n_jobs,
                                      "aggregation": settings.aggregation, "max_runs": settings.max_runs,
                                      "max_runs_key": f"{prefix}.max_runs", "max_cpu_s": settings.max_cpu_s,
                                      "max_cpu_s_key": f"{prefix}.max_cpu_s"})


def rerun_command(study_dir: str, config_name: str = "best_config") -> str:
    """The command that trains the study's best configuration again, with the study directory
    relative to the current directory when it lies below it (what a user copies and pastes)."""
    path = os.path.relpath(study_dir)
    if path.startswith(os.pardir):
        path = os.path.abspath(study_dir)
    return f"note-tune --config-dir {path} --config-name {config_name}"


def _best(study: optuna.Study) -> optuna.trial.FrozenTrial | None:
    try:
        return study.best_trial
    except ValueError:  # no completed trial yet
        return None


def study_answer(study: optuna.Study) -> dict[str, Any] | None:
    """The study's one answer, as every output names it: the held-out winner (study user attr
    ``heldout_winner``) when the held-out stage chose one, else the best tuning trial; with its
    tuning score, held-out mean and test mean (``test`` stage) where they exist, and the best tuning
    score beside it (which may be another trial's: selection among noisy one-seed scores).  A PBT
    study's answer, once its test stage ran, is the winner's last segment (user attr ``pbt_answer``)."""
    best = _best(study)
    if best is None:
        return None
    trials = study.get_trials(deepcopy=False)
    winner = trial_index(study.user_attrs.get("heldout_winner"), len(trials))
    pbt = trial_index(study.user_attrs.get(PBT_ANSWER), len(trials))
    trial, source = best, "tuning"
    if pbt is not None:
        trial, source = trials[pbt], "pbt"
    elif winner is not None:
        trial, source = trials[winner], "heldout"
    held = mapping(study.user_attrs.get(f"heldout:{trial.number:04d}"))
    test = mapping(study.user_attrs.get("test"))
    tested = integer(test.get("answer_trial")) == trial.number
    return {"trial": trial.number, "source": source, "params": trial.params, "tuning_value": trial.value,
            "heldout_mean": number(held.get("mean")), "test_mean": number(test.get("answer_mean")) if tested else None,
            "test_seeds": seed_list(test.get("seeds")) if tested else None,
            "start_trial": integer(test.get("start_trial")) if tested else None,
            "start_test_mean": number(test.get("start_mean")) if tested else None,
            "verdict": (text(test.get("verdict")) or None) if tested else None,
            "best_tuning_trial": best.number, "best_tuning_value": best.value}


def describe_answer(answer: dict[str, Any]) -> str:
    """One line naming the answer, its scores, and the best tuning score labelled as such."""
    def fmt(v: Any) -> str:
        return "-" if v is None else f"{v:.4g}"

    how = SOURCES.get(answer["source"], answer["source"])
    parts = [f"answer: trial {answer['trial']} ({how})", f"tuning score {fmt(answer['tuning_value'])}"]
    if answer.get("heldout_mean") is not None:
        parts.append(f"held-out mean {fmt(answer['heldout_mean'])}")
    if answer.get("test_mean") is not None:
        parts.append(f"test mean {fmt(answer['test_mean'])} on seeds {answer['test_seeds']}")
    if answer["best_tuning_trial"] != answer["trial"]:
        parts.append(f"best tuning score {fmt(answer['best_tuning_value'])} was trial {answer['best_tuning_trial']}")
    return "; ".join(parts)


def study_summary(study: optuna.Study, study_dir: str, storage: str) -> dict[str, Any]:
    trials = study.get_trials(deepcopy=False)
    count = {s: sum(t.state == s for t in trials) for s in TrialState}
    best = _best(study)
    answer = study_answer(study)
    return {
        "study_name": study.study_name,
        "storage": storage,
        "direction": study.direction.name.lower(),
        # the study's one answer (held-out winner, else best tuning trial) with its tuning/held-out/test scores
        "answer": answer,
        "answer_trial": answer["trial"] if answer else None,
        # best_*: the best *tuning* score (one noisy evaluation per trial), which may not be the answer
        "best_value": best.value if best else None,
        "best_params": best.params if best else None,
        "best_trial": best.number if best else None,
        "n_trials": len(trials),
        "n_complete": count[TrialState.COMPLETE],
        "n_pruned": count[TrialState.PRUNED],
        "n_failed": count[TrialState.FAIL],
        "n_running": count[TrialState.RUNNING],
        "best_config": os.path.join(study_dir, "best_config.yaml") if best else None,
        "rerun_command": rerun_command(study_dir) if best else None,
    }


def write_outputs(study: optuna.Study, study_dir: str, storage: str,
                  reevaluation: dict[str, Any] | None = None, test: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write ``study.json`` and, when a trial completed, ``best_config.yaml``: the held-out winner
    of ``reevaluation`` (:mod:`tuner.study.reevaluate`) when there is one, else the best tuning score;
    ``test``: the test stage's summary (:mod:`tuner.study.protocol`)."""
    if reevaluation is None and study.user_attrs.get("heldout_winner") is not None:
        study.set_user_attr("heldout_winner", None)  # an earlier stage's winner: the study has changed since
    summary = study_summary(study, study_dir, storage)
    summary["test"] = test
    best = _best(study)
    source = "tuning"
    if reevaluation is not None and reevaluation.get("winner") is not None:
        best, source = study.trials[reevaluation["winner"]], "heldout"
    summary["reevaluation"] = reevaluation
    summary["best_config_source"] = source if best is not None else None
    summary["best_config_trial"] = best.number if best is not None else None
    config = os.path.join(text(best.user_attrs.get("run_dir")), "config.yaml") if best is not None else ""
    cfg = _trial_config(config)
    if cfg is not None:
        cfg.tuner = {"name": "none"}
        cfg.logger.p = 10
        if source == "heldout":
            c = next(c for c in reevaluation["configs"] if c["trial"] == best.number)  # type: ignore[union-attr]
            why = (f"held-out winner: trial {best.number} of study {study.study_name} (held-out mean "
                   f"{c['mean']:.4g} +- {c['std']:.3g} over seeds {reevaluation['seeds']}; tuning value {best.value})")
        else:
            why = f"best trial {best.number} of study {study.study_name} (value {best.value})"
        if test is not None and test["answer"]["trial"] == best.number and test["answer"]["mean"] is not None:
            why += f"\n# test mean {test['answer']['mean']:.4g} on seeds {test['seeds']}: {test['verdict']}"
        header = f"# {why}\n# re-run: {rerun_command(study_dir)}\n"
        body = trial_config_body(scrub(OmegaConf.to_container(cfg)), best, "none")  # a plain run, as cfg.tuner
        with open(os.path.join(study_dir, "best_config.yaml"), "w") as f:
            f.write(redact_text(header + body))
    summary = scrub(summary)  # the storage and the reevaluation's failure reasons may quote a URL
    write_json(os.path.join(study_dir, "study.json"), summary)
    return summary


def _trial_config(path: str) -> Any:
    """The trial's saved config (bounded YAML, no aliases: :mod:`tuner.config.untrusted`), or ``None`` with
    a warning when it is missing or not a config (``best_config.yaml`` is then not written)."""
    import sys

    from ..config.untrusted import UntrustedFileError, read_yaml

    if not path or not os.path.lexists(path):
        return None
    try:
        data = read_yaml(path)
        if not isinstance(data, dict) or not isinstance(data.get("logger"), dict):
            raise UntrustedFileError(f"{path}: not a run config")
        return OmegaConf.create(data)
    except (UntrustedFileError, ValueError) as exc:
        print(f"warning: best_config.yaml not written: {exc}", file=sys.stderr)
        return None


def summary_table(study: optuna.Study, limit: int = 30) -> str:
    """A plain-text table of the study's trials (best first)."""
    trials = study.get_trials(deepcopy=False)
    sign = -1 if study.direction == optuna.study.StudyDirection.MAXIMIZE else 1
    key = lambda t: (t.value is None, sign * (t.value or 0.0))  # noqa: E731
    rows = sorted(trials, key=key)[:limit]
    names = sorted({k for t in rows for k in t.params})
    header = ["#", "state", "value", "seconds"] + names
    table = [header]
    for t in rows:
        secs = t.duration.total_seconds() if t.duration else None
        table.append([str(t.number), t.state.name, format_cell(t.value), format_cell(secs)]
                     + [format_cell(t.params.get(n)) for n in names])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_cell(v: Any) -> str:
    """A table cell: ``-`` for nothing, a float to 4 significant digits, anything else as text."""
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)
