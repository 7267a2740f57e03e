"""``python -m tuner`` runs the Hydra app (see tuner.app)."""

from tuner.app import main

if __name__ == "__main__":
    main()
