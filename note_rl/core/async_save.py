"""Checkpoints written by a separate process while training goes on (Note_rl's
``train(parallel_training_and_save=True)``).

The training process takes a snapshot of the agent (weights, optimizer slots, buffer, counters) as
numpy arrays and sends it down a pipe; ``Connection.send`` pickles it at once, so later gradient
steps cannot change what gets written.  The writer process does the slow part, compressing nothing
but still writing, ``fsync``-ing and renaming the file (:func:`~note_rl.core.checkpoint.write_npz`:
temporary name, then ``os.replace``), so a killed writer never leaves a partial file under the
real name, and the next save removes its temporary file.  One save is in flight at a time: a new
save first waits for the previous one, as Note_rl gated its next save on a flag.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from typing import Any, Sequence

import numpy as np

from ..utils import standard_start_method

__all__ = ["AsyncSaver"]


class AsyncSaver:
    """A checkpoint writer process for one ``train()`` call.

    :param start_method: ``spawn`` or ``forkserver`` (``train(start_method=...)``)
    """

    def __init__(self, start_method: str = "spawn") -> None:
        standard_start_method()  # see its docstring (joblib/loky workers)
        ctx = mp.get_context(start_method)
        self._conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child,), daemon=True, name="note_rl-checkpoint-writer")
        self.process.start()
        child.close()
        self._pending: str | None = None  # path of the save in flight
        self.written: list[str] = []

    def submit(self, path: str, meta: dict[str, Any], arrays: dict[str, np.ndarray],
               remove: Sequence[str] = ()) -> None:
        """Write ``arrays`` + ``meta`` to ``path`` in the writer process, then delete the files in
        ``remove`` (checkpoint rotation: only once the new file is safely on disk)."""
        self.wait()
        self._conn.send((path, meta, arrays, list(remove)))
        self._pending = path

    def wait(self) -> None:
        """Block until the save in flight (if any) is on disk; its failure is raised here."""
        if self._pending is None:
            return
        path, self._pending = self._pending, None
        try:
            error = self._conn.recv()
        except (EOFError, OSError):
            raise RuntimeError(f"the checkpoint writer process died while writing {path} "
                               f"(exit code {self.process.exitcode}); the file under that name, if "
                               "any, is the previous complete checkpoint") from None
        if error is not None:
            raise OSError(f"writing checkpoint {path} failed: {error}")
        self.written.append(path)

    def close(self) -> None:
        """Wait for the last save, then stop the writer."""
        try:
            self.wait()
        finally:
            try:
                self._conn.send(None)
            except (OSError, ValueError):
                pass
            self.process.join(timeout=10)
            if self.process.is_alive():
                self.process.terminate()
                self.process.join()
            self._conn.close()


def _serve(conn: Any) -> None:
    """Writer loop: one ``(path, meta, arrays, remove)`` job at a time; ``None`` ends it."""
    from .checkpoint import write_npz

    while True:
        try:
            job = conn.recv()
        except EOFError:  # the training process is gone
            return
        if job is None:
            return
        path, meta, arrays, remove = job
        try:
            write_npz(path, meta, arrays)
            for old in remove:
                if old != path and os.path.exists(old):
                    os.remove(old)
        except Exception as exc:  # reported to the trainer, which raises it
            conn.send(f"{type(exc).__name__}: {exc}")
        else:
            conn.send(None)
