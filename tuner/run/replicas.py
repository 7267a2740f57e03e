"""``strategy=ddp``: a run or trial trained by ``strategy.replicas`` data-parallel replicas.

The process that runs the training (a single run, a trial, a multirun job) becomes rank 0: it keeps
every callback (evaluation, pruning, wandb, result.json, saved models).  It spawns ``replicas - 1``
helper processes (in its own process group, so a trial timeout stops them with it) that build the
same agent from the same config and call ``distributed_training`` with no callbacks.  Every replica
runs the whole step / episode budget on its own env seeds; pruning rank 0 stops every replica (the
shared ``stop_training`` of :mod:`note_rl.backends.torch_ddp`).
"""

from __future__ import annotations

import os
from typing import Any

from .build import attach_adjuster, build_agent, build_optimizer, train_kwargs

__all__ = ["TF_STRATEGIES", "fit_replicated", "tf_strategy"]

#: the ``strategy`` options that are tf.distribute strategies (backend=tf)
TF_STRATEGIES = ("mirrored", "multi_worker", "parameter_server")


def tf_strategy(cfg: dict[str, Any]) -> Any:
    """The tf.distribute strategy of ``strategy=mirrored | multi_worker | parameter_server``, made
    before TensorFlow runs anything (``strategy.logical_cpus`` splits the CPU into that many devices,
    which must happen first).  multi_worker and parameter_server read the cluster from ``TF_CONFIG``."""
    from note_rl.backends import get_backend

    get_backend("tf")  # TensorFlow imported as the backend does it (its C++ start-up lines silenced)
    from note_rl.backends.tf_backend import _native_stderr_silenced

    with _native_stderr_silenced():  # the device search prints "failed call to cuInit" without a GPU
        return _make_tf_strategy(cfg)


def _make_tf_strategy(cfg: dict[str, Any]) -> Any:
    import tensorflow as tf

    s = cfg["strategy"]
    if s["name"] == "mirrored":
        if s.get("logical_cpus"):
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * int(s["logical_cpus"]))
        devices = list(s["devices"]) if s.get("devices") else _placement(cfg["backend"].get("device"))
        return tf.distribute.MirroredStrategy(devices)
    from note_rl.ps_server import ensure_inter_op_threads

    ensure_inter_op_threads()  # the cluster strategies' steps wait on other tasks while holding one
    if s["name"] == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    return tf.distribute.ParameterServerStrategy(resolver)


def _placement(device: str | None) -> list[str] | None:
    """MirroredStrategy's devices from ``backend.device`` when ``strategy.devices`` is unset: ``cpu``
    the (logical) CPUs even where GPUs are present, ``cuda`` / ``gpu`` every GPU, ``cuda:N`` GPU N;
    ``auto`` leaves it to TensorFlow (every GPU, else the CPUs)."""
    import tensorflow as tf

    device = str(device or "auto").lower()
    if device == "auto":
        return None
    kind, _, index = device.partition(":")
    if kind == "cpu":
        return [d.name for d in tf.config.list_logical_devices("CPU")]
    if index:
        return [f"/gpu:{int(index)}"]
    return [d.name for d in tf.config.list_logical_devices("GPU")] or None

def _rendezvous(rank: int, world: int, port: int) -> None:
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})


def _helper(index: int, cfg: dict[str, Any], world: int, port: int, threads: int) -> None:
    """Replica ``index + 1``: the same agent and optimizer as rank 0, trained without callbacks."""
    import torch

    from note_rl.backends.torch_ddp import join_process_group

    _rendezvous(index + 1, world, port)
    torch.set_num_threads(threads)
    cfg = _placed(cfg, index + 1)
    agent = build_agent(cfg)
    attach_adjuster(agent, cfg)
    optimizer = build_optimizer(cfg, agent)
    kwargs = dict(train_kwargs(cfg), p=0)
    join_process_group(_comm(cfg, agent))
    import torch.distributed as dist

    try:
        agent.distributed_training(optimizer, cfg["budget"]["episodes"], **kwargs)
    finally:
        dist.destroy_process_group()


def _comm(cfg: dict[str, Any], agent: Any) -> str:
    """``strategy.comm``, else NCCL for an agent on a GPU and gloo otherwise."""
    if cfg["strategy"].get("comm"):
        return str(cfg["strategy"]["comm"])
    variables = agent._variables()
    return "nccl" if variables and variables[0].device.type == "cuda" else "gloo"


def _placed(cfg: dict[str, Any], rank: int) -> dict[str, Any]:
    """With CUDA and ``backend.device`` auto / cuda: replica ``rank`` on GPU ``rank % GPUs`` (NCCL
    needs one device per process; rank 0 keeps the current device, GPU 0)."""
    import torch

    device = cfg["backend"].get("device") or "auto"
    if device not in ("auto", "cuda") or not torch.cuda.is_available():
        return cfg
    index = rank % torch.cuda.device_count()
    torch.cuda.set_device(index)
    return {**cfg, "backend": {**cfg["backend"], "device": f"cuda:{index}"}}


def _threads_per_replica(cfg: dict[str, Any], world: int) -> int:
    """``backend.threads`` when set, else this process's threads shared out over the replicas (two
    replicas with two threads each on two cores trained 3x slower than with one each)."""
    import torch

    threads = cfg["backend"].get("threads")
    return int(threads) if threads else max(1, torch.get_num_threads() // world)


def fit_replicated(agent: Any, cfg: dict[str, Any], optimizer: Any, episodes: int | None,
                   kwargs: dict[str, Any]) -> None:
    """``agent.distributed_training(...)`` as rank 0 of ``cfg['strategy']['replicas']`` replicas."""
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp

    from note_rl.backends.torch_ddp import join_process_group
    from note_rl.distributed import ReplicaFailed, free_port

    world, port = int(cfg["strategy"]["replicas"]), free_port()
    threads = _threads_per_replica(cfg, world)
    torch.set_num_threads(threads)
    helpers = mp.start_processes(_helper, args=(cfg, world, port, threads), nprocs=world - 1, join=False,
                                 start_method="spawn")
    _rendezvous(0, world, port)
    try:
        join_process_group(_comm(cfg, agent))
        agent.distributed_training(optimizer, episodes, **kwargs)
    except BaseException:
        for proc in helpers.processes:
            if proc.is_alive():
                proc.kill()
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    try:
        while not helpers.join():
            pass
    except mp.ProcessExitedException as exc:
        raise ReplicaFailed(f"strategy=ddp: replica {exc.error_index + 1} of {world} exited with code "
                            f"{exc.exit_code}") from None
    except mp.ProcessRaisedException as exc:
        last = [line for line in str(exc).strip().splitlines() if line.strip()]
        raise ReplicaFailed(f"strategy=ddp: replica {exc.error_index + 1} of {world} failed: "
                            f"{last[-1].strip() if last else 'error'}") from None
