"""The backend seam: everything framework-specific lives behind :class:`Backend`.

Two levels, so that ``import note_rl`` (and a study's driver) never imports TensorFlow or PyTorch:

* :func:`backend_info` - light facts about a backend that callers need *before* the framework is
  imported: where its built-in agents live, how a fresh trial process must start (PyTorch: forked
  from a ``forkserver`` that has imported it once; TensorFlow, which is not fork-safe once it runs:
  ``spawn``) and what such a server preloads;
* :func:`get_backend` - the implementation (optimizers, threads, device, gradient steps,
  serialisation, data-parallel placement and strategies), imported on first use.

The torch replica launcher (:mod:`.torch_launch`) sits here too, behind the framework-free
:func:`note_rl.distributed.launch`.

Code outside this package asks these two functions and never compares backend names itself.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

from .base import Backend, BoundGroup, DeviceError, StepResult

__all__ = ["Backend", "BackendInfo", "BoundGroup", "DeviceError", "StepResult", "backend_info",
           "backend_names", "get_backend", "missing_framework", "require_framework"]


@dataclass(frozen=True)
class BackendInfo:
    """What is known about a backend without importing its framework.

    :param name: the backend's name (``backend.name`` in configs)
    :param framework: the framework's top-level module (``torch``, ``tensorflow``)
    :param module: module holding the implementation (its ``BACKEND`` object)
    :param agents: module of the built-in agents (``DQN``, ``PPO``, ...)
    :param base_class: the class (dotted path) that a user agent of this backend subclasses
    :param start_method: how a fresh trial process starts (``forkserver`` or ``spawn``)
    :param preload: modules a forkserver imports once so that every forked trial finds them
    :param extra: the package extra that installs the framework (``pip install 'note-rl-tuner[tf]'``)
    :param strategies: the tuner's data-parallel ``strategy`` options this backend implements, and
        what each is
    """

    name: str
    framework: str
    module: str
    agents: str
    base_class: str
    start_method: str
    preload: tuple[str, ...] = ()
    extra: str = ""
    strategies: tuple[tuple[str, str], ...] = ()


_INFO = {
    "torch": BackendInfo(
        "torch", "torch", "note_rl.backends.torch_backend", "note_rl.agents.torch", "note_rl.torch.RL_pytorch",
        "forkserver",
        # the first torch.optim optimizer a process builds imports torch._dynamo (~3 s here)
        ("note_rl.agents.torch", "note_rl.core.loop", "gymnasium", "gymnasium.envs.classic_control",
         "torch._dynamo"), extra="torch",
        strategies=(("ddp", "data-parallel replicas over torch.distributed"),)),
    "tf": BackendInfo("tf", "tensorflow", "note_rl.backends.tf_backend", "note_rl.agents.keras", "note_rl.keras.RL", "spawn",
                      extra="tf", strategies=(("mirrored", "tf.distribute.MirroredStrategy"),
                                              ("multi_worker", "tf.distribute.MultiWorkerMirroredStrategy"),
                                              ("parameter_server", "tf.distribute.ParameterServerStrategy"))),
}
_CACHE: dict[str, Backend] = {}


def backend_names() -> list[str]:
    """Names of the available backends."""
    return sorted(_INFO)


def backend_info(name: str) -> BackendInfo:
    """Light facts about backend ``name`` (imports no framework)."""
    if name not in _INFO:
        raise ValueError(f"unknown backend {name!r}; choose one of {backend_names()}")
    return _INFO[name]


def missing_framework(name: str) -> str | None:
    """``None`` when backend ``name``'s framework is installed, else the one line that says how to
    install it (the framework is looked up, not imported: TensorFlow takes seconds to import)."""
    info = backend_info(name)
    try:
        found = importlib.util.find_spec(info.framework) is not None
    except (ImportError, ValueError):  # a broken or blocked installation counts as missing
        found = False
    if found:
        return None
    label = {"tensorflow": "TensorFlow", "torch": "PyTorch"}.get(info.framework, info.framework)
    return (f"backend {name!r} needs {label}, which is not installed: pip install 'note-rl-tuner[{info.extra}]' "
            f"(in a checkout: pip install -e '.[{info.extra}]')")


def require_framework(name: str) -> None:
    """``ImportError`` with :func:`missing_framework`'s line when backend ``name`` cannot run."""
    message = missing_framework(name)
    if message is not None:
        raise ImportError(message)


def get_backend(name: str) -> Backend:
    """The backend called ``name`` (``"torch"`` or ``"tf"``), imported on first use."""
    info = backend_info(name)
    if name not in _CACHE:
        require_framework(name)
        _CACHE[name] = importlib.import_module(info.module).BACKEND
    return _CACHE[name]
