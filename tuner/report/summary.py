"""``note-tune summary DIR [DIR ...]``: one table that compares runs across configs, seeds and studies.

What each directory contributes (every file is read back as data, bounded, with
:mod:`tuner.config.untrusted`):

* a **run dir** (it holds ``result.json``): one sample, the run's ``metric`` (default
  ``final_eval_mean_return``, the final greedy evaluation);
* a **multirun sweep dir** (Hydra's ``-m`` output: ``multirun.yaml`` and one job dir per override set):
  one sample per job dir; a job without ``result.json`` (failed, killed, still running) is left out
  with a warning;
* a **study dir** (it holds ``study.json``): one sample, the study's best value (its tuning objective);
  a folder of study dirs (``./studies``): one sample per study.

Samples are grouped by config: a job's command-line overrides (``.hydra/overrides.yaml``) minus
``seed=`` and ``hydra.*`` ones; a run without saved overrides by ``agent=... env=... backend=...`` of its
config; a study by its name.  Each group gets n, mean, sample standard deviation, the 95%
Student-t confidence interval of the mean (``mean +- t(0.975, n-1) * std / sqrt(n)``; none for n = 1),
min and max.  The table is printed and written as ``summary.csv`` and ``summary.md``, with
``summary.png`` (a bar per group with its 95% CI, every sample as a dot).

Bad input raises :class:`SummaryError` with one line naming the path.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from typing import Any

from ..common.redact import redact_text, scrub
from ..config.untrusted import UntrustedFileError, read_json, read_yaml
from ..study.outputs import format_cell

__all__ = ["Sample", "Group", "SummaryError", "collect", "summarize", "common_part", "t_interval", "format_table",
           "write_summary", "METRICS"]

#: the numbers of a run's ``result.json`` that ``metric=`` may name
METRICS = ("final_eval_mean_return", "best_eval_mean_return", "test_mean_return", "objective", "final_mean_return",
           "best_mean_return")
_SMALL_JSON = 16 * 2**20  # study.json: a summary, never large
_SMALL_YAML = 1 * 2**20  # .hydra/overrides.yaml: a list of command-line strings


class SummaryError(ValueError):
    """A directory or file that cannot be summarized (the message names it)."""


@dataclass
class Sample:
    """One score: the group (config) it belongs to, its seed and the directory it came from."""

    group: str
    value: float
    path: str
    seed: Any = None
    parts: tuple[str, ...] = ()  # the overrides the group name joins (empty: not an override list)


@dataclass
class Group:
    """The statistics of one config's samples."""

    name: str
    values: list[float]
    seeds: list[Any] = field(default_factory=list)
    label: str = ""  # the name less the overrides every group shares (what the table shows)
    parts: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return sum(self.values) / self.n

    @property
    def std(self) -> float | None:
        """Sample standard deviation (n - 1 in the denominator); ``None`` for one sample."""
        if self.n < 2:
            return None
        m = self.mean
        return math.sqrt(sum((v - m) ** 2 for v in self.values) / (self.n - 1))

    @property
    def ci95(self) -> tuple[float, float] | None:
        return t_interval(self.values)


def t_interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """The Student-t confidence interval of the mean of ``values``; ``None`` for fewer than two."""
    n = len(values)
    if n < 2:
        return None
    from scipy.stats import t

    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = float(t.ppf(0.5 + level / 2, n - 1)) * std / math.sqrt(n)
    return mean - half, mean + half


# -- reading -----------------------------------------------------------------------------------------

def collect(dirs: list[str], metric: str = "final_eval_mean_return") -> tuple[list[Sample], list[str]]:
    """The samples of ``dirs`` and the warnings of what was left out (see the module docstring)."""
    if metric not in METRICS:
        raise SummaryError(f"metric: {metric!r} is not one of {', '.join(METRICS)}")
    samples: list[Sample] = []
    warnings: list[str] = []
    for folder in dirs:
        if not os.path.isdir(folder):
            raise SummaryError(f"{folder}: not a directory")
        if os.path.lexists(os.path.join(folder, "result.json")):
            samples.append(_run_sample(folder, metric, warnings, required=True))  # type: ignore[arg-type]
        elif os.path.lexists(os.path.join(folder, "study.json")):
            samples.append(_study_sample(folder))
        else:
            jobs = _job_dirs(folder)
            studies = [] if jobs else _sub_dirs(folder, "study.json")
            if studies:  # a folder of studies (./studies)
                samples += [_study_sample(d) for d in studies]
                continue
            if not jobs:
                raise SummaryError(f"{folder}: no result.json, study.json or multirun job dirs in it "
                                   f"(give a run dir, a study dir or a multirun sweep dir)")
            found = [s for s in (_run_sample(j, metric, warnings) for j in jobs) if s is not None]
            if not found:
                raise SummaryError(f"{folder}: none of its {len(jobs)} job dirs has a {metric} in its result.json")
            samples += found
    return samples, warnings


