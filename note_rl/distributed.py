"""Start a torch.distributed process group on this machine and run a function in every replica.

``launch(fn, nprocs=2)`` is what ``torchrun --nproc-per-node 2`` does for a script, for a function:
it spawns ``nprocs`` processes on 127.0.0.1 with a free port, joins each to the process group
(gloo, or NCCL when asked) and calls ``fn(rank, *args)`` in each; inside, an agent's
:meth:`~note_rl.torch.RL_pytorch.distributed_training` finds the group.  When a replica dies or
raises, the others get a few seconds to notice it themselves (a replica in the middle of a
checkpoint finishes it) and are then stopped, and one :class:`ReplicaFailed` names it.
:class:`ReplicaLost` is what a surviving replica raises (torch DDP and multi-worker
``tf.distribute`` alike).  Importing this module imports no framework: the processes are started
by :mod:`note_rl.backends.torch_launch`, imported when :func:`launch` is called.
"""

from __future__ import annotations

import random
import socket
from typing import Any, Callable

from .replica_errors import ReplicaFailed, ReplicaLost

__all__ = ["ReplicaFailed", "ReplicaLost", "launch", "free_port"]

#: seconds the other replicas get to exit by themselves once one has failed, before SIGTERM
GRACE_S = 5.0


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


def launch(fn: Callable[..., Any], nprocs: int = 2, args: tuple = (), backend: str | None = None,
           port: int | None = None, *, rank0: Callable[[], Any] | None = None) -> list[Any]:
    """Run ``fn(rank, *args)`` in ``nprocs`` spawned processes forming one process group; returns
    each rank's return value (picklable), in rank order.

    :param fn: a module-level function (spawned processes import it by name)
    :param backend: ``gloo`` (default; CPU and CUDA tensors) or ``nccl`` (every replica on its own GPU)
    :param port: the rendezvous port on 127.0.0.1 (default: a free one)
    :param rank0: this process is rank 0 and runs ``rank0()`` (in the group, which it leaves when
        ``rank0`` returns); ``fn`` runs in ranks 1 to ``nprocs - 1`` only, and ``rank0``'s return value
        comes first.  It need not be picklable (the tuner's rank 0 keeps a run's callbacks).  When it
        raises, the other replicas are killed at once and its exception goes on.
    :raises ReplicaFailed: a replica raised or was killed (the others get ``GRACE_S`` seconds to
        exit, then are terminated); it names the replica (``rank``, ``world``) and how it ended
        (``exit_code`` / ``signal_name``, or ``error``)
    """
    if not isinstance(nprocs, int) or isinstance(nprocs, bool) or nprocs < 1:
        raise ValueError(f"launch(nprocs={nprocs!r}): must be a positive integer")
    # the framework's half lives behind the backend seam, imported only when replicas are started
    from .backends.torch_launch import launch_replicas

    return launch_replicas(fn, nprocs, tuple(args), backend, port or free_port(), GRACE_S, rank0)
