"""Helpers about OS processes that every layer may use (the driver, the config checks, the trials)."""

from __future__ import annotations

import signal

__all__ = ["exit_reason"]


def exit_reason(exitcode: int | None) -> str:
    """Human-readable reason for a child that ended without a result."""
    if exitcode is None:
        return "still running"
    if exitcode < 0:
        sig = signal.Signals(-exitcode)
        hint = {signal.SIGSEGV: "segmentation fault", signal.SIGKILL: "killed (out of memory or SIGKILL)",
                signal.SIGABRT: "aborted", signal.SIGTERM: "terminated"}.get(sig, "")
        return f"killed by {sig.name}" + (f" ({hint})" if hint else "")
    return f"exited with code {exitcode} without a result"
