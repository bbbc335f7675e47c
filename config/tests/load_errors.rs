//! Every way config.toml (or an override) can be wrong, and the message the user sees.

use std::path::PathBuf;

use pincer_config::{ConfigError, Location, load_str};

const CFG: &str = "/home/u/.pincer/config.toml";
const SEC: &str = "/home/u/.pincer/.security.yml";

fn err_env(text: &str, env: &[(&str, &str)]) -> ConfigError {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    match load_str(text, &PathBuf::from(CFG), &PathBuf::from(SEC), &env) {
        Ok(c) => panic!("expected an error for {text:?}, loaded {c:?}"),
        Err(e) => e,
    }
}

fn err(text: &str) -> String {
    err_env(text, &[]).to_string()
}

#[track_caller]
fn has(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{message:?} lacks {part:?}");
    }
}

// a. syntax

#[test]
fn syntax_errors_name_file_line_and_column() {
    let e = err_env("version = 1\n[agent\nmax_iterations = 3\n", &[]);
    assert!(
        matches!(
            e,
            ConfigError::Syntax {
                line: 2,
                column: 7,
                ..
            }
        ),
        "{e:?}"
    );
    has(&e.to_string(), &[CFG, "line 2, column 7", "invalid TOML"]);
    has(
        &err("[agent]\nmax_iterations = 1\nmax_iterations = 2\n"),
        &["line 3", "duplicate key `max_iterations`"],
    );
}

// b. secrets written in config.toml

#[test]
fn a_provider_key_in_config_says_where_it_belongs() {
    let m = err("[providers.openai]\nkind = \"openai\"\napi_key = \"sk-live-123\"\n");
    assert_eq!(
        m,
        format!(
            "{CFG} line 3: `providers.openai.api_key` is a secret; move it to {SEC} under \
             providers.openai.api_key (or set OPENAI_API_KEY), then delete it from {CFG}"
        )
    );
    assert!(!m.contains("sk-live-123"));
    has(
        &err("[providers.claude]\nkind = \"anthropic\"\napi_keys = [\"a\", \"b\"]\n"),
        &[
            "line 3",
            "under providers.claude.api_keys",
            "ANTHROPIC_API_KEY",
        ],
    );
}

#[test]
fn channel_tokens_and_other_secret_names_are_refused() {
    has(
        &err("[channels.telegram]\nenabled = true\nbot_token = \"1:abc\"\n"),
        &[
            "line 3",
            "under channels.telegram.bot_token",
            "TELEGRAM_BOT_TOKEN",
        ],
    );
    has(
        &err("[channels.slack]\napp_token = \"xapp\"\n"),
        &["SLACK_APP_TOKEN"],
    );
    has(
        &err("[channels.slack]\nsigning_secret = \"s\"\n"),
        &["channels.slack.signing_secret"],
    );
    has(
        &err("[tools.web_search]\napi_key = \"k\"\n"),
        &["under tools.web_search.api_key"],
    );
    has(
        &err("[mcp.servers.github]\ncommand = \"x\"\nenv = { GITHUB_TOKEN = \"ghp\" }\n"),
        &["line 3", "under mcp.github.env.GITHUB_TOKEN"],
    );
    has(
        &err("[agent]\npassword = \"hunter2\"\n"),
        &["line 2", "`agent.password`", SEC],
    );
}

#[test]
fn secrets_are_reported_before_unknown_keys() {
    let m = err("[agent]\nmax_iteration = 3\n[providers.x]\nkind = \"openai\"\napi_key = \"k\"\n");
    has(&m, &["line 5", "is a secret"]);
}

#[test]
fn names_that_merely_look_secret_are_fine_as_table_names() {
    let text =
        "[providers.mytoken]\nkind = \"openai\"\n[prices.\"x/secret\"]\ninput = 1\noutput = 2\n";
    assert!(load_str(text, &PathBuf::from(CFG), &PathBuf::from(SEC), &[]).is_ok());
}

#[test]
fn a_secret_in_an_override_variable_is_refused() {
    let m = err_env("", &[("PINCER_PROVIDERS__OPENAI__API_KEY", "sk-env")]).to_string();
    has(
        &m,
        &[
            "environment variable PINCER_PROVIDERS__OPENAI__API_KEY",
            "move it to",
            "unset PINCER_PROVIDERS__OPENAI__API_KEY",
        ],
    );
    assert!(!m.contains("sk-env"));
}

