"""Pool workers re-run the parent's ``__main__`` only when what they are sent needs it."""

import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym

from note_rl.core.envs import EnvFactory, dumps_noting_main
from note_rl.policy import EpsGreedyQPolicy

ROOT = Path(__file__).resolve().parents[2]


class _Thing:
    pass


def test_dumps_noting_main_finds_main_classes_functions_and_instances(monkeypatch) -> None:
    main = sys.modules["__main__"]
    monkeypatch.setattr(_Thing, "__module__", "__main__")
    monkeypatch.setattr(main, "_Thing", _Thing, raising=False)
    assert dumps_noting_main({"policy": EpsGreedyQPolicy(0.1), "n": 3})[1] is False
    assert dumps_noting_main([_Thing])[1] is True
    assert dumps_noting_main({"x": _Thing()})[1] is True
    assert EnvFactory(gym.make("CartPole-v1")).uses_main is False


# the script counts how often its top level runs (in the parent and in any worker that re-runs it)
SCRIPT = """
import os, sys
with open(sys.argv[1], "a") as f:
    f.write("x")
import gymnasium as gym
import numpy as np
from note_rl.policy import EpsGreedyQPolicy
{extra}

if __name__ == "__main__":
    from note_rl.agents.torch import DQN
    import torch
    agent = DQN(4, 16, 2, env={env}, seed=0)
    agent.set(policy={policy}, pool_size=500, batch=8, seed=0)
    agent.train(torch.optim.SGD(agent.param, lr=0.01), 2, pool_network=True, processes=2, p=0)
    assert agent.total_episode == 2
    print("ok")
"""

CUSTOM = """
class MainPolicy(EpsGreedyQPolicy):
    pass
"""


def _runs_of_top_level(tmp_path: Path, extra: str, env: str, policy: str) -> int:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT.format(extra=extra, env=env, policy=policy)))
    marker = tmp_path / "runs.txt"
    out = subprocess.run([sys.executable, str(script), str(marker)], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "ok" in out.stdout
    return len(marker.read_text())


def test_workers_skip_main_when_not_needed(tmp_path: Path) -> None:
    assert _runs_of_top_level(tmp_path, "", "None", "EpsGreedyQPolicy(0.1)") == 1


def test_workers_rerun_main_for_objects_defined_there(tmp_path: Path) -> None:
    assert _runs_of_top_level(tmp_path, CUSTOM, "None", "MainPolicy(0.1)") == 3
