"""Hydra/Optuna tuning application for note_rl agents (``python -m tuner`` / ``note-tune``)."""
