//! `Homeserver`: one real Synapse on 127.0.0.1, its files in a directory of its own
//! (config, SQLite database, media, logs), started and stopped by the test process and
//! never outliving it.
//!
//! Synapse is spawned from one long-lived keeper thread, and the Python bootstrap below
//! asks the kernel for SIGKILL when that thread's process dies (`PR_SET_PDEATHSIG`), so
//! a test process that ends — passed, panicked or killed — takes its Synapse with it.
//! It does not cover a Synapse stopped with SIGSTOP before its parent died (it then dies
//! when continued). Directories of dead test processes are removed by the next start.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha1::Sha1;

use super::config;
use super::person::Person;

/// How long Synapse may take to answer after it is started (1.3-2.5 s on a 2-core
/// machine; a busy CI machine is far slower).
const STARTUP: Duration = Duration::from_secs(90);

/// Where the tests look for Synapse's python unless `PINCER_SYNAPSE_PYTHON` says.
const VENV_PYTHON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../synapse/.venv/bin/python");

/// Runs Synapse's homeserver in this python process after asking to be killed when the
/// test process that spawned it dies (and checking it has not died already).
const BOOTSTRAP: &str = "\
import ctypes, os, runpy, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
if os.getppid() != int(os.environ['PINCER_SYNAPSE_PARENT']):
    sys.exit('pincer-fakes: the test process that started Synapse is gone')
sys.argv[0] = 'synapse.app.homeserver'
runpy.run_module('synapse.app.homeserver', run_name='__main__', alter_sys=True)
";

/// Names unique in this test process: instance directories and registered users.
static SERIAL: AtomicU64 = AtomicU64::new(1);

pub(crate) fn serial() -> u64 {
    SERIAL.fetch_add(1, Ordering::Relaxed)
}

/// The one instance `Homeserver::shared` hands out.
static SHARED: tokio::sync::OnceCell<Homeserver> = tokio::sync::OnceCell::const_new();

/// A running (or stopped) Synapse.
pub struct Homeserver {
    /// `http://127.0.0.1:PORT`, the client API.
    url: String,
    /// Kept across restarts, so clients and the proxy find it again.
    port: u16,
    /// Config, database, media store and logs; removed when dropped.
    dir: PathBuf,
    /// `registration_shared_secret`: how `register` makes users with registration closed.
    secret: String,
    /// Synapse's process while it runs.
    child: Mutex<Option<Child>>,
}

