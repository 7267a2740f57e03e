"""What a path names before anything opens it: the tuner reads configs, journals and run dirs that a
user (or someone else) points it at, and writes reports and recordings where it is told."""

from __future__ import annotations

import os
import stat

__all__ = ["special_kind", "name_too_long", "CONF_DIR"]

#: the app's own config dir (``conf/`` beside the package): every layer may need it, so it lives here
CONF_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "conf")


def special_kind(mode: int) -> str | None:
    """``None`` for a regular file (of ``os.stat(path).st_mode``), else what the path is instead:
    opening a FIFO blocks until another process writes to it, so callers ``stat``, never ``open``."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    return "a directory" if stat.S_ISDIR(mode) else "a special file (not a regular file)"


def name_too_long(path: str, base: str) -> bool:
    """Whether a file or folder name in ``path`` is longer than the file system under ``base`` (an
    existing folder) allows; ``False`` where the limit cannot be read."""
    try:
        longest = max((len(os.fsencode(part)) for part in os.path.abspath(path).split(os.sep) if part), default=0)
        return longest > os.pathconf(base, "PC_NAME_MAX")
    except (OSError, ValueError):
        return False
