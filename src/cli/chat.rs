//! `pincer chat`: the owner talks to the assistant in the terminal. `-m TEXT` sends
//! one message and prints only the reply on stdout; piped stdin sends one message per
//! line, answered in order; on a terminal it is a REPL with streamed replies, where a
//! line typed mid-reply steers the turn.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use pincer_channels::{Channel, Chunk, OutboundBody, OutboundMessage, Terminal};
use pincer_config::ConfigError;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{ensure_home, env_vars, onboard};
use crate::home::Home;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Send one message, print the reply, and exit (never reads stdin)
    #[arg(short = 'm', long = "message", value_name = "TEXT")]
    pub message: Option<String>,
}

pub(super) async fn run(home: &Home, args: Args) -> anyhow::Result<ExitCode> {
    let interactive = args.message.is_none() && std::io::stdin().is_terminal();
    let env = env_vars();
    let config = match pincer_config::load(&home.config_file, &home.security_file, &env) {
        Err(ConfigError::Missing { .. }) if interactive => {
            eprintln!("No configuration yet; let's set Pincer up first.\n");
            onboard::interactive(home).await?;
            pincer_config::load(&home.config_file, &home.security_file, &env)?
        }
        Err(ConfigError::Missing { path }) => anyhow::bail!(
            "no configuration at {}; run `pincer onboard` (or `pincer onboard --non-interactive --help` for scripts)",
            path.display()
        ),
        other => other?,
    };
    let secrets = pincer_config::load_secrets(&home.security_file)?;
    if config.router.light.is_empty() && config.router.heavy.is_empty() {
        anyhow::bail!(
            "no model is configured: add [router] light = [\"<provider>/<model>\"] to {}, or run `pincer onboard --force`",
            home.config_file.display()
        );
    }
    ensure_home(home)?;
    let shutdown = CancellationToken::new();
    let terminal =
        Arc::new(Terminal::new(!interactive).with_inbox(home.workspace(&config).join("inbox")));
    // Approvals are asked y/n only where someone can answer: a real terminal.
    let mut approvers = crate::tools::approval::Approvers::default();
    if interactive && std::io::stdout().is_terminal() {
        let approver = Arc::new(crate::tools::approval::TerminalApprover(Arc::clone(
            &terminal,
        )));
        approvers.register(pincer_channels::terminal::CHANNEL, approver);
    }
    let mut running =
        crate::start_with(home, &config, &secrets, &env, approvers, shutdown.clone())?;
    let ok = match args.message {
        Some(text) => {
            running.inbound.send(terminal.message(text).into()).await?;
            print_turn(&mut running.outbound, false).await?
        }
        None => converse(&terminal, &mut running, interactive, shutdown.clone()).await?,
    };
    shutdown.cancel();
    let _ = running.task.await;
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Print one turn's output until it ends; false if it ended in an error.
async fn print_turn(
    outbound: &mut mpsc::Receiver<OutboundMessage>,
    interactive: bool,
) -> anyhow::Result<bool> {
    let mut out = tokio::io::stdout();
    let mut ok = true;
    let mut at_line_start = true;
    // The current text block went out as deltas.
    let mut streamed = false;
    while let Some(message) = outbound.recv().await {
        match message.body {
            OutboundBody::Chunk(Chunk::Retract) => {
                out.flush().await?;
                eprintln!("\n[the reply broke off; another model answers]");
                at_line_start = true;
            }
            OutboundBody::Chunk(Chunk::TextDelta { delta, .. }) => {
                out.write_all(delta.as_bytes()).await?;
                out.flush().await?;
                streamed = true;
                at_line_start = delta.ends_with('\n');
            }
            // The finished text: already shown as deltas, unless the turn was quiet.
            OutboundBody::Chunk(Chunk::TextEnd { text, .. }) | OutboundBody::Text(text) => {
                if !std::mem::take(&mut streamed) {
                    out.write_all(text.as_bytes()).await?;
                    at_line_start = text.ends_with('\n');
                }
                if !at_line_start {
                    out.write_all(b"\n").await?;
                    at_line_start = true;
                }
                out.flush().await?;
            }
            OutboundBody::Chunk(Chunk::Error { error_text: text }) | OutboundBody::Error(text) => {
                if !at_line_start {
                    out.write_all(b"\n").await?;
                    at_line_start = true;
                }
                out.flush().await?;
                eprintln!("error: {text}");
                ok = false;
            }
            OutboundBody::Notice(text) => {
                if !at_line_start && interactive {
                    out.write_all(b"\n").await?;
                    at_line_start = true;
                }
                out.flush().await?;
                eprintln!("{text}");
            }
            // The terminal shows where the file is; there is nowhere to send it.
            OutboundBody::File { media, sent } => {
                if !at_line_start {
                    out.write_all(b"\n").await?;
                    at_line_start = true;
                }
                let caption = media.caption.map(|c| format!(" ({c})")).unwrap_or_default();
                let place = media
                    .source
                    .map_or(media.file_name, |p| p.display().to_string());
                out.write_all(format!("[file] {place}{caption}\n").as_bytes())
                    .await?;
                out.flush().await?;
                sent.fire(Ok("terminal".into()));
            }
            OutboundBody::Done | OutboundBody::Chunk(Chunk::Finish { .. }) => {
                if !at_line_start {
                    out.write_all(b"\n").await?;
                }
                out.flush().await?;
                return Ok(ok);
            }
            OutboundBody::React { .. } | OutboundBody::Chunk(_) => {}
        }
    }
    anyhow::bail!("the assistant stopped before it answered (see the log above)")
}

/// The REPL (or piped lines): read, answer, repeat until EOF.
async fn converse(
    terminal: &Arc<Terminal>,
    running: &mut crate::Running,
    interactive: bool,
    shutdown: CancellationToken,
) -> anyhow::Result<bool> {
    let listener = {
        let terminal = Arc::clone(terminal);
        let inbound = running.inbound.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move { terminal.listen(inbound, shutdown).await })
    };
    if interactive {
        eprintln!(
            "Pincer — type a message; /help for commands, Ctrl-C stops a reply, Ctrl-D leaves."
        );
        prompt().await;
    }
    let mut all_ok = true;
    let mut listener = listener;
    loop {
        tokio::select! {
            ended = &mut listener => {
                if let Ok(Err(err)) = ended {
                    eprintln!("error: {err}");
                    all_ok = false;
                }
                break;
            }
            _ = tokio::signal::ctrl_c() => {
                if interactive {
                    // Ctrl-C stops a reply in progress; Ctrl-D leaves.
                    running.inbound.send(terminal.message("/stop".into()).into()).await?;
                    continue;
                }
                break;
            }
            turn = print_turn(&mut running.outbound, interactive) => {
                all_ok &= turn?;
                terminal.turn_finished();
                if interactive {
                    prompt().await;
                }
            }
        }
    }
    Ok(all_ok)
}

async fn prompt() {
    let mut out = tokio::io::stdout();
    // The prompt is cosmetic; a closed stdout shows up on the next real write.
    let _ = out.write_all(b"> ").await;
    let _ = out.flush().await;
}