// version

#[test]
fn a_newer_version_says_upgrade_before_complaining_about_keys() {
    let e = err_env("version = 2\n[agent]\nbrand_new_key = 1\n", &[]);
    assert_eq!(
        e.to_string(),
        format!("{CFG} is version 2 but this pincer understands 1; upgrade pincer")
    );
    has(&err("version = 0\n"), &["line 1", "`version` must be 1"]);
    has(
        &err("version = \"one\"\n"),
        &["`version` must be an integer"],
    );
}

// c. unknown keys

#[test]
fn unknown_keys_name_the_line_and_the_nearest_key() {
    assert_eq!(
        err("version = 1\n\n[agent]\nmax_iteration = 10\n"),
        format!("{CFG} line 4: unknown key `agent.max_iteration`; did you mean `max_iterations`?")
    );
    has(
        &err("[agnt]\n"),
        &["line 1", "`agnt`", "did you mean `agent`?"],
    );
    has(
        &err("[providers.openai]\nkind = \"openai\"\nbase_ur = \"x\"\n"),
        &["line 3", "`providers.openai.base_ur`", "`base_url`"],
    );
    has(
        &err("[channels.slack]\nmoed = \"events\"\n"),
        &["did you mean `mode`?"],
    );
    has(
        &err("[channels.telegram]\nmode = \"socket\"\n"),
        &["unknown key `channels.telegram.mode`"],
    );
    has(
        &err("[mcp.servers.gh]\ncomand = \"x\"\n"),
        &["`mcp.servers.gh.comand`", "`command`"],
    );
    has(
        &err("agent = { timezon = \"UTC\" }\n"),
        &["line 1", "did you mean `timezone`?"],
    );
}

#[test]
fn an_unknown_key_with_no_near_match_lists_the_valid_ones() {
    let e = err_env("[heartbeat]\ncolour = \"blue\"\n", &[]);
    let ConfigError::UnknownKey {
        suggestion,
        valid,
        location,
        ..
    } = &e
    else {
        panic!("{e:?}");
    };
    assert_eq!(suggestion, &None);
    assert_eq!(valid, &["enabled", "every", "max_day_tokens"]);
    assert_eq!(
        location,
        &Location::File {
            path: CFG.into(),
            line: Some(2)
        }
    );
    has(&e.to_string(), &["valid keys here: enabled, every"]);
}

#[test]
fn the_first_unknown_key_in_the_file_is_reported() {
    has(
        &err("[memory]\nzzz = 1\n[agent]\naaa = 1\n"),
        &["line 2", "memory.zzz"],
    );
}

#[test]
fn a_misspelt_memory_key_is_named_with_the_right_one() {
    has(
        &err("[memory]\ndream_max_tokns = 9000\n"),
        &["memory.dream_max_tokns", "did you mean `dream_max_tokens`"],
    );
}

#[test]
fn unknown_override_variables_name_the_variable() {
    let m = err_env("", &[("PINCER_AGENT__MAX_ITERATION", "10")]).to_string();
    assert_eq!(
        m,
        "environment variable PINCER_AGENT__MAX_ITERATION: unknown key `agent.max_iteration`; \
         did you mean `max_iterations`?"
    );
    has(
        &err_env("", &[("PINCER_AGENT__OWNERS__X", "1")]).to_string(),
        &["no sub-keys"],
    );
    has(
        &err_env("", &[("PINCER_AGENT____X", "1")]).to_string(),
        &["PINCER_AGENT____X", "not a config override"],
    );
}

// d. types

#[test]
fn type_errors_name_the_key_line_and_what_was_found() {
    assert_eq!(
        err("[agent]\nmax_iterations = \"ten\"\n"),
        format!("{CFG} line 2: `agent.max_iterations` must be an integer (found string \"ten\")")
    );
    has(
        &err("[agent]\nmax_iterations = -1\n"),
        &["an integer from 0 to 4294967295", "-1"],
    );
    has(
        &err("[channels.telegram]\nenabled = \"yes\"\n"),
        &[
            "line 2",
            "`channels.telegram.enabled` must be true or false",
        ],
    );
    has(
        &err("[agent]\nowners = \"telegram:1\"\n"),
        &["`agent.owners` must be a list"],
    );
    has(
        &err("[router]\nthreshold = \"high\"\n"),
        &["`router.threshold` must be a number"],
    );
    has(
        &err("\n\n[channels.telegram]\nallow_from = [\n  1,\n  1.5,\n]\n"),
        &["line 6", "`channels.telegram.allow_from[1]`"],
    );
    has(
        &err("[tools.exec]\ndeny_groups = \"none\"\n"),
        &["line 2", "must be \"all\" or a list of group names"],
    );
}

