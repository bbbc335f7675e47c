//! `pincer sessions list | show <KEY>`: what the store holds, readable in a terminal.

use std::process::ExitCode;

use chrono::{Local, TimeZone};

use crate::home::Home;
use crate::provider::Part;
use crate::store::{Role, Store};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Every session, newest first (* marks the current one of its key)
    List,
    /// One session's transcript, by key (its current session) or numeric id
    Show {
        #[arg(value_name = "KEY")]
        key: String,
    },
}

pub(super) async fn run(home: &Home, command: Command) -> anyhow::Result<ExitCode> {
    if !home.db_file.exists() {
        println!("No sessions yet.");
        return Ok(ExitCode::SUCCESS);
    }
    let store = Store::open(&home.db_file)?;
    match command {
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
