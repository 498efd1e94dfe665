"""The web host's HTTP surface: the API, the event stream, the page and its assets.

Security, in order: the Host header must name the served address (DNS rebinding), a POST's
Origin must be the page's own (cross-site posts), and every `/api` request carries the token
as `Authorization: Bearer`. There is no auth cookie: cookies are not separated by port, so the
browser would send one to every other service on 127.0.0.1 (the page keeps the token in its
tab's sessionStorage instead, which is per origin). The page allows only its own scripts
(Content-Security-Policy) and renders model text as text, never as HTML.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from importlib import resources
from typing import Any, Final

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import secret
from ..hosts import DockEntry, one_line
from ..log import Event, NotASession, SessionLocked, SessionNotFound
from ._hub import ANSWERS, Busy, Hub, NotWaiting

__all__ = ["create_app"]

CSP: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
HEARTBEAT: Final = 15  # seconds between comment lines on an idle event stream
MAX_BODY: Final = 1 << 20  # bytes of a request body: a prompt of 1 MiB is past any context
_STATIC: Final = {
    "app.js": "text/javascript",
    "app.css": "text/css",
    "index.html": "text/html",
    "vendor/marked/marked.esm.js": "text/javascript",  # Markdown, vendored (MIT, LICENSE beside)
}

Handler = Callable[[Request], Awaitable[Response]]


def create_app(
    hub: Hub, *, token: str, hosts: Sequence[str] | None, dock: Sequence[tuple[str, DockEntry]]
) -> Starlette:
    """The ASGI app for `hub`: `hosts` are the Host values this server answers to (None: any,
    for a wildcard bind, where only the token stands between the network and the tools)."""
    allowed = frozenset(hosts) if hosts is not None else None
    docked = {f"{plugin}/{entry.module}": entry for plugin, entry in dock}

    def guard(handler: Handler, *, api: bool = True) -> Handler:
        async def guarded(request: Request) -> Response:
            host = request.headers.get("host", "")
            if allowed is not None and host not in allowed:
                return _error(403, "this server answers only to its own address")
            origin = request.headers.get("origin")
            writes = request.method in ("POST", "PATCH", "DELETE")
            if writes and origin is not None and origin != f"http://{host}":
                return _error(403, f"cross-site request from {origin} refused")
            if api and not _authorized(request, token):
                return _error(401, "missing or wrong token: open the URL harness serve printed")
            try:
                return await handler(request)
            except SessionNotFound as exc:
                return _error(404, str(exc))
            except (SessionLocked, NotASession) as exc:
                return _error(409, str(exc))

        return guarded

    async def index(request: Request) -> Response:
        # The page takes `?token=` from its own URL (app.js); no cookie carries it anywhere.
        given = request.query_params.get("token")
        # A wrong one still gets the page (with a 401): it shows its token form and says why,
        # rather than a line of JSON.
        page = _static("index.html")
        if given is not None and not hmac.compare_digest(given.encode(), token.encode()):
            page.status_code = 401
        return page

    async def asset(request: Request) -> Response:
        return _static(request.path_params["name"])

    async def dock_module(request: Request) -> Response:
        entry = docked.get(request.path_params["path"])
        if entry is None:
            return _error(404, "no such dock module")
        return _with_headers(Response(entry.resource().read_bytes(), media_type="text/javascript"))

    async def config(request: Request) -> Response:
        return JSONResponse({"model": hub.web.default_model, "demo": hub.web.demo_prompt})

    async def search(request: Request) -> Response:
        """The sessions whose title or user prompts contain `q` (case-insensitive), newest
        first; each log is read in a worker thread, off the event loop."""
        needle = request.query_params.get("q", "").strip().casefold()
        if not needle:
            raise _Unprocessable("q must be the text to search for")
        listed = await hub.sessions()
        found = await asyncio.to_thread(_matching, hub, listed, needle)
        return JSONResponse({"ids": found})

    async def models(request: Request) -> Response:
        return JSONResponse({"models": list(hub.web.models), "default": hub.web.default_model})

    async def dock_list(request: Request) -> Response:
        entries = sorted(docked.items(), key=lambda item: item[1].order)
        return JSONResponse(
            [{"slot": e.slot, "order": e.order, "url": f"/dock/{key}"} for key, e in entries]
        )

    async def sessions(request: Request) -> Response:
        if request.method == "POST":
            body = await _body(request)
            spec = _optional_str(body, "model")
            return JSONResponse({"id": await hub.create(spec)}, status_code=201)
        listed = [
            {"id": s.id, "title": s.title, "updated": s.updated, "events": s.events}
            for s in await hub.sessions()
        ]
        return JSONResponse({"sessions": listed})

    async def history(request: Request) -> Response:
        limit = _int_param(request, "limit", 50)
        before = request.query_params.get("before")
        page = await hub.page(
            request.path_params["id"],
            limit=limit,
            before=_int_param(request, "before", 0) if before is not None else None,
        )
        return JSONResponse(page)

    async def turns(request: Request) -> Response:
        body = await _body(request)
        prompt = body.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise _Unprocessable("prompt must be a non-empty string")
        result = await hub.submit(request.path_params["id"], prompt, _optional_str(body, "model"))
        return JSONResponse(result, status_code=202)

    async def session(request: Request) -> Response:
        if request.method == "PATCH":
            body = await _body(request)
            title = body.get("title")
            if not isinstance(title, str):
                raise _Unprocessable('the body must be {"title": str}')
            # ValueError (empty, too long, control characters) is a 422 with its one line
            return JSONResponse(await hub.rename(request.path_params["id"], title))
        try:
            await hub.delete(request.path_params["id"])
        except Busy as exc:
            return _error(409, str(exc))
        return JSONResponse({"deleted": request.path_params["id"]})

    async def queue(request: Request) -> Response:
        body = await _body(request)
        position, prompt = body.get("position"), body.get("prompt")
        if type(position) is not int or not isinstance(prompt, str):
            raise _Unprocessable('the body must be {"position": int, "prompt": str}')
        if not await hub.unqueue(request.path_params["id"], position, prompt):
            return _error(409, "that prompt is no longer queued there (it started, or moved)")
        return JSONResponse({"removed": prompt})

    async def cancel(request: Request) -> Response:
        return JSONResponse({"cancelled": await hub.cancel(request.path_params["id"])})

    async def approvals(request: Request) -> Response:
        body = await _body(request)
        call_id, answer = body.get("call_id"), body.get("answer")
        if not isinstance(call_id, str) or answer not in ANSWERS:
            raise _Unprocessable('the body must be {"call_id": str, "answer": once|session|deny}')
        try:
            await hub.answer(request.path_params["id"], call_id, answer)
        except NotWaiting as exc:
            return _error(409 if exc.known else 404, str(exc))
        return JSONResponse({"answered": call_id})

    async def events(request: Request) -> Response:
        session_id = request.path_params["id"]
        after = request.headers.get("last-event-id") or request.query_params.get("after")
        try:
            last = int(after) if after is not None else -1
        except ValueError:
            raise _Unprocessable("Last-Event-ID (or after) must be a seq number") from None
        queue, missed, rows, last = await hub.subscribe(session_id, last)
        return EventSourceResponse(
            _stream(hub, session_id, queue, missed, rows, last), ping=HEARTBEAT
        )

    async def activity(request: Request) -> Response:
        """Which sessions run or wait, for the list: all of them first, then each change."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        hub.watchers.add(queue)
        return EventSourceResponse(_activity(hub, queue), ping=HEARTBEAT)

    def api(handler: Handler) -> Handler:
        return _unprocessable(guard(handler))

    async def unrouted(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        return _error(status, "no such path" if status == 404 else "method not allowed")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await hub.aclose()  # the server stops: turns end, models close

    return Starlette(
        lifespan=lifespan,
        exception_handlers={404: unrouted, 405: unrouted},  # JSON, like every other error
        routes=[
            Route("/", guard(index, api=False)),
            Route("/static/{name:path}", guard(asset, api=False)),
            Route("/dock/{path:path}", guard(dock_module, api=False)),
            Route("/api/dock", api(dock_list)),
            Route("/api/config", api(config)),
            Route("/api/models", api(models)),
            Route("/api/activity", api(activity)),
            Route("/api/sessions", api(sessions), methods=["GET", "POST"]),
            Route("/api/search", api(search)),
            Route("/api/sessions/{id}", api(session), methods=["PATCH", "DELETE"]),
            Route("/api/sessions/{id}/history", api(history)),
            Route("/api/sessions/{id}/events", api(events)),
            Route("/api/sessions/{id}/turns", api(turns), methods=["POST"]),
            Route("/api/sessions/{id}/cancel", api(cancel), methods=["POST"]),
            Route("/api/sessions/{id}/queue", api(queue), methods=["DELETE"]),
            Route("/api/sessions/{id}/approvals", api(approvals), methods=["POST"]),
        ],
    )


async def _stream(
    hub: Hub,
    session_id: str,
    queue: asyncio.Queue[tuple[str, dict[str, Any]]],
    missed: Sequence[Event],
    rows: dict[str, dict[str, Any]],
    last: int,
) -> AsyncIterator[ServerSentEvent]:
    """What the client missed (`Hub.subscribe`: events up to seq `last`, and the rows they
    make or finish), then everything live; a reconnect resumes."""
    try:
        for event in missed:
            yield ServerSentEvent(json.dumps(event.to_json()), id=str(event.seq))
        for row in rows.values():
            yield ServerSentEvent(json.dumps(row), event="row")
        live = await hub.live(session_id)
        yield ServerSentEvent(json.dumps(hub.snapshot(live)), event="snapshot")
        while True:
            kind, data = await queue.get()
            if kind == "event":
                if data["seq"] <= last:
                    continue  # already sent from the backlog
                last = data["seq"]
                yield ServerSentEvent(json.dumps(data), id=str(last))
            else:
                yield ServerSentEvent(json.dumps(data), event=kind)
    finally:
        hub.unsubscribe(session_id, queue)


def _matching(hub: Hub, listed: Sequence[Any], needle: str) -> list[str]:
    found = []
    for summary in listed:
        if needle in (summary.title or "").casefold():
            found.append(summary.id)
            continue
        try:
            with hub.runtime.reader(summary.id) as log:
                prompts = [e.data.get("text", "") for e in log.events if e.type == "message/user"]
        except (OSError, ValueError, SessionNotFound, NotASession):
            continue  # gone or unreadable meanwhile: not a match
        if any(needle in str(text).casefold() for text in prompts):
            found.append(summary.id)
    return found


async def _activity(
    hub: Hub, queue: asyncio.Queue[dict[str, Any]]
) -> AsyncIterator[ServerSentEvent]:
    try:
        yield ServerSentEvent(json.dumps(hub.activity()), event="activity")
        while True:
            yield ServerSentEvent(json.dumps(await queue.get()), event="change")
    finally:
        hub.watchers.discard(queue)


class _Unprocessable(Exception):
    """Malformed JSON or fields: 422 with a one-line reason."""


class _TooLarge(Exception):
    """A body over MAX_BODY: 413, and the connection closes (the rest is not read)."""


def _unprocessable(handler: Handler) -> Handler:
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except _TooLarge:
            response = _error(413, f"the body is larger than {MAX_BODY >> 20} MiB")
            response.headers["connection"] = "close"
            return response
        except _Unprocessable as exc:
            return _error(422, str(exc))
        except ValueError as exc:  # a model spec that cannot be built, a bad setting
            return _error(422, str(exc))

    return wrapped


def _authorized(request: Request, token: str) -> bool:
    """The bearer header only: a cookie would also reach every other port of this host."""
    header = request.headers.get("authorization", "")
    given = header[7:] if header.startswith("Bearer ") else ""
    return hmac.compare_digest(given.encode(), token.encode())


async def _body(request: Request) -> dict[str, Any]:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise _TooLarge
    raw = bytearray()
    async for chunk in request.stream():  # counted as it comes: a chunked body has no length
        raw += chunk
        if len(raw) > MAX_BODY:
            raise _TooLarge
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
        # The log stores UTF-8: a lone surrogate ("\ud800" is valid JSON) would fail the append
        # of a turn already started, so it is refused here, before anything is written.
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(exc.object[exc.start])
        raise _Unprocessable(
            f"the body is not valid Unicode (a lone surrogate U+{code:04X})"
        ) from None
    except ValueError as exc:
        raise _Unprocessable(f"the body is not valid JSON ({exc})") from None
    except RecursionError:  # the stdlib parser recurses once per level of nesting
        raise _Unprocessable("the body is not valid JSON (nested too deeply)") from None
    if not isinstance(body, dict):
        raise _Unprocessable("the body must be a JSON object")
    return body


def _optional_str(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise _Unprocessable(f"{key} must be a string")
    return value


def _int_param(request: Request, key: str, default: int) -> int:
    raw = request.query_params.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _Unprocessable(f"{key} must be an integer, got {raw!r}") from None
    if value < 0 or (key == "limit" and not 1 <= value <= 1000):
        raise _Unprocessable(f"{key} is out of range: {value}")
    return value


def _error(status: int, message: str) -> Response:
    message = one_line(secret.current().redact(message), 300)
    return _with_headers(JSONResponse({"error": message}, status_code=status))


def _static(name: str) -> Response:
    media = _STATIC.get(name)
    if media is None:
        return _error(404, "no such file")
    body = resources.files(__package__).joinpath("static", name).read_bytes()
    return _with_headers(Response(body, media_type=media))


def _with_headers(response: Response) -> Response:
    response.headers["content-security-policy"] = CSP
    response.headers["x-content-type-options"] = "nosniff"
    response.headers["referrer-policy"] = "no-referrer"
    response.headers["cache-control"] = "no-store"  # the page's URL may hold the token
    return response
