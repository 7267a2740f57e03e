"""The errors every layer of the tuner may raise or format: :class:`ConfigError` (a config value
that is unknown, mistyped or impossible; one line naming the key, exit status 2) and :func:`error_line`."""

from __future__ import annotations

import re

__all__ = ["ConfigError", "error_line", "first_line"]


class ConfigError(ValueError):
    """A configuration value is unknown, mistyped or impossible (message names the key)."""


def error_line(exc: BaseException) -> str:
    """One line for a composition error (Hydra's messages span several lines), naming the key or group."""
    missing, options = getattr(exc, "missing_cfg_file", None), getattr(exc, "options", None)
    if missing and options is not None and "/" in missing:
        group, _, name = missing.rpartition("/")
        return f"{group}: no option {name!r} (available: {', '.join(options)})"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    first = lines[0] if lines else type(exc).__name__
    found = re.match(r"Could not override '([^']+)'", first)
    if found:
        hint = next((line for line in lines[1:] if line.startswith("To append")), "")
        return f"{found.group(1)}: no such config key" + (f" ({hint[0].lower()}{hint[1:]})" if hint else "")
    return first


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message, at most 300 characters (for a one-line error)."""
    return (str(exc).strip().splitlines() or [""])[0][:300]
