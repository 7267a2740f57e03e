"""``note_rl.examples``: the seeds' ``Note_rl.examples.{keras,pytorch}.X`` import paths with the package
renamed, each naming a built-in agent (the Keras modules are checked by test_distributed_tf.py, which
runs the seeds' MirroredStrategy examples through them)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torch")


def test_an_agent_module_imports_only_its_own_framework() -> None:
    code = ("import sys; import note_rl.examples.pytorch.pool_network.DDPG_HER; "
            "print('torch' in sys.modules, 'tensorflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_pytorch_paths_name_the_builtin_agents() -> None:
    from note_rl.agents import torch as agents
    from note_rl.examples.pytorch.DDPG_HER import DDPG as HER
    from note_rl.examples.pytorch.DQN import DQN
    from note_rl.examples.pytorch.MADDPG import DDPG as MA
    from note_rl.examples.pytorch.pool_network.DDPG_HER import DDPG as PoolHER
    from note_rl.examples.pytorch.pool_network.DQN import DQN as PoolDQN

    assert DQN is PoolDQN is agents.DQN
    assert MA is agents.MADDPG  # Note_rl's MADDPG example class is called DDPG
    assert PoolHER is HER and issubclass(HER, agents.DDPG)


def test_ddpg_her_trains_with_her_as_the_seed_writes_it() -> None:
    """000's "HER (DDPG + HER)" PyTorch snippet with 6 episodes instead of 2000: the class carries a
    goal env (as Note_rl's did), so ``set(HER=True)`` trains; Note_rl 001's positional form and an
    explicit ``env`` work too.  Seeded (torch, numpy's noise, the env's resets): unseeded, an episode that
    reached its target early once left fewer than the batch's 256 transitions, so no update ran."""
    import numpy as np
    import torch

    from note_rl.examples import GOAL_ENV
    from note_rl.examples.pytorch.DDPG_HER import DDPG
    from note_rl.noise import GaussianWhiteNoiseProcess

    torch.manual_seed(0)
    np.random.seed(0)
    model = DDPG(hidden_size=128, tau=0.1, gamma=0.98, lr=0.005)
    model.set(noise=GaussianWhiteNoiseProcess(), pool_size=10000, batch=256, trial_count=10, criterion=-5.0, HER=True,
              seed=0)
    optimizer = [torch.optim.Adam(model.param[0]), torch.optim.Adam(model.param[1])]
    model.train(optimizer=optimizer, episodes=6, pool_network=False, p=0)
    assert model.total_episode == 6 and model.batch_counter > 0 and model.env.spec.id == GOAL_ENV
    positional = DDPG(128, 0.1, 0.98, 0.005, 7)
    assert (positional.processes, positional.tau, positional.lr, positional.env.spec.id) == (7, 0.1, 0.005, GOAL_ENV)
    assert DDPG(hidden_size=16, env="Pendulum-v1").env.spec.id == "Pendulum-v1"
