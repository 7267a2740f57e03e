"""Multi-agent RL (``set(MARL=True)``): MatchingGame, joint storage, per-agent policies, the
reward hook, errors, checkpoints, VDN learning (torch) and a Keras smoke run."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from note_rl.core.marl import check_marl_env, default_reward_done
from note_rl.core.plots import run_agent
from note_rl.ma_envs import MatchingGame
from note_rl.policy import EpsGreedyQPolicy, LinearEpsGreedyPolicy
from tests.conftest import agents_module, make_optimizer, train


# -- the env by hand ----------------------------------------------------------------------------
def test_matching_game_reset_and_step() -> None:
    env = MatchingGame(n_agents=2, k=3, max_steps=3)
    obs, infos = env.reset(seed=4)
    assert list(obs) == ["agent_0", "agent_1"] and set(infos) == set(obs)
    cue = int(np.argmax(obs["agent_0"]))
    np.testing.assert_array_equal(obs["agent_0"], obs["agent_1"])  # shared cue
    assert obs["agent_0"].sum() == 1.0 and env.observation_space("agent_0").contains(obs["agent_0"])
    obs, rewards, terms, truncs, _ = env.step({"agent_0": cue, "agent_1": cue})
    assert rewards == {"agent_0": 1.0, "agent_1": 1.0} and not any(terms.values())
    cue = int(np.argmax(obs["agent_1"]))
    _, rewards, _, truncs, _ = env.step({"agent_0": cue, "agent_1": (cue + 1) % 3})
    assert rewards == {"agent_0": 0.0, "agent_1": 0.0} and not any(truncs.values())
    _, _, _, truncs, _ = env.step({"agent_0": 0, "agent_1": 0})
    assert all(truncs.values()) and env.agents == []
    # same seed, same cues
    first = [np.argmax(MatchingGame().reset(seed=9)[0]["agent_0"]) for _ in range(2)]
    assert first[0] == first[1]
    check_marl_env(env)  # no error


# -- a scripted torch agent: records what it is asked and returns fixed outputs --------------
class RecordingPolicy:
    """Greedy policy that records every output it sees (to check the per-agent routing)."""

    def __init__(self) -> None:
        self.seen: list[np.ndarray] = []

    def act(self, output: np.ndarray, step_counter: int = 0) -> int:
        self.seen.append(np.asarray(output).copy())
        return int(np.argmax(output))


def _torch_agent_class():
    """A VDN agent (value decomposition: ``Q_tot = sum_i Q_i(s_i, a_i)``) with one MLP shared by
    all agents, the agent id appended as a one-hot, and a target network."""
    import torch

    from note_rl.torch import RL_pytorch

    class VDN(RL_pytorch):
        def __init__(self, env: MatchingGame, hidden: int = 32, gamma: float = 0.9) -> None:
            super().__init__()
            self.env = env
            self.n = len(env.possible_agents)
            obs_dim = env.observation_space(env.possible_agents[0]).shape[0]
            n_act = env.action_space(env.possible_agents[0]).n

            def mlp() -> torch.nn.Module:
                return torch.nn.Sequential(torch.nn.Linear(obs_dim + self.n, hidden), torch.nn.ReLU(),
                                           torch.nn.Linear(hidden, n_act))

            self.q_net, self.target_net = mlp(), mlp()
            self.target_net.load_state_dict(self.q_net.state_dict())
            self.param = list(self.q_net.parameters())
            self.gamma = gamma

        def _with_id(self, s: "torch.Tensor", ids: "torch.Tensor") -> "torch.Tensor":
            return torch.cat([s, ids.expand(*s.shape[:-1], self.n)], dim=-1)

        def action(self, s: "torch.Tensor", i: int) -> "torch.Tensor":
            """Agent ``i``'s Q-values for a batch of its observations ``(B, obs_dim)``."""
            return self.q_net(self._with_id(s, torch.eye(self.n)[i]))

        def __call__(self, s, a, next_s, r, d):
            # s, next_s: (B, n_agents, obs_dim); a: (B, n_agents); r, d: (B,)
            ids = torch.eye(self.n)  # row i: agent i's one-hot, broadcast over the batch
            q = self.q_net(self._with_id(s, ids)).gather(-1, a.long().unsqueeze(-1)).squeeze(-1)
            with torch.no_grad():
                next_q = self.target_net(self._with_id(next_s, ids)).max(-1).values.sum(-1)
            target = r + self.gamma * (1.0 - d) * next_q
            return ((q.sum(-1) - target) ** 2).mean()

        def update_param(self) -> None:
            self.target_net.load_state_dict(self.q_net.state_dict())

    return VDN


