#!/usr/bin/env bash
# Re-record tests/clients/reference/claude-code-<version>-tool-turn.jsonl: the Claude
# Code CLI bundled with claude-agent-sdk, driven by wire.py through one turn with one
# approved Bash call, against the fake model (`pincer-fakes model`). Needs
# scripts/install-clients.sh and `cargo build -p pincer-fakes` first.
set -euo pipefail
cd "$(dirname "$0")"
cli=$(echo .venv/lib/python3*/site-packages/claude_agent_sdk/_bundled/claude)
version=$("$cli" --version | cut -d' ' -f1)
../../target/debug/pincer-fakes model --port 18089 > /dev/null &
fake=$!
trap 'kill $fake' EXIT
until curl -s -o /dev/null localhost:18089/_fake/requests; do sleep 0.1; done
curl -s -X POST localhost:18089/_fake/script \
    -d '[{"tool_calls":{"calls":[["Bash",{"command":"touch x","description":"Make the file"}]]}},{"text":"Done."}]' > /dev/null
home=$(mktemp -d)
(cd "$home" && env ANTHROPIC_BASE_URL=http://127.0.0.1:18089 ANTHROPIC_API_KEY=sk-test HOME="$home" \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    "$OLDPWD/.venv/bin/python" "$OLDPWD/wire.py" "$OLDPWD/reference/claude-code-$version-tool-turn.jsonl" "$OLDPWD/$cli")
rm -rf "$home"
echo "recorded reference/claude-code-$version-tool-turn.jsonl"
