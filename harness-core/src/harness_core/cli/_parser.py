"""The command line's grammar (README "Commands"). argparse only: this runs for `--help`."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from .._version import __version__

if TYPE_CHECKING:
    from typing import TypeAlias

    from ..hosts import Command

    Commands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

__all__ = [
    "COMMANDS_GROUP",
    "CORE_COMMANDS",
    "build_parser",
    "command_word",
    "declared_commands",
    "store_flag",
    "store_option",
]

# The entry-point group where a distribution may declare the commands its plugin adds.
COMMANDS_GROUP: Final = "harness.commands"

DESCRIPTION: Final = """\
An agent harness: a model works through tools in a session whose every step is an event in
an append-only log, and the todo list it plans with is shown live as a plan strip."""

EPILOG: Final = """\
environment:
  HARNESS_HOME            data directory (sessions/, config.toml); default: per-user data dir
  HARNESS_MODEL           default --model SPEC (or `model` in config.toml)
  OPENAI_API_KEY          key for openai:MODEL (OPENAI_BASE_URL, OPENAI_MODEL optional)
  DEEPSEEK_API_KEY        key for deepseek:MODEL (DEEPSEEK_BASE_URL, DEEPSEEK_MODEL optional)
  HARNESS_DISABLE_PLUGINS comma-separated plugins not to load; HARNESS_LOAD_PLUGINS loads only these
  HARNESS_STRICT_PLUGINS  1: a rejected plugin is an error instead of a warning
  HARNESS_SANDBOX         default --sandbox (or `sandbox` in config.toml)
  HARNESS_APPROVAL        default --approval (or `approval` in config.toml)
  HARNESS_STORE           default --store URL (or `store` in config.toml)

Installed plugins add commands of their own: `harness plugins` lists them.

model SPEC: scripted:PATH (a JSON script; no key, no network), openai:MODEL, deepseek:MODEL"""


def store_flag(argv: Sequence[str]) -> str | None:
    """`--store URL` (or `--store=URL`) of a command line, read before it is parsed: the
    store decides which plugins' commands there are to parse it with."""
    for index, word in enumerate(argv):
        if word == "--store" and index + 1 < len(argv):
            return argv[index + 1]
        if word.startswith("--store="):
            return word.partition("=")[2]
    return None


