"""Hook specifications: everything a plugin can do to harness.

Each implementation takes any subset of its spec's arguments, by name, as in pluggy. Each
spec has a docstring and a mode (broadcast or firstresult, set on its marker). Only
`harness_model` is called through pluggy, wrappers (`wrapper=True`) included; the others are
called one plugin at a time by `_facade.py`, which rejects wrappers at load time and calls
`tryfirst` implementations first and `trylast` ones last, each group in plugin load order.
`scripts/gen_hook_catalog.py` builds docs/hook-catalog.md from them, and CI fails when the
catalog is stale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import pluggy

if TYPE_CHECKING:
    from ..hosts import (
        Command,
        DockEntry,
        SessionMcp,
        SnapshotFields,
        TerminalStrip,
        TurnQueue,
    )
    from ..log import Event, EventSink, EventType, EventTypeRegistry, History, SessionLog, Store
    from ..models import Model
    from ._context import PluginContext

__all__ = ["PROJECT", "hookimpl", "hookspec"]

PROJECT: Final = "harness"
hookspec: Final = pluggy.HookspecMarker(PROJECT)
hookimpl: Final = pluggy.HookimplMarker(PROJECT)


@hookspec
def harness_event_types() -> Sequence[EventType]:
    """Declare the session event types this plugin appends.

    Return `EventType(name, payload, surface)` declarations; `payload` is the pydantic model,
    or `"package.module:Model"` so that reading a session never imports it. Called once for
    each plugin, the first time the host needs event types (a command that opens a session),
    and again when a plugin loads late or is reloaded. A plugin's own types must be
    `surface=False`: they ride on the log without reaching the model's message history.
    Declaring one surface, or a name another package owns, fails the plugin's load.
    """
    raise NotImplementedError


@hookspec
def harness_register_tools(ctx: PluginContext) -> None:
    """Register this plugin's tools with `ctx.tools.register(tool)`.

    Called once for each plugin as it loads, with that plugin's own context: the services it
    named in `inject` and its configuration section. Registrations are disposed when the
    plugin is unloaded or reloaded.
    """


@hookspec
def harness_event_appended(session: SessionLog, event: Event) -> None:
    """Observe every event appended to a session this process writes.

    Observers are isolated: an exception is reported with the plugin's name and neither stops
    the other observers nor the turn. Do not append from here; observers see, never steer.
    """


@hookspec(firstresult=True)
def harness_session_store(
    url: str, registry: EventTypeRegistry, on_append: EventSink | None
) -> Store | None:
    """Provide the session store a URL names (`--store`, `HARNESS_STORE`, config `store`).

    Return a `harness_core.log.Store` for a URL whose scheme this plugin serves (say
    `postgresql://`), or None to let the next plugin try; the first answer wins. The store
    keeps its sessions with the event types of `registry` and reports every append of a
    session it writes to `on_append`. The file store (`file://PATH`, and no URL at all) is
    built in. A store that cannot be reached raises `StoreError` with one line saying why,
    the password left out. A store implements public methods only: the `Store` protocol and,
    for its sessions, a `SessionLog` subclass's persistence (`persist`, `make_durable`,
    `stored_blocks`, `unread_lines`, `release`; docs/log.md, "Stores"); it passes
    `harness_core.testing.store_conformance`, as `harness_core.testing.memory_store` does.
    `harness store init` and `harness store copy` then work on it.
    """


@hookspec(firstresult=True)
def harness_model(spec: str, options: dict[str, Any]) -> Model | None:
    """Build the model for a `--model` SPEC such as `ollama:llama3`.

    Return a Model for a spec this plugin understands, or None to let the next plugin try;
    the first non-None answer wins. The built-in `scripted:`, `openai:` and `deepseek:`
    providers answer last, so a plugin may override them. `options` carries `base_url`, and
    the `model_timeout` (seconds) and `model_retries` settings as `timeout` and `retries`;
    each is None when not set.
    """


@hookspec
def harness_compaction_carry(history: History) -> str | None:
    """Add to what survives a compaction: text the model keeps when its history is summarized.

    `history` is the session as it stood before a `context/compact` event:
    `history.latest(types)` is the newest event of those types before it. Return a short text
    for the model (the todo plugin returns the current plan while it has unfinished items),
    or None. The message projection renders every plugin's text after the summary, in call
    order (plugin load order; `tryfirst` first, `trylast` last), on the live session and on
    every replay alike: answer from `history` alone, the same way each time, so a replay
    derives the messages the live session sent. Called once per compaction, as the log folds
    it; a plugin that raises is reported and skipped.
    """


@hookspec
def harness_turn_usage(events: Sequence[Event]) -> Mapping[str, bool | int] | None:
    """Say what one turn used, from its events: `{"plan_used": True}`, or None.

    `events` are one ended turn's events, from its `turn/start` to its `turn/end`. Return
    figures keyed by name (a flag or a count) for what this plugin sees among them (the todo
    plugin answers `plan_used` when a `todo/write` is there), or None. Answers merge key by
    key: a flag is true when any plugin says so, counts add up. harness-worker asks once for
    each queued turn and records `plan_used` in its task rows and batch report. A plugin
    that raises is reported and skipped.
    """


# -- host extension points -------------------------------------------------------------------


@hookspec
def harness_cli_commands() -> Sequence[Command]:
    """Add subcommands to the `harness` command line.

    Return `Command(name, help, run, configure)` declarations; `configure(parser)` adds the
    command's arguments and `run(args, ctx)` runs it and returns the exit status (raise
    `CommandError` for a one-line failure). A name a core command or a plugin called earlier
    already uses is reported and skipped. Keep the plugin module light and import inside
    `run`: the CLI asks every plugin for its commands before it knows which one runs.
    """
    raise NotImplementedError


@hookspec
def harness_terminal_strip() -> TerminalStrip | None:
    """Contribute a strip pinned under a terminal host's output, or None.

    Called once for each session a terminal view shows; return a fresh fold. The host feeds it
    that session's events in order (`apply`) and pins its `lines()` under the output while
    turns run, and prints them once when a resumed session opens. Strips stack in call
    order (plugin load order; `tryfirst` first, `trylast` last). The todo plugin's plan strip
    is one.
    """


@hookspec
def harness_snapshot_fields() -> SnapshotFields | None:
    """Contribute fields to the conversation snapshot hosts ship, or None.

    Called once for each session a host projects; return a fresh fold. The host feeds it every
    event of the session and merges its `fields()` into the snapshot (the web host's tail
    page carries them, computed from the whole log). A field name two plugins contribute is
    reported and the later plugin's value is dropped.
    """


@hookspec
def harness_web_dock() -> Sequence[DockEntry]:
    """Contribute web dock entries: JS modules a page mounts in a slot, in `order`.

    `DockEntry(slot, order, package, module)`: the web host serves `module` from the
    installed `package` and the page mounts it in `slot` (`conversation.input.dock` is the
    strip above the prompt). An entry whose module is missing is reported and skipped.
    """
    raise NotImplementedError


@hookspec(firstresult=True)
def harness_turn_queue(store: Store) -> TurnQueue | None:
    """Offer a durable queue for the turns of `store`'s sessions, or None.

    `harness serve --queue` asks once, at start: the first plugin to answer gets every turn
    the page posts (`TurnQueue.submit`) and says what runs and waits (`state`); the turns
    run elsewhere (harness-worker's workers) and reach the page through the store. Return
    None for a store the plugin cannot queue for. Keep the hook light: import on first use.
    """


@hookspec(firstresult=True)
def harness_session_mcp() -> SessionMcp | None:
    """Offer to run the MCP servers a client hands a session (ACP's `mcpServers`), or None.

    Return `SessionMcp(attach, http)`; the first plugin to answer, in call order (plugin load
    order; `tryfirst` first, `trylast` last), is used. The ACP bridge
    asks once: `initialize` advertises `mcpCapabilities.http` from it, and each
    `session/new` or `session/load` that names servers gets its own tool registry over the
    host's, passed to `attach(servers, tools, cwd)`; what `attach` returns is called when
    the session ends. Keep the hook light (import inside `attach`): it runs at startup.
    """
