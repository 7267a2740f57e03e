"""The errors of data-parallel replicas, at the bottom of the import graph: the torch DDP seam
(:mod:`note_rl.backends.torch_ddp`), the ``tf.distribute`` seam (:mod:`note_rl.backends.tf_distribute`),
the torch launcher (:mod:`note_rl.backends.torch_launch`) and its framework-free face
(:mod:`note_rl.distributed`, which re-exports both and under whose name they are documented and
printed) all import them from here.  Importing this module imports no framework."""

from __future__ import annotations

__all__ = ["ReplicaFailed", "ReplicaLost"]


class ReplicaLost(RuntimeError):
    """Another replica (a torch.distributed process, a ``tf.distribute`` worker) stopped answering
    during a collective: it was killed, crashed or disconnected.  The message is one line naming it."""


class ReplicaFailed(RuntimeError):
    """A replica of :func:`note_rl.distributed.launch` exited with an error or was killed.

    Besides its one-line message it says which and how, so that a caller can word its own line
    (the tuner's ``strategy=ddp`` names the trial's replicas its way):

    :param rank: the replica's rank
    :param world: how many replicas there were
    :param exit_code: its exit code when it died (negative: killed by a signal), else ``None``
    :param signal_name: the signal that killed it (``SIGKILL``), else ``None``
    :param error: the last line of the exception it raised, when it raised one, else ``None``
    """

    def __init__(self, message: str, rank: int | None = None, world: int | None = None,
                 exit_code: int | None = None, signal_name: str | None = None, error: str | None = None) -> None:
        super().__init__(message)
        self.rank, self.world = rank, world
        self.exit_code, self.signal_name, self.error = exit_code, signal_name, error


# users catch and read them as ``note_rl.distributed.ReplicaLost`` / ``ReplicaFailed`` (their home
# before they moved here); a traceback's last line and a pickle keep that name, which still resolves
ReplicaLost.__module__ = "note_rl.distributed"
ReplicaFailed.__module__ = "note_rl.distributed"
