"""A throw-away PostgreSQL server from Debian's ``postgresql`` package, for the multi-driver test."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from typing import Iterator

__all__ = ["postgres_server", "server_binaries"]


def server_binaries() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return os.path.dirname(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_postgres(cmd: list[str]) -> list[str]:
    # the server refuses to run as root; Debian's package provides the "postgres" user
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server on a free loopback port; yields a SQLAlchemy URL of an empty database."""
    bindir = server_binaries()
    if bindir is None:
        raise RuntimeError("PostgreSQL server binaries not found (install Debian's postgresql)")
    root = tempfile.mkdtemp(prefix="note_rl_pg_")
    os.chmod(root, 0o755)
    data = os.path.join(root, "data")
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    port = _free_port()
    run = lambda cmd: subprocess.run(_as_postgres(cmd), check=True, capture_output=True, text=True)  # noqa: E731
    try:
        run([f"{bindir}/initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"])
        run([f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(root, "log"), "-w", "-o",
             f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"])
        run([f"{bindir}/psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-c", "CREATE DATABASE optuna"])
        yield f"postgresql://postgres@127.0.0.1:{port}/optuna"
    finally:
        subprocess.run(_as_postgres([f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
