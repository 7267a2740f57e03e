"""The agents' house (issue 33): one folder per algorithm, its framework-free part plus one file per
backend, gathered under the public per-backend paths that users, configs and saved runs name."""

from __future__ import annotations

import importlib
import pickle
import sys
from pathlib import Path

import pytest

import note_rl.agents

FOLDERS = ("dqn", "ppo", "a2c", "trpo", "acer", "ddpg", "td3", "sac", "maddpg")
ROOT = Path(note_rl.agents.__file__).parent


def test_each_algorithm_is_one_folder_of_three_files() -> None:
    for folder in FOLDERS:
        assert sorted(p.name for p in (ROOT / folder).glob("*.py")) == ["__init__.py", "keras.py", "torch.py"], folder
    # what the algorithms share: framework-free helpers, Box acting, and each backend's networks
    assert sorted(p.name for p in (ROOT / "common").glob("*.py")) == ["__init__.py", "box.py", "keras.py", "torch.py"]


def test_the_framework_free_parts_import_no_framework() -> None:
    code = ("import sys, note_rl.agents.common.box\n"
            + "".join(f"import note_rl.agents.{f}\n" for f in FOLDERS)
            + "assert not {'torch', 'tensorflow', 'keras'} & set(sys.modules), sorted(sys.modules)\n")
    import subprocess

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=str(ROOT.parent.parent))
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("backend,framework", [("torch", "torch"), ("keras", "tensorflow")])
def test_public_paths_name_the_classes(backend, framework) -> None:
    """``note_rl.agents.<backend>.<Algo>`` is the class of ``note_rl.agents.<algo>.<backend>``, and the
    class names the public path as its module (pickles, ParallelFinder records, result.json)."""
    pytest.importorskip(framework)
    public = importlib.import_module(f"note_rl.agents.{backend}")
    for folder in FOLDERS:
        name = folder.upper()
        cls = getattr(public, name)
        assert getattr(importlib.import_module(f"note_rl.agents.{folder}.{backend}"), name) is cls
        assert cls.__module__ == f"note_rl.agents.{backend}"
        assert pickle.loads(pickle.dumps(cls)) is cls


@pytest.mark.parametrize("backend,framework", [("torch", "torch"), ("keras", "tensorflow")])
def test_ppo_is_two_classes_chosen_by_n_steps(backend, framework) -> None:
    """``PPO(n_steps=None)`` is ``PPO.Replay`` (Note_rl's replay mode) and ``PPO(n_steps=k)`` is
    ``PPO.Rollout``: two subclasses of ``PPO`` that share its loss, say ``PPO`` in messages and
    records, and pickle as themselves; A2C and TRPO build on ``PPO.Rollout``, and a user's subclass
    of ``PPO`` keeps its own methods first in either mode."""
    pytest.importorskip(framework)
    public = importlib.import_module(f"note_rl.agents.{backend}")
    from note_rl.agents.ppo import ReplayMode, RolloutMode

    PPO = public.PPO
    replay, rollout = PPO(4, 8, 2), PPO(4, 8, 2, n_steps=8)
    assert type(replay) is PPO.Replay and type(rollout) is PPO.Rollout and PPO.Replay is not PPO.Rollout
    assert issubclass(PPO.Replay, ReplayMode) and issubclass(PPO.Rollout, RolloutMode)
    assert not issubclass(PPO.Replay, RolloutMode) and not issubclass(PPO.Rollout, ReplayMode)
    assert isinstance(replay, PPO) and isinstance(rollout, PPO)
    assert type(replay).__name__ == type(rollout).__name__ == "PPO"
    assert (replay.n_steps, replay.PPO, rollout.n_steps, rollout.PPO) == (None, True, 8, False)
    assert type(PPO(4, 8, 2, 0.2, 0.0, 0.99, 0.95, 16)) is PPO.Rollout  # n_steps given by position
    for agent in (replay, rollout):
        assert type(pickle.loads(pickle.dumps(agent))) is type(agent)
    assert pickle.loads(pickle.dumps(PPO.Rollout)) is PPO.Rollout
    assert issubclass(public.A2C, PPO.Rollout) and issubclass(public.TRPO, PPO.Rollout)
    assert type(pickle.loads(pickle.dumps(public.A2C(4, 8, 2)))) is public.A2C

    class UserPPO(PPO):
        def greedy_action(self, output):
            return 0

    UserPPO.__qualname__ = "UserPPO"  # importable from this module, so that its agents pickle
    globals()["UserPPO"] = UserPPO
    try:
        for n_steps, mode in ((None, PPO.Replay), (8, PPO.Rollout)):
            agent = UserPPO(4, 8, 2, n_steps=n_steps)
            assert isinstance(agent, UserPPO) and isinstance(agent, mode) and type(agent).__name__ == "UserPPO"
            assert agent.greedy_action(None) == 0
            assert type(pickle.loads(pickle.dumps(agent))) is type(agent)
    finally:
        del globals()["UserPPO"]


def test_ppo_shared_code_has_no_mode_switch() -> None:
    """What both PPO classes share (the constructor, the loss, each backend's networks) never asks
    which mode it is in: the mode's data flow lives in ``ReplayMode`` / ``RolloutMode`` and the
    backends' ``PPO.Replay`` / ``PPO.Rollout``."""
    import ast

    for file, names in (("__init__.py", ("PPOLoss", "PPOMixin")), ("torch.py", ("PPO",)), ("keras.py", ("PPO",))):
        text = (ROOT / "ppo" / file).read_text()
        classes = {n.name: n for n in ast.parse(text).body if isinstance(n, ast.ClassDef)}
        for name in names:
            source = ast.get_source_segment(text, classes[name])
            assert "self.n_steps" not in source and "n_steps is None" not in source, (file, name)
