//! The one Chromium of a gateway: started on the first browser call (with its guard
//! proxy, `proxy`), given a browser context and a tab per conversation, and stopped
//! after `[tools.browser] idle_s` without a call, or when the last tab closes. The
//! process is killed when its handle drops (`kill_on_drop`), so it never outlives the
//! gateway's runtime. What a call does in a tab is `session`'s business.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Weak};
use std::time::Duration;

use chromiumoxide::Browser;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::browser::{
    BrowserContextId, SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams,
};
use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::pipe;
use super::proxy::{self, AllowList, Guard};
use crate::tools::ToolError;
use crate::tools::web::Lookup;

/// How long Chromium may take to answer its first DevTools command.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Names tried on PATH when `[tools.browser] executable` is unset.
const CANDIDATES: [&str; 4] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// What starting Chromium needs.
#[derive(Clone)]
pub struct Settings {
    /// `[tools.browser] executable`; `None` searches PATH.
    pub executable: Option<String>,
    /// Chromium's own profile (user-data-dir), under `$PINCER_HOME`: never the owner's.
    pub profile: PathBuf,
    /// `[tools.browser] idle_s`.
    pub idle: Duration,
    /// `[tools.browser] allow_private`.
    pub allow: AllowList,
    /// A name lookup for the guard instead of the system resolver (tests).
    pub lookup: Option<Lookup>,
    /// Where Chromium saves downloads: a folder under `state/`, out of every command's
    /// reach (a command could swap the workspace's `tool-output/` for a link to anywhere
    /// while Chromium writes). Each call moves what finished into `tool-output/`
    /// (`deliver`), opened beneath the workspace with no link followed.
    pub downloads: PathBuf,
}

/// A running Chromium and the tabs it holds.
pub(super) struct Running {
    pub browser: Browser,
    /// Checks every request; its refusals are reported with each result.
    pub guard: Arc<Guard>,
    /// One browser context and tab per conversation (by stored session id).
    pub tabs: HashMap<i64, Tab>,
    pub last_used: Instant,
    /// The process: killed when this drops.
    _child: tokio::process::Child,
    /// The CDP handler, the proxy and the stderr reader: aborted when this drops.
    tasks: Vec<JoinHandle<()>>,
}

/// One conversation's tab, in its own browser context (cookies and storage apart).
pub(super) struct Tab {
    pub context: BrowserContextId,
    pub page: Page,
}

impl Drop for Running {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// What the idle watch needs to know of what it stops.
pub(super) trait Used {
    fn last_used(&self) -> Instant;
}

impl Used for Running {
    fn last_used(&self) -> Instant {
        self.last_used
    }
}

/// The gateway's Chromium slot: empty until the first call.
pub(super) type Slot = Arc<Mutex<Option<Running>>>;

/// Stop what `slot` holds once `idle` has passed since its last use; return when it is
/// stopped or the slot is gone. Runs on tokio's clock, so a paused clock shows it.
pub(super) async fn watch_idle<R: Used>(slot: Weak<Mutex<Option<R>>>, idle: Duration) {
    loop {
        let deadline = {
            let Some(slot) = slot.upgrade() else { return };
            let mut held = slot.lock().await;
            let Some(running) = held.as_ref() else { return };
            let deadline = running.last_used() + idle;
            if Instant::now() >= deadline {
                tracing::info!(
                    "the browser was idle for {} s: stopping Chromium",
                    idle.as_secs()
                );
                *held = None;
                return;
            }
            deadline
        };
        tokio::time::sleep_until(deadline).await;
    }
}

/// The Chromium to run: the configured one, else the first candidate on PATH.
fn executable(settings: &Settings) -> Result<PathBuf, ToolError> {
    if let Some(path) = &settings.executable {
        return Ok(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    CANDIDATES
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            ToolError::new(
                "the browser needs Chromium and none was found on PATH (chromium, chromium-browser, google-chrome): install it (Debian: apt-get install chromium) or set executable under [tools.browser] in config.toml",
            )
        })
}

/// Start Chromium behind a new guard proxy.
pub(super) async fn start(settings: &Settings) -> Result<Running, ToolError> {
    let exe = executable(settings)?;
    std::fs::create_dir_all(&settings.profile).map_err(|err| {
        ToolError::new(format!(
            "cannot make the browser profile {}: {err}",
            settings.profile.display()
        ))
    })?;
    // Best effort: the profile holds cookies; only the owner should read it.
    let _ = crate::home::set_mode(&settings.profile, 0o700);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|err| ToolError::new(format!("cannot open the browser's guard proxy: {err}")))?;
    let proxy_port = listener
        .local_addr()
        .map_err(|err| ToolError::new(format!("cannot open the browser's guard proxy: {err}")))?
        .port();
    let guard = Arc::new(Guard::new(settings.allow.clone(), settings.lookup.clone()));
    let mut tasks = vec![tokio::spawn(proxy::serve(listener, Arc::clone(&guard)))];
    let mut command = pipe::command(&exe, &flags(&settings.profile, proxy_port));
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|err| {
        ToolError::new(format!(
            "cannot start Chromium ({}): {err}; install it or set executable under [tools.browser] in config.toml",
            exe.display()
        ))
    })?;
    let (Some(to), Some(from), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ToolError::new("Chromium's pipes were not set up"));
    };
    // Keep reading its stderr, or Chromium stalls once the pipe is full.
    let mut lines = BufReader::new(stderr).lines();
    tasks.push(tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::trace!(%line, "chromium");
        }
    }));
    let bridge = pipe::bridge(to, from)
        .await
        .map_err(|err| ToolError::new(format!("cannot reach Chromium's DevTools: {err}")))?;
    tasks.push(bridge.task);
    let connect = Browser::connect(bridge.url);
    let (browser, mut handler) = tokio::time::timeout(START_TIMEOUT, connect)
        .await
        .map_err(|_| {
            ToolError::new(format!(
                "Chromium ({}) did not answer within {} s; run it by hand with --headless to see why",
                exe.display(),
                START_TIMEOUT.as_secs()
            ))
        })?
        .map_err(|err| ToolError::new(format!("cannot reach Chromium's DevTools: {err}")))?;
    tasks.push(tokio::spawn(async move {
        while let Some(event) = handler.next().await {
            if let Err(err) = event {
                tracing::debug!("chromium devtools: {err}");
            }
        }
    }));
    tracing::info!(exe = %exe.display(), "Chromium started for the browser tool");
    Ok(Running {
        browser,
        guard,
        tabs: HashMap::new(),
        last_used: Instant::now(),
        _child: child,
        tasks,
    })
}

