"""One invocation's wiring, and the error boundary every command runs inside.

`App` is the session runtime of one command (`harness_core.runtime`: the config, the plugin
host, the store, the models; `ConfiguredHome` alone is all `sessions` needs) plus what a
plugin's command gets from the CLI. `dispatch` turns each expected failure into one line on
stderr and a non-zero exit status.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import traceback
from argparse import Namespace
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, TextIO

from .. import secret
from ..hosts import one_line
from ..runtime._runtime import ConfiguredHome, Runtime, describe_failure, utf8_text

if TYPE_CHECKING:
    from ..log import Event

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_ERROR",
    "App",
    "CliError",
    "ConfiguredHome",
    "dispatch",
    "guarded",
    "install_log_handler",
    "needs_extra",
    "use_store_flag",
    "utf8_text",
]

EXIT_ERROR: Final = 1
EXIT_CANCELLED: Final = 130  # the shell convention for "stopped by SIGINT"
EXIT_BROKEN_PIPE: Final = 141  # and for "stopped by SIGPIPE"

# command -> (module, function); modules load only when their command runs (startup time).
COMMANDS: Final = {
    "run": ("_run", "run"),
    "chat": ("_run", "chat"),
    "compact": ("_run", "compact"),
    "demo": ("_demo", "demo"),
    "sessions": ("_inspect", "sessions"),
    "show": ("_inspect", "show"),
    "events": ("_inspect", "events"),
    "plugins": ("_plugins", "plugins"),
    "serve": ("_serve", "serve"),
    "acp": ("_acp", "acp"),
    "sandbox-check": ("_plugins", "sandbox_check"),
    "store": ("_store", "store"),
}


class CliError(Exception):
    """An expected failure: printed as one line on stderr, with exit status `status`."""

    def __init__(self, message: str, status: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.status = status


def _expected(exc: Exception) -> bool:
    """A failure a user can act on: its one line is the whole story, no traceback."""
    return isinstance(exc, CliError) or describe_failure(exc) is not None


def dispatch(args: Namespace) -> int:
    """Run the parsed core command; every failure becomes `harness: error: ...` and a status."""
    install_log_handler(quiet_plugins=args.command == "plugins")
    use_store_flag(getattr(args, "store", None))
    module_name, function = COMMANDS[args.command]
    module = importlib.import_module(f"{__package__}.{module_name}")
    command: Callable[[Namespace], int] = getattr(module, function)
    return guarded(lambda: command(args))


def guarded(command: Callable[[], int]) -> int:
    """Run `command` inside the error boundary every command shares."""
    try:
        return command()
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_CANCELLED
    except BrokenPipeError:
        # The reader went away (`harness events ID | head`): stop quietly with the status
        # of a process ended by SIGPIPE, as cat does. Python would complain at exit when it
        # flushes stdout again, so point stdout at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        _debug_traceback()
        if _expected(exc):
            _error(_describe(exc))
            from ..hosts import CommandError  # a plugin command's; the core commands never load it

            return exc.status if isinstance(exc, CliError | CommandError) else EXIT_ERROR
        _error(f"internal error: {type(exc).__name__}: {exc} (HARNESS_DEBUG=1 shows the traceback)")
        return EXIT_ERROR


def use_store_flag(url: str | None) -> None:
    """--store wins over HARNESS_STORE, which wins over config `store`: the flag becomes the
    variable for this process (kept from tools, its password redacted: harness_core.secret)."""
    if url:
        os.environ["HARNESS_STORE"] = url


def needs_extra(extra: str, *modules: str) -> None:
    """A CliError naming the extra to install when a host's libraries are missing: an
    embedding program gets the loop without the web server or the ACP SDK."""
    import importlib.util

    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise CliError(
            f"this command needs the {extra} extra ({', '.join(missing)} is not installed): "
            f"pip install 'harness-core[{extra}]'"
        )


def _describe(exc: BaseException) -> str:
    return describe_failure(exc) or str(exc) or type(exc).__name__


def _error(message: str) -> None:
    _to_stderr(f"harness: error: {one_line(message, width=2000)}\n")


def _debug_traceback() -> None:
    if os.environ.get("HARNESS_DEBUG") == "1":
        _to_stderr(traceback.format_exc())


def _to_stderr(text: str) -> None:
    """Every line harness itself writes to stderr, with secret values redacted."""
    sys.stderr.write(secret.current().redact(text))
    sys.stderr.flush()


class _StderrLines(logging.Handler):
    """Log records as `harness: warning: ...`, one line each, on the current sys.stderr.

    Looked up at emit time, not bound at install time, so the live display (which redirects
    stderr while it runs) prints warnings above the plan strip instead of through it.
    """

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = one_line(record.getMessage(), width=2000)
            text = f"harness: {record.levelname.lower()}: {message}\n"
            if record.exc_info and os.environ.get("HARNESS_DEBUG") == "1":
                text += "".join(traceback.format_exception(*record.exc_info))
            _to_stderr(text)
        except Exception:
            self.handleError(record)


def install_log_handler(*, quiet_plugins: bool) -> None:
    logger = logging.getLogger("harness")
    if not any(isinstance(h, _StderrLines) for h in logger.handlers):
        logger.addHandler(_StderrLines())
    logger.setLevel(logging.DEBUG if os.environ.get("HARNESS_DEBUG") == "1" else logging.WARNING)
    logger.propagate = False
    # `harness plugins` reports rejections in its own output; a warning would say it twice.
    logging.getLogger("harness.plugins").setLevel(
        logging.ERROR if quiet_plugins else logging.NOTSET
    )


class App(Runtime):
    """The runtime of one invocation (`harness_core.runtime`), and what a plugin's command gets
    as its `CommandContext`."""

    # -- CommandContext --------------------------------------------------------------------

    @property
    def stdout(self) -> TextIO:
        return sys.stdout

    def read_events(self, session_id: str) -> Sequence[Event]:
        return self.reader(session_id).events
