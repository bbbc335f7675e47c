"""Drive `pincer acp` with the real agent-client-protocol SDK (PyPI), as an editor built
on it does: `spawn_agent_process` and its ClientSideConnection. Prints one JSON line per
thing the SDK handed over. Usage: acp_python.py SCENARIO PINCER HOME [IMAGE] — the scenarios
of acp.mjs, the same lines.
"""

import asyncio
import base64
import json
import sys

import acp
from acp.schema import ClientCapabilities


def say(event, **fields):
    print(json.dumps({"event": event, **fields}, default=str), flush=True)


def plain(model):
    """A schema object as the JSON on the wire (camelCase, unset fields left out)."""
    if model is None:
        return None
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def attempt(event, call):
    """`call()`'s result as a line of `event`, or its error."""
    try:
        result = await call
    except acp.RequestError as error:
        say("error", method=event, code=error.code, message=str(error), data=error.data)
        return None
    say(event, result=plain(result))
    return result


class Editor:
    """The client side: prints every update, rejects every permission request."""

    def __init__(self):
        self.waiting = []

    async def session_update(self, session_id, update, **kwargs):
        shown = plain(update)
        say("update", sessionId=session_id, update=shown)
        for waiter in list(self.waiting):
            matches, found = waiter
            if matches(shown) and not found.done():
                found.set_result(True)
                self.waiting.remove(waiter)

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        say("permission", toolCall=plain(tool_call))
        return acp.RequestPermissionResponse(outcome={"outcome": "selected", "optionId": "reject"})

    async def arrives(self, matches, seconds):
        """Whether an update that `matches` arrives within `seconds`."""
        found = asyncio.get_running_loop().create_future()
        self.waiting.append((matches, found))
        try:
            return await asyncio.wait_for(found, seconds)
        except asyncio.TimeoutError:
            return False


def text(words):
    return [acp.text_block(words)]


async def one_word(conn, editor, session, extra):
    await attempt("prompt", conn.prompt(session_id=session, prompt=text("are you there?")))


async def mode(conn, editor, session, extra):
    seen = asyncio.create_task(editor.arrives(lambda u: u["sessionUpdate"] == "current_mode_update", 3))
    await asyncio.sleep(0)
    await attempt("set_mode", conn.set_session_mode(session_id=session, mode_id="plan"))
    say("mode_update_seen", seen=await seen)


async def image(conn, editor, session, extra):
    with open(extra, "rb") as file:
        data = base64.b64encode(file.read()).decode()
    prompt = text("what is in this picture?") + [acp.image_block(data, "image/png")]
    await attempt("prompt", conn.prompt(session_id=session, prompt=prompt))
    audio = text("and this?") + [acp.audio_block(data, "audio/wav")]
    await attempt("prompt_audio", conn.prompt(session_id=session, prompt=audio))


async def sessions(conn, editor, session, extra):
    await attempt("prompt", conn.prompt(session_id=session, prompt=text("remember the plants")))
    await attempt("list", conn.list_sessions())
    streaming = asyncio.create_task(
        editor.arrives(lambda u: u["sessionUpdate"] == "agent_message_chunk", 10))
    await asyncio.sleep(0)
    running = asyncio.create_task(
        attempt("prompt_running", conn.prompt(session_id=session, prompt=text("a long one"))))
    say("streaming", seen=await streaming)
    await attempt("close", conn.close_session(session_id=session))
    await running
    await attempt("prompt_after_close", conn.prompt(session_id=session, prompt=text("still there?")))


SCENARIOS = {"one_word": one_word, "mode": mode, "image": image, "sessions": sessions}


async def main():
    scenario, pincer, home = sys.argv[1:4]
    extra = sys.argv[4] if len(sys.argv) > 4 else None
    editor = Editor()
    async with acp.spawn_agent_process(
        editor, pincer, "--home", home, "acp", transport_kwargs={"stderr": None}
    ) as (conn, _process):
        init = await attempt("initialize", conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION, client_capabilities=ClientCapabilities()))
        created = await attempt("new_session", conn.new_session(cwd=home, mcp_servers=[]))
        if init and created:
            await SCENARIOS[scenario](conn, editor, created.session_id, extra)


asyncio.run(main())
