"""One invocation's wiring, and the error boundary every command runs inside.

`App` builds what the commands share, in the order docs/architecture.md describes: the config
of HARNESS_HOME (`ConfiguredHome`: all that `sessions` needs), a plugin host with the built-in
plugin and every installed plugin registered (their event types and tools materialise when a
command first needs them), the session store, and on demand a model and an agent. `dispatch`
turns each expected failure into one line on stderr and a non-zero exit status.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import traceback
from argparse import Namespace
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO, cast

from .. import secret
from ..config import Config, ConfigError
from ..hosts import one_line
from ..log import NotASession, SessionLocked, SessionNotFound, SessionStore, default_home

if TYPE_CHECKING:  # the loop, the models (and anyio) load only for the commands that use them
    from ..log import Event, EventSink, SessionLog
    from ..loop import Agent, Approval, Asker, CompactionPolicy, Policy
    from ..models import DeltaSink, Model
    from ..plugins import PluginHost
    from ..tools import ToolRegistry
    from ..tools.sandbox import Limits

__all__ = [
    "EXIT_CANCELLED",
    "EXIT_ERROR",
    "App",
    "CliError",
    "ConfiguredHome",
    "dispatch",
    "guarded",
    "install_log_handler",
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
}

NO_MODEL: Final = (
    "no model chosen: pass --model SPEC (scripted:PATH, openai:MODEL or deepseek:MODEL), "
    'set HARNESS_MODEL, or add model = "SPEC" to {config}'
)


class CliError(Exception):
    """An expected failure: printed as one line on stderr, with exit status `status`."""

    def __init__(self, message: str, status: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.status = status


# Failures a user can act on: their message is the whole story, no traceback. The models'
# errors, the plugin host's and a plugin command's CommandError join them in `_expected`, which
# imports them only when something failed (`sessions` never loads the plugin host).
_EXPECTED: Final = (
    CliError,
    ConfigError,
    NotASession,
    SessionLocked,
    SessionNotFound,
    OSError,
)


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def _expected(exc: Exception) -> bool:
    from ..hosts import CommandError
    from ..models import ModelError
    from ..models._presets import ModelConfigError
    from ..plugins import PluginLoadError

    expected = (*_EXPECTED, CommandError, ModelConfigError, ModelError, PluginLoadError)
    return isinstance(exc, expected)


def dispatch(args: Namespace) -> int:
    """Run the parsed core command; every failure becomes `harness: error: ...` and a status."""
    install_log_handler(quiet_plugins=args.command == "plugins")
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


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SessionNotFound):
        return f"{exc.args[0] if exc.args else exc}; `harness sessions` lists the sessions"
    if isinstance(exc, OSError) and not isinstance(exc, SessionLocked) and exc.filename:
        return f"{exc.strerror or exc}: {exc.filename}"
    return str(exc) or type(exc).__name__


def _error(message: str) -> None:
    _to_stderr(f"harness: error: {one_line(message, width=2000)}\n")


def _debug_traceback() -> None:
    if os.environ.get("HARNESS_DEBUG") == "1":
        _to_stderr(traceback.format_exc())


def _to_stderr(text: str) -> None:
    """Every line harness itself writes to stderr, with secret values redacted."""
    sys.stderr.write(secret.current().redact(text))
    sys.stderr.flush()


def utf8_text(text: str, what: str, fix: str) -> str:
    """`text` if it can be stored as UTF-8, else a CliError naming the first bad character.

    Undecodable bytes of a command-line argument, stdin or a file name reach Python as lone
    surrogates (surrogateescape); the log, which is UTF-8 JSON, cannot hold them.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        bad = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
        raise CliError(
            f"{what} is not valid UTF-8 ({bad} at character {exc.start}); {fix}"
        ) from None
    return text


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