def _sub_dirs(folder: str, *marks: str) -> list[str]:
    """The sub-dirs of ``folder`` (not symlinks) that hold one of ``marks``, numbers first in
    numeric order (Hydra's job order), then by name."""
    try:
        names = os.listdir(folder)
    except OSError as exc:
        raise SummaryError(f"{folder}: cannot list ({exc.strerror})") from None
    found = [os.path.join(folder, n) for n in names
             if os.path.isdir(os.path.join(folder, n)) and not os.path.islink(os.path.join(folder, n))
             and any(os.path.lexists(os.path.join(folder, n, m)) for m in marks)]
    return sorted(found, key=lambda p: (not os.path.basename(p).isdigit(), int(os.path.basename(p))
                                        if os.path.basename(p).isdigit() else 0, p))


def _job_dirs(folder: str) -> list[str]:
    """The job dirs of a multirun sweep dir: sub-dirs with ``result.json`` or Hydra's ``.hydra/``."""
    return _sub_dirs(folder, "result.json", ".hydra")


def _read_json(path: str, limit: int | None = None) -> Any:
    try:
        return read_json(path, limit) if limit else read_json(path)
    except UntrustedFileError as exc:
        raise SummaryError(str(exc)) from None


def _run_sample(folder: str, metric: str, warnings: list[str], required: bool = False) -> Sample | None:
    path = os.path.join(folder, "result.json")
    if not os.path.lexists(path):
        warnings.append(f"{folder}: no result.json (the job failed, was killed or is still running); left out")
        return None
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
        raise SummaryError(f"{path}: not a result.json written by a run (no config)")
    value = data.get(metric)
    if value is None:
        message = f"{path}: {metric} is null (interrupted before its evaluation?)"
        if required:
            raise SummaryError(message)
        warnings.append(message + "; left out")
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SummaryError(f"{path}: {metric}: {value!r} is not a finite number")
    seed = data.get("seed")
    parts = _run_group(folder, data["config"])
    return Sample(group=" ".join(parts), value=float(value), path=folder, parts=parts,
                  seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None)


def _run_group(folder: str, config: dict[str, Any]) -> tuple[str, ...]:
    """A job's overrides minus its seed (and Hydra's own keys); else agent, env and backend."""
    path = os.path.join(folder, ".hydra", "overrides.yaml")
    if os.path.lexists(path):
        try:
            overrides = read_yaml(path, _SMALL_YAML)
        except UntrustedFileError as exc:
            raise SummaryError(str(exc)) from None
        if not isinstance(overrides, list) or not all(isinstance(o, str) for o in overrides):
            raise SummaryError(f"{path}: not a list of overrides")
        kept = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") != "seed"
                and not o.lstrip("+~").startswith("hydra.")]
        return tuple(redact_text(o) for o in kept) or ("(defaults)",)
    parts = []
    for key, sub in (("agent", "name"), ("env", "id"), ("backend", "name")):
        node = config.get(key)
        if isinstance(node, dict) and isinstance(node.get(sub), str):
            parts.append(f"{key}={node[sub]}")
    return tuple(redact_text(p) for p in parts) or ("(run)",)


def _study_sample(folder: str) -> Sample:
    path = os.path.join(folder, "study.json")
    data = _read_json(path, _SMALL_JSON)
    if not isinstance(data, dict) or not isinstance(data.get("study_name"), str):
        raise SummaryError(f"{path}: not a study.json written by a study (no study_name)")
    value = data.get("best_value")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SummaryError(f"{path}: best_value: {value!r} is not a finite number (no completed trial?)")
    return Sample(group=f"study {redact_text(data['study_name'])}", value=float(value), path=folder)  # no parts


def summarize(samples: list[Sample]) -> list[Group]:
    """Samples grouped by config, best mean first; each group's ``label`` leaves out the overrides
    that all groups share (see :func:`common_part`)."""
    groups: dict[str, Group] = {}
    for s in samples:
        g = groups.setdefault(s.group, Group(s.group, [], parts=s.parts))
        g.values.append(s.value)
        g.seeds.append(s.seed)
    common = set(common_part(list(groups.values())))
    for g in groups.values():
        g.label = " ".join(o for o in g.parts if o not in common) or g.name
    return sorted(groups.values(), key=lambda g: -g.mean)


def common_part(groups: list[Group]) -> list[str]:
    """The overrides every one of several groups holds; none for one group or when a group is not
    an override list (a study)."""
    if len(groups) < 2 or any(not g.parts for g in groups):
        return []
    shared = set(groups[0].parts)
    for g in groups[1:]:
        shared &= set(g.parts)
    return [o for o in groups[0].parts if o in shared]


# -- writing -----------------------------------------------------------------------------------------

