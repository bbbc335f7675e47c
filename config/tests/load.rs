//! Loading config.toml: defaults, the documented example, environment overrides.

use std::path::{Path, PathBuf};

use pincer_config::{
    Config, ConfigError, DenyGroups, DmPolicy, GroupPolicy, ProviderKind, QueueMode, SlackMode,
    TextToolCalls, load, load_str,
};

fn sec() -> PathBuf {
    PathBuf::from("/home/u/.pincer/.security.yml")
}

fn cfg() -> PathBuf {
    PathBuf::from("/home/u/.pincer/config.toml")
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn ok(text: &str) -> Config {
    load_str(text, &cfg(), &sec(), &[]).unwrap_or_else(|e| panic!("{e}"))
}

/// The example from DESIGN.md, comments kept.
pub(crate) const EXAMPLE: &str = r#"
version = 1

[agent]
workspace = "~/.pincer/workspace"
max_iterations = 25          # model calls per turn
max_turn_cost_usd = 0.50
max_day_cost_usd = 5.00
max_turn_secs = 600
queue_mode = "steer"         # steer | followup | collect | interrupt
timezone = "UTC"
owners = ["telegram:123456789"]   # canonical sender ids; else the first approved sender

[router]
threshold = 0.35
light = ["openai/gpt-4.1-mini"]  # "<provider>/<model>", split at the first "/", tried in order
heavy = ["anthropic/claude-sonnet-4-5", "openai/gpt-4.1"]

[providers.openai]
kind = "openai"              # OpenAI-compatible wire format
base_url = "https://api.openai.com/v1"
timeout_secs = 120           # whole request
idle_timeout_secs = 30       # no stream bytes for this long: abandon

[providers.anthropic]
kind = "anthropic"
base_url = "https://api.anthropic.com"

[prices."openai/gpt-4.1-mini"]   # USD per million tokens; overrides the built-in table
input = 0.40
output = 1.60

[channels.telegram]
enabled = false              # every channel is off until enabled
api_url = "https://api.telegram.org"
dm_policy = "pairing"        # pairing | allowlist | open | disabled
allow_from = []              # raw sender ids; ["*"] only with dm_policy = "open"
group_policy = "mention"     # mention | always | disabled
groups = []                  # allowed group ids; ["*"] = all
media_max_mb = 20

[channels.discord]           # same access keys; api_url = "https://discord.com"
[channels.slack]             # same access keys; api_url = "https://slack.com/api"
mode = "socket"              # socket | events (events: listen = "127.0.0.1:8787")

[tools.exec]
deny_groups = "all"          # or a list; each group can be switched off by name
[tools.permissions]          # rules by tool and argument pattern: allow / ask / deny lists
[tools.web_search]
backend = "brave"            # brave | searxng | tavily (searxng: url = ...)

[cron]
grace_secs = 3600            # a run missed while down runs once at start if within this
[heartbeat]
enabled = false
every = "30m"

[memory]
dream_schedule = "0 3 * * *" # standard 5-field cron, in agent.timezone

[mcp.servers.github]         # one table per MCP server
command = "github-mcp-server"   # stdio: command + args; or url = "http://127.0.0.1:9201/mcp"
args = ["stdio"]
"#;

#[test]
fn an_empty_file_gives_the_defaults() {
    let c = ok("");
    assert_eq!(c, Config::default());
    assert_eq!(c.version, 1);
    assert_eq!(c.agent.max_iterations, 25);
    assert_eq!(c.agent.max_turn_cost_usd, 0.50);
    assert_eq!(c.agent.max_day_cost_usd, 5.00);
    assert_eq!(c.agent.max_turn_secs, 600);
    assert_eq!(c.agent.queue_mode, QueueMode::Steer);
    assert_eq!(c.agent.timezone, "UTC");
    assert_eq!(c.agent.idle_session_secs, 300);
    assert_eq!(c.agent.max_tokens, 4096);
    assert!(c.agent.workspace.is_none());
    assert_eq!(c.router.threshold, 0.35);
    assert!(c.router.light.is_empty() && c.router.heavy.is_empty());
    for access in c.channels.all() {
        assert!(!access.enabled);
        assert_eq!(access.dm_policy, DmPolicy::Pairing);
        assert_eq!(access.group_policy, GroupPolicy::Mention);
        assert_eq!(access.media_max_mb, 20);
    }
    assert_eq!(c.channels.slack.mode, SlackMode::Socket);
    assert_eq!(c.tools.exec.deny_groups, DenyGroups::All);
    assert_eq!(c.cron.grace_secs, 3600);
    assert!(!c.heartbeat.enabled);
    assert_eq!(c.heartbeat.every, "30m");
    assert_eq!(c.memory.dream_schedule, "0 3 * * *");
    assert_eq!(c.memory.dream_max_tokens, 30_000);
    assert!(c.mcp.servers.is_empty());
    assert_eq!(c.host.approval_timeout_secs, 120);
}

#[test]
fn comments_only_and_version_only_files_load() {
    assert_eq!(ok("# nothing yet\n"), Config::default());
    assert_eq!(ok("version = 1\n"), Config::default());
}

#[test]
fn the_documented_example_loads() {
    let c = ok(EXAMPLE);
    assert_eq!(c.agent.owners, ["telegram:123456789"]);
    assert_eq!(c.router.heavy.len(), 2);
    assert_eq!(c.providers["openai"].kind, ProviderKind::Openai);
    assert_eq!(c.providers["anthropic"].kind, ProviderKind::Anthropic);
    assert_eq!(c.providers["anthropic"].timeout_secs, 120);
    assert_eq!(c.providers["anthropic"].idle_timeout_secs, 90);
    assert_eq!(c.prices["openai/gpt-4.1-mini"].output, 1.60);
    assert_eq!(c.prices["openai/gpt-4.1-mini"].cache_read, None);
    assert_eq!(c.tools.web_search.backend.as_deref(), Some("brave"));
    assert_eq!(c.mcp.servers["github"].args, ["stdio"]);
    assert_eq!(
        c.agent
            .workspace_dir(Path::new("/p"), Some(Path::new("/home/u"))),
        PathBuf::from("/home/u/.pincer/workspace")
    );
}

#[test]
fn every_choice_and_shape_loads() {
    let c = ok(r#"
[agent]
queue_mode = "interrupt"
max_turn_cost_usd = 1        # an integer where a number is expected is fine
[providers.local]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
[router]
light = ["local/llama3.2"]
[channels.telegram]
enabled = true
dm_policy = "open"
allow_from = ["*"]
group_policy = "always"
groups = [-1001234567890, "-100999"]
[channels.discord]
dm_policy = "allowlist"
allow_from = [123456789012345678, "42"]
[channels.slack]
mode = "events"
listen = "127.0.0.1:8787"
dm_policy = "disabled"
group_policy = "disabled"
[tools.exec]
deny_groups = ["net", "pkg"]
[tools.permissions]
allow = ["read_file"]
ask = ["exec:git push*"]
deny = ["exec:rm -rf*"]
[tools.web_search]
backend = "searxng"
url = "https://searx.example.org"
[mcp.servers.remote]
url = "http://127.0.0.1:9201/mcp"
[prices."local/llama3.2"]
input = 0
output = 0
cache_read = 0.0
cache_write = 0.0
[models."local/llama3.2"]
text_tool_calls = "off"
"#);
    assert_eq!(c.agent.queue_mode, QueueMode::Interrupt);
    assert_eq!(c.agent.max_turn_cost_usd, 1.0);
    assert_eq!(c.channels.telegram.groups, ["-1001234567890", "-100999"]);
    assert_eq!(c.channels.discord.allow_from, ["123456789012345678", "42"]);
    assert_eq!(c.channels.slack.mode, SlackMode::Events);
    assert_eq!(
        c.tools.exec.deny_groups,
        DenyGroups::Some(vec!["net".into(), "pkg".into()])
    );
    assert!(!c.tools.exec.deny_groups.denies("fs"));
    assert_eq!(c.providers["local"].base_url(), "http://127.0.0.1:11434/v1");
    assert_eq!(
        c.models["local/llama3.2"].text_tool_calls,
        Some(TextToolCalls::Off)
    );
}

#[test]
fn inline_tables_and_dotted_keys_load() {
    let c = ok("agent.max_iterations = 3\nproviders = { local = { kind = \"anthropic\" } }\n");
    assert_eq!(c.agent.max_iterations, 3);
    assert_eq!(c.providers["local"].kind, ProviderKind::Anthropic);
}

#[test]
fn environment_overrides_the_file() {
    let vars = env(&[
        ("PINCER_AGENT__MAX_ITERATIONS", "10"),
        ("PINCER_AGENT__TIMEZONE", "Europe/Paris"),
        ("PINCER_CHANNELS__TELEGRAM__ENABLED", "true"),
        ("PINCER_CHANNELS__TELEGRAM__ALLOW_FROM", "[42, \"43\"]"),
        ("PINCER_PROVIDERS__LOCAL__KIND", "openai"),
        ("PINCER_ROUTER__THRESHOLD", "0.5"),
        ("PINCER_MEMORY__DREAM_SCHEDULE", "0 3 * * 1-5"),
        ("PINCER_AGENT__WORKSPACE", "/srv/pincer ws"),
        ("PINCER_CHANNELS__DISCORD__API_URL", "http://127.0.0.1:9000"),
        ("PINCER_HEARTBEAT__EVERY", "45m"),
    ]);
    let c = load_str("[agent]\nmax_iterations = 5\n", &cfg(), &sec(), &vars).unwrap();
    assert_eq!(c.agent.max_iterations, 10);
    assert_eq!(c.agent.timezone, "Europe/Paris");
    assert!(c.channels.telegram.enabled);
    assert_eq!(c.channels.telegram.allow_from, ["42", "43"]);
    assert_eq!(c.providers["local"].kind, ProviderKind::Openai);
    assert_eq!(c.router.threshold, 0.5);
    assert_eq!(c.memory.dream_schedule, "0 3 * * 1-5");
    assert_eq!(c.agent.workspace, Some(PathBuf::from("/srv/pincer ws")));
    assert_eq!(
        c.channels.discord.api_url.as_deref(),
        Some("http://127.0.0.1:9000")
    );
    assert_eq!(c.heartbeat.every, "45m");
}

#[test]
fn pincer_home_and_other_variables_are_not_keys() {
    let vars = env(&[
        ("PINCER_HOME", "/somewhere"),
        ("PINCER_LOG", "debug"),
        ("HOME", "/home/u"),
        ("AGENT__MAX_ITERATIONS", "nonsense"),
    ]);
    assert_eq!(
        load_str("", &cfg(), &sec(), &vars).unwrap(),
        Config::default()
    );
}

#[test]
fn a_missing_file_is_its_own_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let err = load(&path, &sec(), &[]).unwrap_err();
    assert!(matches!(err, ConfigError::Missing { .. }), "{err:?}");
    assert!(err.to_string().contains("pincer onboard"), "{err}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn load_reads_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "[agent]\nmax_iterations = 7\n").unwrap();
    assert_eq!(load(&path, &sec(), &[]).unwrap().agent.max_iterations, 7);
}

#[test]
fn exec_limits_default_to_room_for_compilers_and_can_be_changed_or_switched_off() {
    let c = ok("");
    let limits = c.tools.exec.limits;
    assert_eq!(limits, pincer_config::ExecLimits::default());
    assert!(limits.memory_mb >= 4096, "V8 and the JVM reserve gigabytes");
    let c = ok(
        "[tools.exec.limits]\nmemory_mb = 256\ncpu_secs = 0\nfile_size_mb = 8\nopen_files = 64\nprocesses = 64\n",
    );
    let limits = c.tools.exec.limits;
    assert_eq!(
        (limits.memory_mb, limits.cpu_secs, limits.file_size_mb),
        (256, 0, 8)
    );
    assert_eq!((limits.open_files, limits.processes), (64, 64));
}
