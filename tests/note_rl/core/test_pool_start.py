"""Pool workers re-run the parent's ``__main__`` only when what they are sent needs it."""

import subprocess
import sys
import textwrap
from pathlib import Path

import gymnasium as gym

from note_rl.core.envs import EnvFactory, dumps_noting_main
from note_rl.policy import EpsGreedyQPolicy

ROOT = Path(__file__).resolve().parents[3]


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


# a Ctrl-C that reaches a worker while it is still starting (importing): every worker is sent SIGINT
# right after it is started, as a terminal's Ctrl-C reaches the whole process group
INTERRUPTED_START = """
import multiprocessing.process, os, signal

start = multiprocessing.process.BaseProcess.start

def start_then_interrupt(self):
    start(self)
    os.kill(self.pid, signal.SIGINT)

multiprocessing.process.BaseProcess.start = start_then_interrupt

if __name__ == "__main__":
    import gymnasium as gym
    import torch
    from note_rl.agents.torch import DQN
    from note_rl.policy import EpsGreedyQPolicy
    agent = DQN(4, 16, 2, env=gym.make("CartPole-v1"), seed=0)
    agent.set(policy=EpsGreedyQPolicy(0.1), pool_size=500, batch=8, seed=0)
    agent.train(torch.optim.SGD(agent.param, lr=0.01), 2, pool_network=True, processes=2, p=0)
    print("ok", agent.total_episode)
"""


def test_a_worker_interrupted_while_it_starts_ignores_it_without_a_traceback(tmp_path: Path) -> None:
    """The parent decides what a Ctrl-C does; a pool worker still importing when it arrived printed a
    KeyboardInterrupt traceback from the middle of an import and died.  Workers now start with SIGINT
    blocked and ignore it once they can: both come up and training finishes."""
    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED_START)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         cwd=str(ROOT), env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["ok", "2"] and "Traceback" not in out.stderr and "KeyboardInterrupt" not in out.stderr
