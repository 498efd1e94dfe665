"""`harness serve`: the web host on loopback, its URL (with the token) on stdout's first line."""

from __future__ import annotations

import os
import secrets
import socket
import sys
from argparse import Namespace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ..runtime import SetupError
from ._app import App, CliError, needs_extra

if TYPE_CHECKING:
    from ..hosts import TurnQueue
    from ..models import Model

__all__ = ["serve"]

DEMO: Final = "demo"  # the model spec of the embedded demo script
TOKEN_FILE: Final = "web-token"  # under HARNESS_HOME, mode 0600


def serve(args: Namespace) -> int:
    needs_extra("web", "starlette", "uvicorn", "sse_starlette")
    from ..web import MAX_SESSIONS, Hub, WebRuntime, create_app, run_server

    app = App()
    app.use_sandbox(args.sandbox)
    app.check_workspace(os.getcwd())  # where the page's new sessions run their tools
    # Plugins register their tools now, not as the first session opens: that would import
    # them on the event loop, with every client waiting.
    app.host.finish_loading()
    default = args.model or app.settings.model
    offered = tuple(dict.fromkeys(s for s in (default, *app.settings.models, DEMO) if s))
    web = WebRuntime(
        runtime=app,
        make_model=lambda spec: _model(app, spec, default, offered),
        default_model=default,
        models=offered,
        cwd=os.getcwd(),
        demo_prompt=_demo_prompt(),
        # the page can always ask: under `ask` each call with effects outside the log waits
        approval=lambda asker: app.approval(args.approval, asker),
        hands_free=lambda spec: (spec or default) == DEMO,
        max_sessions=app.settings.web_sessions or MAX_SESSIONS,
        queue=_queue(app) if args.queue else None,
    )
    listener = _listen(args.host, args.port)
    port = listener.getsockname()[1]
    token = os.environ.get("HARNESS_WEB_TOKEN") or _token(app.home / TOKEN_FILE, args.new_token)
    asgi = create_app(
        Hub(web), token=token, hosts=_hosts(args.host, port), dock=app.host.hooks.web_dock()
    )
    print(f"harness web: http://{_authority(args.host, port)}/?token={token}", flush=True)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"harness: warning: serving on {args.host}: anyone who can reach it and has the "
            "token can run tools on this machine",
            file=sys.stderr,
        )
    run_server(asgi, listener)
    return 0


def _token(path: Path, new: bool) -> str:
    """The token kept in `path`, made there (mode 0600) the first time or when `new`: a
    restarted server keeps it, so the pages open on it go on working."""
    if not new:
        try:
            kept = path.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            kept = ""
        except OSError as exc:
            raise CliError(f"cannot read the web token {path}: {exc.strerror or exc}") from None
        if kept:
            return kept
    token = secrets.token_urlsafe(24)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Made with its mode rather than changed after: the token is never readable by others.
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            os.fchmod(file.fileno(), 0o600)  # an older file keeps its mode through O_CREAT
            file.write(token + "\n")
    except OSError as exc:
        raise CliError(f"cannot keep the web token in {path}: {exc.strerror or exc}") from None
    return token


def _queue(app: App) -> TurnQueue:
    """The plugin queue the turns go to under --queue; a one-line error without one."""
    queue = app.host.hooks.turn_queue(app.store)
    if queue is None:
        raise CliError(
            f"--queue needs a plugin that queues turns for the store {app.store.url}: install "
            "harness-worker and name a PostgreSQL store (--store postgresql://...)"
        )
    return queue


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        listener = socket.create_server((host, port), family=family, reuse_port=False)
    except OSError as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return listener


def _hosts(host: str, port: int) -> list[str] | None:
    """The Host header values this server answers to (anything else is DNS rebinding);
    None for a wildcard bind, which answers to whatever name reaches it."""
    if host in ("0.0.0.0", "::", ""):
        return None
    names = {host}
    if host in ("127.0.0.1", "localhost"):
        names |= {"127.0.0.1", "localhost"}
    return [_authority(name, port) for name in sorted(names)]


def _authority(host: str, port: int) -> str:
    """HOST:PORT as a URL and a Host header write it: an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _demo_prompt() -> str:
    from ._demo import demo_script

    prompt: str = demo_script()["prompt"]
    return prompt


def _model(app: App, chosen: str | None, default: str | None, offered: tuple[str, ...]) -> Model:
    """The model for a turn, `chosen` by the client or else the default; every failure is a
    ValueError the API answers with 422.

    A client may not name a script file: `scripted:PATH` makes the server read PATH, and a
    client choosing it could point it at /dev/zero or a FIFO. Only the server's own is allowed.
    """
    if chosen and chosen != default and chosen.partition(":")[0] == "scripted":
        raise ValueError(
            "a client may not choose a scripted: model file; start harness serve with "
            "--model scripted:PATH to use one"
        )
    if chosen and chosen not in offered:
        raise ValueError(
            f"{chosen} is not a model this server offers ({', '.join(offered)}): add it to "
            "models = [...] in the config, or start harness serve with --model"
        )
    spec = chosen or default
    if spec == DEMO:
        from ..models import ScriptedModel
        from ._demo import STEP_DELAY, WORD_DELAY, PacedModel, demo_script

        # Paced like the terminal's demo, so whoever watches the page sees the plan fill in.
        scripted = ScriptedModel(demo_script()["steps"], name="scripted:demo")
        return PacedModel(scripted, STEP_DELAY, WORD_DELAY)
    if not spec:
        raise ValueError(
            "no model chosen: start harness serve with --model PROVIDER:MODEL "
            "(or set HARNESS_MODEL), or run the demo"
        )
    try:
        return app.model(spec, None)
    except (SetupError, RuntimeError) as exc:  # RuntimeError: a ModelError from a script file
        raise ValueError(str(exc)) from None
