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
