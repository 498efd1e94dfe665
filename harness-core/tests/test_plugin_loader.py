"""The entry-point loader: discovery, filtering, and one transaction per plugin."""

from __future__ import annotations

import re
from typing import Any

import pytest
from harness_core import __version__, builtins
from harness_core.config import Config, ConfigError
from harness_core.plugins import PluginHost, PluginLoadError, PluginRecord
from harness_core.testing.pytest_plugin import FakeDistribution

GOOD = """
from harness_core.plugins import hookimpl
from harness_core.tools import Tool, ToolResult
from pydantic import BaseModel, ConfigDict

name = "{name}"
inject = ("tools",)

class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str

class Echo(Tool[Args]):
    name = "{tool}"
    description = "Echo the text."
    arguments = Args

    async def execute(self, args, ctx):
        return ToolResult(args.text)

@hookimpl
def harness_register_tools(ctx):
    ctx.tools.register(Echo())
"""


def good_plugin(name: str, tool: str) -> str:
    return GOOD.format(name=name, tool=tool)


def load(host: PluginHost, **env: str) -> dict[str, PluginRecord]:
    records = host.load_entry_points(env=env)
    host.finish_loading()  # the tools phase: its rejections update these same records
    return {record.name: record for record in records}


def test_installed_todo_plugin_loads_through_its_entry_point(plugin_host: PluginHost) -> None:
    """The workspace's harness-tool-todo is discovered from real metadata and loads."""
    records = load(plugin_host)
    todo = records["todo"]
    assert (todo.status, todo.dist, todo.entry_point) == (
        "loaded",
        "harness-tool-todo",
        "harness_tool_todo",
    )
    assert todo.tools == ["todo_write"]
    assert "harness_register_tools" in todo.hooks
    assert plugin_host.tools.provider("todo_write") == "todo"


@pytest.mark.parametrize("group", ["harness.plugins", "harness.commands", "console_scripts"])
def test_entry_points_are_read_as_importlib_metadata_reads_them(
    group: str, fake_distribution: FakeDistribution
) -> None:
    """The loader's own metadata reader finds what importlib.metadata finds, dist and version."""
    import importlib.metadata as md

    from harness_core._entry_points import entry_points

    fake_distribution("Echo.Plugin", {"echo": "echo_plugin:make"}, {}, version="2.3", group=group)
    ours = sorted((e.name, e.value, e.dist, e.version) for e in entry_points(group))
    theirs = sorted(
        (e.name, e.value, e.dist.metadata["Name"], e.dist.version)
        for e in md.entry_points(group=group)
        if e.dist is not None
    )
    assert ours == theirs and ("echo", "echo_plugin:make", "Echo.Plugin", "2.3") in ours


