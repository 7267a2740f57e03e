"""Shared fixtures.  Frameworks are imported lazily by the tests that need them."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402


def _one_torch_thread() -> None:
    """The suite runs two test processes on two cores: torch's default of one thread per core
    would put four busy threads on two cores, which makes small updates up to 20x slower (a SAC
    test: 58 s against 2.5 s).  Tests that check thread settings set their own; processes the
    tests start (trials, workers) are not affected."""
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)


_one_torch_thread()

BACKENDS = ["torch", "tf"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def agents_module(backend: str):
    """``note_rl.agents.torch`` or ``note_rl.agents.keras``."""
    if backend == "torch":
        import note_rl.agents.torch as mod
    else:
        import note_rl.agents.keras as mod
    return mod


def make_optimizer(backend: str, params, name: str = "adam", lr: float = 1e-3):
    """One optimizer over ``params`` (flattened) for the given backend."""
    flat = [p for g in params for p in g] if params and isinstance(params[0], (list, tuple)) else list(params)
    if backend == "torch":
        import torch

        cls = {"adam": torch.optim.Adam, "sgd": torch.optim.SGD}[name]
        return cls(flat, lr=lr)
    import keras

    cls = {"adam": keras.optimizers.Adam, "sgd": keras.optimizers.SGD}[name]
    return cls(learning_rate=lr)


def train(agent, backend: str, optimizer, episodes, **kwargs):
    """Call ``train`` with each backend's positional contract."""
    if backend == "torch":
        return agent.train(optimizer, episodes, **kwargs)
    return agent.train(None, optimizer, episodes, **kwargs)
