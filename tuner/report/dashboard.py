"""optuna-dashboard on a study storage, bound to 127.0.0.1 (``note-tune dashboard storage=...``).

optuna-dashboard's own ``run_server`` serves one request at a time and cannot report the port it
got; here its WSGI app runs in a threaded ``wsgiref`` server so that a browser's parallel requests
do not queue, ``port=0`` picks a free port, and the URL is printed once the socket is listening.

Binding to 127.0.0.1 alone does not stop DNS rebinding: a web page on ``evil.example`` whose name is
re-pointed at 127.0.0.1 can make the browser send requests here (a forged one can delete a study).
Such requests carry the attacker's name in their ``Host`` header, so every request whose ``Host`` is
not 127.0.0.1 / localhost / [::1] (with this port) is refused with 403.  To reach the dashboard from
another machine, tunnel the port: ``ssh -L 8080:127.0.0.1:8080 <machine>``, then open
http://127.0.0.1:8080/dashboard/ there.
"""

from __future__ import annotations

import sys
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

__all__ = ["serve", "make_dashboard_server", "HOST", "LOCAL_NAMES"]

HOST = "127.0.0.1"  # never on a public interface: the dashboard can edit and delete studies
LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")


def host_guard(app: Any) -> Any:
    """WSGI middleware: 403 for a request whose ``Host`` header names anything but this machine's
    loopback names (DNS rebinding; see the module docstring)."""
    def guarded(environ: dict[str, Any], start_response: Any) -> Any:
        host = environ.get("HTTP_HOST")
        port = environ.get("SERVER_PORT", "")
        allowed = {f"{name}:{port}" for name in LOCAL_NAMES} | set(LOCAL_NAMES if port == "80" else ())
        if host is not None and host.lower() not in allowed:
            body = (f"403 Forbidden: Host {host!r} is not this dashboard (requests must name "
                    f"127.0.0.1:{port}; use an SSH tunnel from another machine)\n").encode()
            start_response("403 Forbidden", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
            return [body]
        return app(environ, start_response)

    return guarded


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # one access line per static file would bury the URL


def make_dashboard_server(storage: Any, port: int = 8080) -> Any:
    """A WSGI server of optuna-dashboard for ``storage`` on 127.0.0.1:``port`` (not yet serving)."""
    from optuna_dashboard import wsgi

    return make_server(HOST, port, host_guard(wsgi(storage)), server_class=_ThreadingServer,
                       handler_class=_QuietHandler)


def serve(storage: Any, desc: str, port: int = 8080) -> None:
    """Serve until Ctrl-C / SIGTERM; prints ``optuna-dashboard: http://127.0.0.1:<port>/dashboard/``."""
    try:
        server = make_dashboard_server(storage, port)
    except OSError as exc:
        print(f"error: port: cannot listen on {HOST}:{port} ({exc.strerror or exc})", file=sys.stderr)
        raise SystemExit(2) from None
    url = f"http://{HOST}:{server.server_port}/dashboard/"
    print(f"optuna-dashboard: {url}  (storage {desc}; Ctrl-C to stop; from another machine: "
          f"ssh -L {server.server_port}:{HOST}:{server.server_port} <this machine>)", flush=True)
    try:  # Ctrl-C / SIGTERM propagate: note-tune exits 130 / 143 with one line (tuner.common.interrupts)
        server.serve_forever()
    finally:
        server.server_close()
