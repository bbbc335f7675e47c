//! `pincer pairing list | approve <CHANNEL> <CODE> | revoke <CHANNEL> <SENDER>`: who
//! is waiting to be let in, letting them in, and taking it back. Works while the
//! gateway runs (the database is shared).

use std::process::ExitCode;

use chrono::{Local, TimeZone};

use crate::home::Home;
use crate::store::{Store, now_ms};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Pending pairing codes and approved senders
    List,
    /// Let in the sender holding CODE on CHANNEL (e.g. `approve telegram ABCD2345`)
    Approve {
        channel: String,
        code: String,
        /// Make them an owner too: adds them to agent.owners in config.toml (a backup
        /// of the file is kept); takes effect when the gateway next starts
        #[arg(long)]
        owner: bool,
    },
    /// Take back a sender's approval (raw id such as 42, or telegram:42)
    Revoke { channel: String, sender: String },
}

pub(super) async fn run(home: &Home, command: Command) -> anyhow::Result<ExitCode> {
    super::ensure_home(home)?;
    let store = Store::open(&home.db_file)?;
    match command {
        Command::List => {
            let pending = store.pending_codes(None).await?;
            if pending.is_empty() {
                println!("No pending pairing codes.");
            } else {
                println!("Pending:");
                for code in pending {
                    let minutes = (code.expires_at - now_ms()).max(0) / 60_000;
                    println!(
                        "  {:<10} {}  {} ({})  expires in {minutes} min",
                        code.channel,
                        code.code,
                        crate::access::sanitize_name(&code.display_name),
                        code.sender
                    );
                }
            }
            let approved = store.approved(None).await?;
            if approved.is_empty() {
                println!("No approved senders.");
            } else {
                println!("Approved:");
                for who in approved {
                    let when = Local
                        .timestamp_millis_opt(who.approved_at)
                        .single()
                        .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                        .unwrap_or_default();
                    println!(
                        "  {:<10} {:<24} {}  approved {when} by {}",
                        who.channel,
                        who.sender,
                        crate::access::sanitize_name(&who.display_name),
                        who.approved_by
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Approve {
            channel,
            code,
            owner,
        } => match store.approve_code(Some(&channel), &code, "cli").await? {
            Some(who) if owner => {
                let file = &home.config_file;
                match pincer_config::add_owner(file, &who.sender)? {
                    pincer_config::OwnerAdded::Added { backup } => {
                        let kept = backup
                            .map(|b| format!(" (the old file is kept as {})", b.display()))
                            .unwrap_or_default();
                        println!(
                            "Approved {} ({}) on {} as an owner: added to agent.owners in {}{kept}.\nRestart the gateway (`pincer run`) for owner rights to take effect; until then they are a member.",
                            crate::access::sanitize_name(&who.display_name),
                            who.sender,
                            who.channel,
                            file.display()
                        );
                    }
                    pincer_config::OwnerAdded::Already => println!(
                        "Approved {} ({}) on {}; they were already in agent.owners.",
                        crate::access::sanitize_name(&who.display_name),
                        who.sender,
                        who.channel
                    ),
                }
                Ok(ExitCode::SUCCESS)
            }
            Some(who) => {
                println!(
                    "Approved {} ({}) on {} as a member. To make them an owner, add \"{}\" to agent.owners in {} (or approve with --owner).",
                    crate::access::sanitize_name(&who.display_name),
                    who.sender,
                    who.channel,
                    who.sender,
                    home.config_file.display()
                );
                Ok(ExitCode::SUCCESS)
            }
            None => anyhow::bail!(
                "no pending code {code} on {channel} (wrong, or expired after 60 minutes); `pincer pairing list` shows the pending ones"
            ),
        },
        Command::Revoke { channel, sender } => {
            if store.revoke(&channel, &sender).await? {
                println!("Revoked {sender} on {channel}.");
                Ok(ExitCode::SUCCESS)
            } else {
                anyhow::bail!(
                    "{sender} is not approved on {channel}; `pincer pairing list` shows who is"
                )
            }
        }
    }
}
