//! What the end-to-end benchmarks share: a Pincer home wired to in-process fakes (the
//! model and every chat platform given), the release `pincer run` started against
//! them, and memory readings of that process.
#![allow(dead_code)] // each bench uses its own subset

use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use pincer_fakes::FakeModel;
use pincer_fakes::platform::FakePlatform;

/// The user every platform treats as the owner.
pub(crate) const OWNER: u64 = 42;

/// `pincer run` against the fakes; killed when dropped.
pub(crate) struct Gateway {
    pub dir: tempfile::TempDir,
    pub child: Child,
    pub started: Instant,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Gateway {
    /// Write config and secrets enabling every platform in `platforms` (with `extra`
    /// TOML for `[agent]`) and start `pincer run`. Everyone is let in (`dm_policy =
    /// "open"`) so any user id opens a session.
    pub(crate) fn start(
        model: &FakeModel,
        platforms: &[&dyn FakePlatform],
        agent_extra: &str,
    ) -> anyhow::Result<Gateway> {
        let dir = tempfile::tempdir().context("cannot create a temporary home")?;
        let mut config = format!(
            "version = 1\n[agent]\nowners = [{}]\n{agent_extra}\n[router]\nlight = [\"fake/m\"]\n[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n",
            platforms
                .iter()
                .map(|p| format!("\"{}\"", p.canonical(OWNER)))
                .collect::<Vec<_>>()
                .join(", "),
            model.openai_base()
        );
        let mut secrets = String::from("channels:\n");
        for platform in platforms {
            config.push_str(&format!(
                "\n[channels.{}]\nenabled = true\ndm_policy = \"open\"\nallow_from = [\"*\"]\n{}",
                platform.name(),
                platform.config()
            ));
            if platform.name() == "matrix" {
                // Each of the bench's hundreds of people opens a direct chat at once.
                config.push_str("invites_per_hour = 0\n");
            }
            secrets.push_str(&platform.secrets());
        }
        std::fs::write(dir.path().join("config.toml"), config)?;
        let secrets_file = dir.path().join(".security.yml");
        std::fs::write(&secrets_file, secrets)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&secrets_file, std::fs::Permissions::from_mode(0o600))?;
        let started = Instant::now();
        let child = spawn(dir.path())?;
        Ok(Gateway {
            dir,
            child,
            started,
        })
    }

    /// Stop the gateway as a service manager would (SIGTERM, then wait) and start it
    /// again on the same home: the channels resume their saved sessions.
    pub(crate) fn restart(&mut self) -> anyhow::Result<()> {
        Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status()
            .context("cannot run kill")?;
        self.child.wait()?;
        self.started = Instant::now();
        self.child = spawn(self.dir.path())?;
        Ok(())
    }

    /// Wait until every platform says the adapter is connected; the time from spawn.
    pub(crate) async fn ready(&self, platforms: &[&dyn FakePlatform]) -> anyhow::Result<Duration> {
        for platform in platforms {
            if !platform.connected(Duration::from_secs(30)).await {
                bail!(
                    "{} never connected; gateway log:\n{}",
                    platform.name(),
                    self.log()
                );
            }
        }
        Ok(self.started.elapsed())
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("gateway.log")).unwrap_or_default()
    }

    /// (VmRSS, VmHWM) in KiB.
    pub(crate) fn memory(&self) -> (u64, u64) {
        memory_of(self.child.id())
    }

    /// `RssAnon` and `RssFile` of `pincer run` (KiB).
    pub(crate) fn rss_parts(&self) -> (u64, u64) {
        rss_parts(self.child.id())
    }
}

/// `pincer run` on `home`, its log appended to `home/gateway.log` (with
/// `BENCH_GATEWAY_LOG` as its `RUST_LOG`).
fn spawn(home: &std::path::Path) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("gateway.log"))?;
    Command::new(pincer_binary())
        .arg("--home")
        .arg(home)
        .arg("run")
        .env_remove("RUST_LOG")
        .envs(
            std::env::var("BENCH_GATEWAY_LOG")
                .ok()
                .map(|l| ("RUST_LOG", l)),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .context("cannot start pincer run")
}

/// The `pincer` binary cargo built for this bench (release settings), or `PINCER_BIN`
/// (say, the `profiling` build for heaptrack).
pub(crate) fn pincer_binary() -> PathBuf {
    std::env::var_os("PINCER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_pincer")))
}

/// (VmRSS, VmHWM) of a process in KiB; zeros if it is gone.
pub(crate) fn memory_of(pid: u32) -> (u64, u64) {
    let status = proc_status(pid);
    (field(&status, "VmRSS:"), field(&status, "VmHWM:"))
}

/// Resident KiB of a process split into its heap and stacks (`RssAnon`) and the
/// pages of its binary and libraries (`RssFile`, bounded by their size).
pub(crate) fn rss_parts(pid: u32) -> (u64, u64) {
    let status = proc_status(pid);
    (field(&status, "RssAnon:"), field(&status, "RssFile:"))
}

fn proc_status(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default()
}

/// A KiB figure of `/proc/<pid>/status`; 0 when the process is gone.
pub(crate) fn field(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Wait until a message in `chat` on `platform` shows `needle`; when the platform took
/// that message in.
pub(crate) async fn seen(
    platform: &dyn FakePlatform,
    chat: &str,
    needle: &str,
    timeout: Duration,
) -> anyhow::Result<Instant> {
    let deadline = Instant::now() + timeout;
    loop {
        // When the platform took it in (sent, or edited last), not when this poll
        // noticed: a poll comes a timer tick late, or later while a fake is busy.
        if let Some(shown) = platform
            .shown()
            .into_iter()
            .find(|m| m.chat == chat && m.text.contains(needle))
        {
            return Ok(shown.at);
        }
        if Instant::now() > deadline {
            bail!("{} never showed {needle:?} in {chat}", platform.name());
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
}

/// Nearest-rank percentile of sorted `values`.
pub(crate) fn percentile(values: &[Duration], q: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let rank = (q * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1000.0)
}

pub(crate) fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// A multi-threaded runtime for a bench's `main`.
/// Run a bench on the multi-threaded runtime; its error, named, fails the process.
pub(crate) fn main(name: &str, bench: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    match runtime().and_then(|rt| rt.block_on(bench)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{name}: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}
