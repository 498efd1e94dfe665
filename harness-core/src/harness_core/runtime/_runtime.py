"""What every host of one process shares: the configured home, the plugins, the store, the
sandbox, the approval policy and how models are built.

`ConfiguredHome` is the cheap part (the config checked, the secrets it names installed): all
that a query command such as `harness sessions` needs. `Runtime` adds the plugin host with
the built-in plugin and every installed plugin registered (their event types and tools
materialise when something first needs them) and the session store, and opens sessions for
hosts to run turns on (`open`, `_session.py`). Every failure a user can fix is a
`SetupError`: one line that says what to change.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Final, cast

from .. import secret
from ..config import Config
from ..log import (
    SessionStore,
    Store,
    default_home,
    file_store_directory,
    redact_url,
    scheme_of,
)

if TYPE_CHECKING:  # the loop, the models (and anyio) load only for the commands that use them
    from ..hosts import CommandContext
    from ..log import SessionLog
    from ..loop import Approval, Asker, CompactionPolicy, Policy
    from ..models import Model
    from ..plugins import PluginHost
    from ..tools import ToolRegistry
    from ..tools.sandbox import Limits
    from ._session import ApprovalFor, ModelFactory, SessionRuntime

__all__ = [
    "NO_MODEL",
    "ConfiguredHome",
    "Runtime",
    "SetupError",
    "describe_failure",
    "utf8_text",
]

NO_MODEL: Final = (
    "no model chosen: pass --model SPEC (scripted:PATH, openai:MODEL or deepseek:MODEL), "
    'set HARNESS_MODEL, or add model = "SPEC" to {config}'
)


# The distribution that serves a scheme, for the error when it is not installed.
_STORE_PLUGINS: Final = {
    "postgresql": "harness-store-postgres",
    "postgres": "harness-store-postgres",
}


class SetupError(Exception):
    """What a host was asked for cannot be had (a model spec, a sandbox, text that is not
    UTF-8): its message is one line saying what to change."""


def describe_failure(exc: BaseException) -> str | None:
    """The one line a host shows for a failure a user can act on (a setting, a session, a
    model, a plugin, the disk), or None for a bug, which deserves its traceback."""
    from ..config import ConfigError
    from ..hosts import CommandError
    from ..log import NotASession, SessionLocked, SessionNotFound, StoreError
    from ..models import ModelError
    from ..models._presets import ModelConfigError
    from ..plugins import PluginLoadError

    expected = (SetupError, ConfigError, NotASession, SessionLocked, SessionNotFound, OSError)
    more = (CommandError, ModelConfigError, ModelError, PluginLoadError, StoreError)
    if not isinstance(exc, expected + more):
        return None
    if isinstance(exc, SessionNotFound):
        return f"{exc.args[0] if exc.args else exc}; `harness sessions` lists the sessions"
    if isinstance(exc, OSError) and not isinstance(exc, SessionLocked) and exc.filename:
        return f"{exc.strerror or exc}: {exc.filename}"
    return str(exc) or type(exc).__name__


def utf8_text(text: str, what: str, fix: str) -> str:
    """`text` if it can be stored as UTF-8, else a SetupError naming the first bad character.

    Undecodable bytes of a command-line argument, stdin or a file name reach Python as lone
    surrogates (surrogateescape); the log, which is UTF-8 JSON, cannot hold them.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        bad = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
        raise SetupError(
            f"{what} is not valid UTF-8 ({bad} at character {exc.start}); {fix}"
        ) from None
    return text


