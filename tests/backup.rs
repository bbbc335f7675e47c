//! `pincer backup` and `pincer restore` through the real binary: a backup taken while
//! the gateway runs restores into a home that answers, with its conversations, its
//! memory's history and its workspace; secrets only with `--with-secrets` (then the
//! archive and the restored file are 0600); a home that is not empty is refused; and
//! hostile archives (paths that climb out or start at `/`, links leading out, devices,
//! hard links) are refused before anything is written.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::{TestHome, run_at as at, wait_until};
use pincer_fakes::{FakeModel, Step};
use serde_json::json;

/// The names in an archive, in order.
fn entries(archive: &Path) -> Vec<String> {
    let file = std::fs::File::open(archive).unwrap();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    tar.entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().display().to_string())
        .collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A home with two conversation turns, a memory history with a dream's commit, and a
/// file of the agent's in the workspace.
fn lived_in(fake: &FakeModel) -> TestHome {
    let home = TestHome::openai(fake);
    home.write_secrets("providers:\n  fake:\n    api_key: \"sk-backup-test\"\n");
    std::fs::create_dir_all(home.workspace().join("notes")).unwrap();
    std::fs::write(home.workspace().join("USER.md"), "Ana.\n").unwrap();
    std::fs::write(home.workspace().join("notes/plan.md"), "plant tomatoes\n").unwrap();
    std::os::unix::fs::symlink("notes/plan.md", home.workspace().join("plan")).unwrap();
    // A link out of the workspace is left out of the archive, never followed.
    std::os::unix::fs::symlink("../.security.yml", home.workspace().join("key")).unwrap();
    // So is one to the home itself, through which the secrets would be one step away.
    std::os::unix::fs::symlink("..", home.workspace().join("up")).unwrap();
    assert!(
        home.run(&["memory", "log"]).ok(),
        "the log starts the repository"
    );
    fake.push(Step::text("Porto is lovely."));
    assert!(home.run(&["chat", "-m", "I moved to Porto"]).ok());
    fake.push(Step::tool_call(
        "apply_memory_operations",
        json!({"operations": [{"op": "update", "path": "USER.md", "content": "Ana. Lives in Porto."}]}),
    ));
    let dream = home.run(&["memory", "dream"]);
    assert!(dream.ok(), "{dream:?}");
    home
}

/// `pincer backup FILE ARGS` from `home`.
fn backup(home: &TestHome, file: &Path, args: &[&str]) -> common::Run {
    let mut all = vec!["backup", file.to_str().unwrap()];
    all.extend_from_slice(args);
    home.run(&all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_the_gateway_runs_restores_into_a_home_that_answers() {
    let fake = FakeModel::start().await;
    let home = lived_in(&fake);
    let _gateway = home.start_gateway();
    wait_until("the gateway runs", async || {
        home.run(&["status"]).stdout.contains("Gateway: running")
    })
    .await;
    // The database is written by another process while the backup reads it.
    fake.push(Step::text("Noted, tomatoes."));
    assert!(home.run(&["chat", "-m", "remember the tomatoes"]).ok());
    let out = tempfile::tempdir().unwrap();
    let archive = out.path().join("home.tar.gz");
    let run = backup(&home, &archive, &[]);
    assert!(run.ok(), "{run:?}");
    assert!(
        run.stdout.contains("left out workspace/key"),
        "{}",
        run.stdout
    );
    assert_eq!(mode(&archive), 0o600, "the archive holds conversations");

    let names = entries(&archive);
    assert_eq!(names[0], "pincer-backup.json");
    for needed in [
        "config.toml",
        "pincer.db",
        "state/memory.git/HEAD",
        "workspace/notes/plan.md",
        "workspace/plan",
    ] {
        assert!(
            names.iter().any(|n| n == needed),
            "no {needed} in {names:?}"
        );
    }
    assert!(!names.iter().any(|n| n == ".security.yml"), "{names:?}");
    assert!(!names.iter().any(|n| n == "workspace/key"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.starts_with("workspace/up")),
        "{names:?}"
    );
    // Nothing planted in the workspace carried the secret in, by any path.
    let mut unpacked = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&archive).unwrap()),
        &mut unpacked,
    )
    .unwrap();
    assert!(
        !unpacked.windows(14).any(|w| w == b"sk-backup-test"),
        "the secret is in the archive"
    );

    let restored = out.path().join("restored");
    let run = at(&restored, &["restore", archive.to_str().unwrap()]);
    assert!(run.ok(), "{run:?}");
    assert!(run.stdout.contains("held no secrets"), "{}", run.stdout);
    assert!(!restored.join(".security.yml").exists());
    assert_eq!(mode(&restored), 0o700);
    assert_eq!(mode(&restored.join("pincer.db")), 0o600);

    // The conversation, the memory's history and the workspace came back.
    let transcript = at(&restored, &["sessions", "show", "terminal:dm:local"]).stdout;
    for said in [
        "I moved to Porto",
        "Porto is lovely.",
        "remember the tomatoes",
    ] {
        assert!(transcript.contains(said), "no {said:?} in:\n{transcript}");
    }
    let log = at(&restored, &["memory", "log"]);
    assert!(log.stdout.contains("Dream: "), "{log:?}");
    let user = std::fs::read_to_string(restored.join("workspace/USER.md")).unwrap();
    assert!(user.contains("Lives in Porto"), "{user}");
    assert_eq!(
        std::fs::read_link(restored.join("workspace/plan")).unwrap(),
        PathBuf::from("notes/plan.md")
    );
    // With its key back, the restored home answers.
    let secrets = restored.join(".security.yml");
    std::fs::write(
        &secrets,
        "providers:\n  fake:\n    api_key: \"sk-backup-test\"\n",
    )
    .unwrap();
    common::set_mode(&secrets, 0o600);
    fake.push(Step::text("Still here."));
    let chat = at(&restored, &["chat", "-m", "are you there?"]);
    assert!(chat.ok(), "{chat:?}");
    assert_eq!(chat.stdout, "Still here.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_only_with_the_flag_and_then_the_archive_and_the_file_are_private() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    home.write_secrets("providers:\n  fake:\n    api_key: \"sk-secret-test\"\n");
    assert!(home.run(&["chat", "-m", "hi"]).ok());
    let out = tempfile::tempdir().unwrap();
    let archive = out.path().join("with-keys.tar.gz");
    let run = backup(&home, &archive, &["--with-secrets"]);
    assert!(run.ok(), "{run:?}");
    assert!(!run.stdout.contains("sk-secret-test"));
    assert_eq!(mode(&archive), 0o600);
    assert!(entries(&archive).iter().any(|n| n == ".security.yml"));

    let restored = out.path().join("restored");
    let run = at(&restored, &["restore", archive.to_str().unwrap()]);
    assert!(run.ok(), "{run:?}");
    let secrets = restored.join(".security.yml");
    assert_eq!(mode(&secrets), 0o600);
    assert!(
        std::fs::read_to_string(&secrets)
            .unwrap()
            .contains("sk-secret-test")
    );

    // A backup never overwrites a file.
    backup(&home, &archive, &[]).fails_with(&["exists already"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_refuses_a_home_that_is_not_empty_and_names_the_fix() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    let out = tempfile::tempdir().unwrap();
    let archive = out.path().join("b.tar.gz");
    assert!(backup(&home, &archive, &[]).ok());
    let before = std::fs::read_to_string(home.config_file()).unwrap();
    home.run(&["restore", archive.to_str().unwrap()])
        .fails_with(&["is not empty", "config.toml", "--home NEW_DIR restore"]);
    assert_eq!(std::fs::read_to_string(home.config_file()).unwrap(), before);
}

/// An archive with a manifest and a config, then `hostile`.
fn archive_with(
    dir: &Path,
    name: &str,
    hostile: impl FnOnce(&mut tar::Builder<Vec<u8>>),
) -> PathBuf {
    let mut tar = tar::Builder::new(Vec::new());
    let mut add = |path: &str, bytes: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o600);
        tar.append_data(&mut header, path, bytes).unwrap();
    };
    add(
        "pincer-backup.json",
        br#"{"format":1,"pincer":"0.1.0","created":"2026-11-28T00:00:00Z","schema":1,"secrets":false}"#,
    );
    add("config.toml", b"version = 1\n");
    hostile(&mut tar);
    let bytes = tar.into_inner().unwrap();
    let path = dir.join(name);
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut gz, &bytes).unwrap();
    gz.finish().unwrap();
    path
}

