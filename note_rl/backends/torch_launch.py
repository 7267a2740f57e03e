"""Starting ``torch.distributed`` replicas on this machine: the implementation behind
:func:`note_rl.distributed.launch` (which imports no framework and chooses the port).

Every replica gets the environment ``torchrun`` would give it (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR`` / ``MASTER_PORT`` on 127.0.0.1), joins the default process group
and leaves it when its function returns or raises, but not before every rank has joined: gloo's
handshake on a connection ends when both sides have read it, so a rank that left straight after
joining (a function that makes no collective call, a replica that fails at once) closed connections
a peer was still setting up ("Connection closed by peer" in its connectFullMesh, about one launch in
50 with two launches side by side).  The rendezvous store at ``MASTER_PORT`` lives in the launching
process, as in ``torchrun``'s agent, until every replica has exited.  The replicas are spawned
processes; with ``rank0`` the calling process is rank 0 itself (the tuner's ``strategy=ddp``: rank 0
keeps a run's callbacks, which cannot be pickled into another process).  A replica that dies or
raises is one :class:`~note_rl.distributed.ReplicaFailed` that says which and how.
"""

from __future__ import annotations

import os
import pickle
import signal
import tempfile
from datetime import timedelta
from typing import Any, Callable

import torch.distributed as dist
import torch.multiprocessing as mp

from ..replica_errors import ReplicaFailed
from .torch_ddp import join_process_group

__all__ = ["launch_replicas", "rendezvous"]

# how long a replica retries connecting to the store, and a store request waits (import time included)
STORE_TIMEOUT_S = 1800.0


def rendezvous(rank: int, world: int, port: int) -> None:
    """Set this process's ``torchrun`` environment: replica ``rank`` of ``world`` on 127.0.0.1:``port``."""
    os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})


def _store(port: int, host: bool) -> dist.TCPStore:
    """The rendezvous store on 127.0.0.1:``port``: the launching process hosts it, replicas connect."""
    return dist.TCPStore("127.0.0.1", port, is_master=host, wait_for_workers=False,
                         timeout=timedelta(seconds=STORE_TIMEOUT_S))


def _all_joined(store: dist.TCPStore, rank: int, world: int) -> None:
    """Return once every rank of the group has joined it (the module's docstring says why)."""
    store.set(f"note_rl/joined/{rank}", "1")
    store.wait([f"note_rl/joined/{r}" for r in range(world)])


def _replica(index: int, fn: Callable[..., Any], args: tuple, world: int, first: int, port: int,
             backend: str | None, results: str) -> None:
    """A spawned replica: rank ``first + index`` (``first`` is 1 where the launching process is rank 0)."""
    rank = first + index
    rendezvous(rank, world, port)
    # SIGTERM (what the launcher stops the others with) as SystemExit, so ``finally`` blocks run: a
    # checkpoint being written removes its temporary file instead of leaving it behind
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    store = _store(port, host=False)
    join_process_group(backend, store=store)
    _all_joined(store, rank, world)
    try:
        value = fn(rank, *args)
        with open(os.path.join(results, f"{rank}.pkl.tmp"), "wb") as f:
            pickle.dump(value, f)
        os.replace(os.path.join(results, f"{rank}.pkl.tmp"), os.path.join(results, f"{rank}.pkl"))
    finally:
        dist.destroy_process_group()


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _as_rank_zero(rank0: Callable[[], Any], context: Any, world: int, port: int, backend: str | None,
                  store: dist.TCPStore) -> Any:
    """``rank0()`` in this process as rank 0 of the group; when it raises, the spawned replicas are
    killed at once (they would only wait for rank 0's next collective) and its exception goes on."""
    rendezvous(0, world, port)
    try:
        join_process_group(backend, store=store)
        _all_joined(store, 0, world)
        return rank0()
    except BaseException:
        for proc in context.processes:
            if proc.is_alive():
                proc.kill()
        raise
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def launch_replicas(fn: Callable[..., Any], nprocs: int, args: tuple, backend: str | None, port: int,
                    grace_s: float, rank0: Callable[[], Any] | None = None) -> list[Any]:
    """:func:`note_rl.distributed.launch`'s work, once it has checked its arguments and chosen the
    port: each replica's return value in rank order; a replica that died or raised is one
    :class:`ReplicaFailed` once the others have had ``grace_s`` seconds to exit (then SIGTERM)."""
    first = 0 if rank0 is None else 1
    # bound before any replica starts and kept until all have exited (the module's docstring says why)
    store = _store(port, host=True)
    with tempfile.TemporaryDirectory(prefix="note_rl_ddp_") as results:
        try:
            context = mp.start_processes(_replica, args=(fn, tuple(args), nprocs, first, port, backend, results),
                                         nprocs=nprocs - first, join=False, start_method="spawn")
            here = [] if rank0 is None else [_as_rank_zero(rank0, context, nprocs, port, backend, store)]
            while not context.join(grace_period=grace_s):
                pass
        except mp.ProcessExitedException as exc:
            how = f"killed by {exc.signal_name}" if getattr(exc, "signal_name", None) else f"exit code {exc.exit_code}"
            raise ReplicaFailed(f"distributed replica {first + exc.error_index} of {nprocs} died ({how}); the other "
                                "replicas were stopped", first + exc.error_index, nprocs, exit_code=exc.exit_code,
                                signal_name=getattr(exc, "signal_name", None) or None) from None
        except mp.ProcessRaisedException as exc:
            last = [line for line in str(exc).strip().splitlines() if line.strip()]
            error = last[-1].strip() if last else "error"
            raise ReplicaFailed(f"distributed replica {first + exc.error_index} of {nprocs} failed: {error}",
                                first + exc.error_index, nprocs, error=error) from None
        out = here
        for rank in range(first, nprocs):
            with open(os.path.join(results, f"{rank}.pkl"), "rb") as f:
                out.append(pickle.load(f))
        return out
