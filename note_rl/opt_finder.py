"""Note_rl's ``from Note_rl.opt_finder import OptFinder``: the finder lives in :mod:`tuner.finders`
(it runs Optuna studies with fresh-process trials); this module re-exports it under the seed's name."""

from tuner.finders import OptFinder

__all__ = ["OptFinder"]