def _vdn(seed: int = 0, env: MatchingGame | None = None, **kw):
    import torch

    torch.manual_seed(seed)  # the networks are built in __init__, before set(seed=...)
    agent = _torch_agent_class()(env if env is not None else MatchingGame())
    agent.set(MARL=True, seed=seed, **kw)
    return agent


# -- acting and storage ----------------------------------------------------------------------
def test_per_agent_policy_list_gets_agent_outputs() -> None:
    import torch

    agent = _vdn(pool_size=100, batch=1000)  # batch > steps: no training, outputs stay fixed
    policies = [RecordingPolicy(), RecordingPolicy()]
    agent.set(policy=policies)
    agent.train(torch.optim.Adam(agent.param), 1, p=0)
    assert len(policies[0].seen) == len(policies[1].seen) == 10
    states = agent.buffer.data["state"][:10]
    for i, policy in enumerate(policies):
        with torch.no_grad():
            expected = agent.action(torch.as_tensor(states[:, i]), i).numpy()
        np.testing.assert_allclose(np.stack(policy.seen), expected, rtol=1e-5, atol=1e-6)
    # the two agents' outputs differ (the agent id is part of the input)
    assert not np.allclose(np.stack(policies[0].seen), np.stack(policies[1].seen))


def test_joint_storage_shapes_and_values_by_hand() -> None:
    import torch

    env = MatchingGame(max_steps=4)
    agent = _vdn(env=env, pool_size=100, batch=1000, policy=EpsGreedyQPolicy(1.0))
    agent.train(torch.optim.Adam(agent.param), 1, p=0)
    d = agent.buffer.data
    n = len(agent.buffer)
    assert n == 4 and agent.step_counter == 4
    assert d["state"].shape[1:] == (2, 3) and d["next_state"].shape[1:] == (2, 3)
    assert d["action"].shape[1:] == (2,) and d["action"].dtype == np.int64
    assert d["reward"].shape[1:] == () and d["done"].shape[1:] == ()
    # replay the episode: same seed gives the same cues; rewards follow from the stored actions
    obs, _ = MatchingGame(max_steps=4).reset(seed=0)
    for t in range(4):
        cue = int(np.argmax(obs["agent_0"]))
        np.testing.assert_array_equal(d["state"][t], np.stack([obs["agent_0"], obs["agent_1"]]))
        hit = all(int(a) == cue for a in d["action"][t])
        assert d["reward"][t] == 2.0 * hit and d["done"][t] == 0.0  # sum of rewards, no termination
        if t < 3:
            np.testing.assert_array_equal(d["next_state"][t], d["state"][t + 1])
        cue_next = np.argmax(d["next_state"][t][0])
        obs = {name: np.eye(3, dtype=np.float32)[cue_next] for name in env.possible_agents}
    assert agent.reward_list == [float(d["reward"][:4].sum())]


def test_reward_done_func_ma_is_used_when_defined() -> None:
    import torch

    calls = []

    class MeanAll(_torch_agent_class()):
        def reward_done_func_ma(self, r_list, done_list):
            calls.append((list(r_list), list(done_list)))
            return np.mean(r_list) + 10.0, all(done_list)

    torch.manual_seed(0)
    agent = MeanAll(MatchingGame(max_steps=5))
    agent.set(MARL=True, seed=0, pool_size=50, batch=1000, policy=EpsGreedyQPolicy(1.0))
    agent.train(torch.optim.Adam(agent.param), 1, p=0)
    assert len(calls) == 5 and all(len(r) == 2 and done == [False, False] for r, done in calls)
    stored = agent.buffer.data["reward"][:5]
    np.testing.assert_allclose(stored, [np.mean(r) + 10.0 for r, _ in calls])
    assert agent.reward_list == [pytest.approx(float(stored.sum()))]
    assert agent.marl_reward_done([1.0, 0.0], [True, False]) == (10.5, False)