/// Chromium's command line: headless, quiet on a closed network, every request
/// through the guard (loopback too), no WebRTC around it, its own sandbox unless root.
fn flags(profile: &Path, proxy_port: u16) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--headless",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-dev-shm-usage",
        "--mute-audio",
        "--dns-prefetch-disable",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--proxy-bypass-list=<-loopback>",
        pipe::FLAG,
    ]
    .map(String::from)
    .to_vec();
    flags.push(format!("--proxy-server=http://127.0.0.1:{proxy_port}"));
    flags.push(format!("--user-data-dir={}", profile.display()));
    // Chromium refuses to run as root with its sandbox on (see docs/tools.md).
    if rustix::process::geteuid().is_root() {
        flags.push("--no-sandbox".into());
    }
    flags.push("about:blank".into());
    flags
}

/// The conversation's tab, made (with its own browser context) on first use.
pub(super) async fn tab<'a>(
    running: &'a mut Running,
    session: i64,
    downloads: &Path,
) -> Result<&'a Tab, ToolError> {
    if !running.tabs.contains_key(&session) {
        let context = running
            .browser
            .create_browser_context(CreateBrowserContextParams::default())
            .await
            .map_err(|err| ToolError::new(format!("cannot open a browser context: {err}")))?;
        // Downloads only into the private folder, and only if it is a real folder.
        let _ = std::fs::create_dir_all(downloads);
        let _ = crate::home::set_mode(downloads, 0o700);
        let real_dir = std::fs::symlink_metadata(downloads).is_ok_and(|m| m.is_dir());
        let behavior = SetDownloadBehaviorParams {
            behavior: if real_dir {
                SetDownloadBehaviorBehavior::Allow
            } else {
                SetDownloadBehaviorBehavior::Deny
            },
            browser_context_id: Some(context.clone()),
            download_path: real_dir.then(|| downloads.display().to_string()),
            events_enabled: None,
        };
        if let Err(err) = running.browser.execute(behavior).await {
            tracing::warn!("the browser's download folder was not set: {err}");
        }
        let target = CreateTargetParams {
            browser_context_id: Some(context.clone()),
            ..CreateTargetParams::new("about:blank")
        };
        let page = running
            .browser
            .new_page(target)
            .await
            .map_err(|err| ToolError::new(format!("cannot open a browser tab: {err}")))?;
        running.tabs.insert(session, Tab { context, page });
    }
    running
        .tabs
        .get(&session)
        .ok_or_else(|| ToolError::new("the browser tab vanished"))
}

/// Close the conversation's tab and its context; true if it had one.
pub(super) async fn close_tab(running: &mut Running, session: i64) -> bool {
    let Some(tab) = running.tabs.remove(&session) else {
        return false;
    };
    // Closing a tab Chromium already lost is not worth an error.
    let _ = tab.page.close().await;
    let _ = running.browser.dispose_browser_context(tab.context).await;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Fake {
        last: Instant,
        stopped: Arc<AtomicBool>,
    }
    impl Used for Fake {
        fn last_used(&self) -> Instant {
            self.last
        }
    }
    impl Drop for Fake {
        fn drop(&mut self) {
            self.stopped.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn chromium_is_stopped_after_idle_s_without_a_call_and_not_before() {
        let stopped = Arc::new(AtomicBool::new(false));
        let slot = Arc::new(Mutex::new(Some(Fake {
            last: Instant::now(),
            stopped: Arc::clone(&stopped),
        })));
        let watch = tokio::spawn(watch_idle(Arc::downgrade(&slot), Duration::from_secs(300)));
        tokio::time::sleep(Duration::from_secs(200)).await;
        // A call at 200 s moves the deadline to 500 s.
        if let Some(fake) = slot.lock().await.as_mut() {
            fake.last = Instant::now();
        }
        tokio::time::sleep(Duration::from_secs(299)).await;
        assert!(
            !stopped.load(Ordering::SeqCst),
            "stopped while still in use"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        watch.await.unwrap();
        assert!(stopped.load(Ordering::SeqCst));
        assert!(slot.lock().await.is_none());
    }

    #[test]
    fn every_request_goes_through_the_guard_and_root_turns_the_sandbox_off() {
        let flags = flags(Path::new("/h/browser/profile"), 4242);
        assert!(flags.contains(&"--proxy-server=http://127.0.0.1:4242".to_string()));
        assert!(flags.contains(&"--proxy-bypass-list=<-loopback>".to_string()));
        assert!(flags.contains(&"--user-data-dir=/h/browser/profile".to_string()));
        let root = rustix::process::geteuid().is_root();
        assert_eq!(flags.contains(&"--no-sandbox".to_string()), root);
    }
}
