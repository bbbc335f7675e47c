//! The tools the model can call, and the one pipeline every call goes through:
//! lookup (with aliases) → arguments parsed into the tool's own type → permission rules
//! → the call → result budget → credential scrubber. Every call returns a result the
//! model sees, errors included.
//!
//! - `args`        — a tool's arguments as a Rust type: its schema, its parsing
//! - `fs`          — read_file, write_file, edit_file, list_dir
//! - `search`      — glob, grep
//! - `todo`        — the model's checklist
//! - `exec`        — shell commands in the workspace, checked against deny groups
//! - `web`         — web_fetch (SSRF-guarded) and web_search
//! - `browser`     — a real Chromium over DevTools, behind the same SSRF rules
//! - `send`        — send_message
//! - `conversations` — conversation_search: what was said in every past conversation
//! - `skills`      — workspace skills: listed in the prompt, loaded by `skill`
//! - `confine`     — workspace confinement of paths
//! - `permissions` — allow / ask / deny rules from `[tools.permissions]`
//! - `budget`      — oversized results saved to a file, previewed inline
//! - `caller`      — who a call is for, and which tools their tier may use
//! - `effects`     — what each tool declares it does; every policy is derived from it
//! - `preset`      — a host's `--tool-preset`: the tools a conversation keeps, by effects
//! - `taint`       — whether a call took in untrusted content, by what it reached
//! - `tool`        — the `Tool` trait and the context a call runs in
//! - `error`       — `ToolError`, how a call fails

pub mod approval;
pub mod args;
pub mod browser;
mod budget;
mod caller;
pub mod confine;
pub mod conversations;
pub mod deferred;
pub mod effects;
mod error;
pub mod exec;
mod fs;
pub mod hooks;
pub mod host_hooks;
pub mod mode;
pub mod permissions;
pub mod preset;
pub mod question;
mod search;
mod send;
mod send_file;
pub mod skills;
pub mod taint;
mod todo;
mod tool;
pub mod web;

use std::sync::Arc;

use serde_json::Value;

use crate::provider::ToolSpec;

pub use args::{ArgsError, Parsed, TypedTool};
pub(crate) use budget::{NotSaved, save as save_output};
pub use caller::{Caller, ToolPatternError, ToolPolicy};
pub use confine::confine;
pub use effects::Effects;
pub use error::ToolError;
pub use permissions::{Decision, Permissions, RuleError};
pub use send::SendMessage;
pub use send_file::SendFile;
pub use taint::Taint;
pub use tool::{MAX_RESULT_BYTES, Pictures, Tool, ToolContext};

use crate::mcp::McpManager;
use crate::scrub::Scrubber;
use crate::store::Store;
use approval::{Approval, Approvers};
use hooks::Hooks;
use host_hooks::HostHook;

/// The tools offered to the model, sorted by name so the prompt prefix is stable.
#[derive(Clone)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    specs: Vec<ToolSpec>,
    /// MCP servers' tools, offered after the built-ins while their server is up.
    mcp: Option<Arc<McpManager>>,
    /// `agent.always_tools`: the built-ins offered whole (`None`: all of them).
    always: Option<Arc<[String]>>,
}

/// A finished call: what goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub content: String,
    pub is_error: bool,
}

/// What came of asking.
enum Asked {
    Go,
    /// Go, with these arguments instead.
    With(Value),
    /// A question's answer: the result of the call.
    Answered(String),
}

/// What every call passes besides the tool itself: the owner's permission rules and
/// the scrubber for what goes back to the model.
pub struct Guard {
    pub permissions: Permissions,
    pub scrubber: Arc<Scrubber>,
    /// Who can answer "ask", per channel.
    pub approvers: Approvers,
    /// Where "always" answers are kept; none means they are not remembered.
    pub grants: Option<Store>,
    /// The owner's commands run before and after matching calls.
    pub hooks: Hooks,
    /// `[tools] after_untrusted`: whether acting tools need a yes in a tainted turn.
    pub after_untrusted: pincer_config::AfterUntrusted,
}

impl Default for Guard {
    fn default() -> Self {
        Self {
            permissions: Permissions::default(),
            scrubber: Arc::new(Scrubber::new(Vec::new())),
            approvers: Approvers::default(),
            grants: None,
            hooks: Hooks::default(),
            after_untrusted: pincer_config::AfterUntrusted::Ask,
        }
    }
}