def test_default_reward_done_is_sum_and_any() -> None:
    assert default_reward_done([1.0, 2.5], [False, True]) == (3.5, True)
    assert default_reward_done([0.0, 0.0], [False, False]) == (0.0, False)
    assert _vdn().marl_reward_done([1.0, 1.0], [False, False]) == (2.0, False)


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("first, second", [
    (dict(MARL=True), dict(HER=True)),
    (dict(HER=True), dict(MARL=True)),
    (dict(MARL=True), dict(PR=True)),
    (dict(MARL=True), dict(PPO=True)),
    (dict(MARL=True), dict(num_steps=3)),
    (dict(num_steps=3), dict(MARL=True)),
])
def test_set_rejects_unsupported_combinations(first, second) -> None:
    agent = agents_module("torch").DQN(4, 16, 2)
    agent.set(**first)
    with pytest.raises(ValueError, match="MARL") as info:
        agent.set(**second)
    assert "\n" not in str(info.value)
    assert not (agent.MARL and (agent.HER or agent.PR or agent.PPO or agent.num_steps))


def test_rollout_ppo_rejects_marl() -> None:
    agent = agents_module("torch").PPO(4, 16, 2, n_steps=8, env=gym.make("CartPole-v1"))
    with pytest.raises(ValueError, match="MARL.*PPO"):
        agent.set(MARL=True)


class _NoSpaces:
    possible_agents = ["a", "b"]

    def reset(self, seed=None):
        return {}, {}

    def step(self, actions):
        return {}, {}, {}, {}, {}


class _UnequalObs(MatchingGame):
    def observation_space(self, agent):
        return gym.spaces.Box(0.0, 1.0, (3 if agent == "agent_0" else 4,), np.float32)


@pytest.mark.parametrize("env, pattern", [
    (gym.make("CartPole-v1"), "MARL.*possible_agents"),
    (_NoSpaces(), "MARL.*observation_space"),
    (_UnequalObs(), "MARL.*equal observation shapes"),
])
def test_train_rejects_non_parallel_envs(env, pattern) -> None:
    import torch

    agent = _vdn(pool_size=50, batch=8)
    agent.env = env
    with pytest.raises(ValueError, match=pattern) as info:
        agent.train(torch.optim.Adam(agent.param), 1, p=0)
    assert "\n" not in str(info.value) and agent.step_counter == 0


def test_train_rejects_single_agent_action_and_wrong_policy_list() -> None:
    import torch

    builtin = agents_module("torch").DQN(3, 16, 3, env=MatchingGame())  # action(s) only
    builtin.set(MARL=True, pool_size=50, batch=8)
    with pytest.raises(ValueError, match=r"MARL.*action\(s, i\)"):
        builtin.train(torch.optim.Adam(builtin.param), 1, p=0)
    agent = _vdn(pool_size=50, batch=8, policy=[EpsGreedyQPolicy(0.1)] * 3)
    with pytest.raises(ValueError, match="MARL.*one policy per agent"):
        agent.train(torch.optim.Adam(agent.param), 1, p=0)
    assert builtin.step_counter == agent.step_counter == 0


def test_train_rejects_pool_network() -> None:
    import torch

    agent = _vdn(pool_size=50, batch=8)
    with pytest.raises(ValueError, match="MARL.*pool_network"):
        agent.train(torch.optim.Adam(agent.param), 1, pool_network=True, processes=2, p=0)
    assert agent.step_counter == 0