/// A raw entry, its name written as given (the tar crate's own checks bypassed).
fn raw(tar: &mut tar::Builder<Vec<u8>>, name: &str, kind: tar::EntryType, link: &str, data: &[u8]) {
    let mut header = tar::Header::new_old();
    header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
    header.set_entry_type(kind);
    header.set_size(data.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    tar.append(&header, data).unwrap();
}

#[test]
fn hostile_archives_are_refused_before_anything_is_written() {
    use tar::EntryType::{Block, Char, Fifo, Link, Regular, Symlink};
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, tar::EntryType, &str, &str); 8] = [
        ("climbs", "../escaped", Regular, "", "climbs out"),
        (
            "climbs-later",
            "workspace/../../escaped",
            Regular,
            "",
            "climbs out",
        ),
        (
            "absolute",
            "/tmp/pincer-restore-escaped",
            Regular,
            "",
            "absolute",
        ),
        (
            "link-out",
            "workspace/key",
            Symlink,
            "../.security.yml",
            "leads out",
        ),
        ("link-abs", "workspace/etc", Symlink, "/etc", "leads out"),
        ("device", "workspace/tty", Char, "", "character device"),
        ("hard-link", "workspace/h", Link, "config.toml", "hard link"),
        ("fifo", "state/pipe", Fifo, "", "FIFO"),
    ];
    for (name, path, kind, link, why) in cases {
        let archive = archive_with(dir.path(), &format!("{name}.tar.gz"), |tar| {
            raw(
                tar,
                path,
                kind,
                link,
                if kind == Regular { b"x" } else { b"" },
            )
        });
        let home = dir.path().join(format!("home-{name}"));
        let run = at(&home, &["restore", archive.to_str().unwrap()]);
        run.fails_with(&["cannot be restored", why, "nothing was written"]);
        assert!(!home.exists(), "{name}: the home was made");
    }
    assert!(!dir.path().join("escaped").exists());
    assert!(!Path::new("/tmp/pincer-restore-escaped").exists());
    // A block device is refused like a character device.
    let archive = archive_with(dir.path(), "block.tar.gz", |tar| {
        raw(tar, "workspace/sda", Block, "", b"")
    });
    at(
        &dir.path().join("home-block"),
        &["restore", archive.to_str().unwrap()],
    )
    .fails_with(&["block device"]);
}

#[test]
fn an_archive_not_made_by_pincer_backup_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut tar = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(1);
    tar.append_data(&mut header, "config.toml", &b"x"[..])
        .unwrap();
    let path = dir.path().join("plain.tar.gz");
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(&path).unwrap(),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut gz, &tar.into_inner().unwrap()).unwrap();
    gz.finish().unwrap();
    let home = dir.path().join("home");
    at(&home, &["restore", path.to_str().unwrap()])
        .fails_with(&["not an archive written by `pincer backup`"]);
    // Not gzip at all.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    at(&home, &["restore", text.to_str().unwrap()]).fails_with(&["cannot read", "pincer backup"]);
    assert!(!home.exists());
}