impl Homeserver {
    /// The Synapse every test of this process shares (started on first use). Tests that
    /// share it keep apart by registering their own users (`register` names are unique).
    pub async fn shared() -> &'static Homeserver {
        SHARED.get_or_init(Homeserver::start_own).await
    }

    /// A Synapse of the caller's own, for a test that stops or restarts it; killed and
    /// its directory removed when dropped.
    pub async fn start_own() -> Homeserver {
        let dir = instance_dir();
        let port = free_port();
        let secret = config::random_hex::<16>().expect("random bytes from /dev/urandom");
        config::write(&dir, port, &secret)
            .unwrap_or_else(|e| panic!("writing Synapse's config in {}: {e}", dir.display()));
        let server = Homeserver {
            url: format!("http://127.0.0.1:{port}"),
            port,
            dir,
            secret,
            child: Mutex::new(None),
        };
        server.start().await;
        server
    }

    /// The client API's base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Config, database, media store and Synapse's log (`homeserver.log`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Kill Synapse (SIGKILL, as a crash would) and wait until it is gone. Its data stays.
    pub fn stop(&self) {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut child) = child {
            // Already exited is fine: either way it is not running afterwards.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Start Synapse (again) on the same port and data; returns once it answers
    /// `GET /_matrix/client/versions`. Panics with the tail of its log if it does not.
    pub async fn start(&self) {
        self.stop();
        let child = spawn_kept(self.command()).unwrap_or_else(|e| {
            panic!(
                "could not run Synapse's python {}: {e}; run scripts/install-synapse.sh",
                python().display()
            )
        });
        *self.child.lock().unwrap_or_else(|e| e.into_inner()) = Some(child);
        let started = std::time::Instant::now();
        self.wait_ready().await;
        eprintln!(
            "Synapse answered at {} after {:?} (files: {})",
            self.url,
            started.elapsed(),
            self.dir.display()
        );
    }

    /// `stop` then `start`: what a homeserver restart looks like to its clients.
    pub async fn restart(&self) {
        self.stop();
        self.start().await;
    }

    /// The last `lines` lines of Synapse's log and of its stdout/stderr.
    pub fn log_tail(&self, lines: usize) -> String {
        let mut out = String::new();
        for name in ["homeserver.log", "stdout.log"] {
            let text = std::fs::read_to_string(self.dir.join(name)).unwrap_or_default();
            let all: Vec<&str> = text.lines().collect();
            let tail = &all[all.len().saturating_sub(lines)..];
            out.push_str(&format!("--- {name} (last {} lines)\n", tail.len()));
            for line in tail {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    /// A new user with a unique name made from `name` (`{name}-{n}`), logged in.
    pub async fn register(&self, name: &str, admin: bool) -> Person {
        let localpart = format!("{}-{}", name.to_lowercase(), serial());
        let password = config::random_hex::<12>().expect("random bytes from /dev/urandom");
        self.register_exact(&localpart, &password, admin).await
    }

    /// A new user `@{localpart}:localhost` with `password`, through the admin API's
    /// shared-secret registration (a nonce, then an HMAC-SHA1 of the request).
    pub async fn register_exact(&self, localpart: &str, password: &str, admin: bool) -> Person {
        let client = reqwest::Client::new();
        let url = format!("{}/_synapse/admin/v1/register", self.url);
        let nonce: Value = client
            .get(&url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .expect("Synapse's registration nonce")
            .json()
            .await
            .expect("a nonce in JSON");
        let nonce = nonce["nonce"].as_str().expect("a nonce").to_owned();
        let role = if admin { "admin" } else { "notadmin" };
        let mut mac = Hmac::<Sha1>::new_from_slice(self.secret.as_bytes()).expect("any key length");
        for (i, part) in [nonce.as_str(), localpart, password, role]
            .iter()
            .enumerate()
        {
            if i > 0 {
                mac.update(b"\0");
            }
            mac.update(part.as_bytes());
        }
        let mac: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let body = json!({
            "nonce": nonce, "username": localpart, "displayname": localpart,
            "password": password, "admin": admin, "mac": mac,
        });
        let answer = client
            .post(&url)
            .json(&body)
            .send()
            .await
            .expect("Synapse answers registration");
        let status = answer.status();
        let answer: Value = answer.json().await.unwrap_or_default();
        assert!(
            status.is_success(),
            "registering {localpart}: {status} {answer}"
        );
        Person::new(
            &self.url,
            answer["user_id"].as_str().expect("a user_id"),
            answer["access_token"].as_str().expect("an access_token"),
        )
    }

    /// Log `user` (an id or localpart) in with `password`, as a client does: a new
    /// device and access token.
    pub async fn login(&self, user: &str, password: &str) -> Person {
        let body = json!({
            "type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": user},
            "password": password,
        });
        let answer = reqwest::Client::new()
            .post(format!("{}/_matrix/client/v3/login", self.url))
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("logging {user} in: {e}"));
        let status = answer.status();
        let answer: Value = answer.json().await.unwrap_or_default();
        assert!(status.is_success(), "logging {user} in: {status} {answer}");
        Person::new(
            &self.url,
            answer["user_id"].as_str().expect("a user_id"),
            answer["access_token"].as_str().expect("an access_token"),
        )
    }

    fn command(&self) -> Command {
        let mut command = Command::new(python());
        command
            .args(["-c", BOOTSTRAP, "-c"])
            .arg(self.dir.join("homeserver.yaml"))
            .current_dir(&self.dir)
            .env("PINCER_SYNAPSE_PARENT", std::process::id().to_string())
            .stdin(Stdio::null());
        let log = |name: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.dir.join(name))
                .map(Stdio::from)
                .unwrap_or_else(|_| Stdio::null())
        };
        command.stdout(log("stdout.log")).stderr(log("stdout.log"));
        command
    }

    async fn wait_ready(&self) {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .expect("an HTTP client");
        let versions = format!("{}/_matrix/client/versions", self.url);
        let deadline = tokio::time::Instant::now() + STARTUP;
        loop {
            let exited = {
                let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
                child.as_mut().and_then(|c| c.try_wait().ok().flatten())
            };
            if let Some(status) = exited {
                panic!(
                    "Synapse exited ({status}) while starting:\n{}",
                    self.log_tail(40)
                );
            }
            if let Ok(answer) = client.get(&versions).send().await
                && answer.status().is_success()
            {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                panic!(
                    "Synapse did not answer within {STARTUP:?}:\n{}",
                    self.log_tail(40)
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Homeserver {
    fn drop(&mut self) {
        self.stop();
        // A leftover directory is removed by the next run; nothing to do if this fails.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Synapse's python: `PINCER_SYNAPSE_PYTHON`, else the venv scripts/install-synapse.sh
/// makes. Panics saying how to install it when neither exists.
pub fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("PINCER_SYNAPSE_PYTHON") {
        return PathBuf::from(python);
    }
    let venv = PathBuf::from(VENV_PYTHON);
    assert!(
        venv.exists(),
        "no Synapse at {}: run scripts/install-synapse.sh (or set PINCER_SYNAPSE_PYTHON to a python that can `import synapse`)",
        venv.display()
    );
    venv
}

/// A port nobody listens on now: bind port 0, read the port, let it go.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A fresh directory under `$TMPDIR/pincer-synapse/`, named after this process; those
/// of processes that are gone are removed first.
fn instance_dir() -> PathBuf {
    let base = std::env::temp_dir().join("pincer-synapse");
    if let Ok(entries) = std::fs::read_dir(&base) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let pid = name
                .to_string_lossy()
                .split('-')
                .next()
                .unwrap_or("")
                .to_owned();
            if !pid.is_empty() && !Path::new("/proc").join(&pid).exists() {
                // Another process may be removing it too; either way it goes.
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let dir = base.join(format!("{}-{}", std::process::id(), serial()));
    std::fs::create_dir_all(dir.join("media"))
        .unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

type SpawnRequest = (Command, mpsc::SyncSender<std::io::Result<Child>>);

/// Spawn `command` from the keeper thread, which lives as long as the process: the
/// parent-death signal fires when the spawning thread ends, so it must not be a test's
/// or a runtime's thread.
fn spawn_kept(command: Command) -> std::io::Result<Child> {
    static KEEPER: OnceLock<mpsc::Sender<SpawnRequest>> = OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (requests, incoming) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("synapse-keeper".into())
            .spawn(move || {
                for (mut command, reply) in incoming {
                    // The asker waits for the answer; if it is gone, so is the child's use.
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("a thread to spawn Synapse from");
        requests
    });
    let (reply, answer) = mpsc::sync_channel(1);
    keeper
        .send((command, reply))
        .map_err(|_| std::io::Error::other("the Synapse keeper thread is gone"))?;
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the Synapse keeper thread is gone"))?
}
