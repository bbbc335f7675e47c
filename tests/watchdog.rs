//! `pincer run` under systemd's notify protocol, with this test playing systemd: a
//! datagram socket bound in a temporary directory is the gateway's `NOTIFY_SOCKET`, and
//! `WATCHDOG_USEC` asks for a watchdog. The gateway says `READY=1` once its channels
//! listen, `WATCHDOG=1` only while its checks pass — not while the database is locked
//! so the store cannot write, with the reason in `STATUS=` — and `STOPPING=1` on SIGTERM.

use std::os::unix::net::UnixDatagram;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use pincer_fakes::platform::FakePlatform;
use pincer_fakes::telegram::FakeTelegram;

use crate::common::platform::{self, owners};
use crate::common::{Gateway, wait_for};

/// What the gateway told "systemd", in order.
#[derive(Clone, Default)]
struct Systemd {
    said: Arc<Mutex<Vec<String>>>,
}

impl Systemd {
    /// Listen on `socket` for as long as the test runs (a thread of its own).
    fn listen(socket: UnixDatagram) -> Systemd {
        let systemd = Systemd::default();
        let said = Arc::clone(&systemd.said);
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = socket.recv(&mut buf) {
                let message = String::from_utf8_lossy(&buf[..n]).into_owned();
                said.lock().unwrap().push(message);
            }
        });
        systemd
    }

    fn said(&self) -> Vec<String> {
        self.said.lock().unwrap().clone()
    }

    /// Wait until a message after the first `from` contains `needle`; its index.
    async fn wait_for(&self, from: usize, needle: &str, log: impl Fn() -> String) -> usize {
        wait_for(
            async || {
                self.said()
                    .iter()
                    .enumerate()
                    .skip(from)
                    .find(|(_, m)| m.lines().any(|line| line.starts_with(needle)))
                    .map(|(at, _)| at)
            },
            || {
                format!(
                    "systemd never heard {needle:?} after message {from}; it heard {:#?}\ngateway log:\n{}",
                    self.said(),
                    log()
                )
            },
        )
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_is_fed_only_while_the_gateway_works_and_hears_it_stop() {
    let telegram = FakeTelegram::start().await;
    let owner = owners(&telegram, &[42]);
    let setup = platform::setup(telegram, "", &owner).await;
    let dir = tempfile::tempdir().expect("a directory for the socket");
    let path = dir.path().join("notify");
    let systemd = Systemd::listen(UnixDatagram::bind(&path).expect("bind the notify socket"));
    let log = std::fs::File::create(setup.home.path().join("gateway.log")).expect("log file");
    let child = setup
        .home
        .command(&["run"])
        .env("NOTIFY_SOCKET", &path)
        .env("WATCHDOG_USEC", "200000")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start pincer run");
    let pid = child.id();
    let gateway = Gateway { child };
    let log = || setup.log();

    let ready = systemd.wait_for(0, "READY=1", log).await;
    assert!(
        systemd.said()[..ready]
            .iter()
            .all(|m| !m.contains("WATCHDOG=1")),
        "the watchdog was fed before the gateway was ready: {:#?}",
        systemd.said()
    );
    assert!(
        setup.platform.connected(crate::common::PATIENCE).await,
        "telegram never connected"
    );
    let fed = systemd.wait_for(ready, "WATCHDOG=1", log).await;

    // Another process holds the database's write lock: the store cannot write, and the
    // watchdog is not fed while that lasts.
    let holder = rusqlite::Connection::open(setup.home.path().join("pincer.db")).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let failing = systemd.wait_for(fed, "STATUS=not alive", log).await;
    assert!(
        systemd.said()[failing].contains("the store"),
        "the status does not say the store is why: {:?}",
        systemd.said()[failing]
    );
    // Every check sends its status while it fails: wait for three more, fed by none.
    let mut last = failing;
    for _ in 0..3 {
        last = systemd.wait_for(last + 1, "STATUS=not alive", log).await;
    }
    let during = &systemd.said()[failing..=last];
    assert!(
        during.iter().all(|m| !m.contains("WATCHDOG=1")),
        "the watchdog was fed while the store could not write: {during:#?}"
    );

    holder.execute_batch("COMMIT").unwrap();
    let again = systemd.wait_for(last + 1, "WATCHDOG=1", log).await;
    assert!(
        systemd.said()[again].contains("STATUS=running"),
        "the status does not say it works again: {:?}",
        systemd.said()[again]
    );

    let kill = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(kill.success());
    let stopping = systemd.wait_for(again, "STOPPING=1", log).await;
    let after: Vec<String> = systemd.said()[stopping + 1..].to_vec();
    assert!(
        after.iter().all(|m| !m.contains("WATCHDOG=1")),
        "the watchdog was fed after STOPPING=1: {after:#?}"
    );
    drop(gateway);
}
