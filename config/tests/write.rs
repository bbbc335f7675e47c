//! Safe rewriting: write_private and backup.

use pincer_config::{backup, write_private};

#[cfg(unix)]
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn write_private_creates_and_replaces_with_mode_0600() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".security.yml");
    write_private(&path, "one\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\n");
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    write_private(&path, "two\n").unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
    #[cfg(unix)]
    assert_eq!(mode(&path), 0o600);
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names.len(),
        1,
        "no temporary file is left behind: {names:?}"
    );
}

#[test]
fn a_failed_write_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "old").unwrap();
    // Renaming onto a non-empty directory fails after the temp file was written.
    let blocked = dir.path().join("blocked");
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("x"), "").unwrap();
    assert!(write_private(&blocked, "new").is_err());
    assert!(blocked.join("x").exists());
    // A directory that does not exist: nothing is written anywhere.
    assert!(write_private(&dir.path().join("nope/config.toml"), "new").is_err());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["blocked", "config.toml"],
        "temporary files are cleaned up"
    );
}

#[test]
fn backups_take_the_next_free_name_and_keep_the_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "v1").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let first = backup(&path).unwrap();
    assert_eq!(first, dir.path().join("config.toml.bak"));
    std::fs::write(&path, "v2").unwrap();
    let second = backup(&path).unwrap();
    assert_eq!(second, dir.path().join("config.toml.bak.1"));
    let third = backup(&path).unwrap();
    assert_eq!(third, dir.path().join("config.toml.bak.2"));
    assert_eq!(std::fs::read_to_string(&first).unwrap(), "v1");
    assert_eq!(std::fs::read_to_string(&second).unwrap(), "v2");
    #[cfg(unix)]
    {
        assert_eq!(mode(&first), 0o640);
        assert_eq!(mode(&second), 0o640);
    }
    assert!(backup(&dir.path().join("absent.toml")).is_err());
}
