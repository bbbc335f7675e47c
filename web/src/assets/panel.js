// Pincer's panel: the live parts. The chat posts to /api/chat and reads the AI SDK v6
// UI message stream (SSE) as it arrives; forms that change something ask first when
// they carry data-confirm. No build step, no inline script (the CSP forbids it).
"use strict";

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) event.preventDefault();
});

const chatForm = document.getElementById("chat-form");
if (chatForm) {
  const log = document.getElementById("chat-log");
  const input = chatForm.querySelector("textarea");
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const chatId = "web";
  let history = [];

  const add = (cls, who) => {
    const box = document.createElement("div");
    box.className = "msg " + cls;
    const label = document.createElement("div");
    label.className = "who";
    label.textContent = who;
    box.append(label);
    log.append(box);
    return box;
  };

  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); chatForm.requestSubmit(); }
  });

  chatForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    const mine = add("user", "You");
    const body = document.createElement("div");
    body.className = "text";
    body.textContent = text;
    mine.append(body);
    const message = { id: "u" + Date.now(), role: "user", parts: [{ type: "text", text }] };
    history.push(message);
    const reply = add("assistant", "Pincer");
    reply.setAttribute("aria-busy", "true");
    const blocks = new Map();
    const tools = new Map();
    let step = [];
    const block = (id, cls) => {
      const el = document.createElement("div");
      el.className = cls;
      reply.append(el);
      blocks.set(id, el);
      step.push(el);
      return el;
    };
    const handle = (chunk) => {
      switch (chunk.type) {
        case "start-step": step = []; break;
        case "text-start": block(chunk.id, "text"); break;
        case "reasoning-start": block(chunk.id, "reasoning"); break;
        case "text-delta":
        case "reasoning-delta": {
          const el = blocks.get(chunk.id);
          if (el) el.textContent += chunk.delta;
          break;
        }
        case "tool-input-available": {
          const d = document.createElement("details");
          d.className = "tool";
          const s = document.createElement("summary");
          s.textContent = "tool: " + chunk.toolName;
          const pre = document.createElement("pre");
          pre.textContent = JSON.stringify(chunk.input, null, 2);
          d.append(s, pre);
          reply.append(d);
          tools.set(chunk.toolCallId, d);
          break;
        }
        case "tool-output-available":
        case "tool-output-error": {
          const d = tools.get(chunk.toolCallId);
          if (!d) break;
          const pre = document.createElement("pre");
          pre.textContent = chunk.type === "tool-output-error" ? "error: " + chunk.errorText
            : (typeof chunk.output === "string" ? chunk.output : JSON.stringify(chunk.output, null, 2));
          d.append(pre);
          break;
        }
        case "data-retract": step.forEach((el) => el.remove()); step = []; break;
        case "error": {
          const el = document.createElement("div");
          el.className = "flash err";
          el.textContent = chunk.errorText;
          reply.append(el);
          break;
        }
        case "finish": reply.removeAttribute("aria-busy"); reply.dataset.done = "true"; break;
      }
    };
    try {
      const response = await fetch("/api/chat", {
        method: "POST",
        headers: { "content-type": "application/json", "x-csrf-token": csrf },
        // The server reads the last user message only; the conversation lives there.
        body: JSON.stringify({ id: chatId, messages: [message], trigger: "submit-message" }),
      });
      if (!response.ok) throw new Error(await response.text());
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const event = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          for (const line of event.split("\n")) {
            if (!line.startsWith("data: ")) continue;
            const data = line.slice(6);
            if (data === "[DONE]") continue;
            try { handle(JSON.parse(data)); } catch (_) { /* a malformed event is skipped */ }
          }
        }
      }
      const said = [...reply.querySelectorAll(".text")].map((el) => el.textContent).join("\n\n");
      history.push({ id: "a" + Date.now(), role: "assistant", parts: [{ type: "text", text: said }] });
    } catch (err) {
      handle({ type: "error", errorText: "The panel could not reach Pincer: " + err.message });
      handle({ type: "finish" });
    }
    log.scrollTop = log.scrollHeight;
  });
}
