//! `[tools.exec.limits]`: a memory balloon, a disk-filling `dd`, a fork bomb, a CPU spin
//! and a file-descriptor hoard, each a script the model wrote and then ran, each ended by
//! its limit (and told so) while the same `pincer chat` goes on to run the next call and
//! answer. The limits are small so each attack ends in moments on a 2-core machine, and
//! every attack is bounded by itself too (a 2 GB balloon, a 64 MB file, 2^9 processes
//! that end within 10 s), so that with a limit missing the test fails without harming
//! the machine.

use super::rig::{Rig, Turn, exec, exec_for, write_file};

/// Small limits: quick to reach, harmless to the machine.
const LIMITS: &str = "[tools.exec.limits]\nmemory_mb = 256\ncpu_secs = 2\nfile_size_mb = 8\nopen_files = 64\nprocesses = 64\n";

/// What the model runs after each attack: proof the same process still works.
const STILL_HERE: &str = "echo STILL-HERE";

/// One turn: write `script` to `name`, run it with `run`, then run `STILL_HERE`.
fn attack(
    sandbox: &'static str,
    name: &str,
    script: &str,
    run: (&str, serde_json::Value),
) -> (Rig, Turn) {
    let rig = Rig::new(sandbox, LIMITS);
    let turn = rig.turn(
        &[write_file(name, script), run, exec(STILL_HERE)],
        "ATTACK OVER",
    );
    assert_eq!(turn.code, Some(0), "the chat failed: {turn:#?}");
    assert!(
        !turn.stderr.contains("panicked"),
        "pincer panicked: {turn:#?}"
    );
    assert!(
        turn.stdout.contains("ATTACK OVER"),
        "no answer after the attack: {turn:#?}"
    );
    assert!(
        turn.result(2).contains("STILL-HERE"),
        "the next call did not run normally: {turn:#?}"
    );
    (rig, turn)
}

/// Grows to 2 GB in 64 MB steps, each written (so memory is really used).
const BALLOON: &str = "import sys\nheld = []\ntry:\n    for _ in range(32):\n        held.append(bytearray(b'x') * (64 << 20))\nexcept MemoryError:\n    print(f'BALLOON STOPPED AT {len(held) * 64} MB')\n    sys.exit(3)\nprint(f'BALLOON HELD {len(held) * 64} MB')\n";

fn memory_balloon(sandbox: &'static str) {
    let (_, turn) = attack(
        sandbox,
        "balloon.py",
        BALLOON,
        exec("/usr/bin/python3 balloon.py"),
    );
    let result = turn.result(1);
    assert!(
        result.contains("BALLOON STOPPED") && !result.contains("BALLOON HELD"),
        "[{sandbox}] the balloon was not stopped at memory_mb = 256: {result}"
    );
}

#[test]
fn a_memory_balloon_is_stopped_at_the_memory_limit_under_bwrap() {
    memory_balloon("bwrap");
}

#[test]
fn a_memory_balloon_is_stopped_at_the_memory_limit_under_landlock() {
    memory_balloon("landlock");
}

fn disk_filler(sandbox: &'static str) {
    let (rig, turn) = attack(
        sandbox,
        "fill.sh",
        "dd if=/dev/zero of=filler bs=1M count=64\n",
        exec("sh fill.sh"),
    );
    let result = turn.result(1);
    let written = std::fs::metadata(rig.home.workspace().join("filler")).map(|m| m.len());
    assert!(
        written.as_ref().is_ok_and(|n| *n <= 8 << 20),
        "[{sandbox}] dd wrote {written:?} bytes past file_size_mb = 8: {result}"
    );
    assert!(
        result.contains("exit code 153") && result.contains("file_size_mb"),
        "[{sandbox}] the result does not say dd met the file-size limit: {result}"
    );
}

#[test]
fn a_disk_filling_dd_is_stopped_at_the_file_size_limit_and_told_so_under_bwrap() {
    disk_filler("bwrap");
}