impl Guard {
    /// Resolve an "ask": a stored "always", else the owner's answer where someone can
    /// be asked. `Err` carries the reason for the model.
    /// `Ok(Asked::With(args))`: approved with the answerer's changes to the arguments;
    /// `Ok(Asked::Answered(text))`: the answer to a `question`.
    async fn ask(
        &self,
        call_id: &str,
        tool: &str,
        args: &Value,
        ctx: &ToolContext,
        why: Option<&str>,
    ) -> Result<Asked, ToolError> {
        let subject = permissions::subject(tool, args);
        // Leaving plan mode is the host's to approve every time.
        if tool != mode::EXIT_PLAN_MODE
            && let Some(store) = &self.grants
            && store.is_granted(tool, &subject).await.unwrap_or(false)
        {
            return Ok(Asked::Go);
        }
        if ctx.mode == Some(mode::PermissionMode::DontAsk)
            && tool != mode::EXIT_PLAN_MODE
            && tool != question::QUESTION
        {
            return Err(ToolError(format!(
                "{tool} needs approval, and this conversation is in dontAsk mode: a call not allowed beforehand is refused without asking; do not retry it"
            )));
        }
        let asked = ctx
            .origin
            .as_ref()
            .and_then(|o| Some((o, self.approvers.get(&o.channel)?)));
        let Some((origin, approver)) = asked else {
            return Err(ToolError(match why {
                Some(why) => format!(
                    "{tool} needs the owner's approval {why}, and nobody can be asked here; do not retry it (the owner can set [tools] after_untrusted = \"allow\" in config.toml)"
                ),
                None => format!(
                    "{tool} needs the owner's approval ([tools.permissions] ask), and nobody can be asked here; the owner can allow it in config.toml"
                ),
            }));
        };
        let runs = if tool == "exec" {
            // Each program as written, and how it will run where that reads otherwise
            // (`git -C x push` runs `git push`).
            let (runs, followed) = exec::ExecTool::programs(&subject);
            let mut lines: Vec<String> = runs
                .iter()
                .filter_map(|run| {
                    let written = run.written.first()?;
                    Some(match &run.runs_as {
                        Some(real) if real != written => format!("{written} (runs as: {real})"),
                        _ => written.clone(),
                    })
                })
                .collect();
            if let Err(why) = followed {
                lines.push(format!("and what it could not follow: {why}"));
            }
            lines
        } else {
            Vec::new()
        };
        let request = approval::Request {
            tool: tool.to_string(),
            subject: subject.clone(),
            origin: origin.clone(),
            why: why.map(str::to_string),
            runs,
            // A question is shown to people as written: no secret goes with it.
            input: if tool == question::QUESTION {
                question::scrubbed(args, &self.scrubber)
            } else {
                args.clone()
            },
            call_id: call_id.to_string(),
            asker: ctx.caller.origin.sender.clone(),
        };
        match approver.approve(&request).await {
            Approval::Once => Ok(Asked::Go),
            Approval::Edited(args) => Ok(Asked::With(args)),
            Approval::Answered(text) => Ok(Asked::Answered(text)),
            Approval::Always => {
                if let Some(store) = &self.grants
                    && let Err(err) = store.grant(tool, &subject).await
                {
                    tracing::warn!("the \"always\" answer was not stored: {err}");
                }
                Ok(Asked::Go)
            }
            Approval::Deny if tool == mode::EXIT_PLAN_MODE => Err(ToolError::new(
                "the user did not approve the plan; stay in plan mode: revise the plan, or ask what to change",
            )),
            Approval::Refused(why) if tool == mode::EXIT_PLAN_MODE => Err(ToolError(format!(
                "the user did not approve the plan: {why}. Stay in plan mode and revise it"
            ))),
            Approval::Deny => Err(ToolError(format!(
                "the owner did not approve this {tool} call; do not retry it, ask them or try another way"
            ))),
            Approval::Refused(why) => Err(ToolError(format!(
                "the user refused this {tool} call: {why}"
            ))),
            Approval::Unavailable(reason) => Err(ToolError(reason)),
        }
    }
}

