"""The study report: PNG plots and ``report.md`` in ``<study_dir>/report/``, and a wandb run of
``job_type=study`` with the same plots and a table of trials.

Written at the end of every study (``tuner=optuna``, the finders' ``tuner=lr_finder|opt_finder|
parallel_finder`` and the Hydra sweeper, the last two through :func:`report_study`) and on demand
for an existing storage::

    note-tune report study_name=NAME [storage=PATH|sqlite:///..|postgresql://..] [study_dir=DIR]
                     [out=DIR] [wandb=offline|online|disabled|none] [project=NAME]

Plots use ``optuna.visualization.matplotlib`` (matplotlib is already a dependency; plotly is not
needed) and parameter importances use Optuna's default fANOVA evaluator, which Optuna implements
itself (no scikit-learn).  A plot that cannot be drawn (e.g. importances with fewer than two
complete trials) is skipped and the reason written into ``report.md``.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Callable

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from ..common.redact import redact_text, scrub
from ..logs.curves import pyplot, reward_curve, training_figure
from ..study.attrs import number, text
from ..study.outputs import (
    SOURCES,
    describe_answer,
    rerun_command,
    study_answer,
    study_summary,
)
from ..study.runner import cpu_refusal
from .checklist import checklist

__all__ = ["write_report", "log_study_run", "report_study", "trials_table", "PLOTS"]


def _optuna_plot(name: str) -> Callable[[optuna.Study], Any]:
    def draw(study: optuna.Study) -> Any:
        from optuna.visualization import matplotlib as om

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "experimental" warnings of the matplotlib backend
            ax = getattr(om, name)(study)
        fig = ax.figure if hasattr(ax, "figure") else np.ravel(ax)[0].figure
        fig.set_size_inches(9, 5.5)
        fig.tight_layout()  # long parameter names would be cut off
        return fig

    return draw


def _complete(study: optuna.Study) -> list[FrozenTrial]:
    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def _results(trial: FrozenTrial) -> dict[str, Any] | None:
    """The trial's ``result.json`` (the first seed's when the trial ran several)."""
    run_dir = text(trial.user_attrs.get("run_dir"))
    if not run_dir:
        return None
    candidates = [os.path.join(run_dir, "result.json")]
    if os.path.isdir(run_dir):
        candidates += sorted(os.path.join(run_dir, d, "result.json") for d in os.listdir(run_dir)
                             if d.startswith("seed_"))
    from ..config.untrusted import UntrustedFileError, read_json

    for path in candidates:
        if not os.path.lexists(path):
            continue
        try:
            data = read_json(path)  # a study folder someone sent: bounded, and only data
        except UntrustedFileError:
            continue
        if isinstance(data, dict) and isinstance(data.get("returns"), list):
            return data
    return None


def _best_curves(study: optuna.Study) -> Any:
    """Reward and loss of the study's answer (:func:`tuner.study.outputs.study_answer`)."""
    answer = study_answer(study)
    trial = study.trials[answer["trial"]] if answer else study.best_trial
    data = _results(trial)
    if data is None:
        raise ValueError(f"trial {trial.number} has no result.json with returns")
    how = SOURCES[answer["source"]] if answer else SOURCES["tuning"]
    return training_figure(data, f"answer: trial {trial.number}, {how} (tuning score {trial.value:.4g})")


def _finder_arrays(study: optuna.Study) -> list[tuple[int, dict[str, np.ndarray]]]:
    """``finder.npz`` of LR range tests (tuner.finders) in the trials' run dirs."""
    out = []
    for t in _complete(study):
        path = os.path.join(text(t.user_attrs.get("run_dir")), "finder.npz")
        if os.path.exists(path):
            from note_rl.core.checkpoint import CheckpointError, check_npz_sizes

            try:  # bounded before anything is decompressed, as a checkpoint is
                check_npz_sizes(path)
                with np.load(path, allow_pickle=False) as data:
                    arrays = {k: np.asarray(data[k]) for k in data.files}
            except (CheckpointError, OSError, ValueError, EOFError):
                continue
            if "lrs" in arrays:
                out.append((t.number, arrays))
    return out


