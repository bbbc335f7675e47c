//! `pincer service install | status | uninstall` through the real binary: the unit it
//! writes is one systemd accepts (`systemd-analyze verify`, which also checks that
//! ExecStart is this binary), runs this home with the watchdog and the hardening, and
//! on a machine without systemd the command says so and prints the command line to
//! run instead. No test calls systemctl: where systemd runs, the unit goes to a folder
//! of the test's own (`--unit-dir`).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::TestHome;
use pincer_fakes::FakeModel;

/// Whether systemd runs here (then the tests never write into its folders).
fn systemd_runs() -> bool {
    Path::new("/run/systemd/system").is_dir()
}

/// `systemd-analyze`, or (outside CI) `None`: the test then says why it stopped.
fn systemd_analyze() -> Option<PathBuf> {
    let found = ["/usr/bin/systemd-analyze", "/bin/systemd-analyze"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "systemd-analyze is missing: install Debian's systemd package (.ci/run does)"
        );
        eprintln!("skipped: no systemd-analyze (apt-get install systemd)");
    }
    found
}

/// `systemd-analyze verify` on the unit: it must pass and say nothing about it
/// (unknown keys and values it cannot parse are only warnings, with a success code).
fn verify(unit: &Path) {
    let Some(analyze) = systemd_analyze() else {
        return;
    };
    let out = Command::new(analyze)
        .arg("verify")
        .arg(unit)
        .output()
        .expect("run systemd-analyze");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "systemd-analyze verify failed:\n{stderr}"
    );
    let complaints: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("pincer.service"))
        // A system unit run as a named user: systemd warns only about `nobody`.
        .filter(|line| !line.contains("Special user nobody"))
        .collect();
    assert!(
        complaints.is_empty(),
        "systemd-analyze verify complained:\n{}",
        complaints.join("\n")
    );
}

/// A home with a config (`install` refuses without one).
async fn home() -> (FakeModel, TestHome) {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    (fake, home)
}

/// `pincer service ARGS` with XDG_CONFIG_HOME in the test's home.
fn service(home: &TestHome, args: &[&str]) -> common::Run {
    let mut all = vec!["service"];
    all.extend_from_slice(args);
    let out = home
        .command(&all)
        .env("XDG_CONFIG_HOME", home.path().join("xdg"))
        .output()
        .expect("run pincer service");
    common::Run::from(out)
}

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

#[tokio::test]
async fn install_writes_a_unit_systemd_accepts_running_this_binary_and_home() {
    let (_fake, home) = home().await;
    let units = home.path().join("units");
    // Where systemd runs, keep out of its folders; elsewhere write the real user unit.
    let (args, unit): (Vec<&str>, PathBuf) = if systemd_runs() {
        (
            vec!["install", "--unit-dir", units.to_str().unwrap()],
            units.join("pincer.service"),
        )
    } else {
        (
            vec!["install"],
            home.path().join("xdg/systemd/user/pincer.service"),
        )
    };
    let run = service(&home, &args);
    assert!(run.ok(), "{run:?}");
    assert!(
        run.stdout.contains(&format!("Wrote {}", unit.display())),
        "{}",
        run.stdout
    );
    let text = std::fs::read_to_string(&unit).expect("the unit file");
    let exe = Path::new(env!("CARGO_BIN_EXE_pincer"))
        .canonicalize()
        .unwrap();
    let home_dir = home.path().display().to_string();
    let unit_lines = lines(&text);
    for line in [
        format!("ExecStart={} --home {home_dir} run", exe.display()),
        "Type=notify".to_string(),
        "WatchdogSec=30s".to_string(),
        "Restart=on-failure".to_string(),
        "NoNewPrivileges=yes".to_string(),
        "ProtectSystem=strict".to_string(),
        format!("ReadWritePaths={home_dir}"),
        "PrivateTmp=yes".to_string(),
        "MemoryMax=1G".to_string(),
        "WantedBy=default.target".to_string(),
    ] {
        assert!(
            unit_lines.contains(&line.as_str()),
            "no {line:?} in:\n{text}"
        );
    }
    verify(&unit);
}

#[tokio::test]
async fn without_systemd_it_says_so_prints_the_command_line_and_status_and_uninstall_work() {
    if systemd_runs() {
        eprintln!("skipped: systemd runs here, and this test must not enable a unit");
        return;
    }
    let (_fake, home) = home().await;
    let unit = home.path().join("xdg/systemd/user/pincer.service");
    let run = service(&home, &["install"]);
    assert!(run.ok(), "{run:?}");
    assert!(
        run.stdout
            .contains("systemd is not running on this machine"),
        "{}",
        run.stdout
    );
    let exe = Path::new(env!("CARGO_BIN_EXE_pincer"))
        .canonicalize()
        .unwrap();
    let command = format!("  {} --home {} run", exe.display(), home.path().display());
    assert!(
        lines(&run.stdout).contains(&command.as_str()),
        "{}",
        run.stdout
    );

    let status = service(&home, &["status"]);
    assert!(status.ok(), "{status:?}");
    assert!(
        status
            .stdout
            .contains(&format!("Unit: {} (installed)", unit.display())),
        "{}",
        status.stdout
    );
    assert!(status.stdout.contains("Gateway for"), "{}", status.stdout);

    let gone = service(&home, &["uninstall"]);
    assert!(gone.ok(), "{gone:?}");
    assert!(!unit.exists(), "uninstall leaves {}", unit.display());
    let status = service(&home, &["status"]);
    assert!(status.stdout.contains("not installed"), "{}", status.stdout);
}

#[tokio::test]
async fn a_system_unit_runs_as_its_user_and_systemd_accepts_it() {
    let (_fake, home) = home().await;
    let units = home.path().join("units");
    let run = service(
        &home,
        &[
            "install",
            "--system",
            "--run-as",
            "root",
            "--memory-max",
            "512M",
            "--unit-dir",
            units.to_str().unwrap(),
        ],
    );
    assert!(run.ok(), "{run:?}");
    assert!(run.stdout.contains("Nothing was enabled"), "{}", run.stdout);
    let unit = units.join("pincer.service");
    let text = std::fs::read_to_string(&unit).unwrap();
    for line in ["User=root", "MemoryMax=512M", "WantedBy=multi-user.target"] {
        assert!(lines(&text).contains(&line), "no {line:?} in:\n{text}");
    }
    verify(&unit);
}

#[tokio::test]
async fn install_refuses_a_memory_limit_systemd_cannot_read_and_a_home_without_config() {
    let (_fake, home) = home().await;
    let units = home.path().join("units");
    let dir = units.to_str().unwrap();
    service(
        &home,
        &["install", "--unit-dir", dir, "--memory-max", "1GB"],
    )
    .fails_with(&["--memory-max 1GB", "512M, 2G"]);
    let empty = TestHome::new();
    let out = empty
        .command(&["service", "install", "--unit-dir", dir])
        .output()
        .unwrap();
    common::Run::from(out).fails_with(&["pincer onboard"]);
    assert!(!units.join("pincer.service").exists());
}
