"""The ``note-tune`` command (Hydra app) and its subcommands (``eval``, ``play``, ``reevaluate``,
``report``, ``dashboard``...).  The top layer: it may import every other part of the tuner."""