/// Arguments a host put in a call's place (an approval's changes, a hook's
/// `updatedInput`), checked as a new call: no secret, parsed, within the caller's files
/// and not denied by a rule.
fn recheck(
    tool: &dyn Tool,
    name: &str,
    changed: &Value,
    takes_path: bool,
    ctx: &ToolContext,
    guard: &Guard,
) -> Result<(Parsed, Effects), ToolError> {
    if guard.scrubber.in_arguments(changed) {
        return Err(ToolError(format!(
            "the changed arguments for {name} carry a secret; refused"
        )));
    }
    let effects = tool.call_effects(changed);
    let parsed = tool.parse(changed).map_err(|problem| {
        ToolError(format!(
            "the changed arguments for {name} are invalid: {problem}"
        ))
    })?;
    ctx.caller.may_touch(name, effects, takes_path, changed)?;
    if let Decision::Deny(reason) = guard.permissions.decide(name, changed) {
        return Err(ToolError(reason));
    }
    Ok((parsed, effects))
}

/// Whether the tool takes a workspace `path` (its schema says so): such a call is held
/// to the caller's files by that path.
fn takes_path(spec: &ToolSpec) -> bool {
    spec.input_schema
        .get("properties")
        .and_then(|p| p.get("path"))
        .is_some()
}

/// Other names models use for our tools.
const ALIASES: &[(&str, &str)] = &[
    ("bash", "exec"),
    ("shell", "exec"),
    ("run", "exec"),
    ("read", "read_file"),
    ("cat", "read_file"),
    ("write", "write_file"),
    ("edit", "edit_file"),
    ("ls", "list_dir"),
    ("fetch", "web_fetch"),
    ("search", "web_search"),
];

impl Registry {
    /// The tools that need nothing but the workspace.
    pub fn builtin() -> Self {
        Self::with(Vec::new())
    }

