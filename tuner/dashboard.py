"""optuna-dashboard on a study storage, bound to 127.0.0.1 (``note-tune dashboard storage=...``).

optuna-dashboard's own ``run_server`` serves one request at a time and cannot report the port it
got; here its WSGI app runs in a threaded ``wsgiref`` server so that a browser's parallel requests
do not queue, ``port=0`` picks a free port, and the URL is printed once the socket is listening.
"""

from __future__ import annotations

import sys
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

__all__ = ["serve", "make_dashboard_server", "HOST"]

HOST = "127.0.0.1"  # never on a public interface: the dashboard can edit and delete studies


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # one access line per static file would bury the URL


def make_dashboard_server(storage: Any, port: int = 8080) -> Any:
    """A WSGI server of optuna-dashboard for ``storage`` on 127.0.0.1:``port`` (not yet serving)."""
    from optuna_dashboard import wsgi

    return make_server(HOST, port, wsgi(storage), server_class=_ThreadingServer, handler_class=_QuietHandler)


def serve(storage: Any, desc: str, port: int = 8080) -> None:
    """Serve until Ctrl-C / SIGTERM; prints ``optuna-dashboard: http://127.0.0.1:<port>/dashboard/``."""
    try:
        server = make_dashboard_server(storage, port)
    except OSError as exc:
        print(f"error: port: cannot listen on {HOST}:{port} ({exc.strerror or exc})", file=sys.stderr)
        raise SystemExit(2) from None
    url = f"http://{HOST}:{server.server_port}/dashboard/"
    print(f"optuna-dashboard: {url}  (storage {desc}; Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
