"""Drive a stream-json CLI (the real Claude Code CLI, or `pincer agent`) through one
scripted turn as the SDKs do — initialize, a user message, `can_use_tool` answered
with allow — and write every line it printed to OUT. Usage: wire.py OUT CMD [ARGS...]
"""

import json
import subprocess
import sys

out_path, command = sys.argv[1], sys.argv[2:]
flags = ["--output-format", "stream-json", "--input-format", "stream-json", "--verbose",
         "--include-partial-messages", "--permission-prompt-tool", "stdio"]
cli = subprocess.Popen(command + flags, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       text=True, bufsize=1)


def send(value):
    cli.stdin.write(json.dumps(value) + "\n")
    cli.stdin.flush()


send({"type": "control_request", "request_id": "req_1_init",
      "request": {"subtype": "initialize", "hooks": None}})
lines = []
for raw in cli.stdout:
    line = json.loads(raw)
    lines.append(line)
    if line.get("type") == "control_response" and line["response"].get("request_id") == "req_1_init":
        send({"type": "user", "message": {"role": "user", "content": "make the file"},
              "parent_tool_use_id": None, "session_id": "default"})
    elif line.get("type") == "control_request" and line["request"].get("subtype") == "can_use_tool":
        send({"type": "control_response", "response": {
            "subtype": "success", "request_id": line["request_id"],
            "response": {"behavior": "allow", "updatedInput": line["request"]["input"]}}})
    elif line.get("type") == "result":
        break
cli.stdin.close()
cli.wait(timeout=30)
with open(out_path, "w") as out:
    for line in lines:
        out.write(json.dumps(line) + "\n")
