"""Framework-free training machinery."""

from .base import RLBase
from .checkpoint import CheckpointError
from .learner import NonFiniteLossError
from .settings import TrainSettings

__all__ = ["RLBase", "CheckpointError", "NonFiniteLossError", "TrainSettings"]
