"""Configuration: the config file, env overrides and plugin sections."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_core.config import Config, ConfigError
from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")
    flag: bool = False
    limit: int = 3


def write(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def test_missing_file_is_empty_config(tmp_path: Path) -> None:
    """No config file: defaults everywhere."""
    config = Config.load(tmp_path, env={})
    assert config.path is None and config.get("model") is None
    assert config.plugin("todo").parse(Section) == Section()


def test_file_then_env_override(tmp_path: Path) -> None:
    """Env vars win over the file, at top level and in plugin sections, parsed as JSON."""
    write(tmp_path, 'model = "scripted:a.json"\n[plugins.todo]\nflag = true\nlimit = 5\n')
    config = Config.load(tmp_path, env={"HARNESS_TODO_LIMIT": "9", "HARNESS_MODEL": "openai:x"})
    assert config.get("model") == "openai:x"
    assert config.plugin("todo").parse(Section) == Section(flag=True, limit=9)
    assert (
        Config.load(tmp_path, env={"HARNESS_TODO_FLAG": "false"}).plugin("todo").get("flag")
        is False
    )


def test_harness_config_names_another_file(tmp_path: Path) -> None:
    """HARNESS_CONFIG points at a file; a missing one is an error, not silence."""
    other = tmp_path / "elsewhere.toml"
    other.write_text('model = "deepseek:chat"\n')
    assert Config.load(tmp_path, env={"HARNESS_CONFIG": str(other)}).get("model") == "deepseek:chat"
    with pytest.raises(ConfigError, match="which does not exist"):
        Config.load(tmp_path, env={"HARNESS_CONFIG": str(tmp_path / "missing.toml")})


def test_malformed_file_and_values_name_the_place(tmp_path: Path) -> None:
    """TOML errors name the file; bad values name the key and its env var."""
    write(tmp_path, "model = \n")
    with pytest.raises(ConfigError, match=r"config\.toml"):
        Config.load(tmp_path, env={})
    write(tmp_path, '[plugins.todo]\nlimit = "many"\n')
    with pytest.raises(ConfigError, match=r"plugins\.todo\.limit \(or HARNESS_TODO_LIMIT\)"):
        Config.load(tmp_path, env={}).plugin("todo").parse(Section)


def test_misspelt_plugin_setting_is_rejected_not_ignored(tmp_path: Path) -> None:
    """A typo in a plugin section fails loudly for a model that forbids extra keys."""
    write(tmp_path, "[plugins.todo]\nflagg = true\n")
    with pytest.raises(ConfigError, match=r"plugins\.todo\.flagg .*Extra inputs are not permitted"):
        Config.load(tmp_path, env={}).plugin("todo").parse(Section)
