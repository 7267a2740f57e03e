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
def postgres_server(password: str | None = None) -> Iterator[str]:
    """Start a server on a free loopback port; yields a SQLAlchemy URL of an empty database.  With a
    ``password``, TCP connections must give it (scram-sha-256) and the URL carries it."""
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
        auth = ["--auth=trust"]
        if password is not None:
            pwfile = os.path.join(root, "pw")
            with open(pwfile, "w") as f:
                f.write(password + "\n")
            if os.geteuid() == 0:
                shutil.chown(pwfile, "postgres", "postgres")
            auth = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}"]
        run([f"{bindir}/initdb", "-D", data, "-U", "postgres", *auth, "-E", "UTF8"])
        run([f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(root, "log"), "-w", "-o",
             f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"])
        # through the socket in root (trusted), so no password is needed here
        run([f"{bindir}/psql", "-h", root, "-p", str(port), "-U", "postgres", "-c", "CREATE DATABASE optuna"])
        user = "postgres" if password is None else f"postgres:{password}"
        yield f"postgresql://{user}@127.0.0.1:{port}/optuna"
    finally:
        subprocess.run(_as_postgres([f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
