"""Pool network: which buffer segment each worker's transitions land in.

Worker ``p`` plays ``_Tagged(p, length)``, whose observations carry ``p``, so every stored
transition tells which worker produced it.  With a prioritized buffer (and ``random=False``) each
worker writes its own segment.  With ``random=True`` or a uniform buffer a worker whose own segment
is empty writes there, otherwise it draws a segment with probability ``1 / (len + 1)`` (Note_rl's
inverse-length placement), from the collector's generator seeded with ``seed + 13``.
"""

import multiprocessing

import gymnasium as gym
import numpy as np
import pytest

from note_rl.policy import EpsGreedyQPolicy

LENGTHS = (3, 5)  # episode length of worker 0 and worker 1


class _Tagged(gym.Env):
    """Observation ``[tag, t]``; terminates after ``length`` steps."""

    def __init__(self, tag: int, length: int) -> None:
        self.tag, self.length, self.t = tag, length, 0
        self.observation_space = gym.spaces.Box(0.0, 100.0, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def _obs(self) -> np.ndarray:
        return np.array([self.tag, self.t], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), 1.0, self.t >= self.length, False, {}


def _collect(phases: int, PR: bool, **train_kwargs):
    import torch

    from note_rl.agents.torch import DQN

    agent = DQN(2, 8, 2, env=[_Tagged(p, n) for p, n in enumerate(LENGTHS)])
    agent.set(policy=EpsGreedyQPolicy(0.5), pool_size=200, batch=4, learning_starts=10**6, PR=PR, seed=0)
    agent.train(torch.optim.SGD(agent.param, lr=0.01), phases, pool_network=True, processes=2, p=0,
                **train_kwargs)
    buf = agent.buffer
    assert agent.total_episode == phases and agent.step_counter == phases * sum(LENGTHS)
    return [buf.data["state"][buf.segment_slots(k)] for k in range(2)]


def _inverse_length_placement(phases: int, seed: int) -> list[list[int]]:
    """The tags each segment should hold, oldest first, worked out step by step."""
    rng = np.random.default_rng(seed + 13)
    sizes = np.zeros(2)
    tags: list[list[int]] = [[], []]
    for _ in range(phases):
        for p, n in enumerate(LENGTHS):  # the training process stores worker 0, then worker 1
            if sizes[p] == 0:
                seg = p
            else:
                w = 1.0 / (sizes + 1.0)
                seg = int(rng.choice(2, p=w / w.sum()))
            tags[seg] += [p] * n
            sizes[seg] += n
    return tags


def test_prioritized_buffer_each_worker_writes_its_own_segment() -> None:
    segments = _collect(2, PR=True)
    for p, states in enumerate(segments):
        assert states[:, 0].tolist() == [p] * (2 * LENGTHS[p])
        # two whole episodes in order: t = 0..length-1 twice
        assert states[:, 1].tolist() == list(range(LENGTHS[p])) * 2


@pytest.mark.parametrize("PR, kwargs", [(True, {"random": True}),
                                        (False, {"start_method": "forkserver"})])
def test_inverse_length_placement(PR, kwargs, monkeypatch) -> None:
    methods = []
    get_context = multiprocessing.get_context
    monkeypatch.setattr(multiprocessing, "get_context",
                        lambda method=None: methods.append(method) or get_context(method))
    phases = 4
    segments = _collect(phases, PR=PR, **kwargs)
    expected = _inverse_length_placement(phases, seed=0)
    assert [s[:, 0].astype(int).tolist() for s in segments] == expected
    assert expected[0] != [0] * 3 * phases  # the draws did move data between segments
    assert methods == [kwargs.get("start_method", "spawn")]
