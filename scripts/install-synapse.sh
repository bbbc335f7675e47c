#!/usr/bin/env bash
# Install the real Matrix homeserver the Matrix tests run (pincer_fakes::synapse):
# Synapse from PyPI with every dependency pinned in tests/synapse/requirements.txt,
# into tests/synapse/.venv (prebuilt wheels: nothing compiles). Re-running is cheap.
# The tests find it there, or wherever PINCER_SYNAPSE_PYTHON points (a python that
# can `import synapse`).
set -euo pipefail
cd "$(dirname "$0")/../tests/synapse"
started=$SECONDS
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check --only-binary=:all: -r requirements.txt
echo "synapse: $(.venv/bin/python -c 'import synapse; print(synapse.__version__)'), installed in $((SECONDS - started)) s"
