# Sourced by scripts/test and scripts/demo: make `uv` available on a machine that has only
# Python 3.11+ and access to the package registry, then sync the locked workspace.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v uv >/dev/null 2>&1; then
    tools="${XDG_CACHE_HOME:-$HOME/.cache}/harness-bootstrap"
    if [ ! -x "$tools/bin/uv" ]; then
        echo "bootstrap: installing uv into $tools" >&2
        python3 -m venv "$tools"
        "$tools/bin/python" -m pip install --quiet --disable-pip-version-check "uv>=0.9,<0.14"
    fi
    export PATH="$tools/bin:$PATH"
fi

uv sync --locked --quiet
