"""Configuration: the config file, env overrides and plugin sections."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from harness_core.config import Config, ConfigError, parse_flag
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


def test_top_level_settings_are_typed_and_name_the_key(tmp_path: Path) -> None:
    """A wrong type, a non-table `plugins` or an unknown key is an error naming the key."""
    cases = {
        "system_prompt = [1, 2]\n": "system_prompt (or HARNESS_SYSTEM_PROMPT) must be a string, got [1, 2]",
        "plugins = 3\n": "plugins in",
        "max_step = 10\n": "unknown setting 'max_step'",
        "max_steps = true\n": "max_steps (or HARNESS_MAX_STEPS) must be a positive integer, got True",
        "model_timeout = -1\n": "model_timeout (or HARNESS_MODEL_TIMEOUT) must be a positive number",
    }
    for text, message in cases.items():
        write(tmp_path, text)
        with pytest.raises(ConfigError, match=re.escape(message)):
            Config.load(tmp_path, env={}).settings()


def test_settings_from_the_environment(tmp_path: Path) -> None:
    """Env values win; strings stay strings; name lists are comma-separated; `true` is no number."""
    env = {
        "HARNESS_SYSTEM_PROMPT": "42",
        "HARNESS_MAX_STEPS": "7",
        "HARNESS_MODEL_TIMEOUT": "2.5",
        "HARNESS_MODEL_RETRIES": "0",
        "HARNESS_TOOL_ENV": "GITHUB_TOKEN, NPM_TOKEN",
    }
    settings = Config.load(tmp_path, env=env).settings()
    assert settings.system_prompt == "42"
    assert (settings.max_steps, settings.model_timeout, settings.model_retries) == (7, 2.5, 0)
    assert settings.tool_env == ("GITHUB_TOKEN", "NPM_TOKEN")
    with pytest.raises(ConfigError, match=r"got 'true' from the environment"):
        Config.load(tmp_path, env={"HARNESS_MODEL_TIMEOUT": "true"}).settings()


def test_flags_accept_the_usual_spellings_or_are_rejected() -> None:
    """1/0, true/false, yes/no, on/off in any case; anything else says what is accepted."""
    for word in ("1", "true", "Yes", "ON"):
        assert parse_flag("HARNESS_STRICT_PLUGINS", word) is True
    for word in ("0", "false", "no", "Off", ""):
        assert parse_flag("HARNESS_STRICT_PLUGINS", word) is False
    with pytest.raises(ConfigError, match=r"HARNESS_STRICT_PLUGINS='maybe' is not on or off"):
        parse_flag("HARNESS_STRICT_PLUGINS", "maybe")


def test_deeply_nested_env_json_is_a_plain_string(tmp_path: Path) -> None:
    """An env value nested too deeply for the JSON parser is read as text, not a crash."""
    deep = "[" * 100_000
    with pytest.raises(ConfigError, match="must be a positive integer"):
        Config.load(tmp_path, env={"HARNESS_MAX_STEPS": deep}).settings()


def test_pass_env_is_refused_naming_tool_env(tmp_path: Path) -> None:
    """The old setting, in the file or the environment, says what to write instead: ignored,
    it would quietly take from tools a variable they got before."""
    write(tmp_path, 'pass_env = ["GITHUB_TOKEN"]\n')
    with pytest.raises(ConfigError, match=r"pass_env \(or HARNESS_PASS_ENV\) is now tool_env"):
        Config.load(tmp_path, env={}).settings()
    write(tmp_path, "")
    with pytest.raises(ConfigError, match="is now tool_env"):
        Config.load(tmp_path, env={"HARNESS_PASS_ENV": "GITHUB_TOKEN"}).settings()
