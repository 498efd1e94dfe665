"""Choosing the session store: --store, HARNESS_STORE and config `store`, file:// URLs, and
one-line errors for a store nothing provides, with the password never shown."""

from __future__ import annotations

from pathlib import Path

from test_cli_support import run_cli, session_ids, write_script


def test_a_file_url_names_another_home(harness_home: Path, tmp_path: Path) -> None:
    """`--store file://PATH` keeps sessions in PATH/sessions, and every command reads them
    there; HARNESS_STORE does the same, and the flag wins over it."""
    other = tmp_path / "elsewhere"
    script = write_script(tmp_path / "s.json", [{"text": "Done."}])
    ran = run_cli("run", "--store", f"file://{other}", "--model", script, "go")
    assert ran.returncode == 0, ran.stderr
    (session,) = [p.stem for p in (other / "sessions").glob("*.jsonl")]
    assert session_ids(harness_home) == []
    listed = run_cli("sessions", env={"HARNESS_STORE": f"file://{other}"})
    assert session in listed.stdout
    shown = run_cli("events", session, "--store", f"file://{other}", env={"HARNESS_STORE": "x"})
    assert shown.returncode == 0 and '"type":"turn/end"' in shown.stdout
    todos = run_cli("todos", session, "--store", f"file://{other}")
    assert todos.returncode == 0, todos.stderr


def test_a_store_nothing_provides_is_one_line_without_its_password(harness_home: Path) -> None:
    """An unknown scheme names what to install; the password in the URL is redacted."""
    url = "postgresql://alice:hunter2hunter2@db.example/sessions"
    for command in (["sessions"], ["show", "x"], ["events", "x"], ["todos", "x"]):
        result = run_cli(*command, "--store", url, env={"HARNESS_DISABLE_PLUGINS": "postgres"})
        assert result.returncode == 1
        (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("harness: error:")]
        assert "install harness-store-postgres" in line
        assert "hunter2hunter2" not in result.stderr + result.stdout
        assert "alice:[redacted]@db.example" in line


def test_a_store_that_is_no_url_is_refused_in_the_config(harness_home: Path) -> None:
    harness_home.mkdir()
    (harness_home / "config.toml").write_text('store = "sessions-here"\n')
    result = run_cli("sessions")
    assert result.returncode == 1
    assert "store 'sessions-here' is not a URL" in result.stderr


def test_store_init_on_the_file_store_has_nothing_to_do(harness_home: Path, tmp_path: Path) -> None:
    """`harness store init` is a core command for every store: the file store needs no
    setting up, and says so (exit 0), and creates nothing."""
    other = tmp_path / "elsewhere"
    for args in (["store", "init"], ["store", "init", "--store", f"file://{other}"]):
        done = run_cli(*args)
        assert done.returncode == 0, done.stderr
        assert done.stdout.endswith(": nothing to initialise\n"), done.stdout
    assert not other.exists() and session_ids(harness_home) == []


def test_store_copy_between_two_file_stores(harness_home: Path, tmp_path: Path) -> None:
    """`harness store copy` works between any two stores, two file stores included: the
    copied file is byte-identical, and copying again skips it."""
    script = write_script(tmp_path / "s.json", [{"text": "Done."}])
    assert run_cli("run", "--model", script, "go").returncode == 0
    (session,) = session_ids(harness_home)
    other = tmp_path / "elsewhere"
    copied = run_cli("store", "copy", f"file://{harness_home}", f"file://{other}")
    assert copied.returncode == 0, copied.stderr
    assert copied.stdout.startswith(f"{session}: copied (")
    name = f"sessions/{session}.jsonl"
    assert (other / name).read_bytes() == (harness_home / name).read_bytes()
    again = run_cli("store", "copy", f"file://{harness_home}", f"file://{other}")
    assert again.stdout.startswith(f"{session}: already there (")
