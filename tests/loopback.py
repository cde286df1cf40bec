"""Small HTTP servers on 127.0.0.1 for tests that need a particular answer (the sample web
and the hostile web cover whole crawls)."""

import contextlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class QuietHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 (keep-alive, as crawlers meet it), no log lines, and one way to answer."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status: int, body: bytes = b"", headers=()) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def start(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, str]:
    """Serve `handler` on a free loopback port; returns the server and its origin."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]):
    """`start`, then shut down on leaving; yields the origin."""
    srv, origin = start(handler)
    try:
        yield origin
    finally:
        srv.shutdown()
