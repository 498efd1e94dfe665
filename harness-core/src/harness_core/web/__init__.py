"""The web host: `harness serve`, a live conversation page over the session log.

The API and the page are described in docs/web.md. Plugins add panels through dock entries
(`harness_web_dock`) and fields to the snapshot (`harness_snapshot_fields`); the host itself
has no knowledge a plugin owns.
"""

from ._app import create_app
from ._hub import MAX_SESSIONS, Hub, WebRuntime
from ._server import run as run_server

__all__ = ["MAX_SESSIONS", "Hub", "WebRuntime", "create_app", "run_server"]
