"""Processes of a local tf.distribute cluster for tests: servers whose death fails the test at once
(a coordinator would otherwise wait for them until its timeout), output kept in files."""

from __future__ import annotations

import os
import subprocess
import time


def start(args: list[str], log: str, **kwargs) -> subprocess.Popen:
    """``Popen(args)`` with stdout and stderr in the file ``log``."""
    with open(log, "w") as f:
        return subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT, text=True, **kwargs)


def tail(log: str, n: int = 3000) -> str:
    with open(log, errors="replace") as f:
        return f.read()[-n:]


def wait(procs: list[tuple[subprocess.Popen, str]], servers: list[tuple[subprocess.Popen, str]],
         timeout: float = 600) -> None:
    """Wait until every process of ``procs`` exits with 0; fail as soon as one fails, a server
    exits, or ``timeout`` seconds pass (naming the process and its output)."""
    deadline = time.monotonic() + timeout
    while True:
        for proc, log in procs:
            if proc.poll() not in (None, 0):
                raise AssertionError(f"{os.path.basename(log)} exited with {proc.returncode}:\n{tail(log)}")
        if all(proc.poll() == 0 for proc, _ in procs):
            return
        for server, log in servers:
            if server.poll() is not None:
                raise AssertionError(f"cluster server {os.path.basename(log)} exited with {server.returncode}:\n"
                                     f"{tail(log)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"not finished after {timeout:.0f} s:\n" +
                                 "\n".join(f"{os.path.basename(log)}: {tail(log, 800)}" for _, log in procs))
        time.sleep(0.3)


def stop(procs: list[tuple[subprocess.Popen, str]]) -> None:
    for proc, _ in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_listening(addresses: list[str], servers: list[tuple[subprocess.Popen, str]], timeout: float = 180) -> None:
    """Wait until every ``host:port`` accepts connections (the servers have started): a parameter
    server coordinator that connects before its workers listen may wait for them forever."""
    import socket

    deadline = time.monotonic() + timeout
    for address in addresses:
        host, port = address.rsplit(":", 1)
        while True:
            for server, log in servers:
                if server.poll() is not None:
                    raise AssertionError(f"cluster server {os.path.basename(log)} exited with {server.returncode}:\n"
                                         f"{tail(log)}")
            try:
                with socket.create_connection((host, int(port)), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{address} not listening after {timeout:.0f} s") from None
                time.sleep(0.3)
