"""`harness run` (one turn) and `harness chat` (a prompt loop), both on one session."""

from __future__ import annotations

import contextlib
import signal
import sys
from argparse import Namespace
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Final

from .. import secret
from ..loop import TurnOutcome
from ..models import Model
from ..runtime import SessionRuntime
from ._app import EXIT_CANCELLED, App, CliError, utf8_text
from ._ask import Questions
from ._turns import TurnDriver, TurnView, choose_view, loop_thread, unconsumed_steps

__all__ = ["chat", "compact", "run", "run_session", "session_view"]

EXIT_WORDS: Final = frozenset({"exit", "quit", ":q"})
COMPACT_WORD: Final = "/compact"
HISTORY_LENGTH: Final = 1000


def run(args: Namespace) -> int:
    app = App()
    prompt = _prompt(args.prompt)
    model = app.model(args.model, args.base_url)  # before the session: a bad spec leaves none
    app.use_sandbox(args.sandbox)
    questions = terminal_questions()
    approval = app.approval(args.approval, questions.ask if questions else None)
    session = app.open(args.session, model, approval=approval)
    view = session_view(
        app, session, json_lines=args.json, echo_prompt=True, resumed=args.session is not None
    )
    outcome = run_session(session, view, [prompt], questions)
    if not args.json:
        view.note(f"session {session.id} · continue it: {resume_command(session.id)}")
    return turn_status(outcome[-1], model)


def session_view(
    app: App, session: SessionRuntime, *, json_lines: bool, echo_prompt: bool, resumed: bool
) -> TurnView:
    """The view of a session about to run turns (run, chat, demo): bound to it, caught up
    with what it already holds (a resumed session's pinned strips, or a new session's
    session/start, which was appended before anyone was watching), and observing it."""
    log = session.log
    assert log is not None  # the terminal holds its session's writer for the whole command
    view = choose_view(app, json_lines=json_lines, echo_prompt=echo_prompt)
    view.bind(log)
    if resumed:
        view.resumed()
    else:
        assert log.start is not None  # a new session: its session/start is committed
        view.on_event(log, log.start)
    session.observe(view.on_event, view.on_delta)
    return view


def terminal_questions() -> Questions | None:
    """Where approval questions go: the terminal, when stdin is one (else nobody can answer)."""
    return Questions() if sys.stdin.isatty() else None


def run_session(
    session: SessionRuntime,
    view: TurnView,
    prompts: list[str],
    questions: Questions | None = None,
) -> list[TurnOutcome]:
    """Run `prompts` as consecutive turns of `session`, rendered by `view` (run and demo);
    the session is closed after."""
    outcomes = []
    with loop_thread(session) as running:
        driver = TurnDriver(running, session, view, questions)
        for prompt in prompts:
            outcomes.append(driver.run(prompt, report=False))
            if outcomes[-1].status != "completed":
                break
    return outcomes


def turn_status(outcome: TurnOutcome, model: Model) -> int:
    """The exit status of a run: 0 only for a completed turn that used its whole script."""
    if outcome.status == "cancelled":
        raise CliError("the turn was cancelled; the session keeps what it did", EXIT_CANCELLED)
    if outcome.status != "completed":
        raise CliError(f"the turn ended with {outcome.status}: {outcome.error or 'no detail'}")
    left = unconsumed_steps(model)
    if left:
        raise CliError(
            f"the turn completed but {left} scripted step(s) were never used ({model.name}); "
            "a script must end with its turn"
        )
    return 0


def resume_command(session_id: str) -> str:
    return f"harness run --session {session_id} PROMPT"


def _prompt(raw: str) -> str:
    """The prompt argument, or stdin for `-`; refused unless it is non-empty UTF-8 text.

    Invalid UTF-8 is an error rather than replaced: the model must get what the user wrote,
    and the error comes before any session exists (docs/log.md, "Text and encodings").
    """
    # stdin as bytes, decoded here: the locale's decoding could raise instead of reporting.
    prompt = sys.stdin.buffer.read().decode("utf-8", "surrogateescape") if raw == "-" else raw
    if not prompt.strip():
        raise CliError("the prompt is empty: pass the text to send, or - to read it from stdin")
    return utf8_text(prompt, "the prompt", _RECODE)


_RECODE: Final = "convert it first, e.g. iconv -f latin1 -t utf-8"


