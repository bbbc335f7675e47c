//! The tool pipeline end to end: a scripted fake model drives tools through the real
//! binary (permission rules, bad arguments, the result budget, the scrubber) and, for
//! timing, through the core in-process with a slow tool of our own. `containment` holds
//! the file tools against every attack that once led them outside the workspace.

use crate::common;
#[path = "containment/mod.rs"]
mod containment;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::TestHome;
use pincer::tools::{Parsed, Registry, Tool, ToolContext, ToolError};
use pincer_fakes::{FakeModel, Step};
use serde_json::{Value, json};

fn tool_results(fake: &FakeModel, request: usize) -> Vec<String> {
    fake.requests()[request].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn denied_calls_and_bad_arguments_come_back_to_the_model_with_the_reason() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&common::openai_config(
        &fake,
        "[tools.permissions]\ndeny = [\"write_file(secrets/*)\"]\nask = [\"edit_file\"]\n",
    ));
    fake.push(Step::tool_calls([
        (
            "write_file",
            json!({"path": "secrets/x.txt", "content": "no"}),
        ),
        ("write_file", json!({"path": "ok.txt"})),
        (
            "edit_file",
            json!({"path": "ok.txt", "old_text": "a", "new_text": "b"}),
        ),
        ("read", json!({"path": "missing.txt"})),
    ]));
    fake.push(Step::text("done"));
    let run = home.run(&["chat", "-m", "try things"]);
    assert!(run.ok(), "{run:?}");
    let results = tool_results(&fake, 1);
    assert!(
        results[0].contains("refused by the owner's rule `write_file(secrets/*)`"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("invalid arguments for write_file: missing field `content`"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("needs the owner's approval"),
        "{}",
        results[2]
    );
    assert!(
        results[3].contains("no such file"),
        "an alias reaches read_file: {}",
        results[3]
    );
    assert!(!home.workspace().join("secrets/x.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_rules_match_what_really_runs_and_the_path_really_opened() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&common::openai_config(
        &fake,
        "[tools.permissions]\nask = [\"exec(git push*)\"]\ndeny = [\"read_file(secrets/*)\"]\n",
    ));
    std::fs::create_dir_all(home.workspace().join("secrets")).unwrap();
    std::fs::write(home.workspace().join("secrets/a.txt"), "key").unwrap();
    fake.push(Step::tool_calls([
        ("exec", json!({"command": "true && git push origin main"})),
        ("exec", json!({"command": "sh -c 'git push'"})),
        ("read_file", json!({"path": "./secrets/a.txt"})),
        ("read_file", json!({"path": "notes/../secrets/a.txt"})),
        (
            "write_file",
            json!({"path": "skills/x/SKILL.md", "content": "x"}),
        ),
        ("exec", json!({"command": "echo git push"})),
    ]));
    fake.push(Step::text("done"));
    let run = home.run(&["chat", "-m", "push it"]);
    assert!(run.ok(), "{run:?}");
    let results = tool_results(&fake, 1);
    for at in [0, 1, 4] {
        assert!(
            results[at].contains("needs the owner's approval"),
            "{at}: {}",
            results[at]
        );
    }
    for at in [2, 3] {
        assert!(
            results[at].contains("refused by the owner's rule `read_file(secrets/*)`"),
            "{at}: {}",
            results[at]
        );
    }
    assert!(results[5].contains("git push"), "{}", results[5]);
    assert!(!home.workspace().join("skills").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_for_git_push_refuses_it_behind_git_options_and_through_xargs() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&common::openai_config(
        &fake,
        "[tools.permissions]\ndeny = [\"exec(git push*)\"]\n",
    ));
    fake.push(Step::tool_calls([
        ("exec", json!({"command": "git -C . push"})),
        ("exec", json!({"command": "printf x | xargs git push"})),
        (
            "exec",
            json!({"command": "git --no-pager -c a.b=c --git-dir .git push origin"}),
        ),
        ("exec", json!({"command": "git -C . --version"})),
    ]));
    fake.push(Step::text("done"));
    let run = home.run(&["chat", "-m", "push it"]);
    assert!(run.ok(), "{run:?}");
    let results = tool_results(&fake, 1);
    for (at, result) in results[..3].iter().enumerate() {
        assert!(
            result.contains("refused by the owner's rule `exec(git push*)`"),
            "{at}: {result}"
        );
    }
    assert!(!results[3].contains("refused"), "{}", results[3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_in_a_tool_result_or_a_reply_never_reaches_the_model_the_chat_or_the_log() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    let key = "sk-live-very-secret-value-123456";
    home.write_secrets(&format!("providers:\n  fake:\n    api_key: \"{key}\"\n"));
    std::fs::create_dir_all(home.workspace()).unwrap();
    std::fs::write(
        home.workspace().join("leak.txt"),
        format!("the key is {key}\nand a github token ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"),
    )
    .unwrap();
    fake.push(Step::tool_call("read_file", json!({"path": "leak.txt"})));
    fake.push(Step::text(format!("Here it is: {key}")));
    let run = home.run(&["-vv", "chat", "-m", "show me leak.txt"]);
    assert!(run.ok(), "{run:?}");
    let results = tool_results(&fake, 1).join("\n");
    assert!(
        !results.contains(key) && !results.contains("ghp_abc"),
        "{results}"
    );
    assert!(results.contains("[REDACTED]"));
    assert_eq!(run.stdout, "Here it is: [REDACTED]\n");
    assert!(!run.stderr.contains(key), "the log must not carry the key");
    assert!(
        !home.transcript().contains("ghp_abc"),
        "the stored tool result is scrubbed too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_result_is_saved_and_previewed() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    std::fs::create_dir_all(home.workspace()).unwrap();
    let big: String = (0..5000)
        .map(|n| format!("line {n} of a long file\n"))
        .collect();
    std::fs::write(home.workspace().join("big.txt"), &big).unwrap();
    fake.push(Step::tool_call("read_file", json!({"path": "big.txt"})));
    fake.push(Step::text("read it"));
    assert!(home.run(&["chat", "-m", "read big.txt"]).ok());
    let result = &tool_results(&fake, 1)[0];
    assert!(
        result.len() < 32 * 1024,
        "{} bytes went to the model",
        result.len()
    );
    assert!(
        result.contains("tool-output/read_file-"),
        "{}",
        &result[result.len() - 300..]
    );
    let saved: Vec<_> = std::fs::read_dir(home.workspace().join("tool-output"))
        .unwrap()
        .collect();
    assert_eq!(saved.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glob_grep_and_todo_work_on_the_workspace() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    std::fs::create_dir_all(home.workspace().join("notes")).unwrap();
    std::fs::write(home.workspace().join("notes/a.md"), "buy milk\ncall mum\n").unwrap();
    std::fs::write(
        home.workspace().join("notes/b.txt"),
        "milk is in the fridge\n",
    )
    .unwrap();
    fake.push(Step::tool_calls([
        ("glob", json!({"pattern": "**/*.md"})),
        ("grep", json!({"pattern": "milk"})),
        (
            "todo",
            json!({"items": [{"text": "find milk", "done": true}, {"text": "buy more"}]}),
        ),
    ]));
    fake.push(Step::text("ok"));
    assert!(home.run(&["chat", "-m", "look"]).ok());
    let results = tool_results(&fake, 1);
    assert_eq!(results[0], "notes/a.md");
    assert!(
        results[1].contains("notes/a.md:1: buy milk")
            && results[1].contains("notes/b.txt:1: milk is in the fridge"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("☑ find milk") && results[2].contains("1 of 2 done"),
        "{}",
        results[2]
    );
}

/// When each slow call ran: (tool, start, end).
type Spans = Arc<Mutex<Vec<(&'static str, Instant, Instant)>>>;

/// A tool that takes a while and records when it ran.
struct Slow {
    name: &'static str,
    read_only: bool,
    spans: Spans,
}

#[async_trait]
impl Tool for Slow {
    fn spec(&self) -> pincer::provider::ToolSpec {
        pincer::provider::ToolSpec {
            name: self.name.into(),
            description: "slow".into(),
            input_schema: json!({"type": "object"}).into(),
        }
    }
    fn effects(&self) -> pincer::tools::Effects {
        use pincer::tools::Effects;
        match self.read_only {
            true => Effects::READS_WORKSPACE,
            false => Effects::WRITES_WORKSPACE,
        }
    }
    async fn run(&self, _args: Parsed, _ctx: &ToolContext) -> Result<String, ToolError> {
        let start = Instant::now();
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.spans
            .lock()
            .unwrap()
            .push((self.name, start, Instant::now()));
        Ok(format!("{} done", self.name))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_calls_overlap_a_write_waits_and_results_keep_their_order() {
    let spans: Spans = Arc::new(Mutex::new(Vec::new()));
    let slow = |name, read_only| -> Arc<dyn Tool> {
        Arc::new(Slow {
            name,
            read_only,
            spans: Arc::clone(&spans),
        })
    };
    let registry = Registry::new(vec![
        slow("look_a", true),
        slow("look_b", true),
        slow("change", false),
        slow("look_c", true),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext {
        workspace: dir.path().to_path_buf(),
        origin: None,
        caller: pincer::tools::Caller::owner(),
        taint: Default::default(),
        pictures: Default::default(),
        session: None,
        mode: None,
    };
    let guard = pincer::tools::Guard::default();
    let calls = ["look_a", "look_b", "change", "look_c"];
    let args = json!({});
    let named: Vec<(&str, &Value)> = calls.iter().map(|name| (*name, &args)).collect();
    let batches = registry.batches(&named);
    assert_eq!(batches, [0..2, 2..3, 3..4]);
    let mut outcomes = Vec::new();
    for batch in batches {
        let group = futures_util::future::join_all(
            calls[batch]
                .iter()
                .map(|name| registry.execute("call_1", name, json!({}), &ctx, &guard)),
        )
        .await;
        outcomes.extend(group);
    }
    let contents: Vec<&str> = outcomes.iter().map(|o| o.content.as_str()).collect();
    assert_eq!(
        contents,
        ["look_a done", "look_b done", "change done", "look_c done"]
    );
    let spans = spans.lock().unwrap().clone();
    let span = |name: &str| {
        spans
            .iter()
            .find(|(n, ..)| *n == name)
            .map(|(_, s, e)| (*s, *e))
            .unwrap()
    };
    let (a, b, change, c) = (
        span("look_a"),
        span("look_b"),
        span("change"),
        span("look_c"),
    );
    assert!(a.0 < b.1 && b.0 < a.1, "the two reads overlap");
    assert!(
        change.0 >= a.1.max(b.1),
        "the write starts after the reads end"
    );
    assert!(c.0 >= change.1, "and the next read waits for the write");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_tools_are_offered_and_called_through_the_pipeline() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    let server = common::fake_mcp();
    home.write_config(&common::openai_config(
        &fake,
        &format!("[mcp.servers.calc]\ncommand = \"{server}\"\ntrusted = true\n"),
    ));
    // Give the server a moment to connect in the background before the model answers.
    fake.push(Step::tool_call("mcp__calc__add", json!({"a": 2, "b": 3})).after_ms(1500));
    fake.push(Step::text("2 + 3 = 5"));
    let run = home.run(&["chat", "-m", "add 2 and 3 with the calculator"]);
    assert!(run.ok(), "{run:?}");
    assert_eq!(run.stdout, "2 + 3 = 5\n");
    assert_eq!(tool_results(&fake, 1), ["5"]);
    // The second request offers the MCP tools after the built-ins.
    let names: Vec<String> = fake.requests()[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    let first_mcp = names
        .iter()
        .position(|n| n.starts_with("mcp__calc__"))
        .expect("MCP tools offered");
    assert!(
        names[first_mcp..].iter().all(|n| n.starts_with("mcp__")),
        "{names:?}"
    );
    assert!(names.contains(&"mcp__calc__echo".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_in_the_workspace_and_its_deny_groups_can_be_switched() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    fake.push(Step::tool_calls([
        ("exec", json!({"command": "echo hello && pwd"})),
        ("exec", json!({"command": "echo ok; rm -rf /"})),
        ("exec", json!({"command": "sudo ls"})),
    ]));
    fake.push(Step::text("done"));
    assert!(home.run(&["chat", "-m", "run things"]).ok());
    let results = tool_results(&fake, 1);
    assert!(
        results[0].contains("exit code 0") && results[0].contains("hello"),
        "{}",
        results[0]
    );
    let workspace = home.workspace().canonicalize().unwrap();
    assert!(
        results[0].contains(&workspace.display().to_string()),
        "runs in the workspace: {}",
        results[0]
    );
    assert!(
        results[1].contains("`destructive` deny group"),
        "{}",
        results[1]
    );
    assert!(
        results[2].contains("`privilege` deny group"),
        "{}",
        results[2]
    );

    // With the privilege group switched off (only destructive stays on), sudo is let through
    // to the shell (and fails there for its own reasons), while rm -rf / is still refused.
    home.write_config(&common::openai_config(
        &fake,
        "[tools.exec]\ndeny_groups = [\"destructive\"]\n",
    ));
    fake.push(Step::tool_calls([
        ("exec", json!({"command": "sudo -n true"})),
        ("exec", json!({"command": "rm -rf /"})),
    ]));
    fake.push(Step::text("done"));
    assert!(home.run(&["chat", "-m", "again"]).ok());
    let results = tool_results(&fake, 3);
    let last_two = &results[results.len() - 2..];
    assert!(last_two[0].contains("exit code"), "{}", last_two[0]);
    assert!(
        last_two[1].contains("`destructive` deny group"),
        "{}",
        last_two[1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_deny_group_is_refused_at_start_with_the_list() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&common::openai_config(
        &fake,
        "[tools.exec]\ndeny_groups = [\"net\"]\n",
    ));
    home.run(&["chat", "-m", "hi"])
        .fails_with(&["`net`", "destructive", "reverse_shell"]);
    assert!(fake.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owners_hooks_refuse_calls_and_rewrite_results() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    // The pre hook refuses `exec` pushes and logs every call it sees; the post hook
    // redacts a word from read_file results. Hooks run in the workspace.
    home.write_config(&common::openai_config(
        &fake,
        r#"[tools.hooks.guard]
event = "pre"
tools = ["exec", "read_*"]
command = "input=$(cat); echo \"$input\" >> hook-calls.jsonl; case \"$input\" in *'git push'*) echo 'pushing needs a review first'; exit 1;; esac"

[tools.hooks.redact]
event = "post"
tools = ["read_file"]
command = "sed -n 's/.*\"result\":\"\\([^\"]*\\)\".*/\\1/p' | sed 's/hunter2/[hidden]/'"
"#,
    ));
    std::fs::create_dir_all(home.workspace()).unwrap();
    std::fs::write(home.workspace().join("notes.txt"), "password hunter2").unwrap();
    fake.push(Step::tool_calls([
        ("exec", json!({"command": "git push origin main"})),
        ("exec", json!({"command": "echo fine"})),
        ("read_file", json!({"path": "notes.txt"})),
        (
            "edit_file",
            json!({"path": "notes.txt", "old_text": "x", "new_text": "x"}),
        ),
    ]));
    fake.push(Step::text("done"));
    let run = home.run(&["chat", "-m", "try the hooks"]);
    assert!(run.ok(), "{run:?}");
    let results = tool_results(&fake, 1);
    assert!(
        results[0].contains("hook `guard` refused this exec call: pushing needs a review first"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("fine"), "{}", results[1]);
    assert!(results[2].contains("password [hidden]"), "{}", results[2]);
    assert!(!results[2].contains("hunter2"), "{}", results[2]);
    assert!(
        results[3].contains("old_text and new_text are the same"),
        "{}",
        results[3]
    );
    let seen = std::fs::read_to_string(home.workspace().join("hook-calls.jsonl")).unwrap();
    assert!(
        seen.contains(r#""tool":"exec""#) && seen.contains(r#""tool":"read_file""#),
        "{seen}"
    );
}

/// The compact JSON of the tool definitions in the first request for "hi" after
/// `onboard --non-interactive`: the built-ins of `agent.always_tools` whole, `escalate`,
/// and `tool_search` naming the rest (13 whole tools, 5,561 bytes when the rest became
/// deferred, 2026-11-28; 20 whole tools weighed 7,346 before). Every request carries
/// them, so they must not grow unnoticed: a change that needs more says why in
/// docs/benchmarks.md and raises this. Remeasure with this test's failure message, or
/// `bench/run.sh` ("… of which tool schemas").
const HI_TOOLS_BYTES: usize = 5_700;
/// The whole first request for "hi" (issue 37: at most 8 KB).
const HI_BODY_BYTES: usize = 8 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_request_for_hi_stays_under_8_kb_and_its_tool_definitions_do_not_grow() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    let base = fake.openai_base();
    let onboard = home.run(&[
        "onboard",
        "--non-interactive",
        "--base-url",
        &base,
        "--light-model",
        "m",
        "--heavy-model",
        "m",
        "--timezone",
        "UTC",
    ]);
    assert!(onboard.ok(), "{onboard:?}");
    let run = home.run(&["chat", "-m", "hi"]);
    assert!(run.ok(), "{run:?}");
    let body = &fake.requests()[0].body;
    let tools = &body["tools"];
    let bytes = serde_json::to_string(tools).unwrap().len();
    assert!(
        bytes <= HI_TOOLS_BYTES,
        "the {} tool definitions sent with \"hi\" grew to {bytes} bytes (ceiling {HI_TOOLS_BYTES})",
        tools.as_array().map_or(0, Vec::len)
    );
    let whole = serde_json::to_string(body).unwrap().len();
    assert!(
        whole <= HI_BODY_BYTES,
        "the first request for \"hi\" is {whole} bytes (at most {HI_BODY_BYTES})"
    );
    // Every built-in is still there to be had: whole, or named to load.
    let offered = crate::common::trust::offered_tools(body);
    for name in [
        "cron",
        "send_message",
        "send_file",
        "task",
        "conversation_search",
        "exec",
    ] {
        assert!(offered.contains(&name.to_string()), "{name}: {offered:?}");
    }
}

/// `agent.always_tools` decides what is offered whole; a name that is no built-in
/// stops the start with the list of built-ins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_tools_chooses_the_tools_offered_whole() {
    let fake = FakeModel::start().await;
    let home = TestHome::new();
    home.write_config(&crate::common::openai_config(
        &fake,
        "[agent]\nalways_tools = [\"read_file\", \"cron\"]\n",
    ));
    assert!(home.run(&["chat", "-m", "hi"]).ok());
    let body = &fake.requests()[0].body;
    assert_eq!(
        crate::common::trust::tool_names(body),
        ["cron", "read_file", "tool_search"]
    );
    let bad = TestHome::new();
    bad.write_config(&crate::common::openai_config(
        &fake,
        "[agent]\nalways_tools = [\"read_flie\"]\n",
    ));
    let run = bad.run(&["chat", "-m", "hi"]);
    assert!(
        !run.ok() && run.stderr.contains("agent.always_tools names `read_flie`"),
        "{run:?}"
    );
}

/// The workspace's skills reach the model: the skill tool is offered and the system
/// prompt lists each skill; with none, neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_in_the_workspace_are_listed_in_the_prompt_and_offer_the_skill_tool() {
    let fake = FakeModel::start().await;
    let home = TestHome::openai(&fake);
    std::fs::create_dir_all(home.workspace()).unwrap();
    assert!(home.run(&["chat", "-m", "hi"]).ok());
    let skill = home.workspace().join("skills/standup");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: standup\ndescription: Write the daily standup note\n---\nAsk.\n",
    )
    .unwrap();
    assert!(home.run(&["chat", "-m", "hi again"]).ok());
    let requests = fake.requests();
    let seen = |n: usize| {
        let body = &requests[n].body;
        let system = body["messages"][0]["content"].to_string();
        let offered = body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["function"]["name"] == "skill"));
        (
            system.contains("- standup: Write the daily standup note"),
            offered,
        )
    };
    assert_eq!(seen(0), (false, false), "no skills yet");
    assert_eq!(seen(1), (true, true));
}

/// A tool that declares nothing: it only records that it ran.
struct Undeclared {
    ran: Arc<Mutex<u32>>,
}

#[async_trait]
impl Tool for Undeclared {
    fn spec(&self) -> pincer::provider::ToolSpec {
        pincer::provider::ToolSpec {
            name: "new_tool".into(),
            description: "a tool someone added without saying what it does".into(),
            input_schema: json!({"type": "object"}).into(),
        }
    }
    async fn run(&self, _args: Parsed, _ctx: &ToolContext) -> Result<String, ToolError> {
        *self.ran.lock().unwrap() += 1;
        Ok("ran".into())
    }
}

/// Every policy follows the tool's declared effects, and a tool with no declaration
/// gets the strictest: not in plan mode, not for subagents, asking after untrusted
/// content, not run beside others.
#[tokio::test]
async fn a_tool_without_a_declaration_gets_the_strictest_effects() {
    use pincer::tools::mode::PermissionMode;
    use pincer::tools::{Caller, Effects};
    let ran = Arc::new(Mutex::new(0));
    let registry = Registry::new(vec![Arc::new(Undeclared {
        ran: Arc::clone(&ran),
    })]);
    assert_eq!(registry.effects_of("new_tool"), Effects::STRICTEST);
    assert!(!registry.read_only("new_tool", &json!({})));
    let offered = |caller: &Caller| -> Vec<String> {
        registry
            .offered(caller)
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    assert!(offered(&Caller::owner()).contains(&"new_tool".to_string()));
    assert!(!offered(&Caller::owner().subagent()).contains(&"new_tool".to_string()));
    let dir = tempfile::tempdir().unwrap();
    let ctx = |mode: Option<PermissionMode>| ToolContext {
        workspace: dir.path().to_path_buf(),
        origin: None,
        caller: Caller::owner(),
        taint: Default::default(),
        pictures: Default::default(),
        session: Some(1),
        mode,
    };
    let guard = pincer::tools::Guard::default();
    let plan = registry
        .execute(
            "c1",
            "new_tool",
            json!({}),
            &ctx(Some(PermissionMode::Plan)),
            &guard,
        )
        .await;
    assert!(
        plan.is_error && plan.content.contains("plan mode"),
        "{plan:?}"
    );
    let tainted = ctx(None);
    tainted.taint.set();
    let asked = registry
        .execute("c2", "new_tool", json!({}), &tainted, &guard)
        .await;
    assert!(
        asked.is_error && asked.content.contains("approval"),
        "{asked:?}"
    );
    assert_eq!(*ran.lock().unwrap(), 0, "it never ran");
    // And what it returns is untrusted content.
    let clean = ctx(None);
    let done = registry
        .execute("c3", "new_tool", json!({}), &clean, &guard)
        .await;
    assert_eq!(done.content, "ran");
    assert!(clean.taint.is_set());
}
