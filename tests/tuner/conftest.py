"""Helpers for tuner tests: compose configs, run the app in a subprocess with tiny budgets."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from tuner.cli.app import CONF_DIR

REPO = os.path.dirname(CONF_DIR)

# a DQN trial that trains in about a second
TINY = ["agent=dqn", "agent.hidden_size=[16]", "agent.batch=16", "agent.train_freq=4", "agent.num_updates=1",
        "agent.learning_starts=32", "budget.steps=300", "buffer.pool_size=1000", "logger=none"]
# studies in tests skip the held-out re-evaluation stage unless they test it (tests/tuner/study/test_reevaluate.py)
# (and no test stage: tuner.seeds.test=0)
NO_REEVAL = ("tuner.reevaluate.top_k=0", "tuner.seeds.test=0")


def journal_of(study_dir: Any) -> str:
    """The journal file of the study in ``study_dir``: its own ``journal.log`` when it has one, else
    the one it shares with the studies beside it (``<parent>/journal.log``)."""
    from tuner.study.storage import default_journal

    return default_journal(str(study_dir))


def compose_cfg(overrides: list[str]) -> Any:
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=overrides)


def run_app(args: list[str], cwd: str, timeout: float = 600, env: dict | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
    """``python -m tuner <args>`` in ``cwd``; the repo is on PYTHONPATH for tests.* env modules."""
    full_env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
                    HYDRA_FULL_ERROR="0")
    full_env.update(env or {})
    out = subprocess.run([sys.executable, "-m", "tuner", *args], cwd=cwd, capture_output=True,
                         text=True, timeout=timeout, env=full_env)
    if check and out.returncode != 0:
        raise AssertionError(f"tuner exited {out.returncode}\nstdout:\n{out.stdout[-3000:]}\nstderr:\n{out.stderr[-3000:]}")
    return out


@pytest.fixture(autouse=True)
def _clear_hydra():
    yield
    GlobalHydra.instance().clear()
