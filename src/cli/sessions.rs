//! `pincer sessions list | show <KEY> | search <QUERY>`: what the store holds, readable
//! in a terminal. `search` is the `conversation_search` tool's search, as the owner.

use std::process::ExitCode;

use chrono::{Local, TimeZone};

use crate::access::Origin;
use crate::home::Home;
use crate::provider::Part;
use crate::store::{Role, Store};
use crate::tools::conversations::{ConversationSearch, render};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Every session, newest first (* marks the current one of its key)
    List,
    /// One session's transcript, by key (its current session) or numeric id
    Show {
        #[arg(value_name = "KEY")]
        key: String,
    },
    /// What was said in every conversation: the messages with these words, best first
    Search(SearchArgs),
}

#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// The words to find (stems match: "plumbers" finds "plumber")
    #[arg(value_name = "QUERY", required = true, num_args = 1..)]
    query: Vec<String>,
    /// Only this channel (telegram, discord, slack, web, terminal)
    #[arg(long)]
    channel: Option<String>,
    /// Only this conversation, by session key (telegram:dm:42)
    #[arg(long, value_name = "KEY")]
    chat: Option<String>,
    /// Only what this person wrote: an id (telegram:42), an approved name, or "me"
    #[arg(long)]
    person: Option<String>,
    /// From this day on (YYYY-MM-DD, in agent.timezone)
    #[arg(long, value_name = "DAY")]
    since: Option<String>,
    /// Up to and including this day (YYYY-MM-DD)
    #[arg(long, value_name = "DAY")]
    until: Option<String>,
    /// Most hits (at most 50)
    #[arg(long, default_value_t = 20)]
    limit: usize,
}

pub(super) async fn run(home: &Home, command: Command) -> anyhow::Result<ExitCode> {
    if !home.db_file.exists() {
        println!("No sessions yet.");
        return Ok(ExitCode::SUCCESS);
    }
    let store = Store::open(&home.db_file)?;
    match command {
        Command::Search(args) => {
            let (timezone, owners) = match home.config_file.exists() {
                true => {
                    let agent = super::load(home)?.0.agent;
                    (agent.timezone, agent.owners)
                }
                false => ("UTC".to_string(), Vec::new()),
            };
            let timezone: pincer_core::tz::Tz = timezone.parse().map_err(|_| {
                anyhow::anyhow!("agent.timezone = \"{timezone}\" is not a time zone; use an IANA name such as Europe/Paris")
            })?;
            let search = ConversationSearch::new(store, &owners, timezone);
            let hits = search
                .search(
                    crate::tools::conversations::SearchArgs {
                        query: args.query.join(" "),
                        channel: args.channel,
                        chat: args.chat,
                        person: args.person,
                        since: args.since,
                        until: args.until,
                        limit: Some(args.limit),
                    },
                    &Origin::terminal(),
                )
                .await?;
            print!("{}", render(&hits, timezone));
        }
        Command::List => {
            let sessions = store.sessions().await?;
            if sessions.is_empty() {
                println!("No sessions yet.");
            }
            for s in sessions {
                println!(
                    "{} {:<40} #{:<5} {:>5} messages  {}",
                    if s.current { "*" } else { " " },
                    s.key,
                    s.id,
                    s.messages,
                    when(s.updated_at)
                );
            }
        }
        Command::Show { key } => {
            let id = store.find_session(&key).await?;
            for message in store.history(id).await? {
                let who = match message.role {
                    Role::User => message.sender.as_deref().unwrap_or("user").to_string(),
                    Role::Assistant => "assistant".into(),
                    Role::Tool => "tool".into(),
                };
                for part in &message.parts {
                    let line = match part {
                        Part::Text { text } => text.clone(),
                        Part::Reasoning { redacted: true, .. } => {
                            "(thinking, redacted)".to_string()
                        }
                        Part::Reasoning { text, .. } => format!("(thinking) {text}"),
                        Part::ToolCall {
                            name, arguments, ..
                        } => format!("→ {name} {arguments}"),
                        Part::ToolResult {
                            name,
                            content,
                            is_error,
                            ..
                        } => {
                            let mark = if *is_error { "✗" } else { "←" };
                            format!("{mark} {name}: {}", preview(content))
                        }
                        Part::Image { path, .. } => format!("[image] {path}"),
                    };
                    println!("[{}] {who}: {line}", when(message.created_at));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn when(ms: i64) -> String {
    Local
        .timestamp_millis_opt(ms)
        .single()
        .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default()
}

fn preview(text: &str) -> String {
    let one_line = text.replace('\n', " ⏎ ");
    match one_line.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}
