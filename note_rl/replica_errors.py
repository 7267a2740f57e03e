"""The error a surviving replica raises when another one is lost, at the bottom of the import graph:
the torch DDP seam (:mod:`note_rl.backends.torch_ddp`), the ``tf.distribute`` seam
(:mod:`note_rl.backends.tf_distribute`) and the launcher (:mod:`note_rl.distributed`, which
re-exports it and under whose name it is documented and printed) all import it from here.
Importing this module imports no framework."""

from __future__ import annotations

__all__ = ["ReplicaLost"]


class ReplicaLost(RuntimeError):
    """Another replica (a torch.distributed process, a ``tf.distribute`` worker) stopped answering
    during a collective: it was killed, crashed or disconnected.  The message is one line naming it."""


# users catch and read it as ``note_rl.distributed.ReplicaLost`` (its home before it moved here);
# a traceback's last line and a pickle keep that name, which still resolves
ReplicaLost.__module__ = "note_rl.distributed"
