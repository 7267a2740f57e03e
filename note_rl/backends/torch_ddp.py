"""Data-parallel training over ``torch.distributed``: one process per replica, gradients averaged.

What ``torch.nn.parallel.DistributedDataParallel`` does, done at the update seam instead of by
wrapping a module: an agent's losses read several networks (a target network, an actor through
its critic, twin critics), which a DDP module wrapper would have to own one forward pass each of.
CleanRL's multi-GPU PPO takes the same route (``all_reduce`` of the gradients after
``backward()``).  Per replica group:

1. at the start, every tensor of the agent's networks (targets and buffers included) and its own
   variables are broadcast from rank 0, so all replicas start from rank 0's weights;
2. each gradient step, after ``backward()`` and before clipping and the optimizer step, the
   gradients of every trainable variable are summed across replicas in one flat buffer and divided
   by the number of replicas that took part: the gradient of the mean loss over the global batch
   when every replica's slice has the same size;
3. the buffer carries two more elements: a stop flag (``stop_training`` set on any replica stops
   every replica at its next step) and an active flag, 1 from a replica that takes part and 0 from one that has
   finished its episodes: a finished replica keeps answering with zeros (it "shadows" the others'
   steps, as ``torch.distributed.algorithms.Join`` does for DDP) until every replica has finished,
   so replicas whose episodes end at different times never deadlock; at the end every replica
   takes the weights of the replica that made the most steps.

Identical starting weights plus identical averaged gradients keep the replicas' weights identical
(the optimizers see the same numbers in the same order).
"""

from __future__ import annotations

import collections
import os
from datetime import timedelta
from typing import Any, Sequence

import torch
import torch.distributed as dist

from ..replica_errors import ReplicaLost

__all__ = ["ReplicaGroup", "ReplicaLost", "active", "join_process_group", "replica_group"]


_ACTIVE: "ReplicaGroup | None" = None


def active() -> "ReplicaGroup | None":
    """The replica group of the ``distributed_training`` call running in this process, if any."""
    return _ACTIVE


#: the last collectives' work handles (see ``ReplicaGroup._collective``)
_RECENT_WORK: "collections.deque[Any]" = collections.deque(maxlen=8)


def default_backend(variables: Sequence[torch.Tensor], env: dict[str, str] | None = None) -> str:
    """``nccl`` for variables on a GPU when each of the ``WORLD_SIZE`` replicas can have its own GPU,
    else ``gloo``: NCCL refuses two ranks on one GPU ("invalid usage", seen on a one-GPU H200 with
    two replicas), and gloo carries CUDA tensors too."""
    env = os.environ if env is None else env
    if not variables or variables[0].device.type != "cuda":
        return "gloo"
    world = int(env.get("WORLD_SIZE", "1") or 1)
    return "nccl" if world <= torch.cuda.device_count() else "gloo"


def join_process_group(backend: str | None = None, timeout_s: float = 1800.0, store: Any = None) -> None:
    """Join the default process group if this process is not in one yet, from the environment that
    ``torchrun`` (or :func:`note_rl.distributed.launch`) sets: ``RANK``, ``WORLD_SIZE``,
    ``MASTER_ADDR``, ``MASTER_PORT``.  ``backend``: ``gloo`` (CPU, and CUDA tensors too) or ``nccl``
    (GPU only); default gloo.  ``store``: a rendezvous store to join through instead of the one rank 0
    would host at ``MASTER_PORT`` (``launch`` keeps it in the launching process)."""
    if dist.is_initialized():
        return
    missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
    if missing:
        raise ValueError("distributed_training: this process is not in a torch.distributed process group "
                         f"and {', '.join(missing)} is not set; launch it with torchrun (torchrun "
                         "--nproc-per-node 2 script.py) or note_rl.distributed.launch(fn, nprocs=2)")
    if store is None:
        dist.init_process_group(backend or "gloo", timeout=timedelta(seconds=timeout_s))
    else:
        dist.init_process_group(backend or "gloo", store=store, rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]), timeout=timedelta(seconds=timeout_s))