def _lr_finder(study: optuna.Study) -> Any:
    found = _finder_arrays(study)
    if not found:
        return None  # not an LR-finder study: no plot, no note
    plt = pyplot()
    with_loss = [(n, a) for n, a in found if len(a.get("step_losses", []))]
    fig, axes = plt.subplots(2 if with_loss else 1, 1, figsize=(9, 6 if with_loss else 4), squeeze=False)
    top = axes[0][0]
    for number, a in found:
        lrs, rewards = a.get("episode_lrs", np.zeros(0)), a.get("rewards", np.zeros(0))
        updates = a.get("episode_updates", np.ones(len(rewards)))
        trained = np.flatnonzero(np.asarray(updates)[: len(lrs)] > 0)
        if len(trained):
            levels, curve = reward_curve(lrs[trained[0]:], rewards[trained[0]:len(lrs)])
            top.plot(levels, curve, label=f"trial {number}")
    top.set_ylabel("episode reward (mean per lr, smoothed)")
    panels = [top]
    if with_loss:
        bottom = axes[1][0]
        for number, a in with_loss:
            n = min(len(a["lrs"]), len(a["step_losses"]))
            bottom.plot(a["lrs"][:n], a["step_losses"][:n], label=f"trial {number}")
        bottom.set_ylabel("loss")
        panels.append(bottom)
    for ax in panels:
        ax.set_xscale("log")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best")
    panels[-1].set_xlabel("learning rate")
    top.set_title("LR range test")
    fig.tight_layout()
    return fig


# file name -> (title, drawing function); each returns a figure, or None when not applicable
PLOTS: dict[str, tuple[str, Callable[[optuna.Study], Any]]] = {
    "optimization_history": ("Optimization history", _optuna_plot("plot_optimization_history")),
    "param_importances": ("Parameter importances (fANOVA)", _optuna_plot("plot_param_importances")),
    "parallel_coordinate": ("Parallel coordinates", _optuna_plot("plot_parallel_coordinate")),
    "intermediate_values": ("Intermediate values (pruning reports)", _optuna_plot("plot_intermediate_values")),
    "lr_finder": ("LR finder curves", _lr_finder),
    "best_trial_curves": ("Reward and loss of the answer", _best_curves),
}


#: fewer complete trials than this and the importances / parallel coordinates carry a caveat
FEW_TRIALS = 10


def caveat(name: str, study: optuna.Study) -> str | None:
    """A warning to print with plot ``name``: importances and parallel coordinates drawn from a
    handful of trials say more about the noise of those trials than about the parameters."""
    n = len(_complete(study))
    if name in ("param_importances", "parallel_coordinate") and n < FEW_TRIALS:
        return f"drawn from only {n} complete trials: with fewer than {FEW_TRIALS}, read it as noise"
    return None


def _why_not(name: str, study: optuna.Study) -> str | None:
    """A reason to skip plot ``name`` that is known before drawing it."""
    complete = _complete(study)
    if not complete and name != "intermediate_values":
        return "no complete trial"
    if name == "param_importances":
        varying = [p for p in {k for t in complete for k in t.params}
                   if len({repr(t.params.get(p)) for t in complete}) > 1]
        if len(complete) < 2 or not varying:
            return "needs two complete trials whose parameters differ"
    if name == "parallel_coordinate" and not any(t.params for t in complete):
        return "no sampled parameters"
    # the trials Optuna's plot draws (a failed trial's curve is not among them: with only those it
    # logs a warning line instead of drawing)
    plotted = study.get_trials(deepcopy=False, states=(TrialState.PRUNED, TrialState.COMPLETE, TrialState.RUNNING))
    if name == "intermediate_values" and not any(t.intermediate_values for t in plotted):
        return "no intermediate values reported"
    return None


