"""The `[plugins.mcp]` section: one table per server, a stdio command or a Streamable HTTP url."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

__all__ = ["McpConfig", "ServerConfig"]

ServerName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]+$")]


class ServerConfig(BaseModel):
    """One `[plugins.mcp.servers.NAME]` table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = None
    args: list[str] = []
    # Names, not values: a server sees these variables from harness's environment and no
    # others of ours (the SDK adds PATH, HOME and a few more so a command can start at all).
    env: list[str] = []
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    timeout: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 60.0

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if (self.command is None) == (self.url is None):
            raise ValueError("set either command (a stdio server) or url (an HTTP server)")
        if self.url is not None and (self.args or self.env or self.cwd is not None):
            raise ValueError("args, env and cwd belong to a stdio server, not to a url")
        if self.command is not None and self.headers:
            raise ValueError("headers belong to a url server, not to a command")
        return self


class McpConfig(BaseModel):
    """The `[plugins.mcp]` section."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: dict[ServerName, ServerConfig] = {}
