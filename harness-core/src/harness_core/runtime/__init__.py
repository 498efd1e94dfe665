"""The session runtime: the one way every host runs turns.

`Runtime` is what a process's hosts share (the configured home, the plugins, the store, the
sandbox, the approval policy, the models); `Runtime.open` gives a `SessionRuntime`, which owns
one session's writer, models, agent, turn queue and cancellation and hands the host a stream
of changes. The terminal, the web host and the ACP bridge differ only in how they show those
changes and how they ask (docs/architecture.md).

Names are imported on first use (PEP 562): `harness sessions` needs `ConfiguredHome` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from .._lazy import lazy_exports

if TYPE_CHECKING:  # the names __getattr__ serves, spelled out for type checkers
    from ._runtime import (
        NO_MODEL,
        ConfiguredHome,
        Runtime,
        SetupError,
        describe_failure,
        utf8_text,
    )
    from ._session import ApprovalFor, ModelFactory, SessionRuntime

_EXPORTS: Final = {
    "NO_MODEL": "_runtime",
    "ApprovalFor": "_session",
    "ConfiguredHome": "_runtime",
    "ModelFactory": "_session",
    "describe_failure": "_runtime",
    "Runtime": "_runtime",
    "SessionRuntime": "_session",
    "SetupError": "_runtime",
    "utf8_text": "_runtime",
}

__all__ = [
    "NO_MODEL",
    "ApprovalFor",
    "ConfiguredHome",
    "ModelFactory",
    "Runtime",
    "SessionRuntime",
    "SetupError",
    "describe_failure",
    "utf8_text",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
