"""An Optuna sweeper for Hydra multirun that works with Optuna 5 and SQLAlchemy 2.

``python -m tuner -m hydra/sweeper=optuna hydra.sweeper.n_trials=20 'optimizer.lr=tag(log, interval(1e-5, 1e-2))'``
"""

__version__ = "0.1.0"
