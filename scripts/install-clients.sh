#!/usr/bin/env bash
# Install the real third-party clients the test suite drives Pincer with
# (tests/clients.rs): npm packages into tests/clients/node_modules (pinned by its
# package-lock.json, Node 22 among them for the MCP conformance suite) and PyPI
# packages into tests/clients/.venv (pinned by requirements.txt); then the real model
# (scripts/install-model.sh) and Synapse (scripts/install-synapse.sh). Re-running is cheap.
set -euo pipefail
cd "$(dirname "$0")/../tests/clients"
npm ci --silent --no-audit --no-fund
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
echo "clients: node $(node_modules/.bin/node --version), $(.venv/bin/python -m pip show claude-agent-sdk | grep ^Version | sed 's/Version: /claude-agent-sdk /')"
bash ../../scripts/install-model.sh
bash ../../scripts/install-synapse.sh