#[test]
fn misspelt_choices_list_the_choices() {
    has(
        &err("[agent]\nqueue_mode = \"stear\"\n"),
        &[
            "line 2",
            "`agent.queue_mode` must be one of \"steer\", \"followup\", \"collect\" or \"interrupt\"",
            "did you mean \"steer\"?",
        ],
    );
    has(
        &err("[providers.x]\nkind = \"openia\"\n"),
        &["\"openai\" or \"anthropic\""],
    );
    has(
        &err("[channels.discord]\ndm_policy = \"closed\"\n"),
        &["\"pairing\""],
    );
    has(
        &err("[models.\"local/qwen\"]\ntext_tool_calls = \"yes\"\n"),
        &["text_tool_calls", "\"auto\", \"on\" or \"off\""],
    );
}

#[test]
fn tables_written_as_values_or_arrays_are_type_errors() {
    has(&err("agent = 5\n"), &["line 1", "`agent` must be a table"]);
    has(
        &err("[[agent]]\nmax_iterations = 1\n"),
        &["`agent` must be a table", "array of tables"],
    );
    has(
        &err("[prices]\n\"a/b\" = [1, 2]\n"),
        &["line 2", "`prices.a/b` must be a table"],
    );
}

#[test]
fn missing_required_keys_name_the_table() {
    has(
        &err("\n[providers.local]\nbase_url = \"http://127.0.0.1:1/v1\"\n"),
        &[
            "line 2",
            "`providers.local.kind` is required",
            "[providers.local]",
        ],
    );
    has(
        &err("[prices.\"a/b\"]\ninput = 1\n"),
        &["`prices.a/b.output` is required"],
    );
}

#[test]
fn type_errors_from_overrides_name_the_variable() {
    let e = err_env(
        "[agent]\nmax_iterations = 5\n",
        &[("PINCER_AGENT__MAX_ITERATIONS", "ten")],
    );
    assert_eq!(
        e.to_string(),
        "environment variable PINCER_AGENT__MAX_ITERATIONS: `agent.max_iterations` must be an \
         integer (found string \"ten\")"
    );
}

// e. meaning

#[test]
fn open_dms_require_the_star() {
    let m = err("[channels.telegram]\nenabled = true\ndm_policy = \"open\"\n");
    has(&m, &["line 3", "channels.telegram.allow_from = [\"*\"]"]);
    has(
        &err("[channels.slack]\ndm_policy = \"open\"\nallow_from = [\"U1\"]\n"),
        &["channels.slack.allow_from = [\"*\"]"],
    );
}

#[test]
fn the_star_is_refused_under_other_policies() {
    let m = err("[channels.discord]\ndm_policy = \"allowlist\"\nallow_from = [\"*\"]\n");
    has(
        &m,
        &[
            "line 3",
            "`channels.discord.allow_from` contains \"*\"",
            "dm_policy = \"open\"",
        ],
    );
    has(
        &err("[channels.telegram]\nallow_from = [\"*\"]\n"),
        &["dm_policy is \"pairing\""],
    );
}

#[test]
fn a_silence_limit_under_two_seconds_is_refused() {
    let m = err("[channels.slack]\nsilence_secs = 1\n");
    has(&m, &["line 2", "channels.slack.silence_secs", "at least 2"]);
    let ok = "[channels.telegram]\nsilence_secs = 30\n";
    assert!(load_str(ok, &PathBuf::from(CFG), &PathBuf::from(SEC), &[]).is_ok());
}

#[test]
fn router_entries_must_name_configured_providers() {
    has(
        &err("[router]\nlight = [\"gpt-4.1-mini\"]\n"),
        &["line 2", "`router.light[0]`", "\"<provider>/<model>\""],
    );
    let m = err(
        "[providers.openai]\nkind = \"openai\"\n[providers.local]\nkind = \"openai\"\n\
         [router]\nheavy = [\"openai/gpt-4.1\", \"anthropic/claude-sonnet-4-5\"]\n",
    );
    has(
        &m,
        &[
            "line 6",
            "`router.heavy[1]`",
            "\"anthropic\"",
            "configured: local, openai",
            "add [providers.anthropic]",
        ],
    );
    has(
        &err("[router]\nheavy = [\"x/y\"]\n"),
        &["no providers are configured"],
    );
}