class ConfiguredHome:
    """HARNESS_HOME and its config, checked, with the secrets the config names installed."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = home if home is not None else default_home()
        self.config = Config.load(self.home)
        # Checked before anything is created: a bad setting leaves no half-made session.
        self.settings = self.config.settings()
        secret.install(
            secret.Secrets(
                os.environ, secret_env=self.settings.secret_env, pass_env=self.settings.pass_env
            )
        )


class App(ConfiguredHome):
    """HARNESS_HOME, its config, the plugin host and the session store of one invocation.

    It is also what a plugin's command gets as its `CommandContext`.
    """

    def __init__(self, home: Path | None = None) -> None:
        super().__init__(home)
        from .. import builtins  # the plugins load here, not when a command module imports this
        from ..plugins import PluginHost

        self.host: PluginHost = PluginHost(self.config)
        builtins.add_to(self.host)
        self.host.load_entry_points()  # `harness plugins` reads the records off the host
        # Every append to a session this store writes reaches the plugins' observers, whoever
        # appends it: session/start, a turn's events, a subagent's session.
        self.store = SessionStore(
            self.home, self.host.event_types, on_append=self.host.hooks.event_appended
        )

    # -- CommandContext --------------------------------------------------------------------

    @property
    def stdout(self) -> TextIO:
        return sys.stdout

    def session_path(self, session_id: str) -> Path:
        return self.store.path(session_id)

    def read_events(self, session_id: str) -> Sequence[Event]:
        return self.reader(session_id).events

    # -- the sandbox -----------------------------------------------------------------------

    def use_sandbox(self, flag: str | None) -> str:
        """Install the sandbox bash runs in (--sandbox, else HARNESS_SANDBOX / config
        `sandbox`, else `workspace` where bubblewrap works) and return its mode. A fallback
        to `off` is one warning line; an explicit `workspace` that cannot run is an error."""
        from ..tools import sandbox

        try:
            chosen, warning = sandbox.resolve(
                flag, self.settings.sandbox, self.settings.sandbox_network, self.sandbox_limits()
            )
        except sandbox.SandboxUnavailable as exc:
            raise CliError(str(exc)) from None
        if warning is not None:
            logging.getLogger("harness.sandbox").warning("%s", warning)
        sandbox.install(chosen)
        return chosen.mode

    def sandbox_limits(self) -> Limits:
        """The sandbox's caps: each setting where set, else its default."""
        from ..tools.sandbox import Limits

        settings, default = self.settings, Limits()
        return Limits(
            tmp=_or(settings.sandbox_tmp_size, default.tmp),
            shm=_or(settings.sandbox_shm_size, default.shm),
            memory=_or(settings.sandbox_memory, default.memory),
            processes=_or(settings.sandbox_processes, default.processes),
        )

    # -- approval --------------------------------------------------------------------------

    def approval(self, flag: str | None, asker: Asker | None) -> Approval:
        """The approval policy (`approval_policy`) with the host's way to ask, `asker`.

        `ask` where nobody can be asked refuses every call with effects outside the log; it
        says so once, here, and each refusal tells the model why.
        """
        from ..loop import Approval

        policy = self.approval_policy(flag)
        if policy == "ask" and asker is None:
            logging.getLogger("harness.approval").warning(
                "approval is ask but nobody can be asked here (no terminal): calls with effects "
                "outside the log will be refused; --approval auto lets them run"
            )
        return Approval(policy, asker)

    def approval_policy(self, flag: str | None, *, interactive: bool | None = None) -> Policy:
        """--approval, else HARNESS_APPROVAL / config `approval`, else `ask` when a person is
        at the input (`interactive`; by default, whether stdin is a terminal) and `auto`
        otherwise. `harness acp` passes its protocol input: its fd 0 is /dev/null by then."""
        if interactive is None:
            interactive = sys.stdin.isatty()
        chosen = flag or self.settings.approval or ("ask" if interactive else "auto")
        return cast("Policy", chosen)  # argparse and the config check allow nothing else

    # -- the model -------------------------------------------------------------------------

    def model_spec(self, flag: str | None) -> str:
        """`--model`, else HARNESS_MODEL / config `model`, else a one-line error."""
        spec = flag or self.settings.model
        if not spec:
            where = self.config.path or self.home / "config.toml"
            raise CliError(NO_MODEL.format(config=where))
        return spec

    def model(self, flag: str | None, base_url: str | None) -> Model:
        spec = self.model_spec(flag)
        # Tools register first: a bad [plugins.builtins] setting is then reported before a
        # model or a session exists, instead of after the session was created.
        self.host.tools  # noqa: B018
        options = {
            "base_url": base_url,
            "timeout": self.settings.model_timeout,
            "retries": self.settings.model_retries,
        }
        model = self.host.hooks.model(spec, options)
        if model is None:
            from ..models._presets import known_providers

            providers = ", ".join(f"{p}:" for p in known_providers())
            raise CliError(
                f"no installed plugin provides the model {spec!r}; built-in providers: "
                f"{providers} (`harness plugins` lists the installed plugins)"
            )
        return model

    # -- sessions and agents ---------------------------------------------------------------

    def system_prompt(self) -> str | None:
        if self.settings.system_prompt is not None:
            return self.settings.system_prompt
        from ..loop import DEFAULT_SYSTEM_PROMPT

        return DEFAULT_SYSTEM_PROMPT

    def max_steps(self) -> int:
        from ..loop import DEFAULT_MAX_STEPS

        return self.settings.max_steps or DEFAULT_MAX_STEPS

    def compaction(self, model: Model) -> CompactionPolicy:
        """`compact_at` and `context_window` from the settings; the model's own window else.

        `context_window` is a number of tokens for any model, or a table of them by model
        name (`[context_window]` with `"deepseek:MODEL" = 65536`).
        """
        from ..loop import DEFAULT_COMPACT_AT, CompactionPolicy

        window = self.settings.context_window
        if isinstance(window, dict):
            window = window.get(model.name)
        return CompactionPolicy(
            context_window=window, compact_at=self.settings.compact_at or DEFAULT_COMPACT_AT
        )

    def writer(self, session_id: str | None) -> SessionLog:
        """The session to write: an existing one (locked), or a new one for this cwd.

        The settings were checked when the App was built; what is checked here is text the
        log cannot store, before a session is created for it.
        """
        if session_id is not None:
            return self.store.open(session_id)
        # The log stores text as UTF-8; a name Python decoded with surrogateescape cannot be
        # stored, and the bash tool would run in a different directory if it were mangled.
        cwd = utf8_text(
            os.getcwd(),
            "the working directory's name",
            "run harness from a directory whose path is valid UTF-8",
        )
        system_prompt = self.system_prompt()
        if system_prompt is not None:
            utf8_text(system_prompt, "system_prompt (or HARNESS_SYSTEM_PROMPT)", "fix it")
        return self.store.create(system_prompt=system_prompt, cwd=cwd)

    def reader(self, session_id: str) -> SessionLog:
        """A session opened for reading: no lock, so it works while a writer runs."""
        return self.store.open(session_id, writable=False)

    def agent(
        self,
        log: SessionLog,
        model: Model,
        on_event: EventSink,
        on_delta: DeltaSink | None,
        approval: Approval | None = None,
        tools: ToolRegistry | None = None,
    ) -> Agent:
        """An agent on `log` with the host's tools, or `tools` (a session's own, over them)."""
        from ..loop import Agent

        return Agent(
            log,
            model,
            tools if tools is not None else self.host.tools,
            max_steps=self.max_steps(),
            store=self.store,
            on_event=on_event,
            on_delta=on_delta,
            compaction=self.compaction(model),
            approval=approval,
        )
