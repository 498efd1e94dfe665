"""Meta-tests: every hook is documented, catalogued and tested."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pluggy
import pytest
from harness_core.plugins import _hookspecs

ROOT = Path(__file__).resolve().parents[2]
TEST_DIRS = [ROOT / "tests", ROOT / "harness-core" / "tests", *ROOT.glob("plugins/*/tests")]


@pytest.fixture(scope="module")
def catalog() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_hook_catalog", ROOT / "scripts" / "gen_hook_catalog.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_hook_has_a_docstring_and_a_mode_the_host_honours(catalog: ModuleType) -> None:
    """No spec ships undocumented, and the catalog's mode is what pluggy reads off the spec.

    No spec may be historic: the facade calls implementations itself and never replays a
    call to a plugin registered after it, so a historic spec would be catalogued with a
    promise the host does not keep.
    """
    pm = pluggy.PluginManager(_hookspecs.PROJECT)
    pm.add_hookspecs(_hookspecs)
    specs = catalog.hook_specs()
    assert len(specs) >= 3
    for spec in specs:
        assert spec.__doc__ and len(spec.__doc__.strip()) > 40, spec.__name__
        opts = getattr(pm.hook, spec.__name__).spec.opts
        assert not opts["historic"], spec.__name__
        assert catalog.mode(spec) == ("firstresult" if opts["firstresult"] else "broadcast")


def test_catalog_is_current(catalog: ModuleType) -> None:
    """docs/hook-catalog.md equals what the generator writes today."""
    assert (ROOT / "docs" / "hook-catalog.md").read_text(encoding="utf-8") == catalog.render()


def test_every_hook_has_a_test_named_for_it(catalog: ModuleType) -> None:
    """Each hook has a test function whose name contains the hook's name (datasette-strict)."""
    names = {
        match
        for directory in TEST_DIRS
        for path in directory.rglob("test_*.py")
        if path.name != Path(__file__).name
        for match in re.findall(r"def (test_\w+)", path.read_text(encoding="utf-8"))
    }
    untested = [
        spec.__name__
        for spec in catalog.hook_specs()
        if not any(spec.__name__ in name for name in names)
    ]
    assert untested == [], f"hooks without a test named for them: {untested}"
