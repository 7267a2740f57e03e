"""Run one plain training job in a fresh process (Hydra multirun jobs)."""

from __future__ import annotations

import json
import os
from typing import Any

from .launcher import TrialProcess, exit_reason
from .messages import Failure, Report, Result, TrialSpec

__all__ = ["run_in_fresh_process"]


def run_in_fresh_process(cfg: dict[str, Any], run_dir: str, ctx: Any) -> dict[str, Any]:
    """Train ``cfg`` in a new process and return its ``result.json`` content."""
    spec = TrialSpec(trial=None, backend=cfg["backend"]["name"], run_dir=run_dir, configs=[cfg],
                     report_every=10 ** 9)
    proc = TrialProcess(spec, ctx)
    try:
        while True:
            if proc.alive():
                proc.conn.poll(1.0)
            for message in proc.events():
                if isinstance(message, Result):
                    with open(os.path.join(run_dir, "result.json")) as f:
                        return json.load(f)
                if isinstance(message, Failure):
                    raise RuntimeError(f"training job failed: {message.message}")
                if isinstance(message, Report):
                    proc.answer(False)  # no pruner here: go on
            if not proc.alive():
                raise RuntimeError(f"training job {exit_reason(proc.proc.exitcode)}")
    finally:
        proc.close()