# -- checkpoint, learning ------------------------------------------------------------------------
def test_checkpoint_round_trip(tmp_path) -> None:
    import torch

    path = str(tmp_path / "marl.dat")
    a = _vdn(pool_size=500, batch=16, update_steps=20, policy=EpsGreedyQPolicy(0.3))
    a.train(torch.optim.Adam(a.param), 5, p=0)
    assert a.batch_counter > 0
    a.save(path)
    b = _vdn(seed=3, env=MatchingGame())
    b.set(MARL=False)  # restored from the file
    b.restore(path, optimizer=torch.optim.Adam(b.param))
    assert b.MARL and b.step_counter == a.step_counter == 50 and b.reward_list == a.reward_list
    meta_a, arrays_a = a.buffer.state_dict()
    meta_b, arrays_b = b.buffer.state_dict()
    assert meta_a == meta_b and sorted(arrays_a) == sorted(arrays_b)
    assert arrays_b["state"].shape[1:] == (2, 3) and arrays_b["action"].shape[1:] == (2,)
    for key in arrays_a:
        np.testing.assert_array_equal(arrays_a[key], arrays_b[key])
        assert arrays_a[key].dtype == arrays_b[key].dtype
    for x, y in zip(a.q_net.parameters(), b.q_net.parameters()):
        torch.testing.assert_close(x, y)
    b.train(None, 2, p=0)  # training continues with the restored joint buffer
    assert b.step_counter == 70


def _greedy_return(agent, episodes: int = 20) -> float:
    """Mean return of the greedy team on fresh seeded episodes (no exploration)."""
    import torch

    env, total = MatchingGame(), 0.0
    for e in range(episodes):
        obs, _ = env.reset(seed=1000 + e)
        while env.agents:
            with torch.no_grad():
                acts = {n: int(agent.action(torch.as_tensor(obs[n])[None], i).argmax())
                        for i, n in enumerate(env.possible_agents)}
            obs, rewards, _, _, _ = env.step(acts)
            total += sum(rewards.values())
    return total / episodes


def _vdn_run(seed: int):
    import torch

    agent = _vdn(seed=seed, pool_size=5000, batch=32, update_steps=50, learning_starts=64,
                 policy=LinearEpsGreedyPolicy(1.0, 0.05, decay_steps=1000))
    agent.train(torch.optim.Adam(agent.param, lr=3e-3), None, steps=1500, p=0)
    return agent


def test_torch_vdn_learns_matching_game() -> None:
    agent = _vdn_run(seed=0)
    # random play earns 2.2 per episode on average, the best team 20
    assert _greedy_return(agent) >= 16.0
    assert np.mean(agent.reward_list[-20:]) > np.mean(agent.reward_list[:10]) + 6.0


# -- Keras smoke --------------------------------------------------------------------------------
@pytest.mark.parametrize("jit", [False, True])  # True: each agent's action(s, i) under XLA
def test_keras_smoke(jit: bool) -> None:
    import keras

    from note_rl.keras import RL

    class KerasIQL(RL):
        """Independent Q heads with a shared dense net (a tiny MARL Keras agent)."""

        def __init__(self, env: MatchingGame) -> None:
            super().__init__()
            self.env = env
            self.q_net = keras.Sequential([keras.Input((3,)), keras.layers.Dense(16, activation="relu"),
                                           keras.layers.Dense(3)])
            self.param = self.q_net.trainable_variables

        def action(self, s, i):
            return self.q_net(s)

        def __call__(self, s, a, next_s, r, d):
            ops = keras.ops
            q = self.q_net(ops.reshape(s, (-1, 3)))  # (B * n_agents, 3)
            taken = ops.sum(q * ops.one_hot(ops.reshape(ops.cast(a, "int32"), (-1,)), 3), -1)
            q_tot = ops.sum(ops.reshape(taken, (-1, 2)), -1)
            return ops.mean((q_tot - r) ** 2)

    agent = KerasIQL(MatchingGame())
    agent.set(MARL=True, seed=0, pool_size=200, batch=8, policy=[EpsGreedyQPolicy(0.5)] * 2)
    train(agent, "tf", make_optimizer("tf", agent.param), 4, p=0, jit_compile=jit)
    assert len(agent.reward_list) == 4 and agent.batch_counter > 0
    assert agent.buffer.data["state"].shape[1:] == (2, 3)


def test_single_agent_replay_is_refused_for_marl_agents(tmp_path) -> None:
    agent = _vdn(seed=0)
    for call in (lambda: agent.animate_agent(5, save_path=str(tmp_path / "a.gif")),
                 lambda: run_agent(agent, 5)):
        with pytest.raises(ValueError, match="not supported for MARL"):
            call()
