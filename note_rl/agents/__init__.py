"""Built-in agents: ``note_rl.agents.torch`` (PyTorch) and ``note_rl.agents.keras`` (Keras).

Import the backend module you need; this package itself imports no framework.
"""
