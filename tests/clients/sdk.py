"""Drive `pincer agent` with the real claude-agent-sdk (PyPI), as its users do: the
SDK starts examples/sdk/pincer-cli (`pincer agent "$@"`) as its CLI. Prints one JSON
line per thing the SDK handed over. Usage: sdk.py SCENARIO (PINCER_HOME, PINCER_CLI set).
"""

import asyncio
import dataclasses
import json
import os
import sys

from claude_agent_sdk import (ClaudeAgentOptions, ClaudeSDKClient, HookMatcher,
                              create_sdk_mcp_server, tool)
from claude_agent_sdk.types import PermissionResultAllow, PermissionResultDeny


def say(event, **fields):
    print(json.dumps({"event": event, **fields}, default=str), flush=True)


def shown(message):
    """A message as plain JSON: its class name and fields."""
    if dataclasses.is_dataclass(message):
        body = dataclasses.asdict(message)
    else:
        body = {"value": message}
    # A StreamEvent's own `event` is its `stream_event` here.
    if "event" in body:
        body["stream_event"] = body.pop("event")
    return {"kind": type(message).__name__, **body}


def options(**more):
    return ClaudeAgentOptions(cli_path=os.environ["PINCER_CLI"], **more)


async def converse(client, prompt):
    """One turn; the session id its result named."""
    await client.query(prompt)
    session = None
    async for message in client.receive_response():
        say("message", **shown(message))
        session = getattr(message, "session_id", session)
    return session


async def allow_all(name, tool_input, context):
    say("can_use_tool", tool=name, input=tool_input,
        blocked_path=context.blocked_path, description=context.description,
        suggestions=[dataclasses.asdict(s) for s in context.suggestions])
    return PermissionResultAllow()


def hook(name, answer):
    async def called(input_data, tool_use_id, context):
        say("hook", name=name, input=input_data, tool_use_id=tool_use_id)
        return answer
    return called


async def one_chunk():
    async with ClaudeSDKClient(options=options(include_partial_messages=True)) as client:
        await converse(client, "are you there?")


async def hooks():
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                   "permissionDecision": "deny",
                                   "permissionDecisionReason": "no commands today"}}
    context = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                      "additionalContext": "the-prompt-hook-context"}}
    post = {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                   "additionalContext": "the-post-hook-note"}}
    registered = {
        "PreToolUse": [HookMatcher(matcher="exec|Bash", hooks=[hook("PreToolUse", deny)])],
        "PostToolUse": [HookMatcher(matcher=None, hooks=[hook("PostToolUse", post)])],
        "UserPromptSubmit": [HookMatcher(hooks=[hook("UserPromptSubmit", context)])],
        "Stop": [HookMatcher(hooks=[hook("Stop", {})])],
    }
    opts = options(hooks=registered, can_use_tool=allow_all)
    async with ClaudeSDKClient(options=opts) as client:
        await converse(client, "look, then run something")


async def stop_block():
    answers = [{"decision": "block", "reason": "also say goodbye"}, {}]

    async def stop(input_data, tool_use_id, context):
        say("hook", name="Stop", input=input_data)
        return answers.pop(0) if answers else {}
    registered = {"Stop": [HookMatcher(hooks=[stop])]}
    async with ClaudeSDKClient(options=options(hooks=registered)) as client:
        await converse(client, "hello")


async def session_id():
    opts = options(session_id=os.environ["SESSION_UUID"])
    async with ClaudeSDKClient(options=opts) as client:
        await converse(client, "first")


async def fork():
    async with ClaudeSDKClient(options=options()) as client:
        original = await converse(client, "remember the original")
    opts = options(resume=original, fork_session=True)
    async with ClaudeSDKClient(options=opts) as client:
        await converse(client, "only in the fork")
    async with ClaudeSDKClient(options=options(resume=original)) as client:
        await converse(client, "back in the original")


async def permissions():
    from claude_agent_sdk.types import PermissionRuleValue, PermissionUpdate

    async def decide(name, tool_input, context):
        await allow_all(name, tool_input, context)
        if name == "exec":
            return PermissionResultDeny(message="not that one")
        rule = PermissionRuleValue(tool_name="Write", rule_content="a.txt")
        update = PermissionUpdate(type="addRules", rules=[rule], behavior="allow",
                                  destination="session")
        return PermissionResultAllow(updated_permissions=[update])
    opts = options(can_use_tool=decide, include_partial_messages=True)
    async with ClaudeSDKClient(options=opts) as client:
        await converse(client, "write twice, then run something")


async def dont_ask():
    opts = options(can_use_tool=allow_all, permission_mode="dontAsk")
    async with ClaudeSDKClient(options=opts) as client:
        await converse(client, "run something")


async def interrupt():
    async with ClaudeSDKClient(options=options(include_partial_messages=True)) as client:
        await client.query("count slowly")
        interrupted = False
        async for message in client.receive_response():
            say("message", **shown(message))
            if not interrupted and type(message).__name__ == "StreamEvent" \
                    and message.event.get("type") == "content_block_delta":
                interrupted = True
                await client.interrupt()
        await converse(client, "and now?")


async def status():
    async with ClaudeSDKClient(options=options()) as client:
        await converse(client, "hi")
        say("context_usage", value=await client.get_context_usage())
        say("mcp_status", value=await client.get_mcp_status())


async def max_turns():
    opts = options(max_turns=1, permission_mode="bypassPermissions")
    async with ClaudeSDKClient(options=opts) as client:
        await converse(client, "keep looking")


async def enter_plan():
    registered = {"PreToolUse": [HookMatcher(matcher="EnterPlanMode",
                                             hooks=[hook("PreToolUse", {})])]}
    opts = options(hooks=registered, can_use_tool=allow_all)
    async with ClaudeSDKClient(options=opts) as client:
        await converse(client, "redo the whole thing")


@tool("add", "Add two whole numbers", {"a": int, "b": int})
async def add(args):
    say("tool_called", args=args)
    return {"content": [{"type": "text", "text": f"the sum is {args['a'] + args['b']}"}]}


async def sdk_mcp():
    calc = create_sdk_mcp_server("calc", "1.0.0", tools=[add])
    opts = options(mcp_servers={"calc": calc}, can_use_tool=allow_all)
    async with ClaudeSDKClient(options=opts) as client:
        await converse(client, "what is 2 + 3?")
        say("mcp_status", value=await client.get_mcp_status())


if __name__ == "__main__":
    scenario = sys.argv[1]
    try:
        asyncio.run(globals()[scenario]())
    except Exception as err:  # what the SDK raised is part of what a user sees
        say("raised", kind=type(err).__name__, text=str(err))
        sys.exit(1)
