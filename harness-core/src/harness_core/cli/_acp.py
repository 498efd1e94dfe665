"""`harness acp`: an Agent Client Protocol agent on stdio, for editors and orchestrators.

stdout is the protocol. Before anything else runs (plugins load, tools print, libraries log)
the process keeps private copies of its stdin and stdout for JSON-RPC and points file
descriptors 0 and 1 at /dev/null and stderr: a plugin's `print`, a C extension writing to
fd 1 or a child process that inherits it cannot put a stray byte into the protocol stream.
The bridge itself is the `harness_core.acp` host, handed this command's runtime.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from argparse import Namespace
from typing import Final

from ._app import App, _StderrLines, needs_extra

__all__ = ["acp"]

METHOD_NOT_FOUND: Final = -32601


def acp(args: Namespace) -> int:
    needs_extra("acp", "acp")
    from ..acp import serve

    protocol_in, protocol_out = _claim_stdio()
    app = App()  # plugins load here: whatever they print goes to stderr now
    app.use_sandbox(args.sandbox)
    # Whether a person types at the bridge is a question about the protocol's input: fd 0 is
    # /dev/null by now. A client's pipe means `auto` unless --approval ask says otherwise.
    policy = app.approval_policy(args.approval, interactive=os.isatty(protocol_in))
    _report_sdk_errors()
    asyncio.run(serve(app, args.model, policy, protocol_in, protocol_out))
    return 0


def _claim_stdio() -> tuple[int, int]:
    """Private copies of fds 0 and 1 for the protocol; 0 becomes /dev/null, 1 stderr."""
    sys.stdout.flush()
    protocol_in, protocol_out = os.dup(0), os.dup(1)  # not inherited by child processes
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return protocol_in, protocol_out


def _report_sdk_errors() -> None:
    """The SDK logs a handler's failure on the root logger with a traceback, which Python's
    last-resort handler prints raw: one `harness: warning: ACP: ...` line each instead."""
    handler = _StderrLines()
    handler.addFilter(_sdk_record)
    logging.getLogger().addHandler(handler)


def _sdk_record(record: logging.LogRecord) -> bool:
    """Whether to print `record`, made one line; a notification for a method the bridge does
    not serve is dropped, since JSON-RPC ignores it (the SDK logs it as a failure)."""
    from acp import RequestError  # loaded by the bridge by now

    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, RequestError) and exc.code == METHOD_NOT_FOUND:
        return False
    if record.name == "root":  # the SDK's own: say whose, and why
        why = f": {type(exc).__name__}: {exc}" if exc is not None else ""
        record.msg, record.args = f"ACP: {record.getMessage()}{why}", ()
        record.levelno, record.levelname = logging.WARNING, "WARNING"  # the bridge goes on
    return True