def test_good_fake_distribution_loads_with_its_metadata(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """A pip-style distribution's name, version and entry point are recorded."""
    fake_distribution(
        "echo-plugin",
        {"echo": "echo_plugin"},
        {"echo_plugin.py": good_plugin("echo", "echo")},
        version="2.3.4",
    )
    record = load(plugin_host)["echo"]
    assert (record.status, record.dist, record.version, record.entry_point) == (
        "loaded",
        "echo-plugin",
        "2.3.4",
        "echo_plugin",
    )
    assert record.tools == ["echo"] and record.load_ms >= 0


REJECTIONS: dict[str, tuple[str, str, str]] = {
    "import_error": ("import broken_dep_xyz\n", "import failed: ModuleNotFoundError", "reinstall"),
    "exits_on_import": ("import sys\nsys.exit(3)\n", "import failed: SystemExit: 3", "reinstall"),
    "stray_default": (
        good_plugin("stray_default", "t1") + "\ndefault = object()\n",
        "exports both namespace plugin exports",
        "remove the stray `default`",
    ),
    "typo_hook": (
        "from harness_core.plugins import hookimpl\nname = 'typo_hook'\n"
        "@hookimpl\ndef harness_regster_tools(ctx):\n    pass\n",
        "harness_regster_tools is not a known hook",
        "did you mean harness_register_tools?",
    ),
    "unmarked_hook": (
        "name = 'unmarked_hook'\ndef harness_register_tools(ctx):\n    pass\n",
        "not marked as a hook implementation",
        "@harness_core.hookimpl",
    ),
    "bad_signature": (
        "from harness_core.plugins import hookimpl\nname = 'bad_signature'\n"
        "@hookimpl\ndef harness_register_tools(ctx, registry):\n    pass\n",
        "hook signature mismatch",
        "subset of the spec's",
    ),
    "missing_service": (
        "from harness_core.plugins import hookimpl\nname = 'missing_service'\n"
        "inject = ('tools', 'database')\n",
        "needs host service(s) database",
        "remove the service",
    ),
    "no_name": ("x = 1\n", "has no `name`", "export `name"),
    "raises_on_register": (
        "from harness_core.plugins import hookimpl\nname = 'raises_on_register'\n"
        "@hookimpl\ndef harness_register_tools(ctx):\n    raise RuntimeError('boom')\n",
        "harness_register_tools raised RuntimeError: boom",
        "fix the plugin's tool registration",
    ),
}


@pytest.mark.parametrize("case", sorted(REJECTIONS))
def test_each_broken_plugin_is_rejected_and_reported_while_others_load(
    case: str, plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """A broken plugin is rejected with reason and fix; a good one beside it still loads."""
    source, reason, fix = REJECTIONS[case]
    module = f"bad_{case}"
    fake_distribution(f"bad-{case}", {case: module}, {f"{module}.py": source}, version="0.0.1")
    fake_distribution(
        "good-plugin", {"good": "good_plugin"}, {"good_plugin.py": good_plugin("good", "good_tool")}
    )
    records = load(plugin_host)
    bad = records[case]
    assert bad.status == "rejected"
    assert reason in (bad.reason or "") and fix in (bad.fix or "")
    assert f"bad-{case} 0.0.1" in bad.describe() and module in bad.describe()
    assert records["good"].status == "loaded" and records["todo"].status == "loaded"
    assert plugin_host.tools.names() == ["bash", "good_tool", "subagent", "todo_write"]
    assert case not in plugin_host.pm.list_name_plugin() or not plugin_host.pm.has_plugin(case)


def test_stray_default_error_names_module_and_both_exports(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """The ambiguity error says which module and which exports collide (postmortem 0001)."""
    source = good_plugin("ambiguous", "amb") + "\ndefault = object()\n"
    fake_distribution(
        "ambiguous-dist", {"ambiguous": "ambiguous_mod"}, {"ambiguous_mod.py": source}
    )
    record = load(plugin_host)["ambiguous"]
    assert "module ambiguous_mod" in (record.reason or "")
    assert "inject" in (record.reason or "") and "name" in (record.reason or "")
    assert "`default`" in (record.reason or "") and "ambiguous-dist" in record.describe()
    assert plugin_host.tools.get("amb") is None


def test_default_object_plugin_is_accepted(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """A module that exports only `default` is unwrapped to that object plugin."""
    source = (
        "from harness_core.plugins import hookimpl\n"
        "class Plugin:\n    name = 'objplug'\n    inject = ()\n"
        "    @hookimpl\n    def harness_event_appended(self, session, event):\n        pass\n"
        "default = Plugin()\n"
    )
    fake_distribution("obj-plugin", {"objplug": "obj_plugin"}, {"obj_plugin.py": source})
    record = load(plugin_host)["objplug"]
    assert record.status == "loaded" and record.hooks == ["harness_event_appended"]


def test_rejected_plugin_leaves_no_tool_or_hook_behind(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """A plugin that registered a tool and then failed is fully rolled back."""
    source = good_plugin("half", "half_tool").replace(
        "    ctx.tools.register(Echo())",
        "    ctx.tools.register(Echo())\n    raise ValueError('late')",
    )
    fake_distribution("half-plugin", {"half": "half_plugin"}, {"half_plugin.py": source})
    assert load(plugin_host)["half"].status == "rejected"
    assert plugin_host.tools.get("half_tool") is None
    assert not plugin_host.pm.has_plugin("half")


def test_tool_name_collision_names_both_providers(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """A second plugin registering `bash` is rejected, naming both providers."""
    fake_distribution(
        "clash-plugin", {"clash": "clash_plugin"}, {"clash_plugin.py": good_plugin("clash", "bash")}
    )
    record = load(plugin_host)["clash"]
    assert record.status == "rejected"
    assert "'bash' from 'clash'" in (record.reason or "") and "'builtins'" in (record.reason or "")


def test_duplicate_plugin_name_from_two_distributions(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """Two distributions claiming one plugin name: the first (sorted) loads, the second is rejected."""
    fake_distribution("aaa-dist", {"same": "same_a"}, {"same_a.py": good_plugin("same", "tool_a")})
    fake_distribution("zzz-dist", {"same": "same_z"}, {"same_z.py": good_plugin("same", "tool_z")})
    records = plugin_host.load_entry_points(env={})
    same = [r for r in records if r.name == "same"]
    assert [(r.dist, r.status) for r in same] == [("aaa-dist", "loaded"), ("zzz-dist", "rejected")]
    assert "already taken by aaa-dist" in (same[1].reason or "")


def test_allow_and_deny_lists_filter_before_import(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """Disabled plugins are never imported: a broken one that is disabled causes no error."""
    fake_distribution(
        "broken-dist",
        {"broken": "broken_mod"},
        {"broken_mod.py": "raise SystemError('imported!')\n"},
    )
    records = load(plugin_host, HARNESS_DISABLE_PLUGINS="broken")
    assert records["broken"].status == "disabled"
    assert records["broken"].reason == "listed in HARNESS_DISABLE_PLUGINS"
    allow = load(PluginHost(plugin_host.config), HARNESS_LOAD_PLUGINS="harness-tool-todo")
    assert allow["todo"].status == "loaded" and allow["broken"].status == "disabled"
    assert allow["broken"].reason == "not listed in HARNESS_LOAD_PLUGINS"


def test_load_order_is_sorted_and_deterministic(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """Plugins load sorted by entry-point name whatever the sys.path order."""
    for name in ("zeta", "alpha", "mid"):
        fake_distribution(
            f"{name}-dist",
            {name: f"{name}_mod"},
            {f"{name}_mod.py": good_plugin(name, f"{name}_tool")},
        )
    names = [r.name for r in plugin_host.load_entry_points(env={})]
    assert names == sorted(names) and {"alpha", "mid", "zeta", "todo"} <= set(names)


def test_strict_mode_turns_a_rejection_into_an_error(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """HARNESS_STRICT_PLUGINS=1 raises, naming the rejected plugin and why."""
    fake_distribution("bad-dist", {"bad": "bad_mod"}, {"bad_mod.py": "import nope_nope\n"})
    with pytest.raises(
        PluginLoadError,
        match=r"bad \(bad-dist 1.0.0, entry point bad_mod\): rejected: import failed",
    ):
        plugin_host.load_entry_points(env={"HARNESS_STRICT_PLUGINS": "1"})
    assert load(PluginHost(plugin_host.config))["bad"].status == "rejected"
    with pytest.raises(PluginLoadError):  # the usual spellings of "on" all mean on
        PluginHost(plugin_host.config).load_entry_points(env={"HARNESS_STRICT_PLUGINS": "yes"})
    with pytest.raises(ConfigError, match=r"HARNESS_STRICT_PLUGINS='sure' is not on or off"):
        PluginHost(plugin_host.config).load_entry_points(env={"HARNESS_STRICT_PLUGINS": "sure"})


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("HARNESS_BUILTINS_BASH_TIMEOUT", "0", "Input should be greater than 0, got '0'"),
        ("HARNESS_BUILTINS_BASH_TIMEOUT", "abc", "Input should be a valid number, got 'abc'"),
        ("HARNESS_BUILTINS_BASH_TIMEOUT", "true", "Input should be a valid number, got 'true'"),
        ("HARNESS_BUILTINS_SUBAGENT_MAX_DEPTH", "-5", "greater than 0, got '-5'"),
    ],
)
def test_an_invalid_builtin_setting_is_one_config_error(
    variable: str, value: str, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The built-ins are not quietly rejected (leaving no model provider): the setting is named."""
    host = PluginHost(Config({}, env={variable: value}))
    builtins.add_to(host)
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        host.tools  # noqa: B018  # the built-ins read their settings when their tools register
    assert str(caught.value).startswith(
        f"plugins.builtins.{variable[len('HARNESS_BUILTINS_') :].lower()}"
    )
    assert caplog.records == []  # said once, by the error, not also as a warning


def test_the_builtins_record_carries_the_core_version(plugin_host: PluginHost) -> None:
    """`harness plugins` names harness-core's version, not an empty string."""
    assert plugin_host.records["builtins"].describe() == (
        f"builtins (harness-core {__version__}, entry point harness_core.builtins): loaded"
    )


@pytest.mark.parametrize(
    ("env", "warning"),
    [
        ({"HARNESS_LOAD_PLUGINS": ""}, "HARNESS_LOAD_PLUGINS is empty: no plugin loads"),
        (
            {"HARNESS_LOAD_PLUGINS": "nonsense"},
            "HARNESS_LOAD_PLUGINS names 'nonsense', which matches no installed plugin (installed: ",
        ),
        (
            {"HARNESS_DISABLE_PLUGINS": "todo,tod"},
            "HARNESS_DISABLE_PLUGINS names 'tod', which matches no installed plugin",
        ),
    ],
)
def test_plugin_names_that_match_nothing_are_warned_about(
    plugin_host: PluginHost, env: dict[str, str], warning: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A typo in the allow or deny list would otherwise silently load or skip everything."""
    load(plugin_host, **env)
    messages = [r.getMessage() for r in caplog.records if r.name == "harness.config"]
    assert len(messages) == 1 and messages[0].startswith(warning), messages


def test_names_that_match_warn_about_nothing(
    plugin_host: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    """A plugin name or a distribution name (any spelling) is a match: no warning."""
    load(plugin_host, HARNESS_LOAD_PLUGINS="todo,Harness_Tool.Todo")
    assert [r for r in caplog.records if r.name == "harness.config"] == []


def event_type_plugin(name: str, event_type: str, *, surface: bool) -> str:
    """A plugin module that declares one event type (payload `P`) and nothing else."""
    return (
        "from harness_core.plugins import hookimpl\n"
        "from harness_core.log import EventType\n"
        "from pydantic import BaseModel\n"
        f"name = {name!r}\n"
        "class P(BaseModel):\n    todos: list\n"
        "@hookimpl\ndef harness_event_types():\n"
        f"    return [EventType({event_type!r}, P, surface={surface})]\n"
    )


def test_event_type_conflict_rejects_the_later_plugin(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """A plugin loading after todo and declaring `todo/write` is rejected; todo keeps it."""
    source = event_type_plugin("zthief", "todo/write", surface=False)
    fake_distribution("thief-dist", {"zthief": "thief_mod"}, {"thief_mod.py": source})
    records: dict[str, Any] = load(plugin_host)
    assert records["todo"].status == "loaded"
    assert records["zthief"].status == "rejected"
    assert "declared by both 'harness_tool_todo' and 'thief_mod'" in records["zthief"].reason
    assert plugin_host.event_types.get("todo/write").owner == "harness_tool_todo"  # type: ignore[union-attr]


def test_a_surface_event_type_rejects_the_plugin(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """A plugin declaring its own type surface=True is rejected with the reason and the fix."""
    source = event_type_plugin("loud", "loud/note", surface=True)
    fake_distribution("loud-dist", {"loud": "loud_mod"}, {"loud_mod.py": source})
    records = load(plugin_host)
    record = records["loud"]
    assert record.status == "rejected"
    assert "'loud/note' (loud_mod) is declared surface=True" in (record.reason or "")
    assert "declare it with surface=False" in (record.reason or "")
    assert record.fix == "fix the plugin's harness_event_types declarations"
    assert plugin_host.event_types.get("loud/note") is None
    assert records["todo"].status == "loaded"


def test_bad_plugin_configuration_rejects_with_the_key_named(
    fake_distribution: FakeDistribution,
) -> None:
    """An invalid config value rejects the plugin and the fix points at the config section."""
    from harness_core.config import Config

    host = PluginHost(
        Config({"plugins": {"todo": {"allow_parallel_in_progress": "maybe"}}}, env={})
    )
    record = load(host)["todo"]
    assert record.status == "rejected"
    assert "plugins.todo.allow_parallel_in_progress" in (record.reason or "")
    assert record.fix == (
        "correct the value in [plugins.todo] of the config file, "
        "or in the environment variable the reason names"
    )


# -- deferred phases: registering imports the plugin; tools and event types come on demand --

FAILS_LATE = """
from harness_core.log import EventType
from harness_core.plugins import hookimpl

name = "late"
inject = ("tools",)
calls = []

@hookimpl
def harness_event_types():
    calls.append("event_types")
    return [EventType("late/note", "{payload}", surface=False)]

@hookimpl
def harness_register_tools(ctx):
    calls.append("register_tools")
    {body}
"""


def late_plugin(
    fake_distribution: FakeDistribution,
    *,
    payload: str = "late_plugin:Note",
    body: str = "pass",
) -> None:
    source = FAILS_LATE.format(payload=payload, body=body)
    source += "\nfrom pydantic import BaseModel\nclass Note(BaseModel):\n    text: str\n"
    fake_distribution("late-plugin", {"late": "late_plugin"}, {"late_plugin.py": source})


def test_registering_defers_event_types_and_tools_until_asked(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """A query command's host imports and registers plugins; their hooks run on first need."""
    import sys

    late_plugin(fake_distribution)
    host = PluginHost(plugin_host.config)  # as a command builds it
    records = {r.name: r for r in host.load_entry_points(env={"HARNESS_LOAD_PLUGINS": "late"})}
    module = sys.modules["late_plugin"]
    assert records["late"].status == "loaded" and module.calls == []
    assert host.event_types.get("late/note") is not None
    assert module.calls == ["event_types"]
    assert host.tools.names() == [] and module.calls == ["event_types", "register_tools"]
    assert records["late"].hooks == ["harness_event_types", "harness_register_tools"]


def test_a_tool_registration_failure_rejects_the_plugin_when_tools_are_needed(
    plugin_host: PluginHost, fake_distribution: FakeDistribution, caplog: pytest.LogCaptureFixture
) -> None:
    """The deferred failure turns the same record rejected, warns, and leaves nothing behind."""
    late_plugin(fake_distribution, body="raise RuntimeError('no tools today')")
    host = PluginHost(plugin_host.config)  # as a command builds it
    (record,) = [
        r
        for r in host.load_entry_points(env={"HARNESS_LOAD_PLUGINS": "late"})
        if r.status != "disabled"
    ]
    assert record.status == "loaded"
    assert host.tools.names() == []
    assert record.status == "rejected"
    assert record.reason == "harness_register_tools raised RuntimeError: no tools today"
    assert "late (late-plugin 1.0.0, entry point late_plugin): rejected" in caplog.text
    assert not host.pm.has_plugin("late") and host.records["late"] is record


def test_strict_mode_raises_when_a_deferred_phase_rejects(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """HARNESS_STRICT_PLUGINS=1 fails the command that needed the tools, naming the plugin."""
    late_plugin(fake_distribution, body="raise RuntimeError('no tools today')")
    host = PluginHost(plugin_host.config)  # as a command builds it
    host.load_entry_points(env={"HARNESS_LOAD_PLUGINS": "late", "HARNESS_STRICT_PLUGINS": "1"})
    with pytest.raises(PluginLoadError, match=r"late \(late-plugin 1.0.0.*no tools today"):
        host.tools  # noqa: B018  # the tools phase runs here


def test_an_unimportable_payload_reference_rejects_the_plugin(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """`module:Class` is checked when the tools register, with the reference in the reason."""
    late_plugin(fake_distribution, payload="late_plugin:Missing")
    records = load(PluginHost(plugin_host.config), HARNESS_LOAD_PLUGINS="late")
    assert records["late"].status == "rejected"
    assert "payload late_plugin:Missing cannot be imported" in (records["late"].reason or "")
    assert records["late"].fix == "fix the payload reference in the plugin's harness_event_types"
