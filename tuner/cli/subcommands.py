"""``note-tune report ...`` and ``note-tune dashboard ...``: commands on an existing study storage;
``note-tune eval model=...`` / ``note-tune play model=...``: a saved model's evaluation or recording
(:mod:`tuner.cli.model_commands`); ``note-tune reevaluate ...``: a study's held-out re-evaluation;
``note-tune summary DIR ...``: a table comparing configs across multirun jobs, runs and studies.

They take ``key=value`` arguments (like Hydra overrides, but parsed before Hydra runs)::

    note-tune report    study_name=NAME [storage=...] [study_dir=DIR] [out=DIR] [wandb=offline] [project=P]
    note-tune dashboard [storage=...] [study_dir=DIR] [port=8080]
    note-tune reevaluate study_name=NAME [storage=...] [study_dir=DIR] [top_k=5] [seeds=3|[100,101]]
                         [episodes=20] [timeout=SECONDS] [n_jobs=1]
    note-tune summary DIR [DIR ...] [out=DIR] [metric=final_eval_mean_return]   (:mod:`tuner.report.summary`)

``storage`` is a journal file path, ``sqlite:///path.db`` or ``postgresql://...``; without it,
``study_dir``, then ``$OPTUNA_STORAGE``, then ``studies/<study_name>`` locates the study (a directory
means its default journal: ``journal.log`` in its parent, shared with the studies beside it, or its own
``<study_dir>/journal.log`` for a study made before studies shared one); with none of them, the
journal under ``./studies``.
Bad input prints one line naming the argument or file and exits with status 2.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from ..common.files import name_too_long

__all__ = ["main", "ArgError", "parse_args", "open_storage"]

ALLOWED = {
    "report": ("study_name", "storage", "study_dir", "out", "wandb", "project", "entity"),
    "dashboard": ("storage", "study_dir", "study_name", "port"),
    "eval": ("model", "episodes", "seeds", "max_steps", "trust_code"),
    "play": ("model", "out", "seed", "max_steps", "fps", "trust_code"),
    "export": ("model", "format", "out", "trust_code"),
    "reevaluate": ("study_name", "storage", "study_dir", "top_k", "seeds", "episodes", "timeout", "n_jobs", "model",
                   "tie_seeds", "keep_start", "aggregation", "trust_code"),
    "summary": ("out", "metric"),  # and the directories, as plain arguments
}


#: ``note-tune <command> --help``: what it does and its arguments
USAGE = {
    "report": ("note-tune report study_name=NAME [storage=URL|FILE] [study_dir=DIR] [out=DIR] [wandb=offline|online]"
               " [project=P] [entity=E]",
               "Write a study's report (history, importances, parallel coordinates, best-trial curves) to "
               "out/ (default <study_dir>/report) and, with wandb=, log it to the study's wandb run."),
    "dashboard": ("note-tune dashboard [storage=URL|FILE] [study_dir=DIR] [study_name=NAME] [port=8080]",
                  "Serve optuna-dashboard for a study storage on 127.0.0.1 (ssh -L for a remote machine)."),
    "eval": ("note-tune eval model=FILE [episodes=20] [seeds=0,1,2] [max_steps=N] [trust_code=false]",
             "Evaluate a saved model (a run's model file and its result.json) with greedy episodes. The run's "
             "config may name only note_rl's own classes unless trust_code=true."),
    "play": ("note-tune play model=FILE [out=episode.gif|episode.mp4] [seed=0] [max_steps=N] [fps=N] "
             "[trust_code=false]",
             "Record one greedy episode of a saved model as a GIF or an MP4 (ffmpeg). The run's config may name "
             "only note_rl's own classes unless trust_code=true."),
    "export": ("note-tune export model=RUN_DIR|FILE [format=torchscript|onnx|saved_model] [out=PATH] "
               "[trust_code=false]",
               "Write a saved model's greedy policy as TorchScript, ONNX or a TensorFlow SavedModel, loadable "
               "without note_rl (default format: the run's backend's; default out: beside the model). The run's "
               "config may name only note_rl's own classes unless trust_code=true."),
    "reevaluate": ("note-tune reevaluate study_name=NAME [storage=URL|FILE] [study_dir=DIR] [top_k=5] "
                   "[seeds=3|[100,101]] [episodes=20] [timeout=SECONDS] [n_jobs=N] [model=final|best] [tie_seeds=1] "
                   "[keep_start=1.0] [aggregation=mean|median|min|lcb|q25] [trust_code=false]",
                   "Retrain a study's top configs on held-out seeds and pick best_config.yaml by their scores. "
                   "The trials' configs may name only note_rl's own classes unless trust_code=true."),
    "summary": ("note-tune summary DIR [DIR ...] [out=DIR] [metric=final_eval_mean_return]",
                "Compare runs: n, mean, std, 95% t-interval, min and max of each config's scores across the job dirs "
                "of multirun sweeps, run dirs and study dirs (grouped by overrides minus seed); printed and written "
                "to out/summary.csv, summary.md and summary.png (default out: the first DIR)."),
}


def usage(command: str) -> str:
    line, text = USAGE[command]
    return f"usage: {line}\n\n{text}\n"


class ArgError(ValueError):
    """A bad argument of a subcommand (message names it)."""


def parse_args(command: str, args: list[str]) -> dict[str, str]:
    """``key=value`` strings into a dict; unknown or malformed arguments raise :class:`ArgError`."""
    out: dict[str, str] = {}
    allowed = ALLOWED[command]
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or key not in allowed:
            raise ArgError(f"{command}: unknown argument {arg!r} (expected {', '.join(k + '=' for k in allowed)})")
        out[key] = value
    return out


def _storage_arg(args: dict[str, str]) -> tuple[str | None, str]:
    """The storage the arguments name and the key an error names: ``storage=`` when given; else,
    unless ``study_dir=`` is given, ``$OPTUNA_STORAGE`` when set; else ``None`` (a study folder)."""
    from ..study.storage import ENV_VAR, resolve

    if args.get("storage"):
        return args["storage"], "storage"
    from_env = None if args.get("study_dir") else resolve(None)
    return (from_env, ENV_VAR) if from_env else (None, "study_dir")


def _journal_file(args: dict[str, str]) -> str | None:
    storage, _ = _storage_arg(args)
    if storage and "://" in storage:
        return None
    if storage:
        return os.path.abspath(storage)
    from ..study.storage import default_journal

    folder = args.get("study_dir") or (os.path.join("studies", args["study_name"]) if args.get("study_name") else None)
    if folder is None:
        return _only_journal_here()
    return os.path.abspath(default_journal(folder))


def _only_journal_here() -> str:
    """With no storage given: the journal under ``./studies`` (the default ``tuner.study_dir``
    parent), shared by the studies there, or the one study dir there with a journal of its own (made
    before studies shared one); with none or several, a one-line error that lists them."""
    from ..study.storage import JOURNAL

    found = [os.path.join("studies", JOURNAL)] if os.path.isfile(os.path.join("studies", JOURNAL)) else []
    found += sorted(os.path.join("studies", d, JOURNAL) for d in (os.listdir("studies") if os.path.isdir("studies") else [])
                    if os.path.isfile(os.path.join("studies", d, JOURNAL)))
    if len(found) == 1:
        return os.path.abspath(found[0])
    listed = f" (journals here: {', '.join('storage=' + f for f in found)})" if found else ""
    raise ArgError("storage: give storage=<journal file | sqlite:///... | postgresql://...> or study_dir=<dir>" + listed)


def open_storage(args: dict[str, str]) -> tuple[Any, str]:
    """The Optuna storage the arguments name, which must already exist; and its description."""
    import optuna

    url, key = _storage_arg(args)
    journal = _journal_file(args)
    if journal is not None:
        if not os.path.isfile(journal):
            raise ArgError(f"{key}: no Optuna journal file {journal}")
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        from ..common.errors import ConfigError
        from ..study.storage import repair_journal

        try:  # reevaluate and the dashboard write to the study: never onto a torn record
            repaired = repair_journal(journal, key=key)
        except ConfigError as exc:
            raise ArgError(str(exc)) from None
        if repaired:
            print(f"warning: {repaired}", file=sys.stderr, flush=True)
        try:  # records that look like a journal's but do not replay (another program's JSON lines)
            return JournalStorage(JournalFileBackend(journal)), journal
        except Exception as exc:  # noqa: BLE001 - Optuna raises KeyError / AssertionError on such records
            from ..study.storage import root_cause

            raise ArgError(f"{key}: {journal} is not a readable Optuna journal ({type(exc).__name__}: "
                           f"{root_cause(exc)})") from None
    if url.startswith("sqlite:///") and not os.path.isfile(url[len("sqlite:///"):]):
        raise ArgError(f"{key}: no SQLite file {url[len('sqlite:///'):]}")
    from ..study.storage import _normalise_url, describe, root_cause

    try:
        storage = optuna.storages.RDBStorage(_normalise_url(url), skip_table_creation=True)
        storage.get_all_studies()  # connect now: a dead server is a bad argument, not a traceback later
    except Exception as exc:  # noqa: BLE001 - connection refused, bad URL, missing driver or tables...
        raise ArgError(f"{key}: cannot open {describe(url, '.')}: {root_cause(exc)}") from None
    return storage, describe(url, ".")


def _load_study(storage: Any, desc: str, name: str | None, study_dir: str | None = None) -> Any:
    import optuna

    from ..study.identity import dir_owner

    names = [s.study_name for s in optuna.get_all_study_summaries(storage, include_best_trial=False)]
    owner = dir_owner(study_dir) if study_dir and not name else None
    if owner in names:  # study_dir=DIR: its study, among the journal's others
        name = owner
    if not name and len(names) == 1:  # e.g. the only study under ./studies (docs/guide/logging.md: `note-tune report`)
        name = names[0]
    if not name:
        raise ArgError(f"study_name: missing (studies in {desc}: {', '.join(names) or 'none'})")
    if name not in names:
        raise ArgError(f"study_name: no study {name!r} in {desc} (studies there: {', '.join(names) or 'none'})")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.load_study(study_name=name, storage=storage)


def report(args: dict[str, str]) -> int:
    """Write the report of an existing study (and log it to wandb unless ``wandb=none``)."""
    from ..report.report import log_study_run, write_report

    storage, desc = open_storage(args)
    study = _load_study(storage, desc, args.get("study_name"), args.get("study_dir"))
    study_dir = os.path.abspath(args.get("study_dir") or _default_dir(args, desc, study.study_name))
    mode = args.get("wandb", "offline")
    if mode not in ("offline", "online", "disabled", "none"):
        raise ArgError(f"wandb: {mode!r} is not one of offline, online, disabled, none")
    from ..common.interrupts import keep

    # Ctrl-C here stops the report (the command's only work); the study itself is only read
    keep(f"the study is unchanged; the report under {args.get('out') or os.path.join(study_dir, 'report')} "
         f"may be incomplete (run note-tune report again)")
    _check_out_dir(args.get("out"))
    try:
        out = write_report(study, study_dir, desc, args.get("out"))
    except OSError as exc:  # a read-only or full disk, a name the file system refuses
        where = "out" if args.get("out") else "study_dir"
        raise ArgError(f"{where}: cannot write the report ({exc.strerror or exc}: {exc.filename})") from None
    print(f"report of study {study.study_name!r}: {out['markdown']} ({len(out['images'])} plots)")
    if mode != "none":
        opts = {"mode": mode, "project": args.get("project") or "note-rl-tuner", "entity": args.get("entity")}
        path = log_study_run(study, out, opts, out["dir"])
        if path:
            print(f"wandb study run: {path}" + (f" (upload later: wandb sync {path})" if mode == "offline" else ""))
    return 0


def _check_out_dir(out: str | None) -> None:
    """``out=`` names a directory the report can be written to (or one that can be made)."""
    if not out:
        return
    from ..study.storage import existing_ancestor

    if os.path.exists(out) and not os.path.isdir(out):
        raise ArgError(f"out: {out} is a file; give a directory for the report")
    base = existing_ancestor(os.path.abspath(out))
    if not os.path.isdir(base) or not os.access(base, os.W_OK):
        raise ArgError(f"out: cannot make {out} ({base} is not a writable directory)")
    if name_too_long(out, base):
        raise ArgError(f"out: a folder name in {out[:60]}... is longer than the file system allows")


def _default_dir(args: dict[str, str], desc: str, name: str) -> str:
    """The study dir of study ``name``: beside the journal shared by the studies there
    (``studies/journal.log`` -> ``studies/<name>``), the folder of a study's own journal, or
    ``studies/<name>`` for a database."""
    journal = _journal_file(args)
    if journal is None:
        return os.path.join("studies", name)
    from ..study.identity import dir_owner

    folder, beside = os.path.dirname(journal), os.path.join(os.path.dirname(journal), name)
    if os.path.isdir(beside) or dir_owner(folder) is None:
        return beside
    return folder  # the journal is the study's own


def dashboard(args: dict[str, str]) -> int:
    """Serve optuna-dashboard on the storage at 127.0.0.1 until interrupted."""
    from ..report.dashboard import serve

    port_text = args.get("port", "8080")
    if not re.fullmatch(r"[0-9]{1,5}", port_text) or int(port_text) > 65535:  # ASCII: '²'.isdigit() is True
        raise ArgError(f"port: {port_text!r} is not a port number (0-65535; 0 picks a free one)")
    storage, desc = open_storage(args)
    if args.get("study_name"):
        _load_study(storage, desc, args["study_name"])  # fail early on a name that is not there
    from ..common.interrupts import keep

    keep("the dashboard stopped; it changes no file")
    serve(storage, desc, int(port_text))
    return 0


def reevaluate_study(args: dict[str, str]) -> int:
    """Retrain an existing study's top configs on held-out seeds (:mod:`tuner.study.reevaluate`), then
    rewrite its ``study.json`` and ``best_config.yaml``."""
    import yaml

    from ..study.outputs import write_outputs
    from ..study.reevaluate import (
        ReevalSettings,
        Trust,
        check_reeval,
        format_reevaluation,
        reevaluate,
    )
    from ..common.errors import ConfigError
    from .model_commands import flag

    values: dict[str, object] = {}
    for key in ("top_k", "seeds", "episodes", "timeout", "n_jobs", "model", "tie_seeds", "keep_start", "aggregation"):
        if key in args:
            try:
                values[key] = yaml.safe_load(args[key])
            except yaml.YAMLError:
                raise ArgError(f"{key}: cannot parse {args[key]!r}") from None
    settings = ReevalSettings(**values)  # type: ignore[arg-type]
    trust = Trust(code=flag(args, "trust_code"))
    try:
        check_reeval(settings)
    except ConfigError as exc:
        raise ArgError(str(exc).replace("tuner.reevaluate.", "")) from None
    storage, desc = open_storage(args)
    study = _load_study(storage, desc, args.get("study_name"), args.get("study_dir"))
    study_dir = os.path.abspath(args.get("study_dir") or _default_dir(args, desc, study.study_name))
    try:
        summary = reevaluate(study, study_dir, settings, n_jobs=settings.n_jobs or 1, trust=trust)
    except ConfigError as exc:
        raise ArgError(str(exc).replace("tuner.reevaluate.", "")) from None
    except KeyboardInterrupt as exc:  # Ctrl-C / SIGTERM: the runs were killed; keep what was scored
        _keep_heldout(study, study_dir, desc, getattr(exc, "heldout", None))
        raise
    if summary is None:
        raise ArgError(f"study_name: study {study.study_name!r} has no completed trial with a saved config")
    write_outputs(study, study_dir, desc, summary)
    print(format_reevaluation(summary))
    print(f"best_config.yaml: {os.path.join(study_dir, 'best_config.yaml')}")
    return 0


def _keep_heldout(study: Any, study_dir: str, desc: str, summary: dict[str, Any] | None) -> None:
    """An interrupted ``reevaluate``: ``study.json`` and ``best_config.yaml`` from the scores it has
    (a second signal meanwhile ends the command at once, :mod:`tuner.common.interrupts`)."""
    from ..common.interrupts import held, keep
    from ..study.outputs import write_outputs

    if summary is None:
        keep("no held-out run had finished; the study is unchanged")
        return
    with held():
        write_outputs(study, study_dir, desc, summary)
        keep(f"the held-out scores so far are stored in the study (a re-run trains only what is missing); "
             f"study.json and best_config.yaml ({summary['answer']}) written to {study_dir}")


def split_args(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """Directories and ``key=value`` options of ``note-tune summary``."""
    dirs: list[str] = []
    opts: dict[str, str] = {}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if sep and key in ALLOWED["summary"]:
            opts[key] = value
        elif arg.startswith("-") or (sep and not os.path.lexists(arg)):  # a dir may be named a=b (override_dirname)
            raise ArgError(f"summary: unknown argument {arg!r} (expected directories, out=, metric=)")
        else:
            dirs.append(arg)
    if not dirs:
        raise ArgError("summary: give at least one directory (a multirun sweep dir, a run dir or a study dir)")
    return dirs, opts


def summary(argv: list[str]) -> int:
    """``note-tune summary DIR [DIR ...] [out=DIR] [metric=NAME]`` (:mod:`tuner.report.summary`):
    ``out`` defaults to the first directory, so the summary lies beside the sweep it describes;
    an argument ``out=...`` / ``metric=...`` is an option, every other one a directory."""
    from ..report.summary import SummaryError, collect, format_table, summarize, write_summary

    dirs, opts = split_args(argv)
    metric = opts.get("metric") or "final_eval_mean_return"
    out = opts.get("out") or dirs[0]
    try:
        samples, warnings = collect(dirs, metric)
    except SummaryError as exc:
        raise ArgError(str(exc)) from None
    _check_out_dir(out)
    groups = summarize(samples)
    for line in warnings:
        print(f"warning: {line}", file=sys.stderr)
    print(format_table(groups, metric))
    try:
        paths = write_summary(groups, samples, warnings, metric, out)
    except OSError as exc:  # a read-only or full disk
        raise ArgError(f"out: cannot write the summary ({exc.strerror or exc}: {exc.filename})") from None
    print(f"{len(samples)} samples in {len(groups)} configs -> {', '.join(os.path.relpath(p) for p in paths.values())}")
    return 0


def main(command: str, argv: list[str]) -> int:
    """Run ``command`` (``report``, ``dashboard``, ``eval``, ``play``, ``export``, ``reevaluate`` or
    ``summary``) with ``key=value`` arguments (``summary`` also takes directories, ``export`` a run dir)."""
    from .model_commands import _Bad, eval_model, export_model, play_model

    if any(a in ("-h", "--help") for a in argv):
        print(usage(command), end="")
        return 0
    from ..common.redact import protect

    # wandb records sys.argv in the report's run: mask a storage password (user info or query parameter)
    # there first, and remember it for every file and line written below
    protect({})
    try:
        if command == "export" and argv and "=" not in argv[0] and not argv[0].startswith("-"):
            argv = [f"model={argv[0]}", *argv[1:]]  # note-tune export <run dir> ...
        args = parse_args(command, argv) if command != "summary" else {}
        if command == "eval":
            eval_model(args)
            return 0
        if command == "play":
            play_model(args)
            return 0
        if command == "export":
            export_model(args)
            return 0
        if command == "summary":
            return summary(argv)
        if command == "reevaluate":
            return reevaluate_study(args)
        return report(args) if command == "report" else dashboard(args)
    except (ArgError, _Bad) as exc:
        from ..common.redact import mask_argv_secrets

        print(f"error: {mask_argv_secrets(str(exc), argv)}", file=sys.stderr)
        return 2
