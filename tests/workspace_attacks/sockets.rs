//! Sockets a script could use to get out: with `network = false`, the system's UNIX
//! sockets (a connect needs no writable mount, so a socket merely visible answers);
//! with the network on, the web panel on the loopback, which must never answer a
//! sandboxed command — while the owner, also on the loopback, still gets every page,
//! even after a flood of silent connections.

use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::rig::{Rig, exec, free_port, get, http, write_file};
use crate::common::PATIENCE;

/// Connects to every socket path it is given, says what happened, sends a knock.
const UNIX_PROBE: &str = "import socket, sys\nfor path in sys.argv[1:]:\n    try:\n        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n        s.connect(path)\n        s.sendall(b'KNOCK')\n        s.close()\n        print('REACHED', path)\n    except OSError as e:\n        print('REFUSED', path, e)\n";

/// A socket the test listens on, outside the workspace.
struct Listening {
    path: PathBuf,
    listener: UnixListener,
}

impl Listening {
    fn at(path: PathBuf) -> Listening {
        let listener = UnixListener::bind(&path).expect("listen on a UNIX socket");
        listener.set_nonblocking(true).expect("non-blocking");
        Listening { path, listener }
    }

    /// Whether anyone connected since: the probe has ended by now, so a connection it
    /// made is waiting to be accepted.
    fn knocked(&self) -> bool {
        self.listener.accept().is_ok()
    }
}

/// Where the test may put a socket under `/run`, as the system's services do: only
/// root can (CI runs as root); elsewhere that case is left out, said on stderr.
fn under_run() -> Option<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("pincer-test-")
        .tempdir_in("/run")
        .ok();
    if dir.is_none() {
        eprintln!("/run is not writable here (not root): its socket case is left out");
    }
    dir
}