# -- chat ------------------------------------------------------------------------------------


def chat(args: Namespace) -> int:
    app = App()
    model = app.model(args.model, args.base_url)
    app.use_sandbox(args.sandbox)
    questions = terminal_questions()
    approval = app.approval(args.approval, questions.ask if questions else None)
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    session = app.open(args.session, model, approval=approval)
    with (
        _ctrl_c_at_the_prompt(interactive),
        loop_thread(session) as running,
        _history(app.home, interactive),
    ):
        view = session_view(
            app,
            session,
            json_lines=False,
            echo_prompt=not interactive,
            resumed=args.session is not None,
        )
        if interactive:
            view.note(f"session {session.id} · Ctrl-C cancels a turn · Ctrl-D or exit leaves")
        driver = TurnDriver(running, session, view, questions)
        outcomes = []
        for prompt in _prompts(interactive):
            if prompt.strip() == COMPACT_WORD:
                _compact_in_chat(driver, view)
            else:
                outcomes.append(driver.run(prompt, report=True))
        view.note(f"session {session.id} · continue it: harness chat --session {session.id}")
    failed = [o for o in outcomes if o.status in ("error", "max_steps")]
    if failed:
        raise CliError(f"{len(failed)} of {len(outcomes)} turns ended with an error (shown above)")
    left = unconsumed_steps(model)
    if left:
        raise CliError(f"the chat ended with {left} scripted step(s) of {model.name} unused")
    return 0


def compact(args: Namespace) -> int:
    """`harness compact ID`: one line naming how many events were summarized."""
    app = App()
    model = app.model(args.model, args.base_url)
    session = app.open(args.id, model)
    with loop_thread(session) as running:
        view = choose_view(app, json_lines=False, echo_prompt=False)
        assert session.log is not None  # held for the command
        view.bind(session.log)
        summarized = TurnDriver(running, session, view).compact()
    if summarized is None:
        raise CliError("the compaction was cancelled; the session is unchanged", EXIT_CANCELLED)
    print(f"context compacted: {summarized} events summarized")
    return 0


def _compact_in_chat(driver: TurnDriver, view: TurnView) -> None:
    """`/compact`: the view prints the compaction's line; a failure is a note, the chat goes on."""
    try:
        summarized = driver.compact()
    except CliError as exc:
        view.note(str(exc))
        return
    if summarized is None:
        view.note("the compaction was cancelled; the session is unchanged")


def _prompts(interactive: bool) -> Iterator[str]:
    """Lines typed at the prompt until Ctrl-D or an exit word; Ctrl-C clears the line."""
    prompt = "› " if interactive else ""  # piped input gets no prompt in its transcript
    while True:
        try:
            line = input(prompt)
        except EOFError:
            if prompt:
                print()
            return
        except KeyboardInterrupt:
            print()
            continue
        if line.strip() in EXIT_WORDS:
            return
        if line.strip():
            yield utf8_text(line, "the prompt", _RECODE)


@contextlib.contextmanager
def _ctrl_c_at_the_prompt(interactive: bool) -> Iterator[None]:
    """Ctrl-C at the prompt clears the line, also in a harness started with SIGINT ignored or
    blocked (which a child inherits: a script's background job, some test runners); the
    chat owns the terminal's Ctrl-C, as its turns do (`TurnDriver`)."""
    if not interactive:
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if signal.SIGINT in blocked:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


@contextlib.contextmanager
def _history(home: Path, interactive: bool) -> Iterator[None]:
    """Readline line editing and a prompt history kept in HARNESS_HOME (terminals only)."""
    if not interactive:
        yield
        return
    try:
        import readline
    except ImportError:  # a Python built without readline: plain input() still works
        yield
        return
    path = home / "chat_history"
    with contextlib.suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(HISTORY_LENGTH)
    try:
        yield
    finally:
        _redact_history(readline)
        with contextlib.suppress(OSError):
            home.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(path)


def _redact_history(readline: ModuleType) -> None:
    """A key typed at the prompt is redacted in the history file, as it is in the log."""
    secrets = secret.current()
    for index in range(readline.get_current_history_length()):
        item = readline.get_history_item(index + 1)  # 1-based, unlike replace_history_item
        if item is not None and secrets.redact(item) != item:
            readline.replace_history_item(index, secrets.redact(item))
