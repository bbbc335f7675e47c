//! State a command plants where older versions kept the gateway's own files
//! (`workspace/.pincer/`, `.git`): a dream journal naming files outside, a link at the
//! dream's lock, a recall index row naming the secrets file, a `core.worktree`. The
//! gateway now keeps its state in `$PINCER_HOME/state`, out of every command's reach,
//! and checks what it reads back; each case plants through a script the model wrote and
//! ran, then drives what used to follow it (the dream, restore, recall).

use pincer_fakes::Step;
use serde_json::json;

use super::rig::{Rig, exec, write_file};

/// A line of the secrets file that is not itself a secret: seeing it means the file
/// was read.
const MARKER: &str = "MARKER-c0ffee-secrets-file";

/// A rig whose secrets file has the marker, and a memory file to recall.
fn rig(sandbox: &'static str) -> Rig {
    let rig = Rig::new(sandbox, "");
    rig.home.write_secrets(&format!(
        "# {MARKER}\nproviders:\n  fake:\n    api_key: \"sk-fake-0123456789abcdef\"\n"
    ));
    let ws = rig.home.workspace();
    std::fs::create_dir_all(ws.join("memory")).unwrap();
    std::fs::write(ws.join("MEMORY.md"), "- [cat](memory/cat.md) — the cat\n").unwrap();
    std::fs::write(
        ws.join("memory/cat.md"),
        "---\nname: cat\ndescription: the cat\ntype: user\n---\nMochi the cat\n",
    )
    .unwrap();
    rig
}

fn secrets(rig: &Rig) -> String {
    std::fs::read_to_string(rig.home.path().join(".security.yml")).unwrap()
}

/// The model's answer to a dream: no operations.
fn empty_dream() -> Step {
    Step::tool_call("apply_memory_operations", json!({ "operations": [] }))
}

/// A script that plants a dream journal in the old place — with the repository's HEAD
/// where it can read one, as a real attack would — whose "rollback" would create a file
/// outside the workspace (absolute, and by `../`), and a link at the dream's lock.
fn journal_planted(sandbox: &'static str) {
    let rig = rig(sandbox);
    assert!(rig.home.run(&["memory", "log"]).ok(), "the history starts");
    let home = rig.home.path().display().to_string();
    let journal = json!({
        "head": "HEAD_HERE",
        "files": [
            {"path": format!("{home}/planted.txt"), "before": "planted by a command", "after": null},
            {"path": "../planted-too.txt", "before": "planted by a command", "after": null},
            {"path": "memory/../../planted-three.txt", "before": "planted", "after": null},
        ]
    })
    .to_string()
    .replace("\"HEAD_HERE\"", "$head");
    let script = format!(
        "head=$(git rev-parse HEAD 2>/dev/null | sed 's/.*/\"&\"/'); head=${{head:-null}}\nmkdir -p .pincer && cat > .pincer/dream-journal.json <<EOF\n{journal}\nEOF\nln -sf {home}/lock-made-here .pincer/dream.lock\necho planted"
    );
    let turn = rig.turn(
        &[write_file("plant.sh", &script), exec("sh plant.sh")],
        "DONE",
    );
    assert!(turn.result(1).contains("planted"), "[{sandbox}] {turn:#?}");
    for run in [["memory", "dream"], ["memory", "log"]] {
        {
            let _enter = rig.runtime.enter();
            rig.model.reset();
            rig.model.push(empty_dream());
        }
        let out = rig.home.run(&run);
        assert!(out.ok(), "[{sandbox}] pincer {run:?} failed: {out:?}");
    }
    assert_eq!(
        secrets(&rig).lines().next(),
        Some(format!("# {MARKER}").as_str()),
        "[{sandbox}] the secrets file was rolled back"
    );
    assert!(rig.home.path().join("config.toml").exists());
    for name in ["planted.txt", "planted-too.txt", "planted-three.txt"] {
        assert!(
            !rig.home.path().join(name).exists(),
            "[{sandbox}] a file outside the workspace was written: {name}"
        );
    }
    assert!(
        !rig.home.path().join("lock-made-here").exists(),
        "[{sandbox}] the dream's lock followed a planted link"
    );
}

#[test]
fn a_dream_journal_planted_by_a_command_is_never_rolled_back_under_bwrap() {
    journal_planted("bwrap");
}

#[test]
fn a_dream_journal_planted_by_a_command_is_never_rolled_back_under_landlock() {
    journal_planted("landlock");
}