def _draw_all(study: optuna.Study, folder: str) -> tuple[dict[str, str], dict[str, str]]:
    plt = pyplot()
    images, skipped = {}, {}
    for name, (_, draw) in PLOTS.items():
        reason = _why_not(name, study)
        if reason is None:
            try:
                fig = draw(study)
            except Exception as exc:  # noqa: BLE001 - one bad plot must not cost the others
                fig, reason = None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            if fig is not None:
                note = caveat(name, study)
                if note:  # on the image too: it travels without the markdown (wandb, dashboards)
                    fig.text(0.01, 0.005, note, fontsize=8, color="firebrick", ha="left", va="bottom")
                path = os.path.join(folder, f"{name}.png")
                fig.savefig(path, dpi=100)
                plt.close(fig)
                images[name] = path
                continue
        if reason:
            skipped[name] = reason
    return images, skipped


def trials_table(study: optuna.Study) -> tuple[list[str], list[list[Any]]]:
    """Columns and rows of every trial: number, state, value, seconds, fail reason, parameters."""
    trials = study.get_trials(deepcopy=False)
    names = sorted({k for t in trials for k in t.params})
    columns = ["number", "state", "value", "seconds", "fail_reason", *names]
    rows = []
    for t in trials:
        secs = t.duration.total_seconds() if t.duration else None
        rows.append([t.number, t.state.name, t.value, secs, t.user_attrs.get("fail_reason", "") or _not_started(t),
                     *[t.params.get(n) for n in names]])
    return columns, rows


def _not_started(t: FrozenTrial) -> str:
    """Why a WAITING trial was put back by ``max_cpu_s`` (its ``not_started`` record), else ""."""
    record = cpu_refusal(t)
    if record is None:
        return ""
    guess, left = number(record.get("predicted_cpu_s")), number(record.get("cpu_left_s"))
    if guess is None or left is None:
        return ""
    return f"not started: predicted {guess:.1f} CPU s, {left:.1f} left of the budget"


def _markdown(study: optuna.Study, summary: dict[str, Any], images: dict[str, str], skipped: dict[str, str],
              rerun: str | None) -> str:
    lines = [f"# Study `{study.study_name}`", "",
             f"- storage: `{summary['storage']}`", f"- direction: {summary['direction']}",
             f"- trials: {summary['n_trials']} (complete {summary['n_complete']}, pruned {summary['n_pruned']}, "
             f"failed {summary['n_failed']}, running {summary['n_running']})"]
    answer = summary.get("answer")
    if answer is not None:
        lines += [f"- {describe_answer(answer)}",
                  f"- best tuning value: {summary['best_value']:.6g} (trial {summary['best_trial']}; one "
                  f"evaluation per trial, chosen among all of them: not the answer's expected score)", "",
                  f"## The answer's parameters (trial {answer['trial']})", "", "| parameter | value |", "| --- | --- |"]
        lines += [f"| `{k}` | {v!r} |" for k, v in sorted(answer["params"].items())]
        if rerun:
            lines += ["", "Re-run the answer:", "", "```bash", rerun, "```"]
        lines += ["", *checklist(study)]
    else:
        lines += ["- answer: none (no trial completed)"]
    lines += ["", "## Plots", ""]
    for name, path in images.items():
        lines += [f"### {PLOTS[name][0]}", "", f"![{name}]({os.path.basename(path)})", ""]
        note = caveat(name, study)
        if note:
            lines += [f"> Caveat: {note}.", ""]
    lines += [f"- {PLOTS[name][0]}: not drawn ({reason})" for name, reason in skipped.items()]
    failed = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.FAIL]
    if failed:
        lines += ["", "## Failed trials", ""]
        lines += [f"- trial {t.number}: {t.user_attrs.get('fail_reason', 'unknown')}" for t in failed]
    return "\n".join(lines) + "\n"


def write_report(study: optuna.Study, study_dir: str, storage_desc: str, out_dir: str | None = None) -> dict[str, Any]:
    """Draw the plots and write ``report.md`` into ``out_dir`` (default ``<study_dir>/report``).

    Returns ``{"dir", "markdown", "images": {name: path}, "skipped": {name: reason}, "summary"}``.
    """
    folder = os.path.abspath(out_dir or os.path.join(study_dir, "report"))
    os.makedirs(folder, exist_ok=True)
    summary = scrub(study_summary(study, study_dir, storage_desc))  # a fail reason may quote a URL
    best_config = os.path.join(study_dir, "best_config.yaml")
    rerun = rerun_command(study_dir) if summary["best_trial"] is not None and os.path.exists(best_config) else None
    if rerun and (summary.get("answer") or {}).get("source") == "pbt":  # PBT's answer is its schedule
        rerun = rerun_command(study_dir, "replay_config")
    images, skipped = _draw_all(study, folder)
    markdown = os.path.join(folder, "report.md")
    with open(markdown, "w") as f:
        f.write(redact_text(_markdown(study, summary, images, skipped, rerun)))
    return {"dir": folder, "markdown": markdown, "images": images, "skipped": skipped, "summary": summary,
            "rerun_command": rerun}


