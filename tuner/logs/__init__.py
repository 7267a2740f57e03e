"""What a run records: the wandb integration, training curves and ``result.json``.  Imports
:mod:`tuner.config` and :mod:`tuner.common`."""
