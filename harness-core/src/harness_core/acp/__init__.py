"""The ACP bridge: an Agent Client Protocol agent for editors and CI orchestrators.

A host like the web host: handed the process's session runtime (`harness_core.runtime`), it
runs every client's turns through it and renders the sessions' changes as `session/update`s.
`harness acp` (the CLI) claims stdio and calls `serve`; docs/acp.md describes the protocol.
"""

from ._transport import serve

__all__ = ["serve"]
