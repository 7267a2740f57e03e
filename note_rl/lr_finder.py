"""Note_rl's ``from Note_rl.lr_finder import LRFinder``: the finder lives in :mod:`tuner.finders`
(it runs Optuna studies with fresh-process trials); this module re-exports it under the seed's name."""

from tuner.finders import LRFinder

__all__ = ["LRFinder"]