STUDY_NOTE = "study rows: each study's best value (its tuning objective), one sample per study"
COLUMNS = ("config", "n", "mean", "std", "ci95_low", "ci95_high", "min", "max", "seeds", "overrides")


def _row(g: Group) -> dict[str, Any]:
    ci = g.ci95
    return {"config": g.label or g.name, "n": g.n, "mean": g.mean, "std": g.std,
            "ci95_low": ci[0] if ci else None, "ci95_high": ci[1] if ci else None, "min": min(g.values),
            "max": max(g.values), "seeds": " ".join(str(s) for s in g.seeds if s is not None), "overrides": g.name}


def format_table(groups: list[Group], metric: str) -> str:
    """A plain-text table (what ``note-tune summary`` prints)."""
    head = ["config", "n", "mean", "std", "95% CI", "min", "max"]
    rows = []
    for g in groups:
        r = _row(g)
        ci = f"[{format_cell(r['ci95_low'])}, {format_cell(r['ci95_high'])}]" if g.ci95 else "-"
        rows.append([r["config"], str(g.n), format_cell(r["mean"]), format_cell(r["std"]), ci, format_cell(r["min"]), format_cell(r["max"])])
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    common = common_part(groups)
    shared = [f"shared by all: {' '.join(common)}"] if common else []
    if any(g.name.startswith("study ") for g in groups):
        shared.append(STUDY_NOTE)
    return "\n".join([f"{metric} by config (95% CI: Student t over the seeds)", *shared, line(head),
                      "  ".join("-" * w for w in widths), *map(line, rows)])


def write_summary(groups: list[Group], samples: list[Sample], warnings: list[str], metric: str,
                  out: str) -> dict[str, str]:
    """``summary.csv``, ``summary.md`` and ``summary.png`` in ``out``; returns their paths."""
    os.makedirs(out, exist_ok=True)
    paths = {k: os.path.join(out, f"summary.{k}") for k in ("csv", "md", "png")}
    with open(paths["csv"], "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        for g in groups:
            writer.writerow({k: ("" if v is None else v) for k, v in scrub(_row(g)).items()})
    with open(paths["md"], "w") as f:
        f.write(redact_text(_markdown(groups, samples, warnings, metric)))
    _plot(groups, metric, paths["png"])
    return paths


def _markdown(groups: list[Group], samples: list[Sample], warnings: list[str], metric: str) -> str:
    common = common_part(groups)
    lines = [f"# Summary: {metric}", "",
             "Grouped by config (overrides minus `seed`); 95% CI: mean +- t(0.975, n-1) * std / sqrt(n).", ""]
    if common:
        lines += [f"Overrides shared by all: `{' '.join(common)}`", ""]
    if any(g.name.startswith("study ") for g in groups):
        lines += [STUDY_NOTE[0].upper() + STUDY_NOTE[1:] + ".", ""]
    lines += ["| config | n | mean | std | 95% CI | min | max | seeds |",
              "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- |"]
    for g in groups:
        r = _row(g)
        ci = f"[{format_cell(r['ci95_low'])}, {format_cell(r['ci95_high'])}]" if g.ci95 else "-"
        cell = r["config"].replace("|", "\\|")
        lines.append(f"| `{cell}` | {g.n} | {format_cell(r['mean'])} | {format_cell(r['std'])} | {ci} | {format_cell(r['min'])} | "
                     f"{format_cell(r['max'])} | {r['seeds']} |")
    lines += ["", "## Samples", ""] + [f"- `{s.path}`: {s.value:.6g}" + (f" (seed {s.seed})" if s.seed is not None
                                                                           else "") for s in samples]
    if warnings:
        lines += ["", "## Left out", ""] + [f"- {w}" for w in warnings]
    return "\n".join(lines) + "\n"


def _plot(groups: list[Group], metric: str, path: str) -> None:
    """One bar per group (its mean) with the 95% CI as an error bar and each sample as a dot."""
    from ..logs.curves import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(groups) + 2), 4.5))
    x = list(range(len(groups)))
    means = [g.mean for g in groups]
    err = [[g.mean - g.ci95[0] if g.ci95 else 0.0 for g in groups], [g.ci95[1] - g.mean if g.ci95 else 0.0
                                                                      for g in groups]]
    ax.bar(x, means, yerr=err, capsize=6, color="tab:blue", alpha=0.6, label="mean, 95% CI")
    for i, g in enumerate(groups):
        ax.scatter([i] * g.n, g.values, color="black", s=14, zorder=3, label="samples" if i == 0 else None)
    labels = [g.label if len(g.label) <= 40 else g.label[:37] + "..." for g in groups]
    ax.set_xticks(x, labels, rotation=20 if len(groups) > 2 else 0, ha="right" if len(groups) > 2 else "center",
                  fontsize=8)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} by config")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