def command_word(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def declared_commands() -> list[tuple[str, str]]:
    """(command, distribution) that installed plugins declare in their metadata.

    `harness --help` lists them without importing any plugin (entry-point group
    `harness.commands`); the commands themselves come from `harness_cli_commands`.
    """
    from .._entry_points import entry_points

    declared = {(ep.name, ep.dist) for ep in entry_points(COMMANDS_GROUP)}
    return sorted(d for d in declared if d[0] not in CORE_COMMANDS)


def build_parser(
    plugin_commands: Sequence[Command] = (),
    declared: Sequence[tuple[str, str]] = (),
    *,
    only: str | None = None,
) -> argparse.ArgumentParser:
    """The grammar of the core commands, and of the commands plugins add (or declare).

    `only` names the command the line runs: the other core commands' grammar is left out,
    which `--help` alone needs (building all of it is most of a cold command's parse time).
    """
    parser = argparse.ArgumentParser(
        prog="harness",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, add in _CORE.items():
        if only is None or only == name:
            add(commands)
    for command in plugin_commands:
        added = commands.add_parser(
            command.name,
            help=command.help,
            description=command.description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if command.configure is not None:
            command.configure(added)
        if not any("--store" in action.option_strings for action in added._actions):
            store_option(added)  # a plugin's command reads sessions through the store too
    for name, dist in declared:
        commands.add_parser(name, help=f"added by {dist} (harness {name} --help)")
    return parser


def _run(commands: Commands) -> None:
    run = commands.add_parser(
        "run", help="one turn; a new session unless --session continues one", description=RUN
    )
    store_option(run)
    _model_options(run)
    _safety_options(run)
    run.add_argument("--session", metavar="ID", help="continue this session")
    run.add_argument("--json", action="store_true", help="stream the events as JSON Lines")
    run.add_argument("prompt", metavar="PROMPT", help="what to ask (- reads it from stdin)")


def _chat(commands: Commands) -> None:
    chat = commands.add_parser("chat", help="a prompt loop on one session", description=CHAT)
    store_option(chat)
    _model_options(chat)
    _safety_options(chat)
    chat.add_argument("--session", metavar="ID", help="continue this session")


def _compact(commands: Commands) -> None:
    compact = commands.add_parser(
        "compact",
        help="summarize a session's history so far, to free the model's context",
        description=COMPACT,
    )
    store_option(compact)
    _model_options(compact)
    compact.add_argument("id", metavar="ID")


def _demo(commands: Commands) -> None:
    demo = commands.add_parser(
        "demo",
        help="a scripted session: plans, runs tools, finishes (no key, no network)",
        description=DEMO,
    )
    store_option(demo)
    demo.add_argument("--fast", action="store_true", help="no pauses between the steps")


def _sessions(commands: Commands) -> None:
    sessions = commands.add_parser("sessions", help="list sessions, newest first")
    store_option(sessions)
    sessions.add_argument("--json", action="store_true", help="a JSON array of sessions")


def _show(commands: Commands) -> None:
    show = commands.add_parser("show", help="a session's transcript")
    store_option(show)
    show.add_argument("id", metavar="ID")
    show.add_argument(
        "--json", action="store_true", help="the message history the model would be sent next"
    )


def _events(commands: Commands) -> None:
    events = commands.add_parser("events", help="a session's events as JSON Lines")
    store_option(events)
    events.add_argument("id", metavar="ID")


def _plugins(commands: Commands) -> None:
    plugins = commands.add_parser(
        "plugins", help="every discovered plugin: loaded, disabled or rejected, and why"
    )
    plugins.add_argument("--json", action="store_true", help="a JSON array of plugin records")


def _serve(commands: Commands) -> None:
    serve = commands.add_parser(
        "serve", help="the web host: a live conversation page", description=SERVE
    )
    store_option(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)"
    )
    serve.add_argument("--model", metavar="SPEC", help="the model for new turns (or demo)")
    serve.add_argument(
        "--queue",
        action="store_true",
        help="queue each turn for workers instead of running it here (harness-worker)",
    )
    serve.add_argument(
        "--new-token",
        action="store_true",
        help="make a new token (pages open on the old one must be opened again)",
    )
    _safety_options(serve)


def _acp(commands: Commands) -> None:
    bridge = commands.add_parser(
        "acp", help="an Agent Client Protocol agent on stdio (editors, CI)", description=ACP
    )
    store_option(bridge)
    bridge.add_argument(
        "--model", metavar="SPEC", help="scripted:PATH, openai:MODEL or deepseek:MODEL"
    )
    _safety_options(bridge)


def _sandbox_check(commands: Commands) -> None:
    commands.add_parser(
        "sandbox-check",
        help="whether bash can run sandboxed here (bubblewrap), and why not",
        description=SANDBOX_CHECK,
    )


def _store(commands: Commands) -> None:
    store = commands.add_parser(
        "store",
        help="initialise a store, copy sessions between stores",
        description=STORE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    store_option(store)
    actions = store.add_subparsers(dest="action", required=True, metavar="{init,copy}")
    init = actions.add_parser("init", help="create or migrate the store's tables")
    # Also after `init`; not set when absent, so that `store --store URL init` keeps its URL.
    init.add_argument("--store", metavar="URL", default=argparse.SUPPRESS, help="the store")
    copy = actions.add_parser("copy", help="copy sessions from one store to another")
    copy.add_argument("source", metavar="SRC", help="file:///PATH, postgresql://... or another")
    copy.add_argument(
        "destination", metavar="DST", help="file:///PATH, postgresql://... or another"
    )
    copy.add_argument(
        "--session", action="append", metavar="ID", help="only this session (repeatable)"
    )


# In the order `--help` lists them.
_CORE: Final[dict[str, Callable[[Commands], None]]] = {
    "run": _run,
    "chat": _chat,
    "compact": _compact,
    "demo": _demo,
    "sessions": _sessions,
    "show": _show,
    "events": _events,
    "plugins": _plugins,
    "serve": _serve,
    "acp": _acp,
    "sandbox-check": _sandbox_check,
    "store": _store,
}
CORE_COMMANDS: Final = frozenset(_CORE)


def store_option(command: argparse.ArgumentParser) -> None:
    """`--store URL` (every command that opens sessions; HARNESS_STORE, config `store`)."""
    command.add_argument(
        "--store",
        metavar="URL",
        help="where the sessions are: file:///PATH or a store plugin's URL such as "
        "postgresql://HOST/DB; default: HARNESS_HOME's sessions/ (HARNESS_STORE)",
    )


def _model_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--model", metavar="SPEC", help="scripted:PATH, openai:MODEL or deepseek:MODEL"
    )
    command.add_argument("--base-url", metavar="URL", help="an OpenAI-compatible endpoint")


def _safety_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--approval",
        choices=("ask", "auto", "deny"),
        help="ask: ask before each call with effects outside the log; auto: run them; "
        "deny: refuse them; default: ask on a terminal, else auto (HARNESS_APPROVAL)",
    )
    command.add_argument(
        "--sandbox",
        choices=("workspace", "off"),
        help="workspace: bash may write only the working directory and a private /tmp, with "
        "no network (bubblewrap); default: workspace where it works (HARNESS_SANDBOX)",
    )


STORE: Final = """\
init creates or migrates what the store --store (else HARNESS_STORE, else config `store`)
names keeps its sessions in, such as a PostgreSQL store's tables; running it again changes
nothing, and a store that needs nothing set up (the file store) says so. copy copies sessions
(all, or each --session) from the store SRC to the store DST, each a file:///PATH URL or one a
store plugin serves, as the very lines they hold: a session DST has already is skipped, one
it holds a prefix of is extended, and any other difference stops the copy before anything is
written (exit 1)."""

SANDBOX_CHECK: Final = """\
Report whether bash can run sandboxed here (`--sandbox workspace`: bubblewrap with the working
directory and a private /tmp writable, everything else read-only, no network) and, if not, why.
Exit status 0 when it works, 1 when it does not."""

RUN: Final = """\
Run one turn: the model answers PROMPT, calling tools as it goes, until it answers without a
tool call. On a terminal the answer streams, each tool call gets a line and the plan strip
shows the model's todo list. --json streams the session's events as JSON Lines instead.
Exit status: 0 when the turn completed, 1 on an error, 130 when cancelled with Ctrl-C."""

CHAT: Final = """\
A prompt loop on one session. Ctrl-C cancels the running turn and keeps the chat open;
/compact summarizes the history so far (see `harness compact`); Ctrl-D or `exit` leaves.
Prompts are kept in $HARNESS_HOME/chat_history."""

COMPACT: Final = """\
Compact a session: its model summarizes the history except the last few messages, and the
summary (with the unfinished todo list) stands in for them in every later request. The events
stay on the log. Prints one line: how many events were summarized. In `harness chat`, type
/compact to do the same."""

DEMO: Final = """\
Run the embedded scripted session: the model plans with todo_write, runs a few harmless bash
commands, updates the plan as it goes and finishes. It needs no key and no network. The
session is saved under a temporary HARNESS_HOME unless HARNESS_HOME is set."""

SERVE: Final = """\
Serve the web host: the sessions, a live conversation page, and the todo panel docked above
the input. The first line on stdout is the URL to open, with a token every /api request needs.
The token is kept in HARNESS_HOME/web-token (mode 0600), so a restart keeps open pages working;
--new-token makes a new one, HARNESS_WEB_TOKEN overrides both. Binds 127.0.0.1 unless --host
says otherwise."""

ACP: Final = """\
Serve the Agent Client Protocol on stdin/stdout for an editor or orchestrator that launches
harness as its agent. stdout carries JSON-RPC only; logs and anything a plugin prints go to
stderr. Tools run without asking unless --approval ask has the client ask its user
(session/request_permission); the todo plan is not sent: see docs/acp.md."""
