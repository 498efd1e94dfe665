"""pytest fixtures for plugin authors, registered through the `pytest11` entry point.

    def test_my_tool(plugin_host, register_plugin):
        register_plugin(my_plugin_module)
        assert "my_tool" in plugin_host.tools.names()

`plugin_host` is a fresh host with the built-ins loaded but no entry-point autoload;
`fake_distribution` installs a throwaway distribution (real metadata on sys.path) so the real
entry-point loader discovers it; `register_plugin` loads a plugin for one test only;
`openai_server` is a scripted OpenAI-compatible server on loopback for model tests.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness_core.plugins import PluginHost, PluginRecord
    from harness_core.testing.openai_server import OpenAIServer

FakeDistribution = Callable[..., Path]
RegisterPlugin = Callable[..., "PluginRecord"]


@pytest.fixture
def plugin_host(tmp_path: Path) -> PluginHost:
    """A fresh plugin host: built-ins loaded, no entry points loaded, empty config.

    Every loading phase has run, as in a command that writes a session, so a plugin added
    to it declares its event types and registers its tools at once (and fails at once).
    """
    from harness_core import builtins
    from harness_core.config import Config
    from harness_core.plugins import PluginHost

    host = PluginHost(Config({}, env={}))
    builtins.add_to(host)
    host.finish_loading()
    return host


@pytest.fixture
def fake_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeDistribution]:
    """Install a distribution for one test: modules plus `harness.plugins` entry points.

    `fake_distribution("my-plugin", {"todo2": "my_plugin"}, {"my_plugin.py": "..."})` writes
    the modules and a `.dist-info` beside them and puts the folder on sys.path, so
    `importlib.metadata` (and the loader) see a really installed distribution.
    """
    import importlib
    import sys

    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    # No .pyc for these modules: a reload test rewrites one within a second, often at the same
    # size, and a cached .pyc (checked by whole-second mtime and size) would run the old code.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    before = set(sys.modules)

    def install(
        dist: str,
        entry_points: Mapping[str, str],
        files: Mapping[str, str],
        *,
        version: str = "1.0.0",
        group: str = "harness.plugins",
    ) -> Path:
        for relative, source in files.items():
            target = site / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(textwrap.dedent(source), encoding="utf-8")
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        lines = [f"[{group}]", *(f"{k} = {v}" for k, v in entry_points.items())]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        importlib.invalidate_caches()
        return info

    yield install
    # Forget only what the fake distribution brought: a core module first imported during the
    # test stays, or later code holding it would find it missing from sys.modules.
    for module in set(sys.modules) - before:
        origin = getattr(sys.modules[module], "__file__", None) or ""
        if origin.startswith(str(site)):
            del sys.modules[module]


@pytest.fixture
def register_plugin(plugin_host: PluginHost) -> Iterator[RegisterPlugin]:
    """Load a plugin module or object into `plugin_host` for the duration of one test."""
    names: list[str] = []

    def register(plugin: object, **kwargs: Any) -> PluginRecord:
        record = plugin_host.add(plugin, **kwargs)
        if record.status == "loaded":
            names.append(record.name)
        return record

    yield register
    for name in names:
        if name in plugin_host.records and plugin_host.records[name].status == "loaded":
            plugin_host.unload(name)


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A scripted OpenAI-compatible SSE server on loopback (`harness_core.testing.openai_server`).

    Script replies with `openai_server.expect(reply(...), error_reply(429), ...)`, point a
    model at `openai_server.base_url`, then assert on `openai_server.requests`. Strict: the
    test fails at teardown if a request found no reply or a reply was never requested.
    """
    from harness_core.testing.openai_server import OpenAIServer

    with OpenAIServer() as server:
        yield server
        server.check()
