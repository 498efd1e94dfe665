"""The host-side hooks (commands, strips, snapshot fields, dock entries) and pluggy's promises:
subset-argument implementations of every hook, and what wrappers mean for each."""

from __future__ import annotations

import json
from argparse import ArgumentParser, Namespace
from collections.abc import Sequence
from io import StringIO
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from harness_core.cli import main
from harness_core.cli._plain import PlainView
from harness_core.hosts import Command, CommandContext, CommandError, DockEntry, StripLine, Styled
from harness_core.log import Event, History, SessionLog, SessionStore, history_of
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost, hookimpl
from harness_core.testing.pytest_plugin import FakeDistribution, RegisterPlugin

GREETER = """
import json
from harness_core.hosts import Command, CommandError
from harness_core.plugins import hookimpl

name = "greeter"
inject = ()

def configure(parser):
    parser.add_argument("who")
    parser.add_argument("--fail", action="store_true")

def run(args, ctx):
    if args.fail:
        raise CommandError("greeting refused", status=3)
    ctx.stdout.write(json.dumps({"hello": args.who, "home": str(ctx.home)}) + "\\n")
    return 0

@hookimpl
def harness_cli_commands():
    return [Command("greet", "say hello", run, configure), Command("show", "clash", run)]
"""


def test_harness_cli_commands_adds_a_command_the_cli_parses_and_runs(
    fake_distribution: FakeDistribution, capsys: pytest.CaptureFixture[str], harness_home: Path
) -> None:
    """An installed plugin's command runs with its own arguments and the CLI's context;
    a CommandError is one line with its status; a clash with a core command is skipped."""
    fake_distribution("harness-greeter", {"greeter": "greeter"}, {"greeter.py": GREETER})
    assert main(["greet", "Ada"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"hello": "Ada", "home": str(harness_home)}
    assert "adds command 'show', a core command; skipped" in err
    assert main(["greet", "Ada", "--fail"]) == 3
    assert capsys.readouterr().err.splitlines()[-1] == "harness: error: greeting refused"
    assert main(["greet"]) == 2  # a usage error from the plugin's own arguments
    assert "the following arguments are required: who" in capsys.readouterr().err


def test_harness_cli_commands_of_an_unknown_word_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A word no core command and no plugin knows: argparse's usage error, status 2."""
    assert main(["nonesuch"]) == 2
    assert "invalid choice: 'nonesuch'" in capsys.readouterr().err


class Counter:
    """A strip and snapshot-fields plugin: counts user messages."""

    name = "counter"
    inject = ()

    class Fold:
        def __init__(self) -> None:
            self.count = 0

        def apply(self, event: Event) -> bool:
            if event.type == "message/user":
                self.count += 1
                return True
            return False

        def lines(self) -> Sequence[StripLine]:
            return [(Styled(f"\x1b[31mprompts: {self.count}", "bold"),)] if self.count else []

        def fields(self) -> dict[str, Any]:
            return {"prompts": self.count}

    @hookimpl
    def harness_terminal_strip(self) -> Counter.Fold:
        return Counter.Fold()

    @hookimpl
    def harness_snapshot_fields(self) -> Counter.Fold:
        return Counter.Fold()


def write_turn(log: SessionLog, prompt: str, turn: int) -> None:
    log.append("turn/start", {}, turn=turn)
    log.append("message/user", {"text": prompt}, turn=turn)
    log.append("message/assistant", {"text": "ok"}, turn=turn)
    log.append("turn/end", {"status": "completed"}, turn=turn)


def test_harness_terminal_strip_is_pinned_as_clean_plain_lines(
    plugin_host: PluginHost, register_plugin: RegisterPlugin, harness_home: Path
) -> None:
    """A contributed strip is printed when it changes, sanitized, and replayed on resume."""
    register_plugin(Counter())
    out = StringIO()
    view = PlainView(plugin_host.tools, out, plugin_host.hooks.terminal_strips)
    with SessionStore(harness_home, plugin_host.event_types).create() as log:
        log.listeners.append(lambda event: view.on_event(log, event))
        view.bind(log)
        write_turn(log, "one", 1)
        assert "prompts: 1" in out.getvalue().splitlines()
        resumed = PlainView(plugin_host.tools, StringIO(), plugin_host.hooks.terminal_strips)
        resumed.bind(log)
        resumed.resumed()
    assert resumed._out.getvalue() == "prompts: 1 (standing, from the last turn)\n"  # type: ignore[attr-defined]


def test_harness_snapshot_fields_folds_are_fresh_and_isolated(
    plugin_host: PluginHost, register_plugin: RegisterPlugin
) -> None:
    """Each call returns fresh folds; a plugin raising is reported, the others still answer."""

    class Broken:
        name = "broken"
        inject = ()

        @hookimpl
        def harness_snapshot_fields(self) -> None:
            raise RuntimeError("no fields today")

    register_plugin(Broken())
    register_plugin(Counter())
    folds = plugin_host.hooks.snapshot_fields()
    assert [name for name, _ in folds] == ["counter"]
    folds[0][1].apply(Event(1, "message/user", "t", {"text": "x"}, 1))
    assert folds[0][1].fields() == {"prompts": 1}
    assert plugin_host.hooks.snapshot_fields()[0][1].fields() == {"prompts": 0}
    assert "plugin 'broken' raised in harness_snapshot_fields" in str(
        plugin_host.observer_errors[-1]
    )


def test_harness_compaction_carry_texts_follow_the_summary_in_load_order(
    plugin_host: PluginHost, register_plugin: RegisterPlugin, harness_home: Path
) -> None:
    """Each plugin's text follows the summary; one that raises is reported and skipped."""

    class Carrier:
        def __init__(self, name: str) -> None:
            self.name, self.inject = name, ()

        @hookimpl
        def harness_compaction_carry(self, history: History) -> str:
            newest = history.latest(("session/start", "turn/start", "message/user"))
            return f"{self.name} saw up to seq {newest.seq if newest else None}"

    class Broken:
        name = "broken"
        inject = ()

        @hookimpl
        def harness_compaction_carry(self) -> str:
            raise RuntimeError("nothing to carry")

    for plugin in (Carrier("first"), Broken(), Carrier("second")):
        register_plugin(plugin)
    store = SessionStore(harness_home, plugin_host.event_types)
    with store.create(system_prompt="sys") as log:
        log.append("turn/start", {}, turn=1)
        log.append("message/user", {"text": "hi"}, turn=1)
        summary = {"summary": "S", "first_seq": 1, "last_seq": 2, "model": "m"}
        log.append("context/compact", summary, turn=1)
        content = log.projection.request_messages()[1]["content"]
    assert content.endswith("S\n\nfirst saw up to seq 2\n\nsecond saw up to seq 2")
    assert "plugin 'broken' raised in harness_compaction_carry" in str(
        plugin_host.observer_errors[-1]
    )


def test_harness_web_dock_entries_come_in_load_order_and_resolve(
    plugin_host: PluginHost, register_plugin: RegisterPlugin
) -> None:
    """Dock entries name a module inside an installed package; bad entries are refused."""

    class Dock:
        name = "dock"
        inject = ()

        @hookimpl
        def harness_web_dock(self) -> list[DockEntry]:
            return [DockEntry("conversation.input.dock", -1, "harness_core", "py.typed.js")]

    register_plugin(Dock())
    ((plugin, entry),) = plugin_host.hooks.web_dock()
    assert (plugin, entry.slot, entry.order) == ("dock", "conversation.input.dock", -1)
    with pytest.raises(FileNotFoundError, match=r"harness_core has no py\.typed\.js"):
        entry.resource()
    with pytest.raises(ValueError, match=r"must be a \.js path inside the package"):
        DockEntry("conversation.input.dock", 0, "harness_core", "../escape.js")
    with pytest.raises(ValueError, match="is not a slot name"):
        DockEntry("Bad Slot", 0, "harness_core", "x.js")


# -- pluggy's promises -----------------------------------------------------------------------


class Subsets:
    """Every hook implemented with a subset of its spec's arguments, as pluggy allows."""

    name = "subsets"
    inject = ()

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.registered = False

    @hookimpl
    def harness_register_tools(self) -> None:  # no ctx at all
        self.registered = True

    @hookimpl
    def harness_event_appended(self, event: Event) -> None:  # no session
        self.seen.append(event.type)

    @hookimpl
    def harness_model(self, spec: str) -> Any:  # no options
        return ScriptedModel([{"text": "hi"}], name=spec) if spec == "subset:x" else None


def test_every_hook_takes_a_subset_of_its_arguments(
    plugin_host: PluginHost, register_plugin: RegisterPlugin, harness_home: Path
) -> None:
    """harness_register_tools(), harness_event_appended(event), harness_model(spec) all run."""
    plugin = Subsets()
    assert register_plugin(plugin).status == "loaded"
    assert plugin.registered
    with SessionStore(harness_home, plugin_host.event_types).create() as log:
        plugin_host.hooks.event_appended(log, log.events[0])
    assert plugin.seen == ["session/start"]
    assert plugin_host.observer_errors == []
    model = plugin_host.hooks.model("subset:x", {"base_url": None})
    assert model is not None and model.name == "subset:x"


def test_harness_turn_usage_merges_every_plugins_answer_about_a_turn(
    plugin_host: PluginHost, register_plugin: RegisterPlugin
) -> None:
    """What a turn used, from any tool plugin: flags true when one says so, counts added, a
    plugin with nothing to say or that raises leaves the others' answers whole."""

    def usage(name: str, answer: Any) -> SimpleNamespace:
        def harness_turn_usage(events: Sequence[Event]) -> Any:
            if answer is None:
                raise RuntimeError("cannot tell")
            return answer(events)

        return SimpleNamespace(
            name=name, inject=(), harness_turn_usage=hookimpl(harness_turn_usage)
        )

    register_plugin(usage("search", lambda events: {"plan_used": False, "searches": len(events)}))
    register_plugin(usage("silent", lambda events: None))
    register_plugin(usage("broken", None))
    register_plugin(usage("browser", lambda events: {"plan_used": True, "searches": 1}))
    turn = [Event(1, "turn/start", "t", {}, 1), Event(2, "turn/end", "t", {}, 1)]
    assert plugin_host.hooks.turn_usage(turn) == {"plan_used": True, "searches": 3}
    assert "plugin 'broken' raised in harness_turn_usage" in str(plugin_host.observer_errors[-1])


def marked(name: str, seen: list[str], **marks: bool) -> SimpleNamespace:
    """A plugin that answers each isolated hook with its own name, marked with `marks`."""
    mark = hookimpl(**marks)
    return SimpleNamespace(
        name=name,
        inject=(),
        harness_event_appended=mark(lambda: seen.append(name)),
        harness_compaction_carry=mark(lambda: name),
        harness_cli_commands=mark(lambda: [name]),
        harness_terminal_strip=mark(lambda: name),
        harness_snapshot_fields=mark(lambda: name),
        harness_web_dock=mark(lambda: [name]),
        harness_session_mcp=mark(lambda: name),
        harness_turn_usage=mark(lambda: {name: True}),
    )


def test_tryfirst_and_trylast_order_every_isolated_hook_and_harness_session_mcp_as_in_pluggy(
    plugin_host: PluginHost, register_plugin: RegisterPlugin
) -> None:
    """Loaded unmarked, tryfirst, trylast, trylast: every hook calls them tryfirst, unmarked,
    trylast (two of a kind in load order), as pluggy's own caller does, and
    harness_session_mcp takes the tryfirst plugin's offer."""
    seen: list[str] = []
    plugins = [("plain", {}), ("first", {"tryfirst": True}), ("last", {"trylast": True})]
    for name, marks in [*plugins, ("later", {"trylast": True})]:
        assert register_plugin(marked(name, seen, **marks)).status == "loaded"
    order = ["first", "plain", "last", "later"]
    assert plugin_host.pm.hook.harness_compaction_carry(history=history_of([])) == order
    hooks = plugin_host.hooks
    hooks.event_appended(cast("SessionLog", None), Event(0, "session/start", "t", {}, None))
    assert seen == order
    assert hooks.compaction_carry(history_of([])) == order
    assert [plugin for plugin, _ in hooks.cli_commands()] == order
    assert hooks.terminal_strips() == order
    assert [plugin for plugin, _ in hooks.snapshot_fields()] == order
    assert [plugin for plugin, _ in hooks.web_dock()] == order
    assert hooks.session_mcp() == "first"
    assert list(hooks.turn_usage([])) == order


@pytest.mark.parametrize(
    "hook",
    [
        "harness_register_tools",
        "harness_event_appended",
        "harness_cli_commands",
        "harness_terminal_strip",
        "harness_snapshot_fields",
        "harness_web_dock",
        "harness_event_types",
        "harness_compaction_carry",
        "harness_turn_usage",
    ],
)
def test_wrappers_are_rejected_where_the_host_calls_one_plugin_at_a_time(
    plugin_host: PluginHost, register_plugin: RegisterPlugin, hook: str
) -> None:
    """A wrapper on an isolated hook would never wrap anything: the load says so and why."""

    def wrapper(*args: Any) -> Any:
        return (yield)

    plugin = type("Wrapping", (), {"name": "wrapping", "inject": ()})()
    setattr(plugin, hook, hookimpl(wrapper=True)(wrapper))
    record = register_plugin(plugin)
    assert record.status == "rejected"
    assert hook in (record.reason or "")
    assert "wrapper" in (record.reason or "") + (record.fix or "")
    assert not plugin_host.pm.is_registered(plugin)


def test_harness_model_runs_wrappers_as_pluggy_does(
    plugin_host: PluginHost, register_plugin: RegisterPlugin
) -> None:
    """A wrapper around harness_model sees the chosen model and may replace it."""

    class Renamer:
        name = "renamer"
        inject = ()

        @hookimpl(wrapper=True)
        def harness_model(self, spec: str) -> Any:
            model = yield
            if model is not None:
                model.name = f"wrapped {model.name}"
            return model

    register_plugin(Subsets())
    assert register_plugin(Renamer()).status == "loaded"
    model = plugin_host.hooks.model("subset:x", {})
    assert model is not None and model.name == "wrapped subset:x"


def test_subset_implementations_of_the_host_hooks(
    plugin_host: PluginHost, register_plugin: RegisterPlugin, harness_home: Path
) -> None:
    """Host hooks take no arguments; a context-free command still gets its ctx at run time."""
    seen: list[CommandContext] = []

    def run(args: Namespace, ctx: CommandContext) -> int:
        seen.append(ctx)
        return 0

    def configure(parser: ArgumentParser) -> None:
        parser.add_argument("--x")

    class Cmd:
        name = "cmd"
        inject = ()

        @hookimpl
        def harness_cli_commands(self) -> list[Command]:
            return [Command("thing", "a thing", run, configure)]

    register_plugin(Cmd())
    ((plugin, command),) = plugin_host.hooks.cli_commands()
    assert (plugin, command.name, command.configure) == ("cmd", "thing", configure)
    with pytest.raises(ValueError, match="lower-case letters"):
        Command("Bad_Name", "x", run)
    assert CommandError("x").status == 1


def test_harness_snapshot_fields_merge_into_a_session_snapshot(
    plugin_host: PluginHost, register_plugin: RegisterPlugin, harness_home: Path
) -> None:
    """A SessionSnapshot folds the conversation and each plugin's fields; a field two plugins
    set keeps the first plugin's value and says so."""
    from harness_core.hosts import SessionSnapshot

    class Twin(Counter):
        name = "twin"

    register_plugin(Counter())
    register_plugin(Twin())
    snapshot = SessionSnapshot(plugin_host.hooks.snapshot_fields())
    with SessionStore(harness_home, plugin_host.event_types).create() as log:
        write_turn(log, "one", 1)
        changes = [snapshot.apply(event) for event in log.events]
    assert snapshot.seq == log.events[-1].seq
    assert snapshot.fields() == {"prompts": 1}
    messages = [(c.entry.role, c.entry.text) for c in changes if c.entry is not None]
    assert messages == [("user", "one"), ("assistant", "ok")]
    assert snapshot.conversation.turn.status == "completed"
