"""Note_rl's LRFinder, OptFinder and ParallelFinder rebuilt as Optuna studies whose trainings run
in fresh processes (Python API here; config path ``tuner=lr_finder|opt_finder|parallel_finder``)."""

from ..run.recorders import EpisodeRecorder, LRRangeTest, windowed_normalize
from .lr import LRFinder, lagged_change, lr_search_override, suggest_lr
from .opt import OptFinder
from .parallel import ParallelFinder

__all__ = ["EpisodeRecorder", "LRFinder", "LRRangeTest", "OptFinder", "ParallelFinder", "lagged_change",
           "lr_search_override", "suggest_lr", "windowed_normalize"]
