"""Small numpy helpers shared across the package."""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator, Sequence

import numpy as np

__all__ = ["scalar", "network_input", "log_softmax", "pid_alive", "machine_memory_bytes", "standard_start_method",
           "main_not_rerun", "stop_workers"]


def scalar(x: Any) -> float:
    """A Python float from a float, numpy value, tf.Variable (mirrored ones too) or torch tensor."""
    if hasattr(x, "numpy") and not isinstance(x, np.ndarray):
        x = x.numpy()  # a tf.distribute MirroredVariable has no __array__ that numpy accepts
    return float(np.asarray(x))


def network_input(x: Any) -> np.ndarray:
    """Observations as they travel to the networks: ``uint8`` and ``bool`` images unchanged (a quarter
    of the memory and of the host-to-device copy; the network's encoder casts and scales them, see
    :mod:`note_rl.agents.nets`), anything else as ``float32``."""
    x = np.asarray(x)
    return x if x.dtype in (np.uint8, np.bool_) else x.astype(np.float32, copy=False)


def log_softmax(x: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax, stable for large logits."""
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (one we may not signal counts as alive).  A
    pid no process can have (0 or below: kill() would address a process group; past the kernel's
    range) is not alive: pids come from stored records too."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True
    return True


def machine_memory_bytes() -> int:
    """This machine's physical memory (1 TiB when the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 40


def standard_start_method() -> None:
    """Make this process's default multiprocessing start method a standard one before it starts
    children with an explicit context.  Why: a child started with ``spawn`` / ``forkserver`` is told
    the parent's *default* method and sets it; inside a joblib/loky worker (Hydra's joblib launcher)
    that default is ``loky``, which a plain child does not know ("cannot find context for 'loky'")."""
    import multiprocessing as mp

    if mp.get_start_method(allow_none=True) not in (None, *mp.get_all_start_methods()):
        mp.set_start_method("spawn", force=True)


@contextlib.contextmanager
def main_not_rerun() -> Iterator[None]:
    """Start ``spawn`` / ``forkserver`` children without re-running the parent's ``__main__``.

    Why: a spawned child normally re-imports the script that was run (as ``__mp_main__``) so that
    objects defined there can be unpickled.  Workers that are sent nothing from ``__main__`` need
    none of it, and a script that imports TensorFlow or PyTorch at the top would cost each worker
    seconds of start-up and exit time (pool workers, replay sampler workers)."""
    from multiprocessing import spawn as mp_spawn

    original = mp_spawn.get_preparation_data

    def preparation_data(name: str) -> dict[str, Any]:
        data = original(name)
        data.pop("init_main_from_path", None)
        data.pop("init_main_from_name", None)
        return data

    mp_spawn.get_preparation_data = preparation_data
    try:
        yield
    finally:
        mp_spawn.get_preparation_data = original


def stop_workers(conns: Sequence[Any], procs: Sequence[Any], timeout: float = 5) -> None:
    """Ask worker processes to stop (``("close", None)`` on each pipe), wait ``timeout`` seconds for
    each, terminate the ones still running, and close the pipes."""
    for conn in conns:
        with contextlib.suppress(OSError, ValueError):
            conn.send(("close", None))
    for proc in procs:
        proc.join(timeout=timeout)
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=timeout)
    for conn in conns:
        conn.close()
