"""Note_rl's ``from Note_rl.parallel_finder import ParallelFinder``: the finder lives in :mod:`tuner.finders`
(it runs Optuna studies with fresh-process trials); this module re-exports it under the seed's name."""

from tuner.finders import ParallelFinder

__all__ = ["ParallelFinder"]
