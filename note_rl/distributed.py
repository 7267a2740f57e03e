"""Start a torch.distributed process group on this machine and run a function in every replica.

``launch(fn, nprocs=2)`` is what ``torchrun --nproc-per-node 2`` does for a script, for a function:
it spawns ``nprocs`` processes on 127.0.0.1 with a free port, joins each to the process group
(gloo, or NCCL when asked) and calls ``fn(rank, *args)`` in each; inside, an agent's
:meth:`~note_rl.torch.RL_pytorch.distributed_training` finds the group.  When a replica dies or
raises, the others get a few seconds to notice it themselves (a replica in the middle of a
checkpoint finishes it) and are then stopped, and one :class:`ReplicaFailed` names it.
:class:`ReplicaLost` is what a surviving replica raises (torch DDP and multi-worker
``tf.distribute`` alike).  Importing this module imports no framework.
"""

from __future__ import annotations

import os
import pickle
import random
import signal
import socket
import tempfile
from typing import Any, Callable

from .replica_errors import ReplicaLost

__all__ = ["ReplicaFailed", "ReplicaLost", "launch", "free_port"]

#: seconds the other replicas get to exit by themselves once one has failed, before SIGTERM
GRACE_S = 5.0


class ReplicaFailed(RuntimeError):
    """A replica of :func:`launch` exited with an error or was killed."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, taken below the kernel's ephemeral range:
    a port the kernel handed out for port 0 can be given again as the local end of any outgoing
    connection before the process meant to listen on it has started (seconds, while it imports its
    framework), and that process then fails to bind."""
    low = _ephemeral_low()
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(max(1024, low - 12000), low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # all tried were taken: any free one
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):  # not Linux: IANA's dynamic range starts here
        return 49152


def _replica(rank: int, fn: Callable[..., Any], args: tuple, world: int, port: int, backend: str | None,
             results: str) -> None:
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    # SIGTERM (what launch() stops the others with) as SystemExit, so ``finally`` blocks run: a
    # checkpoint being written removes its temporary file instead of leaving it behind
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    import torch.distributed as dist

    from .backends.torch_ddp import join_process_group

    join_process_group(backend)
    try:
        value = fn(rank, *args)
        with open(os.path.join(results, f"{rank}.pkl.tmp"), "wb") as f:
            pickle.dump(value, f)
        os.replace(os.path.join(results, f"{rank}.pkl.tmp"), os.path.join(results, f"{rank}.pkl"))
    finally:
        dist.destroy_process_group()


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def launch(fn: Callable[..., Any], nprocs: int = 2, args: tuple = (), backend: str | None = None,
           port: int | None = None) -> list[Any]:
    """Run ``fn(rank, *args)`` in ``nprocs`` spawned processes forming one process group; returns
    each rank's return value (picklable), in rank order.

    :param fn: a module-level function (spawned processes import it by name)
    :param backend: ``gloo`` (default; CPU and CUDA tensors) or ``nccl`` (every replica on its own GPU)
    :param port: the rendezvous port on 127.0.0.1 (default: a free one)
    :raises ReplicaFailed: a replica raised or was killed (the others get ``GRACE_S`` seconds to
        exit, then are terminated)
    """
    if not isinstance(nprocs, int) or isinstance(nprocs, bool) or nprocs < 1:
        raise ValueError(f"launch(nprocs={nprocs!r}): must be a positive integer")
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="note_rl_ddp_") as results:
        try:
            context = mp.start_processes(_replica, args=(fn, tuple(args), nprocs, port or free_port(), backend,
                                                         results), nprocs=nprocs, join=False, start_method="spawn")
            while not context.join(grace_period=GRACE_S):
                pass
        except mp.ProcessExitedException as exc:
            raise ReplicaFailed(f"distributed replica {exc.error_index} of {nprocs} died "
                                f"({_how(exc)}); the other replicas were stopped") from None
        except mp.ProcessRaisedException as exc:
            last = [line for line in str(exc).strip().splitlines() if line.strip()]
            raise ReplicaFailed(f"distributed replica {exc.error_index} of {nprocs} failed: "
                                f"{last[-1].strip() if last else 'error'}") from None
        out = []
        for rank in range(nprocs):
            with open(os.path.join(results, f"{rank}.pkl"), "rb") as f:
                out.append(pickle.load(f))
        return out


def _how(exc: Any) -> str:
    if getattr(exc, "signal_name", None):
        return f"killed by {exc.signal_name}"
    return f"exit code {exc.exit_code}"
