"""Built-in agents: ``note_rl.agents.torch`` (PyTorch) and ``note_rl.agents.keras`` (Keras).

One folder per algorithm (``dqn``, ``ppo``, ``a2c``, ``ddpg``, ``td3``, ``sac``, ``maddpg``): its
``__init__.py`` is the framework-free part (arguments and checks, initial weights, the update spec,
numpy acting) and ``torch.py`` / ``keras.py`` its networks and losses per backend; ``common/`` is what
they share.  Import the backend module you need; this package itself imports no framework.
"""
