"""note_rl: a reinforcement-learning training core with Keras/TensorFlow and PyTorch backends.

``import note_rl`` imports neither framework; they load when a backend is first used
(``note_rl.keras``, ``note_rl.torch``, ``note_rl.agents.keras``, ``note_rl.agents.torch``).

``note_rl.load(run_dir)`` rebuilds a saved run's agent (``agent.predict(obs)``); ``note_rl.export(agent,
path, format)`` writes its policy as TorchScript, ONNX or a TF SavedModel.
"""

from . import callbacks, noise, policy
from .callbacks import Callback, LambdaCallback
from .core import CheckpointError, NonFiniteLossError, RLBase
from .core.checkpoint import read_param as restore_param
from .exporting import export
from .loading import LoadError, load

__version__ = "0.1.0"

__all__ = ["Callback", "CheckpointError", "LambdaCallback", "NonFiniteLossError", "RLBase",
           "callbacks", "restore_param", "noise", "policy", "__version__", "load", "export", "LoadError"]
