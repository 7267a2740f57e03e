"""Ctrl-C (SIGINT) and SIGTERM: every command of the app ends cleanly on either.

One policy for the whole process, so that a plain run, a study, its held-out stage, its report, the
finders and the subcommands agree:

* the first signal raises ``KeyboardInterrupt`` (:class:`Terminated` for SIGTERM), which unwinds
  the command: running trials and held-out jobs are killed with their process groups, and each
  command writes what it has in ``finally`` blocks (``study.json``, ``best_config.yaml``, the report);
* inside :func:`held` (a plain run's training, writing a study's outputs) the first signal is held
  instead: ``on_signal`` runs (a run sets ``stop_training`` and stops at the next env step) and
  :func:`raise_held` raises it once the block's work is saved;
* a second signal while that cleanup runs ends the process at once (:func:`_hard_exit`): one line on
  stderr, exit 130 / 143, no traceback.  Children cannot be orphaned by it: every trial and job
  process watches its driver and ends its own process group when the driver is gone
  (:func:`tuner.run.trial_worker.watch_driver`);
* :func:`exit_line` is the one line ``note-tune`` prints on its way out: the signal and what was
  kept (:func:`keep`), with exit status 130 (SIGINT) or 143 (SIGTERM), what a shell reports for a
  process ended by that signal.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

__all__ = ["Terminated", "install", "sigterm_raises", "held", "held_signal", "raise_held", "keep",
           "exit_status", "exit_line", "signal_name"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Terminated(KeyboardInterrupt):
    """SIGTERM to a driver.  A ``KeyboardInterrupt`` so that it unwinds like Ctrl-C: the running
    trials are killed with their process groups and failed, and the outputs are written (SIGTERM's
    default action would end the driver with its trials left RUNNING and nothing written)."""


class _State:
    """The process's signal state: the first SIGINT/SIGTERM seen (``None``: none yet), whether it was
    held (not raised), the ``on_signal`` callbacks of the open :func:`held` blocks, what was kept."""

    def __init__(self) -> None:
        self.first: int | None = None
        self.held = False
        self.holders: list[Callable[[int], None] | None] = []
        self.kept: list[str] = []
        self.depth = 0  # open contexts that installed the handler (install() counts for good)


_state = _State()


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


def exit_status(exc: BaseException | int) -> int:
    """130 for SIGINT (a plain ``KeyboardInterrupt``), 143 for SIGTERM (:class:`Terminated`)."""
    if isinstance(exc, int):
        return 128 + exc
    return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)


def _interrupt(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _hard_exit(signum: int) -> None:
    """A second signal while the first one's cleanup runs: end now, one line, no traceback."""
    text = (f"interrupted again ({signal_name(signum)}) while saving: exiting at once; files being written "
            f"may be missing (no partial file is left under a real name)\n")
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - a signal that arrived inside a print: the buffer is busy
        pass
    os.write(2, text.encode())
    os._exit(exit_status(signum))


def _handler(signum: int, frame: Any) -> None:
    if _state.first is not None:
        _hard_exit(signum)
    _state.first = signum
    if _state.holders:
        _state.held = True
        callback = _state.holders[-1]
        if callback is not None:
            callback(signum)
        return
    raise _interrupt(signum)


@contextmanager
def _handling(signals: tuple[int, ...] = SIGNALS) -> Iterator[bool]:
    """Within the block ``signals`` go to :func:`_handler`; yields False (and changes nothing) off
    the main thread, where Python cannot install a handler (e.g. a joblib launcher's worker)."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    previous = {s: signal.getsignal(s) for s in signals}
    for s in signals:
        signal.signal(s, _handler)
    _state.depth += 1
    try:
        yield True
    finally:
        _state.depth -= 1
        for s, old in previous.items():
            signal.signal(s, old)
        if _state.depth == 0:  # the outermost block: a later signal is a first one again
            _state.first, _state.held, _state.kept = None, False, []


def install() -> None:
    """For the rest of the process (``note-tune``'s entry point): SIGINT and SIGTERM follow the
    policy of this module."""
    if threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            signal.signal(s, _handler)
        _state.depth += 1


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """Within the block SIGTERM raises :class:`Terminated` (a driver running trials, whoever called
    it: the app, the Hydra sweeper, the finders' Python API); SIGINT keeps its handler."""
    with _handling((signal.SIGTERM,)):
        yield


@contextmanager
def held(on_signal: Callable[[int], None] | None = None) -> Iterator[None]:
    """Within the block a first SIGINT/SIGTERM is held, not raised: ``on_signal(signum)`` is called
    (in the main thread, between two bytecodes: it must only set flags) and :func:`held_signal`
    tells it afterwards; a second signal ends the process (:func:`_hard_exit`).  Blocks nest."""
    with _handling() as active:
        _state.holders.append(on_signal)
        if not active:
            _state.holders.pop()
        try:
            yield
        finally:
            if active:
                _state.holders.pop()


def held_signal() -> int | None:
    """The signal held by a :func:`held` block and not raised yet (``None``: none)."""
    return _state.first if _state.held else None


def raise_held() -> None:
    """Raise the held signal (once) as ``KeyboardInterrupt`` / :class:`Terminated`."""
    if _state.first is not None and _state.held:
        _state.held = False
        raise _interrupt(_state.first)


def keep(what: str) -> None:
    """Record what the interrupted command kept, for :func:`exit_line` (latest first)."""
    _state.kept.insert(0, what)


def exit_line(exc: BaseException) -> str:
    """The one line ``note-tune`` prints when a signal ends it."""
    name = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
    kept = _state.kept[0] if _state.kept else "nothing was written"
    return f"interrupted ({name}): {kept}"


def start_shielded(proc: Any) -> None:
    """``proc.start()`` with SIGINT blocked in this thread, so that the child inherits a mask that
    blocks it: a terminal's Ctrl-C goes to the driver's whole process group, and a child still
    importing (a trial, the forkserver that the first start launches, an env check) would print a
    ``KeyboardInterrupt`` traceback.  The driver owns its children and kills them with their groups;
    a SIGINT that comes meanwhile is delivered to the driver once the start returns, never lost."""
    if not hasattr(signal, "pthread_sigmask"):
        proc.start()
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        proc.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
