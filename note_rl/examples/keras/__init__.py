"""Note_rl's Keras example agents (``Note_rl.examples.keras``): see :mod:`note_rl.examples`."""
