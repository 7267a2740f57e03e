"""``note_rl.load(path)``: the agent a ``note-tune`` run saved, ready to ``predict``.

``path`` is a run dir (its ``model.npz``) or a model file a run wrote (``model.npz``,
``best_eval_model.npz``) beside the run's ``result.json`` / ``config.yaml``.  Those files are data:
the agent is rebuilt only from note_rl's own classes and env factories unless ``trust_code=True``
(the same allow-list and bounded readers as ``note-tune eval``: :mod:`tuner.config.untrusted`), and
the weights are read with ``allow_pickle=False``.  The rebuild uses the tuner's config machinery,
which ships in the same package.
"""

from __future__ import annotations

from typing import Any

__all__ = ["load", "LoadError"]


class LoadError(ValueError):
    """The model or its run config cannot be loaded (one line naming the file and why)."""


def load(path: str, trust_code: bool = False, device: str | None = "cpu") -> Any:
    """The agent of the run at ``path`` with its saved weights.

    :param path: a run dir, or a ``.npz`` model file in one
    :param trust_code: let the run's config name classes other than note_rl's own; this imports
        and runs them (only for files you trust)
    :param device: where the networks live (``"cpu"``; ``None`` keeps the run's ``backend.device``)

    Act with ``agent.predict(obs)`` (``(action, None)``, as Stable-Baselines3), export with
    :func:`note_rl.export`.
    """
    from tuner.run.loading import ModelLoadError, load_agent, model_file

    try:
        agent, _ = load_agent(model_file(str(path)), trust_code=trust_code, threads=False, device=device)
    except ModelLoadError as exc:
        raise LoadError(str(exc)) from None
    return agent
