"""A finished study's report (plots, tables, wandb run) and the optuna-dashboard server.  Imports
:mod:`tuner.study` and the layers below it."""
