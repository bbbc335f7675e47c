//! # pincer-fakes
//!
//! Fake servers for Pincer's tests and benchmarks: a model server (below), a Telegram
//! Bot API server (`telegram`) and a Slack Web API + Socket Mode server (`slack`), each
//! documented in its module.
//!
//! The fake model server speaks both the OpenAI
//! chat-completions API (`POST /v1/chat/completions`) and the Anthropic Messages API
//! (`POST /v1/messages`), streamed (SSE) or not, answers from a script, and fails on
//! demand. It also transcribes audio as OpenAI does (`POST /v1/audio/transcriptions`),
//! with a scripted transcript, and reads text aloud (`POST /v1/audio/speech`: a tone as
//! long as the text, so tests can measure the voice message that comes back). It binds
//! `127.0.0.1` only and never reaches a real provider.
//!
//! ```no_run
//! # async fn demo() {
//! use pincer_fakes::{FakeModel, Step};
//! let fake = FakeModel::start().await;
//! fake.push(Step::tool_call("read_file", serde_json::json!({"path": "notes.md"})));
//! fake.push(Step::rate_limited(1));
//! // point a client at fake.openai_base() or fake.anthropic_base() …
//! # }
//! ```
//!
//! ## Layout
//! - `model`    — `FakeModel`, the handle: start, URLs, script, recorded requests
//! - `step`     — `Step`, one scripted answer, and its JSON form
//! - `recorded` — `Recorded` (one request as received, its images), `Transcription`, `Format`
//! - `server`   — the router and the chat handler's checks (key, shape, model)
//! - `image`    — image parts of both formats: data URLs, base64, telling formats apart
//! - `transcription` — `POST /v1/audio/transcriptions`: its checks and answers
//! - `speech`   — `POST /v1/audio/speech`: a WAV tone as long as the text, its log
//! - `control`  — the `/_fake/*` routes for scripting from another process
//! - `state`    — the queue, log and counters shared by handle and handlers
//! - `reply`    — one `Step` → one response: order of events, stalls, cuts, errors
//! - `openai`, `anthropic` — each provider's bytes: chunks/events, errors, objects
//! - `sse`      — SSE event text and a body played from frames (pauses, hang, abort)
//! - `tokens`   — plausible usage numbers, including imitated prompt caching
//! - `cache`    — what a provider would find cached: per model, tools → system → messages
//! - `mime`     — content types guessed from file names, for the platform fakes
//! - `platform` — `FakePlatform`, what every fake chat platform offers the conformance suite
//! - `telegram` — `FakeTelegram`: the fake Bot API server, a module folder of its own
//! - `discord`  — `FakeDiscord`: the fake REST API and gateway, a module folder of its own
//! - `slack`    — `FakeSlack`: the fake Web API and Socket Mode server, ditto
//! - `synapse`  — not a fake: the real Synapse homeserver, Matrix people, `MatrixPlatform`
//! - `wait`     — `PATIENCE` and `wait_for`/`wait_until`: how every test waits for what it expects
//!   (`wait_for_within` for the real model's longer waits)
//!
//! ## Behaviour worth knowing
//! - Steps are consumed FIFO, one per chat request that passes the checks, whichever
//!   format it used. With the queue empty the reply is `Text("echo: " + last user text)`.
//! - Checks, in order, each answered with the provider's own error JSON: a required key
//!   (`require_key`) → 401; a body that is not a JSON object, no `model`/`messages`,
//!   OpenAI `stream_options` without `"stream": true`, Anthropic without the
//!   `anthropic-version` header or `max_tokens` → 400; model `"missing-model"` → 404.
//!   Refused requests are still recorded and take no step.
//! - Image parts are checked as the APIs check them (400 otherwise). OpenAI: content
//!   parts of known types; `image_url` only in user messages, its `url` a web address
//!   or `data:image/{jpeg,png,gif,webp};base64,…` that decodes. Anthropic: an `image`
//!   block (also inside `tool_result`) has a `base64` source of those four media types
//!   whose data decodes, is at most 5 MB of base64 and, when its first bytes show an
//!   image format, is that format (bytes that look like no image pass, so tests may
//!   use placeholders); `url` and `file` sources pass.
//! - `limit_context(Some(n))`: a request over n tokens (body bytes ÷ 4) gets the
//!   provider's 400 for a context that is too long.
//! - `answer_when_system_contains(needle, step)`: a standing answer for requests whose
//!   system prompt holds `needle`, taken before the script queue and never used up.
//! - Anthropic extended thinking (`"thinking": {"type": "enabled", "budget_tokens": N}`):
//!   the budget must be at least 1024 and below `max_tokens`; every reply opens with a
//!   thinking block signed with a hash of its text; a request whose last assistant
//!   message has `tool_use` must start that message with the thinking block unchanged
//!   (else 400, in the real API's words).
//! - Transcriptions: multipart `file` (with a name ending in an audio extension OpenAI
//!   takes: flac m4a mp3 mp4 mpeg mpga oga ogg wav webm) and `model` are required;
//!   `response_format` `json` (default) → `{"text"}`, `verbose_json` →
//!   `{"task","language","duration","text","segments"}`, `text`/`srt`/`vtt` → plain
//!   text. The key is checked as for chat (401); an empty file → 400, over 25 MB →
//!   413. The transcript is `set_transcript`'s; failures are queued apart from the
//!   chat script (`fail_next_transcription`).
//! - Request bodies up to 64 MB are read.
//! - As with the real APIs, only `"stream": true` gets SSE; otherwise one JSON object.
//! - OpenAI streams carry `usage` only with `stream_options.include_usage: true` (then
//!   every chunk has `"usage": null` and a last chunk has `"choices": []` and the usage).
//! - Text streams one word per delta; tool arguments go in up to three fragments.
//! - `Step::Runaway` plays a model that loops (a text, then another thousands of times,
//!   ending in `max_tokens`); `hung_up()` counts streamed replies whose client left
//!   before their end, so a test can tell a loop was cut rather than read through.
//! - Usage imitates prompt caching as providers do it: per model, a request counts as
//!   cached what it shares with that model's previous request in the providers' order
//!   (tools, system prompt, messages), whatever the JSON key order; Anthropic only when
//!   the request has a `cache_control` marker (`tokens`, `cache`).
//!
//! ## Control routes (for another process)
//! - `POST /_fake/script` — body: a JSON array of steps, appended to the queue; answers
//!   `{"queued": N}`. Steps use serde's externally tagged, snake_case form:
//!   `{"text":"hi"}`, `{"truncated":"hi"}`,
//!   `{"tool_calls":{"text":"optional","calls":[["name",{"arg":1}]]}}`,
//!   `{"error":{"status":429,"body":"","retry_after":1}}` (`body`, `retry_after` optional),
//!   `{"delay":{"ms":500,"then":{"text":"late"}}}`,
//!   `{"slow_text":{"text":"a b c","chunk_delay_ms":100}}`, `"stall"`, `{"cut":"text"}`,
//!   `{"unfinished":"text"}`, `"malformed"`, `{"stream_error":{"kind":"overloaded_error"}}`,
//!   `{"runaway":{"text":"hi","repeat":" hi","times":2000,"chunk_delay_ms":2}}`.
//! - `GET /_fake/requests` — `[{"format":"openai"|"anthropic","body":..,"headers":[[k,v]..],"at_ms":N}]`.
//! - `POST /_fake/reset` — clears queue and log, transcription log and failures, and
//!   sets the transcript back to its default (204).
//! - `GET /_fake/transcriptions` — `[{"model","file_name","content_type","size",
//!   "response_format","language","status"}]`, oldest first.
//! - `POST /_fake/transcript` — `{"text":"..","duration_secs":3.5}` (duration optional,
//!   42.0): what later transcriptions answer (204).
//! - `POST /_fake/transcription_failure` — `{"status":429,"retry_after":1}`
//!   (`retry_after` optional): the next transcription fails so; answers `{"queued":N}`.

#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
// Test code: the fakes read the real clock and queue without bounds, as tests may.
#![allow(clippy::disallowed_methods)]

mod anthropic;
mod cache;
mod control;
pub mod discord;
mod image;
mod mime;
mod model;
mod openai;
pub mod platform;
mod recorded;
mod reply;
mod server;
pub mod slack;
mod speech;
mod sse;
mod state;
mod step;
pub mod synapse;
pub mod telegram;
mod tokens;
mod transcription;
mod wait;

pub use model::FakeModel;
pub use recorded::{Format, Recorded, RecordedJson, Transcription};
pub use server::MISSING_MODEL;
pub use speech::{SPEECH_SECS_PER_CHAR, SpeechRequest, tone_wav};
pub use step::Step;
pub use wait::{PATIENCE, wait_for, wait_for_within, wait_until};