def log_study_run(study: optuna.Study, report: dict[str, Any], opts: dict[str, Any], run_dir: str,
                  config: dict[str, Any] | None = None) -> str | None:
    """Log the report to a wandb run of ``job_type=study`` (group = study name): the plots as
    images, the trials as a table, the best value and parameters in the summary, and the report
    directory as an artifact.  Returns the run's directory (``None`` when wandb is off or failed)."""
    from ..logs.wandb_logger import WandbSession

    summary = report["summary"]
    meta = {"job_type": "study", "group": study.study_name, "name": f"{study.study_name} (study)",
            "tags": ["study"], "x_axis": "trial", "run_id": _study_run_id(study)}
    session = WandbSession(opts, run_dir, meta, {**(config or {}), "study": summary})
    if not session.start():
        return None
    wandb = session.wandb
    columns, rows = trials_table(study)
    rows = scrub(rows)  # the fail reasons
    session.log({"trial": len(rows), "trials": wandb.Table(columns=columns, data=rows, allow_mixed_types=True),
                 **{f"plots/{name}": wandb.Image(path) for name, path in report["images"].items()}})
    answer = summary.get("answer") or {}
    session.summary({k: summary[k] for k in ("best_value", "best_trial", "n_trials", "n_complete", "n_pruned",
                                              "n_failed", "direction") if summary[k] is not None}
                    | {"best_params": summary["best_params"] or {}}
                    | {f"answer_{k}": answer[k] for k in ("trial", "source", "tuning_value", "heldout_mean",
                                                          "test_mean", "start_test_mean") if answer.get(k) is not None}
                    | ({"answer_params": answer["params"]} if answer else {}))
    files = [report["markdown"], *report["images"].values()]
    session.artifact(f"report-{study.study_name}", "report", files)
    return session.finish()


def _study_run_id(study: optuna.Study) -> str | None:
    """The wandb run id of the study's run, kept in the study (user attr ``wandb_study_run``): the
    end-of-study report and every later ``note-tune report`` log to that one run (resumed online; an
    offline re-report is another offline dir of the same run id, which ``wandb sync`` merges)."""
    run_id = study.user_attrs.get("wandb_study_run")
    if run_id is None:
        import secrets

        run_id = secrets.token_hex(4)
        try:
            study.set_user_attr("wandb_study_run", run_id)
        except Exception:  # noqa: BLE001 - a storage that refuses writes: a run of its own then
            return None
    return str(run_id)


def report_study(study: optuna.Study, study_dir: str, storage_desc: str, config: dict[str, Any] | None) -> dict[str, Any] | None:
    """The end-of-study report and, when ``config["logger"]`` is wandb, the study's wandb run.

    Never raises: a plotting or wandb problem prints one warning, the study's results stand.
    Returns :func:`write_report`'s dict (``None`` when the report could not be written)."""
    import sys

    try:
        report = write_report(study, study_dir, storage_desc)
    except Exception as exc:  # noqa: BLE001 - a plotting problem must not hide the study's results
        print(redact_text(f"warning: study report not written: {type(exc).__name__}: {exc}"), file=sys.stderr)
        return None
    print(f"report: {report['markdown']} ({len(report['images'])} plots)", flush=True)
    opts = (config or {}).get("logger") or {}
    from ..logs.metrics import logger_kinds

    if "wandb" in logger_kinds(opts):
        path = log_study_run(study, report, opts, study_dir, config)
        if path:
            report["wandb_run"] = path
            print(f"wandb: study run {path} (upload later: wandb sync {path}, and the trials' "
                  f"wandb/offline-run-* dirs)", flush=True)
    return report
