"""``strategy=ddp``: a run or trial trained by ``strategy.replicas`` data-parallel replicas.

The process that runs the training (a single run, a trial, a multirun job) becomes rank 0 of
:func:`note_rl.distributed.launch` (which starts the other replicas, joins the process group and
collects their errors): it keeps every callback (evaluation, pruning, wandb, result.json, saved
models).  It spawns ``replicas - 1`` helper processes (in its own process group, so a trial timeout
stops them with it) that build the same agent from the same config and call
``distributed_training`` with no callbacks.  Every replica runs the whole step / episode budget on
its own env seeds; pruning rank 0 stops every replica (the shared ``stop_training`` of
:mod:`note_rl.backends.torch_ddp`).  The ``strategy=mirrored | multi_worker | parameter_server``
strategies (backend=tf) are made by their class (:meth:`tuner.config.strategies.TFDistribute.make`,
through the backend's :meth:`~note_rl.backends.Backend.make_strategy`).
"""

from __future__ import annotations

from typing import Any

from note_rl.backends import Backend, get_backend

from .build import attach_adjuster, build_agent, build_optimizer, train_kwargs

__all__ = ["fit_replicated"]


def _helper(rank: int, cfg: dict[str, Any], threads: int) -> None:
    """Replica ``rank`` (1 and up): the same agent and optimizer as rank 0, trained without callbacks."""
    backend = get_backend(cfg["backend"]["name"])
    backend.set_threads(threads)
    cfg = _placed(cfg, rank, backend)
    agent = build_agent(cfg)
    attach_adjuster(agent, cfg)
    optimizer = build_optimizer(cfg, agent)
    kwargs = dict(train_kwargs(cfg), p=0)
    agent.distributed_training(optimizer, cfg["budget"]["episodes"], **kwargs)


def _comm(cfg: dict[str, Any], agent: Any) -> str:
    """``strategy.comm``, else NCCL for an agent on a GPU and gloo otherwise (the same for every
    replica: they are placed alike, see :func:`_placed`)."""
    if cfg["strategy"].get("comm"):
        return str(cfg["strategy"]["comm"])
    variables = agent._variables()
    return "nccl" if variables and variables[0].device.type == "cuda" else "gloo"


def _placed(cfg: dict[str, Any], rank: int, backend: Backend) -> dict[str, Any]:
    """With CUDA and ``backend.device`` auto / cuda: replica ``rank`` on GPU ``rank % GPUs`` (NCCL
    needs one device per process; rank 0 keeps the current device, GPU 0)."""
    device = backend.place_replica(cfg["backend"].get("device"), rank)
    return cfg if device is None else {**cfg, "backend": {**cfg["backend"], "device": device}}


def _threads_per_replica(cfg: dict[str, Any], world: int, backend: Backend) -> int:
    """``backend.threads`` when set, else this process's threads shared out over the replicas (two
    replicas with two threads each on two cores trained 3x slower than with one each)."""
    threads = cfg["backend"].get("threads")
    return int(threads) if threads else max(1, (backend.framework_threads() or 1) // world)


def fit_replicated(agent: Any, cfg: dict[str, Any], optimizer: Any, episodes: int | None,
                   kwargs: dict[str, Any]) -> None:
    """``agent.distributed_training(...)`` as rank 0 of ``cfg['strategy']['replicas']`` replicas."""
    from note_rl.distributed import ReplicaFailed, launch

    backend = get_backend(cfg["backend"]["name"])
    world = int(cfg["strategy"]["replicas"])
    threads = _threads_per_replica(cfg, world, backend)
    backend.set_threads(threads)
    try:
        launch(_helper, nprocs=world, args=(cfg, threads), backend=_comm(cfg, agent),
               rank0=lambda: agent.distributed_training(optimizer, episodes, **kwargs))
    except ReplicaFailed as exc:  # the trial's own words for a helper that failed
        if exc.error is not None:
            raise ReplicaFailed(f"strategy=ddp: replica {exc.rank} of {exc.world} failed: {exc.error}") from None
        raise ReplicaFailed(f"strategy=ddp: replica {exc.rank} of {exc.world} exited with code "
                            f"{exc.exit_code}") from None
