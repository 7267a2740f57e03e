"""Replay and rollout storage (numpy only)."""

from .her import HerReplayBuffer, flatten_goal_obs
from .nstep import NStepAccumulator
from .prioritized import PrioritizedReplayBuffer, PriorityRecorder
from .replay import Batch, ReplayBuffer
from .rollout import RolloutBatch, compute_gae, rollout_minibatches
from .sum_tree import SumTree
from .trajectory import TrajectoryReplayBuffer

__all__ = [
    "Batch",
    "HerReplayBuffer",
    "NStepAccumulator",
    "PrioritizedReplayBuffer",
    "PriorityRecorder",
    "ReplayBuffer",
    "RolloutBatch",
    "SumTree",
    "TrajectoryReplayBuffer",
    "compute_gae",
    "flatten_goal_obs",
    "rollout_minibatches",
]
