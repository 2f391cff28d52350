"""Review stage: the web app behind ``veil review`` (Starlette; plain HTML and JavaScript, no build step).

Every request but the page's static script and style needs the session's token (``?token=`` on the
page URL, the ``X-Veil-Token`` header on the page's API calls), compared in constant time. Document
text travels only in response bodies: URLs carry document numbers, the server logs no request (the
CLI turns uvicorn's access log off) and errors name offsets, never text. Responses are ``no-store``,
send no referrer (the token is in the page URL) and may not be framed.

Routes: ``GET /`` the page; ``GET /api/summary`` progress, the document list and the pages (a page is
one document, or with a group field one call); ``GET /api/page/P`` one page's documents; ``GET
/api/doc/N`` one document; ``POST /api/doc/N`` one decision (JSON, see :meth:`ReviewSession.decide`),
answered with the document after it, once the review file holds it.

A request the server cannot take is answered with a one-line error, never a traceback on the
server's console: a body over :data:`MAX_BODY` bytes is a 413; one that is not a JSON object (deep
nesting included) or holds a bad value is a 400; anything else unforeseen is a 500 that names only
the exception's type (its message could quote a document).
"""

from __future__ import annotations

import json
import logging
import secrets
from importlib import resources
from typing import Any

from veil.errors import VeilError

log = logging.getLogger(__name__)

TOKEN_HEADER = "X-Veil-Token"
#: the largest decision body taken (a decision is a few short fields: the text of a missed piece is read
#: from the document, not sent)
MAX_BODY = 16384
_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'self'; style-src 'self'; script-src 'self'; "
                                       "connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'"}


def new_token() -> str:
    return secrets.token_urlsafe(24)


def _asset(name: str) -> str:
    return resources.files("veil.review").joinpath("static", name).read_text(encoding="utf-8")


def create_app(session: Any, token: str) -> Any:
    """The Starlette app serving ``session`` (a :class:`veil.review.session.ReviewSession`, open)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    page = _asset("review.html")
    assets = {"review.js": ("application/javascript", _asset("review.js")),
              "review.css": ("text/css", _asset("review.css"))}

    def allowed(request: Request) -> bool:
        given = request.headers.get(TOKEN_HEADER) or request.query_params.get("token") or ""
        return secrets.compare_digest(given.encode(), token.encode())

    def denied() -> Response:
        return JSONResponse({"error": "a valid token is needed (open the URL veil review printed)"},
                            status_code=403, headers=_HEADERS)

    def reply(data: Any, status: int = 200) -> Response:
        return JSONResponse(data, status_code=status, headers=_HEADERS)

    async def index(request: Request) -> Response:
        if not allowed(request):
            return HTMLResponse("<!doctype html><title>veil review</title><p>Open the URL that "
                                "<code>veil review</code> printed (it holds the access token).</p>",
                                status_code=403, headers=_HEADERS)
        return HTMLResponse(page, headers=_HEADERS)

    async def asset(request: Request) -> Response:
        if request.path_params["name"] not in assets:
            return reply({"error": "not found"}, 404)
        kind, body = assets[request.path_params["name"]]
        return Response(body, media_type=kind, headers=_HEADERS)

    async def summary(request: Request) -> Response:
        if not allowed(request):
            return denied()
        return reply(session.summary())

    async def body_of(request: Request) -> Any:
        """The request's JSON object, or an error response (too large, not JSON, not an object)."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY:
            return reply({"error": f"the decision is larger than {MAX_BODY} bytes"}, 413)
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                return reply({"error": f"the decision is larger than {MAX_BODY} bytes"}, 413)
        try:
            body = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return reply({"error": "the decision is not JSON"}, 400)
        if not isinstance(body, dict):
            return reply({"error": "the decision is not a JSON object"}, 400)
        return body

    async def document(request: Request) -> Response:
        if not allowed(request):
            return denied()
        try:
            index = int(request.path_params["index"])
            if request.method == "GET":
                return reply(session.view(index))
            body = await body_of(request)
            if isinstance(body, Response):
                return body
            # decided on the event loop itself, one at a time: decisions are numbered and appended in order
            return reply(session.decide(index, body))
        except VeilError as e:
            return reply({"error": str(e).splitlines()[0] if str(e) else "bad decision"}, 400)
        except Exception as e:  # a bug: one line naming its type (a message could quote a document), no traceback
            log.error("veil review: the server failed on a request (%s); the page was told", type(e).__name__)
            return reply({"error": f"the server failed ({type(e).__name__}); reload the page to see what was "
                                   "saved"}, 500)

    async def page_route(request: Request) -> Response:
        if not allowed(request):
            return denied()
        try:
            return reply(session.page(int(request.path_params["index"])))
        except VeilError as e:
            return reply({"error": str(e)}, 400)
        except Exception as e:
            log.error("veil review: the server failed on a request (%s)", type(e).__name__)
            return reply({"error": f"the server failed ({type(e).__name__})"}, 500)

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    routes = [Route("/", index), Route("/favicon.ico", favicon), Route("/static/{name:str}", asset),
              Route("/api/summary", summary), Route("/api/page/{index:int}", page_route),
              Route("/api/doc/{index:int}", document, methods=["GET", "POST"])]

    async def not_found(request: Request, exc: Exception) -> Response:
        return reply({"error": "not found"}, 404)

    app = Starlette(routes=routes, exception_handlers={404: not_found})

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        """Starlette answers an unforeseen error with a 500 and raises it again for the server to print:
        the traceback stops here, as one line."""
        try:
            await app(scope, receive, send)
        except Exception as e:
            log.error("veil review: the server failed on a request (%s)", type(e).__name__)

    guarded.app = app  # type: ignore[attr-defined]
    return guarded


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity: Python's json takes them, JSON does not


def serve(session: Any, host: str = "127.0.0.1", port: int = 0, token: str | None = None,
          on_ready: Any = None) -> None:
    """Serve ``session`` until interrupted; ``on_ready(url)`` is called once the socket listens."""
    import socket

    import uvicorn

    token = token or new_token()
    app = create_app(session, token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise VeilError(f"cannot listen on {host}:{port} ({e.strerror}); choose another --port") from None
    sock.listen(64)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    # log_level warning and no access log: uvicorn would otherwise log each request line (with the token)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", server_header=False)
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready(f"http://{shown}:{bound}/?token={token}")
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