fn system_sockets(sandbox: &'static str) {
    // $XDG_RUNTIME_DIR somewhere that is neither /run nor /tmp (which bwrap makes
    // private anyway), so only hiding it by name keeps it out.
    let runtime = tempfile::Builder::new()
        .prefix("xdg-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("a runtime dir");
    let run = under_run();
    let mut sockets = vec![Listening::at(runtime.path().join("bus"))];
    if let Some(run) = &run {
        sockets.push(Listening::at(run.path().join("daemon.sock")));
    }
    let paths: Vec<String> = sockets
        .iter()
        .map(|s| s.path.display().to_string())
        .collect();
    let probe = format!("/usr/bin/python3 probe.py {}", paths.join(" "));
    let mut rig = Rig::new(sandbox, "network = true");
    rig.env("XDG_RUNTIME_DIR", &runtime.path().display().to_string());

    // With the network on they answer: the probe can reach what it aims at.
    let turn = rig.turn(&[write_file("probe.py", UNIX_PROBE), exec(&probe)], "DONE");
    for socket in &sockets {
        assert!(
            socket.knocked(),
            "[{sandbox}] control: {} was not reachable even with the network on: {turn:#?}",
            socket.path.display()
        );
    }

    rig.configure("network = false");
    let turn = rig.turn(
        &[
            write_file("probe.py", UNIX_PROBE),
            exec(&probe),
            exec("echo STILL-HERE"),
        ],
        "DONE",
    );
    let result = turn.result(1);
    for socket in &sockets {
        let reached = format!("REACHED {}", socket.path.display());
        assert!(
            !socket.knocked() && !result.contains(&reached),
            "[{sandbox}] with network = false a command reached {}: {result}",
            socket.path.display()
        );
    }
    assert!(result.contains("REFUSED"), "[{sandbox}] {turn:#?}");
    assert!(
        turn.result(2).contains("STILL-HERE"),
        "[{sandbox}] {turn:#?}"
    );
}

#[test]
fn with_the_network_off_no_unix_socket_of_the_system_is_reachable_under_bwrap() {
    system_sockets("bwrap");
}

#[test]
fn with_the_network_off_no_unix_socket_of_the_system_is_reachable_under_landlock() {
    system_sockets("landlock");
}

/// The panel's login token (long enough for the panel to accept it).
const TOKEN: &str = "workspace-attacks-panel-token-7d3f9a2c41b8e605";

/// A gateway with the panel on a free port, up and answering `/healthz`.
fn panel(sandbox: &'static str) -> (Rig, u16, crate::common::Gateway) {
    let port = free_port();
    let rig = Rig::new(
        sandbox,
        &format!("network = true\n[web]\nenabled = true\nlisten = \"127.0.0.1:{port}\"\n"),
    );
    rig.home
        .write_secrets(&format!("web:\n  token: \"{TOKEN}\"\n"));
    let gateway = rig.start_gateway();
    let deadline = Instant::now() + PATIENCE;
    loop {
        match http(port, &get(port, "/healthz", None), Duration::from_secs(5)) {
            Ok(answer) if answer.starts_with("HTTP/1.1 200") => break,
            other => assert!(
                Instant::now() < deadline,
                "the panel never came up: {other:?}\n{}",
                rig.home.gateway_log()
            ),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (rig, port, gateway)
}

/// The owner's client gets the overview page.
fn owner_gets_pages(port: u16) -> Result<String, String> {
    let answer = http(port, &get(port, "/", Some(TOKEN)), Duration::from_secs(10))?;
    if answer.starts_with("HTTP/1.1 200") && answer.contains("<html") {
        Ok(answer)
    } else {
        Err(answer)
    }
}

/// Asks the panel for /healthz by curl and by a bare socket; says whether it answered.
fn panel_probe(port: u16) -> String {
    format!(
        "curl -s -m 5 http://127.0.0.1:{port}/healthz && echo ' <- PANEL ANSWERED CURL' || echo PANEL SILENT TO CURL\n/usr/bin/python3 - <<'EOF'\nimport socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=5)\ns.sendall(b'GET /healthz HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nConnection: close\\r\\n\\r\\n')\ndata = b''\ntry:\n    while True:\n        chunk = s.recv(4096)\n        if not chunk:\n            break\n        data += chunk\nexcept OSError as e:\n    print('socket error:', e)\nprint('PANEL ANSWERED SOCKET' if data else 'PANEL SILENT TO SOCKET', data[:40])\nEOF\n"
    )
}

fn panel_from_the_sandbox(sandbox: &'static str) {
    let (rig, port, _gateway) = panel(sandbox);
    rig.script(
        &[
            write_file("probe.sh", &panel_probe(port)),
            exec("sh probe.sh"),
        ],
        "PROBE DONE",
    );
    // The owner's web chat starts the turn, in the gateway.
    let body = r#"{"text":"go"}"#;
    let chat = http(
        port,
        &format!(
            "POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
        PATIENCE,
    );
    let chat = chat.unwrap_or_else(|e| panic!("[{sandbox}] the web chat failed: {e}"));
    // The reply streams in pieces; the stream's end means the turn is over.
    assert!(chat.contains("data: [DONE]"), "[{sandbox}] {chat}");
    let results = rig.results();
    let probe = results
        .get(1)
        .unwrap_or_else(|| panic!("[{sandbox}] the probe did not run: {results:?}"));
    assert!(
        !probe.contains("ANSWERED") && !probe.contains("status"),
        "[{sandbox}] the panel answered a sandboxed command: {probe}"
    );
    assert!(
        probe.contains("PANEL SILENT TO CURL") && probe.contains("PANEL SILENT TO SOCKET"),
        "[{sandbox}] {probe}"
    );
    assert!(
        rig.home
            .gateway_log()
            .contains("refused a connection from a sandboxed command"),
        "[{sandbox}] {}",
        rig.home.gateway_log()
    );
    owner_gets_pages(port)
        .unwrap_or_else(|e| panic!("[{sandbox}] the owner got no page after the probe: {e}"));
}

#[test]
fn a_command_that_connects_to_the_panel_is_never_answered_while_the_owner_is_under_bwrap() {
    panel_from_the_sandbox("bwrap");
}

#[test]
fn a_command_that_connects_to_the_panel_is_never_answered_while_the_owner_is_under_landlock() {
    panel_from_the_sandbox("landlock");
}

#[test]
fn a_flood_of_silent_connections_does_not_lock_the_owner_out_of_the_panel() {
    let (rig, port, _gateway) = panel("landlock");
    let silent: Vec<std::net::TcpStream> = (0..160)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect();
    let page = owner_gets_pages(port);
    assert!(
        page.is_ok(),
        "160 silent connections locked the owner out: {page:?}\n{}",
        rig.home.gateway_log()
    );
    let health = http(port, &get(port, "/healthz", None), Duration::from_secs(10));
    assert!(
        health.as_ref().is_ok_and(|a| a.starts_with("HTTP/1.1 200")),
        "{health:?}"
    );
    drop(silent);
}

/// With the network off, no socket of a family the network settings do not speak of:
/// a vsock (to the hypervisor, in no network namespace), netlink, packet.
#[test]
fn with_the_network_off_no_vsock_or_other_foreign_socket_can_be_made() {
    let probe = "import socket\nfor name in ['AF_VSOCK', 'AF_NETLINK', 'AF_PACKET']:\n    fam = getattr(socket, name)\n    kind = socket.SOCK_DGRAM if name != 'AF_VSOCK' else socket.SOCK_STREAM\n    try:\n        socket.socket(fam, kind).close()\n        print(name, 'MADE')\n    except OSError as e:\n        print(name, 'refused', e.errno)\n";
    for sandbox in super::rig::sandboxes() {
        let rig = Rig::new(sandbox, "network = false");
        let turn = rig.turn(
            &[
                write_file("probe.py", probe),
                exec("/usr/bin/python3 probe.py"),
            ],
            "DONE",
        );
        let result = turn.result(1);
        assert!(
            result.contains("AF_VSOCK"),
            "[{sandbox}] the probe did not run: {result}"
        );
        assert!(
            !result.contains("MADE"),
            "[{sandbox}] with network = false a foreign socket was made: {result}"
        );
    }
}