#[test]
fn a_disk_filling_dd_is_stopped_at_the_file_size_limit_and_told_so_under_landlock() {
    disk_filler("landlock");
}

/// Every generation doubles, 9 deep (at most 2^10 shells), each living 10 s.
const BOMB: &str = "bomb() { if [ \"$1\" -gt 0 ]; then bomb $(($1 - 1)) & bomb $(($1 - 1)) & fi; sleep 10; }\nbomb 9\n";

fn fork_bomb(sandbox: &'static str) {
    let (_, turn) = attack(sandbox, "bomb.sh", BOMB, exec_for("sh bomb.sh", 30));
    let result = turn.result(1);
    assert!(
        result.contains("[tools.exec.limits] processes") && !result.contains("timed out"),
        "[{sandbox}] the fork bomb was not ended at processes = 64: {result}"
    );
}

#[test]
fn a_fork_bomb_is_ended_at_the_process_limit_and_told_so_under_bwrap() {
    fork_bomb("bwrap");
}

#[test]
fn a_fork_bomb_is_ended_at_the_process_limit_and_told_so_under_landlock() {
    fork_bomb("landlock");
}

fn cpu_spin(sandbox: &'static str) {
    let (_, turn) = attack(
        sandbox,
        "spin.sh",
        "while :; do :; done\n",
        exec_for("sh spin.sh", 20),
    );
    let result = turn.result(1);
    assert!(
        result.contains("cpu_secs") && !result.contains("timed out"),
        "[{sandbox}] the spin was not ended at cpu_secs = 2: {result}"
    );
}

#[test]
fn a_cpu_spin_is_ended_at_the_cpu_limit_and_told_so_under_bwrap() {
    cpu_spin("bwrap");
}

#[test]
fn a_cpu_spin_is_ended_at_the_cpu_limit_and_told_so_under_landlock() {
    cpu_spin("landlock");
}

/// Opens files until refused, 1000 at most.
const HOARD: &str = "held = []\ntry:\n    for _ in range(1000):\n        held.append(open('/dev/null'))\nexcept OSError as e:\n    print(f'HOARD STOPPED AT {len(held)}: {e}')\nelse:\n    print(f'HOARD HELD {len(held)}')\n";

fn fd_hoard(sandbox: &'static str) {
    let (_, turn) = attack(
        sandbox,
        "hoard.py",
        HOARD,
        exec("/usr/bin/python3 hoard.py"),
    );
    let result = turn.result(1);
    assert!(
        result.contains("HOARD STOPPED AT") && !result.contains("HOARD HELD"),
        "[{sandbox}] the files were not stopped at open_files = 64: {result}"
    );
}

#[test]
fn a_file_descriptor_hoard_is_stopped_at_the_open_files_limit_under_bwrap() {
    fd_hoard("bwrap");
}

#[test]
fn a_file_descriptor_hoard_is_stopped_at_the_open_files_limit_under_landlock() {
    fd_hoard("landlock");
}

#[test]
fn doctor_and_status_say_which_limits_hold_and_whether_a_cgroup_does() {
    let rig = Rig::new("landlock", LIMITS);
    let doctor = rig.home.run(&["doctor"]);
    let line = doctor
        .stdout
        .lines()
        .find(|l| l.contains("sandbox limits"))
        .unwrap_or_else(|| panic!("no `sandbox limits` line: {doctor:?}"));
    for part in [
        "address space 256 MB",
        "files up to 8 MB",
        "64 open files",
        "64 processes",
    ] {
        assert!(line.contains(part), "{part:?} missing: {line}");
    }
    assert!(
        line.contains("cgroup v2 of its own") || line.contains("rlimits only, no cgroup:"),
        "doctor does not say whether a cgroup holds: {line}"
    );
    let status = rig.home.run(&["status"]);
    assert!(
        status.stdout.contains("Limits: address space 256 MB"),
        "{status:?}"
    );
}
