// The web panel's `/api/chat` read by the real AI SDK (`ai`), as its users read it:
// `fetch` + `readUIMessageStream`, and `AbstractChat` with `DefaultChatTransport` (what
// `useChat` runs). Prints one JSON line per observation for tests/clients/ai.rs.
//
//   node ai.mjs one_word        a message answered in one chunk, read both ways
//   node ai.mjs overlap         a second request while the first one's reply streams
//   node ai.mjs stop            `/stop` sent while a reply streams
//   node ai.mjs model_breaks    the model's stream breaks mid-reply
//
// Env: PINCER_URL (http://127.0.0.1:PORT), PINCER_TOKEN (web.token).

import {
  AbstractChat,
  DefaultChatTransport,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
} from "ai";

const url = process.env.PINCER_URL;
const token = process.env.PINCER_TOKEN;
const api = `${url}/api/chat`;
const auth = { authorization: `Bearer ${token}` };
/// How long a condition may take before the script gives up: the Rust tests' PATIENCE
/// (tests/fakes/src/wait.rs), passed in by tests/clients/rig.rs.
const PATIENCE_MS = Number(process.env.PINCER_TEST_PATIENCE_MS || 30_000);

const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

/// What a test needs of an error: `AI_UIMessageStreamError` and schema failures are the
/// library rejecting the stream; an `error` chunk arrives as a plain `Error`.
const describe = (error) => ({ name: error?.name ?? "Error", message: String(error?.message ?? error) });

/// Wait until `check()` holds, polling; fail after PATIENCE_MS.
async function until(what, check) {
  const deadline = Date.now() + PATIENCE_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} never happened`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/// POST `text` as useChat does and read the reply with `readUIMessageStream`. `seen`
/// holds the latest message snapshot as it streams; the promise gives the whole reading.
function post(who, text, seen = {}) {
  const reading = (async () => {
    const body = {
      id: `chat-${who}`,
      messages: [{ id: `u-${who}`, role: "user", parts: [{ type: "text", text }] }],
      trigger: "submit-message",
    };
    const response = await fetch(api, {
      method: "POST",
      headers: { "content-type": "application/json", ...auth },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`);
    const types = [];
    const errors = [];
    const chunks = parseJsonEventStream({ stream: response.body, schema: uiMessageChunkSchema }).pipeThrough(
      new TransformStream({
        transform(parsed, controller) {
          if (!parsed.success) throw parsed.error;
          types.push(parsed.value.type);
          controller.enqueue(parsed.value);
        },
      }),
    );
    let message;
    const messages = readUIMessageStream({ stream: chunks, onError: (e) => errors.push(describe(e)) });
    for await (const snapshot of messages) {
      message = snapshot;
      seen.message = snapshot;
    }
    return { event: "stream", who, parts: message?.parts ?? [], errors, types };
  })();
  return reading.catch((error) => ({ event: "stream", who, parts: [], errors: [describe(error)], types: [] }));
}

/// The text a snapshot shows so far.
const shown = (seen) =>
  (seen.message?.parts ?? [])
    .filter((p) => p.type === "text")
    .map((p) => p.text)
    .join("");

/// The state `useChat` keeps, without React: what `@ai-sdk/react`'s does, in plain fields.
class State {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(message) {
    this.messages = this.messages.concat(message);
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(index, message) {
    this.messages = [...this.messages.slice(0, index), this.snapshot(message), ...this.messages.slice(index + 1)];
  }
  snapshot(value) {
    return structuredClone(value);
  }
}

/// The smallest `AbstractChat`: what `useChat` builds, talking to Pincer with the token.
class Chat extends AbstractChat {
  constructor(id) {
    super({ id, state: new State(), transport: new DefaultChatTransport({ api, headers: auth }) });
  }
}

/// `sendMessage` as a `useChat` user does, then what the chat holds.
async function chat(who, text) {
  const c = new Chat(`chat-${who}`);
  await c.sendMessage({ text });
  const reply = c.messages.filter((m) => m.role === "assistant").at(-1);
  return {
    event: "chat",
    who,
    status: c.status,
    error: c.error ? describe(c.error) : null,
    parts: reply?.parts ?? [],
  };
}

const scenarios = {
  async one_word() {
    print(await post("raw", "Is it raining?"));
    print(await chat("chat", "Is it raining now?"));
  },

  // B is sent while A's reply is streaming (A's first text is on screen).
  async overlap() {
    const a = {};
    const first = post("A", "Tell me about alpha.", a);
    await until("A's reply showing text", () => shown(a).length > 0);
    const second = post("B", "And beta?");
    print(await first);
    print(await second);
  },

  // `/stop` is sent while A's reply is streaming.
  async stop() {
    const a = {};
    const first = post("A", "Tell me a long story.", a);
    await until("A's reply showing text", () => shown(a).length > 0);
    print(await post("stop", "/stop"));
    print(await first);
  },

  async model_breaks() {
    print(await post("A", "Tell me something."));
  },
};

const scenario = scenarios[process.argv[2]];
if (!scenario) {
  print({ event: "usage", error: `name a scenario: ${Object.keys(scenarios).join(", ")}` });
  process.exit(2);
}
try {
  await scenario();
} catch (error) {
  print({ event: "failed", error: describe(error) });
  process.exit(1);
}
