// Drive `pincer acp` with the real @agentclientprotocol/sdk (npm), as an editor does:
// the SDK's client app over the agent's stdio. Prints one JSON line per thing the SDK
// handed over. Usage: acp.mjs SCENARIO PINCER HOME [IMAGE]
//   one_word — a prompt whose whole reply is one streamed chunk
//   mode     — session/set_mode to plan
//   image    — a prompt with a text and an image block (IMAGE: a PNG file), then one
//              with an audio block
//   sessions — a prompt, session/list, session/close while a second prompt streams,
//              then a prompt to the closed session

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk";

const [scenario, pincer, home, image] = process.argv.slice(2);

function say(event, fields = {}) {
  console.log(JSON.stringify({ event, ...fields }));
}

/** A JSON-RPC error the SDK threw, as a line. */
function failed(method, error) {
  say("error", { method, code: error.code ?? null, message: String(error.message), data: error.data ?? null });
}

/** `call()`'s result as a line of `event`, or its error. */
async function attempt(event, call) {
  try {
    const result = await call();
    say(event, { result: result ?? null });
    return result;
  } catch (error) {
    failed(event, error);
    return undefined;
  }
}

const child = spawn(pincer, ["--home", home, "acp"], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

/** Waiters for a session update that matches, resolved as updates arrive. */
const waiting = [];
const app = acp
  .client({ name: "pincer-tests" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    say("update", { sessionId: params.sessionId, update: params.update });
    for (const waiter of waiting.splice(0)) {
      if (waiter.matches(params.update)) waiter.resolve(true);
      else waiting.push(waiter);
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    say("permission", { toolCall: params.toolCall });
    return { outcome: { outcome: "selected", optionId: "reject" } };
  });

/** Whether an update that `matches` arrives within `ms`. */
function arrives(matches, ms) {
  return new Promise((resolve) => {
    waiting.push({ matches, resolve });
    setTimeout(() => resolve(false), ms);
  });
}

const text = (words) => [{ type: "text", text: words }];

const scenarios = {
  async one_word(ctx, session) {
    await attempt("prompt", () => ctx.request(acp.methods.agent.session.prompt, { sessionId: session, prompt: text("are you there?") }));
  },

  async mode(ctx, session) {
    const seen = arrives((u) => u.sessionUpdate === "current_mode_update", 3000);
    await attempt("set_mode", () => ctx.request(acp.methods.agent.session.setMode, { sessionId: session, modeId: "plan" }));
    say("mode_update_seen", { seen: await seen });
  },

  async image(ctx, session) {
    const data = readFileSync(image).toString("base64");
    const prompt = [...text("what is in this picture?"), { type: "image", mimeType: "image/png", data }];
    await attempt("prompt", () => ctx.request(acp.methods.agent.session.prompt, { sessionId: session, prompt }));
    const audio = [...text("and this?"), { type: "audio", mimeType: "audio/wav", data }];
    await attempt("prompt_audio", () => ctx.request(acp.methods.agent.session.prompt, { sessionId: session, prompt: audio }));
  },

  async sessions(ctx, session) {
    await attempt("prompt", () => ctx.request(acp.methods.agent.session.prompt, { sessionId: session, prompt: text("remember the plants") }));
    await attempt("list", () => ctx.request(acp.methods.agent.session.list, {}));
    const streaming = arrives((u) => u.sessionUpdate === "agent_message_chunk", 10000);
    const running = attempt("prompt_running", () => ctx.request(acp.methods.agent.session.prompt, { sessionId: session, prompt: text("a long one") }));
    say("streaming", { seen: await streaming });
    await attempt("close", () => ctx.request(acp.methods.agent.session.close, { sessionId: session }));
    await running;
    await attempt("prompt_after_close", () => ctx.request(acp.methods.agent.session.prompt, { sessionId: session, prompt: text("still there?") }));
  },
};

await app.connectWith(stream, async (ctx) => {
  const init = await attempt("initialize", () => ctx.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} }));
  const created = await attempt("new_session", () => ctx.request(acp.methods.agent.session.new, { cwd: home, mcpServers: [] }));
  if (init && created) await scenarios[scenario](ctx, created.sessionId);
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
