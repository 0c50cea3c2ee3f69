"""The viewer's HTTP server: loopback only, the bundled page and its assets, and the source's JSON routes.

Trajectory text is hostile agent output, so the page only ever inserts it as text; the server adds a
Content-Security-Policy that allows no inline script, no other origin and no framing, so a mistake
in the page still could not run what an agent wrote. Requests whose Host is not this loopback
address are refused (a web page elsewhere cannot reach the viewer by DNS rebinding).
"""

from __future__ import annotations

import json
import math
import mimetypes
import sys
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from agentmill.errors import AgentmillError
from agentmill.view.queries import BadQuery
from agentmill.view.source import ViewSource
from agentmill.view.trial import NotFoundError

ASSETS = Path(__file__).parent / "assets"
LOOPBACK = "127.0.0.1"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, source: ViewSource, port: int = 0, *, assets: Path = ASSETS):
        self.source = source
        self.assets = assets
        self.routes = source.routes()
        super().__init__((LOOPBACK, port), _Handler)
        self.allowed_hosts = {f"{LOOPBACK}:{self.port}", f"localhost:{self.port}"}

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/"

    def start_background(self) -> threading.Thread:
        """Serve from a daemon thread (tests, notebooks); stop with shutdown() and server_close()."""
        thread = threading.Thread(target=self.serve_forever, name="agentmill-view", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # headers and body leave in one write (flushed per request): no Nagle wait on keep-alive

    def log_message(self, format, *args):  # quiet: the terminal shows the URL, not every request
        pass

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        if self.headers.get("Host", "") not in self.server.allowed_hosts:
            return self._send(HTTPStatus.FORBIDDEN, b"forbidden host\n", "text/plain; charset=utf-8")
        url = urlsplit(self.path)
        if url.path in ("/", "/index.html"):
            return self._asset("index.html")
        if url.path.startswith("/assets/"):
            return self._asset(url.path[len("/assets/") :])
        if url.path.startswith("/api/"):
            return self._api(url.path[len("/api/") :], parse_qs(url.query))
        self._json(HTTPStatus.NOT_FOUND, {"error": f"no such page: {url.path}"})

    def _asset(self, name: str):
        # only plain files directly in the assets folder
        path = self.server.assets / name
        if "/" in name or name.startswith(".") or not path.is_file():
            return self._json(HTTPStatus.NOT_FOUND, {"error": f"no such asset: {name}"})
        ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if ctype.startswith("text/") or ctype.endswith("javascript"):
            ctype += "; charset=utf-8"
        self._send(HTTPStatus.OK, path.read_bytes(), ctype)

    def _api(self, route: str, params: dict[str, list[str]]):
        handler = self.server.routes.get(route)
        if handler is None:
            return self._json(HTTPStatus.NOT_FOUND, {"error": f"no such route: {route}"})
        try:
            data = handler(params)
        except BadQuery as e:
            return self._json(HTTPStatus.BAD_REQUEST, {"error": str(e)})
        except NotFoundError as e:
            return self._json(HTTPStatus.NOT_FOUND, {"error": f"not found: {e}"})
        except AgentmillError as e:
            return self._json(HTTPStatus.BAD_REQUEST, {"error": str(e)})
        except Exception as e:  # a bug or an unreadable file: say so on the page and in the terminal
            traceback.print_exc(file=sys.stderr)
            return self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(e).__name__}: {e}"})
        self._json(HTTPStatus.OK, data)

    def _json(self, status: HTTPStatus, data):
        body = json.dumps(_finite(data), ensure_ascii=True, allow_nan=False).encode()
        self._send(status, body, "application/json")

    def _send(self, status: HTTPStatus, body: bytes, ctype: str):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _finite(x):
    """JSON has no NaN or Infinity: a hostile trajectory may hold them; they become null."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x
