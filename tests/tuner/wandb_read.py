"""Read offline wandb runs back with wandb's own reader (``wandb leet inspect``, wandb >= 0.31).

wandb 0.31 no longer ships a Python reader of the ``.wandb`` transaction log; its CLI decodes the
log (in wandb-core) and prints one JSON object per record, or the run's state with ``--summary``.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from typing import Any

__all__ = ["read_run", "offline_runs"]


def offline_runs(folder: str) -> list[str]:
    """The offline run directories under ``<folder>/wandb/``."""
    return sorted(glob.glob(os.path.join(folder, "wandb", "offline-run-*")))


def _inspect(path: str, *flags: str) -> str:
    out = subprocess.run([sys.executable, "-m", "wandb", "leet", "inspect", "--json", *flags, path],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ, WANDB_MODE="offline"))
    assert out.returncode == 0, out.stderr
    return out.stdout


def read_run(path: str) -> dict[str, Any]:
    """``{"run", "config", "history", "summary", "state", "artifacts", "exit_code", "metrics"}`` of one
    run (``metrics``: the ``define_metric`` records, e.g. ``{"glob_name": "*", "step_metric": "lr"}``)."""
    records = [json.loads(line) for line in _inspect(path).splitlines() if line.strip()]
    run = next(r["run"] for r in records if r["type"] == "run")
    config = {k: v for k, v in run["config"]["update"].items() if k != "_wandb"}
    for r in records:  # later config updates, if any
        if r["type"] == "config":
            config.update({k: v for k, v in r["config"].get("update", {}).items() if k != "_wandb"})
    history = [r["history"]["item"] for r in records if r["type"] == "history"]
    artifacts = [r["artifact"] for r in records if r["type"] == "artifact"]
    exits = [r["exit"].get("exit_code", 0) for r in records if r["type"] == "exit"]
    metrics = [r["metric"] for r in records if r["type"] == "metric"]
    state = json.loads(_inspect(path, "--summary"))
    return {"run": run, "config": config, "history": history, "summary": state["summary"],
            "state": state["state"], "artifacts": artifacts, "exit_code": exits[-1] if exits else None,
            "metrics": metrics}