class ConfiguredHome:
    """HARNESS_HOME and its config, checked, with the secrets the config names installed."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = home if home is not None else default_home()
        self.config = Config.load(self.home)
        # Checked before anything is created: a bad setting leaves no half-made session.
        self.settings = self.config.settings()
        settings = self.settings
        secret.install(
            secret.Secrets(
                os.environ,
                secret_env=settings.secret_env,
                tool_env=settings.tool_env,
                store=settings.store,
            )
        )


class Runtime(ConfiguredHome):
    """The configured home, its plugin host and its session store, for every host."""

    @classmethod
    def of(cls, ctx: CommandContext) -> Runtime:
        """The session runtime a plugin's command runs under, for a command that runs or
        queues turns (harness-worker's): the CLI hands every command its runtime as its
        `CommandContext`. That protocol is a host shape, a layer below this one, so it
        cannot name the runtime; this is the way from one to the other."""
        if not isinstance(ctx, cls):
            from ..hosts import CommandError

            raise CommandError("this command runs turns: run it under the harness CLI")
        return ctx

    def __init__(self, home: Path | None = None) -> None:
        super().__init__(home)
        from .. import builtins  # the plugins load here, not when a host module imports this
        from ..plugins import PluginHost

        self.host: PluginHost = PluginHost(self.config)
        builtins.add_to(self.host)
        self.host.load_entry_points()
        # Every append to a session this store writes reaches the plugins' observers, whoever
        # appends it: session/start, a turn's events, a subagent's session.
        self.store: Store = self.open_store(self.settings.store)

    def open_store(self, url: str | None) -> Store:
        """The store `url` names: the file store of HARNESS_HOME for none, `file://PATH`, or
        the first plugin that serves the URL's scheme (`harness_session_store`)."""
        registry, on_append = self.host.event_types, self.host.hooks.event_appended
        if not url:
            return SessionStore(self.home, registry, on_append=on_append)
        directory = file_store_directory(url)
        if directory is not None:
            return SessionStore(directory, registry, on_append=on_append)
        scheme, shown = scheme_of(url), redact_url(url)
        if not scheme:
            raise SetupError(
                f"store {shown!r} is not a URL: name file:///PATH or a scheme a store plugin "
                "serves, such as postgresql://HOST/DATABASE"
            )
        store = self.host.hooks.session_store(url, registry, on_append)
        if store is None:
            hint = _STORE_PLUGINS.get(scheme, "a plugin that serves it")
            raise SetupError(
                f"no installed plugin provides the store {shown} ({scheme}://): install {hint} "
                "(`harness plugins` lists the installed plugins)"
            )
        return store

    # -- sessions --------------------------------------------------------------------------

    def open(
        self,
        session_id: str | None,
        model: Model | ModelFactory,
        *,
        approval: Approval | ApprovalFor | None = None,
        tools: ToolRegistry | None = None,
        cwd: str | None = None,
        hold: bool = True,
        go_on: bool = False,
    ) -> SessionRuntime:
        """A session to run turns on: `session_id`, or a new one started in `cwd` (else the
        working directory), playing `model` unless a turn names another (or, given a factory,
        the model it builds for the turn's spec).

        `hold` takes the session's writer now and keeps it until `aclose` (a terminal, the
        ACP bridge); without it the writer is taken for each run of turns and let go after,
        so another process may write the session in between (the web host). A crashed turn is
        closed as soon as the writer is taken, unless `go_on` leaves it for `go_on()`.
        """
        from ._session import SessionRuntime

        log = self.create(cwd) if session_id is None else None
        return SessionRuntime(
            self,
            log.session_id if log is not None else str(session_id),
            model,
            approval=approval,
            tools=tools,
            hold=hold,
            log=log,
            go_on=go_on,
        )

    def create(self, cwd: str | None = None) -> SessionLog:
        """A new session started in `cwd` (else the working directory), with its writer.

        Every setting the turns need is checked first: a bad one must not leave a session.
        """
        # The log stores text as UTF-8; a name Python decoded with surrogateescape cannot be
        # stored, and the bash tool would run in a different directory if it were mangled.
        cwd = utf8_text(
            cwd if cwd is not None else os.getcwd(),
            "the working directory's name",
            "run harness from a directory whose path is valid UTF-8",
        )
        self.check_workspace(cwd)
        system_prompt = self.system_prompt()
        if system_prompt is not None:
            utf8_text(system_prompt, "system_prompt (or HARNESS_SYSTEM_PROMPT)", "fix it")
        return self.store.create(system_prompt=system_prompt, cwd=cwd)

    def reader(self, session_id: str) -> SessionLog:
        """A session opened for reading: no lock, so it works while a writer runs."""
        return self.store.open(session_id, writable=False)

    # -- the sandbox -----------------------------------------------------------------------

    def use_sandbox(self, flag: str | None, lapse: float | None = None) -> str:
        """Install the sandbox bash runs in (--sandbox, else HARNESS_SANDBOX / config
        `sandbox`, else `workspace` where bubblewrap works) and return its mode. A fallback
        to `off` is one warning line; an explicit `workspace` that cannot run is an error.
        `lapse`: seconds the sandbox outlives this process once it stops answering (a
        worker's, shorter than the lapse after which its peers take its turns)."""
        from ..tools import sandbox

        try:
            chosen, warning = sandbox.resolve(
                flag,
                self.settings.sandbox,
                self.settings.sandbox_network,
                self.sandbox_limits(),
                lapse or sandbox.DEFAULT_LAPSE,
            )
        except sandbox.SandboxUnavailable as exc:
            raise SetupError(str(exc)) from None
        if warning is not None:
            logging.getLogger("harness.sandbox").warning("%s", warning)
        sandbox.install(chosen)
        return chosen.mode

    def check_workspace(self, cwd: str | None) -> None:
        """SetupError when the installed sandbox would make `cwd` (None: the working
        directory, where bash runs for a session that names none) writable and it is a
        system place: / or what holds /tmp, /proc/sys/kernel, ... (`workspace_problem`).
        Checked before a session is made and before each turn, so nothing runs there."""
        from ..tools import sandbox

        if sandbox.current().mode == "off":
            return
        problem = sandbox.workspace_problem(cwd or os.getcwd())
        if problem is not None:
            raise SetupError(problem)

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

    # -- models ----------------------------------------------------------------------------

    def model_spec(self, flag: str | None) -> str:
        """`--model`, else HARNESS_MODEL / config `model`, else a one-line error."""
        spec = flag or self.settings.model
        if not spec:
            where = self.config.path or self.home / "config.toml"
            raise SetupError(NO_MODEL.format(config=where))
        return spec

    def model(self, flag: str | None, base_url: str | None = None) -> Model:
        """The model `flag` (else the configured default) names, from the first plugin that
        provides it; a spec nothing provides is a SetupError."""
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
            raise SetupError(
                f"no installed plugin provides the model {spec!r}; built-in providers: "
                f"{providers} (`harness plugins` lists the installed plugins)"
            )
        return model

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


def _or(value: int | None, default: int) -> int:
    return default if value is None else value
