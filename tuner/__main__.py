"""``python -m tuner`` runs the Hydra app (see tuner.cli.app)."""

from tuner.cli.app import main

if __name__ == "__main__":
    main()