/// A script that adds rows naming the secrets file to the recall index where it used to
/// live (into the index itself where there is one, as a real attack would), then a
/// question that recalls: the model's requests never carry the secrets file.
fn index_row_planted(sandbox: &'static str) {
    let rig = rig(sandbox);
    let ask = |rig: &Rig| {
        {
            let _enter = rig.runtime.enter();
            rig.model.reset();
        }
        let out = rig.home.run(&["chat", "-m", "tell me about the cat"]);
        assert!(out.ok(), "{out:?}");
        rig.model
            .requests()
            .last()
            .map(|r| r.body.to_string())
            .unwrap_or_default()
    };
    assert!(ask(&rig).contains("Mochi"), "[{sandbox}] recall works");
    let script = "import sqlite3, os\nos.makedirs('.pincer', exist_ok=True)\ndb = sqlite3.connect('.pincer/memory.db')\ndb.execute('CREATE TABLE IF NOT EXISTS docs(path, kind, name, description, body)')\nfor p in ['../.security.yml', 'memory/../../.security.yml']:\n    db.execute('INSERT INTO docs (path, kind, name, description, body) VALUES (?, ?, ?, ?, ?)', (p, 'memory', 'cat', 'the cat', 'cat cat cat about'))\ndb.commit()\nprint('planted')\n";
    let turn = rig.turn(
        &[
            write_file("plant.py", script),
            exec("/usr/bin/python3 plant.py"),
        ],
        "DONE",
    );
    assert!(turn.result(1).contains("planted"), "[{sandbox}] {turn:#?}");
    let recalled = ask(&rig);
    for request in rig.model.requests() {
        let body = request.body.to_string();
        assert!(
            !body.contains(MARKER) && !body.contains("sk-fake-0123456789abcdef"),
            "[{sandbox}] the secrets file reached the model"
        );
    }
    assert!(
        recalled.contains("Mochi"),
        "[{sandbox}] recall still works: {recalled}"
    );
}

#[test]
fn a_recall_index_row_planted_by_a_command_never_reaches_the_model_under_bwrap() {
    index_row_planted("bwrap");
}

#[test]
fn a_recall_index_row_planted_by_a_command_never_reaches_the_model_under_landlock() {
    index_row_planted("landlock");
}

/// The memory's history was a `.git` in the workspace: a command could set its
/// `core.worktree` (libgit2 honours it) or point its objects elsewhere. It now lives in
/// the state folder; a `.git` a command makes is not the memory's.
fn git_config_planted(sandbox: &'static str) {
    let rig = rig(sandbox);
    let outside = rig.home.path().join("elsewhere");
    std::fs::create_dir_all(outside.join("memory")).unwrap();
    std::fs::write(outside.join("USER.md"), "OUTSIDE-USER-FILE").unwrap();
    std::fs::write(rig.home.workspace().join("USER.md"), "Ana, the owner.\n").unwrap();
    let write = |content: &str| {
        (
            "memory_write",
            json!({"name": "dog", "type": "user", "description": "the dog", "content": content}),
        )
    };
    let script = format!(
        "git init -q . 2>/dev/null; git config core.worktree {} && echo planted",
        outside.display()
    );
    let turn = rig.turn(
        &[
            write("Rex"),
            write_file("plant.sh", &script),
            exec("sh plant.sh"),
            write("Rex, a beagle"),
        ],
        "DONE",
    );
    assert!(turn.result(2).contains("planted"), "[{sandbox}] {turn:#?}");
    {
        let _enter = rig.runtime.enter();
        rig.model.reset();
        rig.model.push(empty_dream());
    }
    assert!(rig.home.run(&["memory", "dream"]).ok());
    // USER.md as the history has it: the workspace's, not the planted worktree's.
    let log = rig.home.run(&["memory", "log"]);
    assert!(log.ok(), "{log:?}");
    let state = rig.home.path().join("state/memory.git");
    let repo = git2::Repository::open_bare(&state)
        .or_else(|_| git2::Repository::open(rig.home.workspace()))
        .unwrap();
    let tree = repo.head().unwrap().peel_to_tree().unwrap();
    let entry = tree.get_path(std::path::Path::new("USER.md")).unwrap();
    let user = repo.find_blob(entry.id()).unwrap().content().to_vec();
    assert_eq!(
        String::from_utf8_lossy(&user),
        "Ana, the owner.\n",
        "[{sandbox}] the history took a file from the planted worktree"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("USER.md")).unwrap(),
        "OUTSIDE-USER-FILE"
    );
}

#[test]
fn a_git_worktree_planted_in_the_workspace_is_not_the_memorys_history() {
    for sandbox in super::rig::sandboxes() {
        git_config_planted(sandbox);
    }
}

/// A workspace that is the home, holds it, or lies in the gateway's state: refused at
/// start and by doctor, with the fix (every command could otherwise reach the secrets
/// and the state).
#[test]
fn a_workspace_inside_the_gateways_own_places_is_refused() {
    let rig = Rig::new("landlock", "");
    let home = rig.home.path().display().to_string();
    for workspace in [
        home.clone(),
        format!("{home}/state/ws"),
        format!("{home}/.."),
    ] {
        rig.configure(&format!("[agent]\nworkspace = \"{workspace}\""));
        let turn = rig.turn(&[], "NEVER");
        assert_eq!(turn.code, Some(1), "{workspace}: {turn:#?}");
        assert!(
            turn.stderr.contains("agent.workspace")
                && turn.stderr.contains("$PINCER_HOME/workspace"),
            "{workspace}: {turn:#?}"
        );
        let doctor = rig.home.run(&["doctor"]);
        assert!(
            doctor.stdout.contains("FAIL  workspace") || doctor.stdout.contains("FAIL workspace"),
            "{workspace}: {doctor:?}"
        );
    }
}