    /// The built-in tools plus `extra` (tools that need the store, the bus or config).
    pub fn with(extra: Vec<Arc<dyn Tool>>) -> Self {
        let mut tools = fs::all();
        tools.extend(search::all());
        tools.push(todo::tool());
        tools.push(skills::tool());
        tools.extend(extra);
        Self::new(tools)
    }

    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        // Each spec is made once: a typed tool's schema is generated on every `spec()`.
        let mut both: Vec<(ToolSpec, Arc<dyn Tool>)> =
            tools.into_iter().map(|tool| (tool.spec(), tool)).collect();
        both.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        let (specs, tools) = both.into_iter().unzip();
        Self {
            tools,
            specs,
            mcp: None,
            always: None,
        }
    }

    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// The tool a model's name means (aliases included).
    fn lookup(&self, name: &str) -> Option<(ToolSpec, Arc<dyn Tool>)> {
        let name = ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map_or(name, |(_, real)| real);
        if let Some(index) = self.specs.iter().position(|spec| spec.name == name) {
            return Some((self.specs[index].clone(), Arc::clone(&self.tools[index])));
        }
        let tool = self
            .mcp
            .as_ref()?
            .tools()
            .into_iter()
            .find(|t| t.spec().name == name)?;
        Some((tool.spec(), tool))
    }

    /// The name a call of `name` is counted under in `/metrics`: a built-in tool's own
    /// name (aliases resolved), `mcp` for any MCP server's tool, `unknown` for a name no
    /// tool has (a model's invention must not become a label).
    pub fn metric_name<'a>(&'a self, name: &'a str) -> &'a str {
        let name = ALIASES
            .iter()
            .find(|(alias, _)| *alias == name)
            .map_or(name, |(_, real)| real);
        match self.specs.iter().find(|spec| spec.name == name) {
            Some(spec) => &spec.name,
            None if name.starts_with("mcp__") => "mcp",
            None => "unknown",
        }
    }

    /// Each MCP server's state ("ready, 3 tools", "failed: …, retrying in 8s").
    pub fn mcp_status(&self) -> Vec<(String, String)> {
        self.mcp.as_ref().map(|m| m.status()).unwrap_or_default()
    }

    /// Offer the tools of these MCP servers too.
    pub fn with_mcp(mut self, mcp: Arc<McpManager>) -> Self {
        self.mcp = Some(mcp);
        self
    }

    /// Wait (up to `within`) for MCP servers still connecting, before a turn.
    pub async fn mcp_ready(&self, within: std::time::Duration) {
        if let Some(mcp) = &self.mcp {
            mcp.ready_for_turn(within).await;
        }
    }

    /// Everything `caller` is offered: the built-ins, then the MCP tools of servers
    /// that are up, each group sorted by name (so the prompt prefix is stable per tier).
    pub fn offered(&self, caller: &Caller) -> Vec<ToolSpec> {
        self.offered_with(caller, &std::collections::HashSet::new())
    }

    /// `offered`, where the built-ins outside `agent.always_tools` (`with_always`) and
    /// the MCP tools past `deferred::OFFERED` are found with `tool_search`: only those
    /// the conversation `loaded` are offered whole.
    pub fn offered_with(
        &self,
        caller: &Caller,
        loaded: &std::collections::HashSet<String>,
    ) -> Vec<ToolSpec> {
        self.offer(caller, loaded, self.always.as_deref(), true)
    }

    /// What `caller` is offered by a model with a small context window: the built-ins
    /// in `keep`, `tool_search`, and the tools (built-in or MCP) the conversation
    /// `loaded` with it.
    pub fn offered_small(
        &self,
        caller: &Caller,
        loaded: &std::collections::HashSet<String>,
        keep: &[String],
    ) -> Vec<ToolSpec> {
        self.offer(caller, loaded, Some(keep), false)
    }

    /// The tools `caller` may use, split by `deferred::offer`: built-ins in `keep`
    /// (all when `None`) whole, and the first MCP tools too where `mcp_whole`.
    fn offer(
        &self,
        caller: &Caller,
        loaded: &std::collections::HashSet<String>,
        keep: Option<&[String]>,
        mcp_whole: bool,
    ) -> Vec<ToolSpec> {
        let builtins: Vec<&ToolSpec> = self
            .specs
            .iter()
            .zip(&self.tools)
            .filter(|(spec, tool)| caller.may_use(&spec.name, tool.effects()))
            .map(|(spec, _)| spec)
            .collect();
        let mcp: Vec<ToolSpec> = self
            .mcp
            .iter()
            .flat_map(|mcp| mcp.tools())
            .filter(|tool| caller.may_use(&tool.spec().name, tool.effects()))
            .map(|tool| tool.spec())
            .collect();
        let (whole, deferred) = match mcp_whole {
            true => deferred::split(mcp),
            false => {
                let mut all = mcp;
                all.sort_by(|a, b| a.name.cmp(&b.name));
                (Vec::new(), all)
            }
        };
        deferred::offer(builtins, whole, deferred, keep, loaded, !mcp_whole)
    }

    /// Offer only the built-ins `always` names whole (`agent.always_tools`); the
    /// others are listed in `tool_search`'s description.
    pub fn with_always(mut self, always: Vec<String>) -> Self {
        self.always = Some(always.into());
        self
    }

    /// `execute` with no permission rules (tests).
    #[cfg(test)]
    pub async fn call(&self, name: &str, args: Value, ctx: &ToolContext) -> Outcome {
        self.execute("call_test", name, args, ctx, &Guard::default())
            .await
    }

    /// Whether this call may run beside other read-only calls: it does not act.
    pub fn read_only(&self, name: &str, args: &Value) -> bool {
        self.lookup(name)
            .is_some_and(|(_, tool)| tool.call_effects(args).read_only())
    }

    /// What the tool `name` declares it does (`Effects::STRICTEST` for a name no tool
    /// has).
    pub fn effects_of(&self, name: &str) -> Effects {
        self.lookup(name)
            .map_or(Effects::STRICTEST, |(_, tool)| tool.effects())
    }

    /// Split a reply's calls into the batches that run together: consecutive
    /// read-only calls share a batch; any other call is a batch of its own.
    pub fn batches(&self, calls: &[(&str, &Value)]) -> Vec<std::ops::Range<usize>> {
        let mut batches = Vec::new();
        let mut start = 0;
        while start < calls.len() {
            let mut end = start + 1;
            if self.read_only(calls[start].0, calls[start].1) {
                while end < calls.len() && self.read_only(calls[end].0, calls[end].1) {
                    end += 1;
                }
            }
            batches.push(start..end);
            start = end;
        }
        batches
    }

    /// The pipeline every call goes through: lookup (aliases) → tier → JSON → parsed
    /// into the tool's arguments (serde's message on a bad call) and checked → pre hooks
    /// → permission (ask: the owner) → call → result budget → post hooks → scrub. (The
    /// turn checks for /stop before and during each batch.) Every failure is an error
    /// result the model can act on.
    pub async fn execute(
        &self,
        call_id: &str,
        name: &str,
        args: Value,
        ctx: &ToolContext,
        guard: &Guard,
    ) -> Outcome {
        let failed = |content: String| Outcome {
            content: guard.scrubber.scrub(&content).into_owned(),
            is_error: true,
        };
        let found = self.lookup(name);
        if let Some((spec, tool)) = &found
            && !ctx.caller.may_use(&spec.name, tool.effects())
        {
            tracing::warn!(tool = %spec.name, sender = %ctx.caller.origin.sender, tier = %ctx.caller.origin.tier, "tool call refused: not available to this tier");
            return failed(ctx.caller.refusal(&spec.name, tool.effects()));
        }
        let Some((spec, tool)) = found else {
            let offered = self.offered(&ctx.caller);
            let known: Vec<&str> = offered.iter().map(|s| s.name.as_str()).collect();
            return failed(format!(
                "unknown tool `{name}`; available: {}",
                known.join(", ")
            ));
        };
        let args = match args {
            // Arguments that were not valid JSON reach us as the raw string.
            Value::String(raw) => match serde_json::from_str(&raw) {
                Ok(value) => value,
                Err(err) => {
                    return failed(format!(
                        "the arguments are not valid JSON ({err}); send a JSON object"
                    ));
                }
            },
            other => other,
        };
        // A secret in the arguments never leaves: not to a command, a server, a hook or
        // an approval question. (The turn stores and shows the arguments scrubbed.)
        if guard.scrubber.in_arguments(&args) {
            tracing::warn!(tool = %spec.name, "a tool call was refused: its arguments carried a secret");
            return failed(format!(
                "{}: refused — its arguments carried one of the owner's secrets (a key or token), and secrets never leave in tool arguments; the owner has been told. Do not retry it, and do not copy secrets into calls.",
                spec.name
            ));
        }
        let mut parsed = match tool.parse(&args) {
            Ok(parsed) => parsed,
            Err(ArgsError::Malformed(problem)) => {
                return failed(format!(
                    "invalid arguments for {}: {problem}; fix them and call again",
                    spec.name
                ));
            }
            Err(ArgsError::Refused(err)) => return failed(format!("{}: {err}", spec.name)),
        };
        let mut effects = tool.call_effects(&args);
        let takes_path = takes_path(&spec);
        if let Err(refused) = ctx.caller.may_touch(&spec.name, effects, takes_path, &args) {
            return failed(refused.0);
        }
        if let Err(refused) = guard.hooks.pre(&spec.name, &args, &ctx.workspace).await {
            return failed(refused.to_string());
        }
        // The host's own PreToolUse hooks (an SDK's callbacks): they may refuse the
        // call, change it (checked again as a new one), or say whether to ask.
        let host = ctx
            .origin
            .as_ref()
            .and_then(|o| guard.approvers.get(&o.channel));
        let mut args = args;
        let mut host_says = host_hooks::Pre::Default;
        if let Some(host) = &host {
            let input = host_hooks::tool_input(HostHook::PreToolUse, &spec.name, &args, call_id);
            let answer =
                host_hooks::pre(&host.hook(HostHook::PreToolUse, &input).await, &spec.name);
            if let Some(changed) = answer.input.filter(|changed| *changed != args) {
                match recheck(tool.as_ref(), &spec.name, &changed, takes_path, ctx, guard) {
                    Ok((again, changed_effects)) => {
                        parsed = again;
                        effects = changed_effects;
                        args = changed;
                    }
                    Err(refused) => return failed(refused.0),
                }
            }
            match answer.decision {
                host_hooks::Pre::Deny(reason) => return failed(reason),
                decision => host_says = decision,
            }
        }
        let mode = ctx.mode;
        if mode == Some(mode::PermissionMode::Plan) && !effects.in_plan_mode() {
            return failed(format!(
                "{} does not run in plan mode: only reading tools run until the plan is approved; call exit_plan_mode with your plan to ask to carry it out",
                spec.name
            ));
        }
        if spec.name == mode::EXIT_PLAN_MODE && mode != Some(mode::PermissionMode::Plan) {
            return failed(
                "exit_plan_mode is only for plan mode, and this conversation is not in it".into(),
            );
        }
        let acting = effects.acts();
        let untrusted = ctx.taint.is_set()
            && guard.after_untrusted == pincer_config::AfterUntrusted::Ask
            && acting;
        // A host drives this conversation: its mode says which calls it approves.
        // Leaving plan mode, and a question where someone answers for this conversation
        // (a host, the REPL; a chat with buttons when there are choices), always go to
        // that someone.
        let answerable = spec.name == question::QUESTION
            && ctx.origin.as_ref().is_some_and(|o| {
                question::asked_by_approver(&ctx.caller, &args)
                    && guard.approvers.get(&o.channel).is_some()
            });
        let must_ask = spec.name == mode::EXIT_PLAN_MODE || answerable;
        let forced = host_says == host_hooks::Pre::Ask;
        let host_asks = must_ask || forced || mode.is_some_and(|m| m.asks(effects));
        let decision = guard.permissions.decide(&spec.name, &args);
        // What outlasts the conversation — the owner's memory, a schedule, skills/ and
        // HEARTBEAT.md (the rules ask for those) — is asked for after untrusted content
        // even where nothing else is: bypassing would let a page plant standing orders.
        let lasting = untrusted
            && (effects.intersects(Effects::SCHEDULES | Effects::WRITES_MEMORY)
                || permissions::standing_order(&spec.name, &args));
        let bypass = (mode == Some(mode::PermissionMode::BypassPermissions)
            || host_says == host_hooks::Pre::Allow)
            && !must_ask
            && !forced
            && !lasting;
        match decision {
            Decision::Deny(reason) => return failed(reason),
            Decision::Allow if !untrusted && !host_asks => {}
            Decision::Allow | Decision::Ask if bypass => {}
            Decision::Allow | Decision::Ask => {
                let why = untrusted.then_some(
                    "because this conversation took in content nobody vouches for (a web page, an MCP answer, a received file, someone else's message, or a group chat's)",
                );
                match guard.ask(call_id, &spec.name, &args, ctx, why).await {
                    Ok(Asked::Go) => {}
                    Ok(Asked::Answered(answer)) => {
                        return Outcome {
                            content: guard
                                .scrubber
                                .scrub(&format!("The user answered: {answer}"))
                                .into_owned(),
                            is_error: false,
                        };
                    }
                    // The answerer changed the call: it is checked again as a new one.
                    Ok(Asked::With(changed)) => {
                        match recheck(tool.as_ref(), &spec.name, &changed, takes_path, ctx, guard) {
                            Ok((again, changed_effects)) => {
                                parsed = again;
                                effects = changed_effects;
                                args = changed;
                            }
                            Err(refused) => return failed(refused.0),
                        }
                    }
                    Err(refused) => return failed(refused.0),
                }
            }
        }
        if !ctx.taint.is_set() && taint::before_call(effects, &args, &ctx.workspace) {
            ctx.taint.set();
        }
        let (content, is_error) = match tool.run(parsed, ctx).await {
            Ok(content) => (
                budget::fit(
                    &spec.name,
                    guard.scrubber.scrub(&content).into_owned(),
                    tool.max_result_bytes(),
                    ctx,
                )
                .await,
                false,
            ),
            Err(err) => (err.0, true),
        };
        if !ctx.taint.is_set()
            && !is_error
            && effects.intersects(Effects::READS_WORKSPACE | Effects::RUNS)
        {
            let (args, seen, workspace) = (args.clone(), content.clone(), ctx.workspace.clone());
            let carried = tokio::task::spawn_blocking(move || {
                taint::after_call(effects, &args, &seen, &workspace)
            })
            .await
            .unwrap_or(true);
            if carried {
                ctx.taint.set();
            }
        }
        let mut content = guard
            .hooks
            .post(&spec.name, &args, content, is_error, &ctx.workspace)
            .await;
        if let Some(host) = &host {
            let mut input =
                host_hooks::tool_input(HostHook::PostToolUse, &spec.name, &args, call_id);
            input["tool_response"] = Value::String(content.clone());
            let answers = host.hook(HostHook::PostToolUse, &input).await;
            if let Some(note) = host_hooks::context(&answers, HostHook::PostToolUse) {
                content = format!("{content}\n\n[the host's PostToolUse hook: {note}]");
            }
        }
        Outcome {
            content: guard.scrubber.scrub(&content).into_owned(),
            is_error,
        }
    }
}
