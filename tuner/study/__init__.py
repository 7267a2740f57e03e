"""Optuna studies: the study driver, the trial runner shared with the Hydra sweeper and the
finders, storages, study identity, held-out re-evaluation, progress and the files a study writes.
Imports :mod:`tuner.run` and the layers below it; never :mod:`tuner.report` or :mod:`tuner.cli`."""