class ReplicaGroup:
    """The agent's trainable variables laid out in one flat buffer, and the collectives on it.

    :param variables: every trainable variable of the agent, in the same order on every replica
    :param agent: the agent whose ``stop_training`` is shared: set on one replica, it is set on all
        at their next step (a pruned trial, ``max_updates``, a user's callback)
    """

    def __init__(self, variables: Sequence[torch.Tensor], agent: Any = None) -> None:
        self.agent = agent
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        self.variables = list(variables)
        self.offsets: dict[int, tuple[int, int]] = {}
        start = 0
        for v in self.variables:
            if id(v) not in self.offsets:
                self.offsets[id(v)] = (start, v.numel())
                start += v.numel()
        self.size = start
        self.device = self.variables[0].device if self.variables else torch.device("cpu")
        self.dtype = self.variables[0].dtype if self.variables else torch.float32
        self.steps = 0  # gradient steps this replica took part in

    def broadcast(self, tensors: Sequence[torch.Tensor], source: int = 0) -> None:
        """Copy rank ``source``'s values of ``tensors`` (the same list on every replica) to every replica."""
        tensors = [t for t in tensors if t.numel()]
        if not tensors:
            return
        with torch.no_grad():
            flat = torch.cat([t.detach().reshape(-1).to(self.device, torch.float64) for t in tensors])
            self._collective(dist.broadcast, flat, source)
            start = 0
            for t in tensors:
                n = t.numel()
                t.copy_(flat[start:start + n].view(t.shape).to(t.dtype))
                start += n

    def average_gradients(self, variables: Sequence[torch.Tensor]) -> None:
        """Replace the gradients of ``variables`` by their mean over the replicas taking this step."""
        buf = self._buffer(active=True)
        held = []
        for v in variables:
            if v.grad is not None and id(v) in self.offsets:
                start, n = self.offsets[id(v)]
                buf[start:start + n].copy_(v.grad.reshape(-1))
                held.append((v, start, n))
        self._collective(dist.all_reduce, buf)
        self._read_stop(buf)
        buf[:-2].div_(buf[-1])
        for v, start, n in held:
            v.grad.copy_(buf[start:start + n].view_as(v.grad))
        self.steps += 1

    def finish(self, tensors: Sequence[torch.Tensor] = ()) -> int:
        """Shadow the other replicas' steps with zeros until every replica has finished, then give
        every replica the weights (``tensors``) of the one that took the most steps: a replica that
        finished early did not apply the steps it shadowed.  Returns the steps shadowed."""
        shadowed = 0
        while True:
            buf = self._buffer(active=False)
            self._collective(dist.all_reduce, buf)
            self._read_stop(buf)
            if float(buf[-1]) == 0.0:
                break
            shadowed += 1
        counts = torch.zeros(self.world, dtype=torch.float64, device=self.device)
        counts[self.rank] = self.steps
        self._collective(dist.all_reduce, counts)
        if float(counts.max()) != float(counts.min()):
            self.broadcast(tensors, source=int(torch.argmax(counts)))  # the first rank with the most
        return shadowed

    def _buffer(self, active: bool) -> torch.Tensor:
        """Zeros for the gradients, then the stop flag (this replica's ``stop_training``) and the
        active flag (1: this replica takes part in the step)."""
        buf = torch.zeros(self.size + 2, dtype=self.dtype, device=self.device)
        buf[-2] = 1.0 if self.agent is not None and self.agent.stop_training else 0.0
        buf[-1] = 1.0 if active else 0.0
        return buf

    def _read_stop(self, buf: torch.Tensor) -> None:
        if self.agent is not None and float(buf[-2]) > 0:
            self.agent.stop_training = True

    def _collective(self, op: Any, *args: Any) -> None:
        try:
            work = op(*args, async_op=True)
            work.wait()
            # Why the handle is kept: gloo's worker thread holds the work (and its tensors) a moment
            # after it completes; whoever drops the last reference frees the tensors, which takes
            # the GIL.  If that is the worker thread while the interpreter is shutting down, the
            # thread is made to exit inside a C++ destructor and the process aborts ("terminate
            # called without an active exception", seen under load right after training).  Kept
            # here, the last reference is this process's, dropped by the main thread.
            _RECENT_WORK.append(work)
        except (RuntimeError, ConnectionError) as exc:  # gloo / NCCL raise RuntimeError subclasses
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ReplicaLost(f"distributed_training: replica {self.rank} of {self.world} lost contact with "
                              f"the others during {op.__name__} ({first}); another replica was killed or "
                              "crashed, see its output") from None


def _agent_tensors(agent: Any) -> list[torch.Tensor]:
    """Every tensor of the agent's networks (parameters and buffers, targets included) and its own
    variables, once each and in a fixed order."""
    seen: set[int] = set()
    out: list[torch.Tensor] = []
    for module in agent.backend.modules(agent).values():
        for t in module.state_dict(keep_vars=True).values():
            if id(t) not in seen and isinstance(t, torch.Tensor):
                seen.add(id(t))
                out.append(t)
    for v in agent._variables():
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


class replica_group:
    """``with replica_group(agent):`` - the gradient steps built inside average their gradients over
    the process group; weights start from rank 0's; at exit a finished replica shadows the others
    until all have finished (skipped when the block raised: the others then see the lost contact)."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.group: ReplicaGroup | None = None

    def __enter__(self) -> ReplicaGroup:
        global _ACTIVE
        if _ACTIVE is not None:
            raise RuntimeError("distributed_training: already running in this process")
        self.group = ReplicaGroup(self.agent._variables(), self.agent)
        self.group.broadcast(_agent_tensors(self.agent))
        _ACTIVE = self.group
        return self.group

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        global _ACTIVE
        _ACTIVE = None
        if kind is None and self.group is not None:
            self.group.finish(_agent_tensors(self.agent))
