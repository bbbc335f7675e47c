"""Pincer driven by the Claude Agent SDK for Python (pip install claude-agent-sdk).

    PATH=$PWD/target/release:$PATH python3 examples/sdk/drive.py [--home DIR]

Every approval Pincer needs reaches can_use_tool; a `question` is answered by
returning the answer in updated_input["answer"].
"""

import os
import sys

import anyio
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient
from claude_agent_sdk.types import PermissionResultAllow, PermissionResultDeny

HERE = os.path.dirname(os.path.abspath(__file__))


async def can_use_tool(name, tool_input, context):
    print(f"  [asked] {name} {tool_input}")
    if name == "question":
        return PermissionResultAllow(updated_input={**tool_input, "answer": tool_input.get("options", ["yes"])[-1]})
    if name == "exec":
        return PermissionResultDeny(message="no commands from this script")
    return PermissionResultAllow()


async def main(prompts):
    env = {}
    if "--home" in sys.argv:
        env["PINCER_HOME"] = sys.argv[sys.argv.index("--home") + 1]
    options = ClaudeAgentOptions(
        cli_path=os.path.join(HERE, "pincer-cli"), can_use_tool=can_use_tool, env=env
    )
    async with ClaudeSDKClient(options=options) as client:
        for prompt in prompts:
            print(f"> {prompt}")
            await client.query(prompt)
            async for message in client.receive_response():
                kind = type(message).__name__
                body = getattr(message, "content", None) or getattr(message, "result", None)
                print(f"  {kind}: {body if body is not None else getattr(message, 'subtype', '')}")


anyio.run(main, ["hello from the SDK", "write my notes", "pick a colour"])