#[test]
fn empty_chains_load_and_light_may_be_empty() {
    let cfg = PathBuf::from(CFG);
    let sec = PathBuf::from(SEC);
    assert!(load_str("[router]\nlight = []\nheavy = []\n", &cfg, &sec, &[]).is_ok());
    let text = "[providers.a]\nkind = \"anthropic\"\n[router]\nheavy = [\"a/m\"]\n";
    let c = load_str(text, &cfg, &sec, &[]).unwrap();
    assert!(
        c.router.light.is_empty(),
        "loading never rewrites the chains"
    );
    assert_eq!(c.router.effective_light(), ["a/m".to_owned()]);
}

#[test]
fn threshold_must_be_between_zero_and_one() {
    has(
        &err("[router]\nthreshold = 1.5\n"),
        &["line 2", "between 0 and 1", "1.5"],
    );
    has(&err("[router]\nthreshold = -0.1\n"), &["between 0 and 1"]);
}

#[test]
fn other_meaning_checks() {
    has(
        &err("[agent]\nmax_iterations = 0\n"),
        &["line 2", "at least 1"],
    );
    has(
        &err("[agent]\nmax_day_cost_usd = -1.0\n"),
        &["`agent.max_day_cost_usd` must be 0 or more"],
    );
    has(
        &err("[tools.web_search]\nbackend = \"google\"\n"),
        &["brave, searxng, tavily"],
    );
    has(
        &err("[tools.web_search]\nbackend = \"searxng\"\n"),
        &["url = "],
    );
    has(
        &err("[tools.hooks.audit]\nevent = \"post\"\n"),
        &["line 1", "`tools.hooks.audit` needs command"],
    );
    has(
        &err("[tools.hooks.audit]\nevent = \"during\"\ncommand = \"x\"\n"),
        &["line 2", "pre", "post"],
    );
    has(
        &err("[tools.permissions]\napproval_timeout_secs = 0\n"),
        &["at least 1"],
    );
    has(
        &err("[models.\"local/qwen\"]\ncall_timeout_secs = 0\n"),
        &["line 2", "call_timeout_secs` must be at least 1"],
    );
    has(
        &err("[host]\napproval_timeout_secs = 0\n"),
        &["line 2", "`host.approval_timeout_secs` must be at least 1"],
    );
    has(
        &err("[mcp.servers.x]\nargs = [\"a\"]\n"),
        &["line 1", "`mcp.servers.x` needs exactly one"],
    );
    has(
        &err("[mcp.servers.x]\ncommand = \"a\"\nurl = \"http://h/mcp\"\n"),
        &["exactly one"],
    );
    has(
        &err("[providers.x]\nkind = \"openai\"\nbase_url = \"127.0.0.1:1\"\n"),
        &["line 3", "http:// or https://"],
    );
    has(
        &err("[channels.slack]\nmode = \"events\"\nlisten = \"localhost\"\n"),
        &["127.0.0.1:8787"],
    );
    has(
        &err("[channels.slack]\nlisten = \"127.0.0.1:8787\"\n"),
        &["mode = \"events\""],
    );
}

#[test]
fn meaning_errors_from_overrides_name_the_variable() {
    let e = err_env("", &[("PINCER_ROUTER__THRESHOLD", "2")]);
    has(
        &e.to_string(),
        &[
            "environment variable PINCER_ROUTER__THRESHOLD",
            "between 0 and 1",
        ],
    );
}

#[test]
fn an_exec_limit_too_small_for_a_shell_names_the_key_and_the_least_value() {
    has(
        &err("[tools.exec.limits]\nprocesses = 2\n"),
        &["tools.exec.limits.processes", "at least 8", "0 (no limit)"],
    );
    has(
        &err("[tools.exec.limits]\nmemory_mb = 10\n"),
        &["tools.exec.limits.memory_mb", "at least 64"],
    );
    has(&err("[tools.exec.limits]\nmemory = 10\n"), &["memory_mb"]);
}
