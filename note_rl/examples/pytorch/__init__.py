"""Note_rl's PyTorch example agents (``Note_rl.examples.pytorch``): see :mod:`note_rl.examples`."""
