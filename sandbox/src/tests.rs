use std::path::Path;

use super::*;

#[test]
fn landlock_reads_everything_but_the_way_down_to_the_home() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let home = root.join("home/me/.pincer");
    std::fs::create_dir_all(home.join("workspace")).unwrap();
    std::fs::create_dir_all(root.join("home/me/.cargo")).unwrap();
    std::fs::create_dir_all(root.join("home/other")).unwrap();
    std::os::unix::fs::symlink(&home, root.join("home/me/sneaky")).unwrap();
    std::os::unix::fs::symlink(root.join("home"), root.join("home/me/up")).unwrap();
    let roots = landlock::read_roots(&home);
    let has = |p: &Path| roots.iter().any(|r| r == p);
    assert!(has(&root.join("home/me/.cargo")) && has(&root.join("home/other")));
    assert!(
        has(Path::new("/usr")),
        "the rest of the system stays readable"
    );
    for hidden in [&home, &root.join("home/me"), &root.join("home")] {
        assert!(!has(hidden), "{} must not be readable", hidden.display());
    }
    assert!(
        !has(&root.join("home/me/sneaky")),
        "a link into the home is not granted"
    );
    assert!(
        !has(&root.join("home/me/up")),
        "a link above the home is not granted"
    );
    assert!(roots.iter().all(|r| !r.starts_with(&home)));
}

#[test]
fn bwrap_hides_the_home_binds_the_workspace_and_cuts_the_network_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("workspace");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("MEMORY.md"), "x").unwrap();
    let mut c = confinement(dir.path(), &ws, true, pincer_config::ExecLimits::default());
    let args: Vec<String> = bwrap::args(&c, true)
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let joined = args.join(" ");
    let home = dir.path().canonicalize().unwrap();
    let ws = ws.canonicalize().unwrap();
    assert!(
        joined.contains(&format!("--tmpfs {}", home.display())),
        "{joined}"
    );
    assert!(joined.contains(&format!("--bind {} {}", ws.display(), ws.display())));
    let memory = ws.join("MEMORY.md");
    assert!(joined.contains(&format!(
        "--ro-bind {} {}",
        memory.display(),
        memory.display()
    )));
    assert!(joined.contains("--unshare-pid") && joined.contains("--die-with-parent"));
    assert!(!joined.contains("--unshare-net"));
    // The home is hidden before the workspace is bound back into it.
    let hide = args
        .iter()
        .position(|a| *a == home.display().to_string())
        .unwrap();
    let bind = args.iter().position(|a| *a == "--bind").unwrap();
    assert!(hide < bind);
    c.network = false;
    assert!(bwrap::args(&c, true).iter().any(|a| a == "--unshare-net"));
}
