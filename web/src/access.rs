//! `/access`: who may talk to the assistant. Pending pairing codes with Approve and
//! Deny, approved senders with Revoke, the owners (`agent.owners`, read-only here:
//! they live in config.toml), and each sender's tier and today's spend.
//!
//! The actions do what `pincer pairing approve | revoke` do, through the same store
//! calls and with the same wording; Deny drops a pending code. After an action the
//! page is rendered again with a line saying what happened (200), or why nothing did
//! (400 for a form missing a field, 404 for a code or sender that is not there).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Form};
use maud::{Markup, html};
use pincer_config::Tier;
use serde::Deserialize;

use super::WebState;
use super::auth::Login;
use super::layout::{self, usd};
use pincer_core::access::sanitize_name;
use pincer_core::store::now_ms;

/// What an action did, for the flash line: the text, and the status to answer with.
type Outcome = (StatusCode, Result<String, String>);

/// `POST /access/approve` and `/access/deny`.
#[derive(Deserialize)]
pub(crate) struct CodeForm {
    #[serde(default)]
    channel: String,
    #[serde(default)]
    code: String,
}

/// `POST /access/revoke`.
#[derive(Deserialize)]
pub(crate) struct SenderForm {
    #[serde(default)]
    channel: String,
    #[serde(default)]
    sender: String,
}

/// `GET /access`.
pub(crate) async fn page(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
) -> Response {
    render(&state, &login, None).await
}

/// `POST /access/approve`: let in the sender holding `code` on `channel`, as a member.
pub(crate) async fn approve(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
    Form(form): Form<CodeForm>,
) -> Response {
    let outcome = match missing(&[("channel", &form.channel), ("code", &form.code)]) {
        Some(bad) => bad,
        None => approve_code(&state, form.channel.trim(), form.code.trim()).await,
    };
    render(&state, &login, Some(outcome)).await
}

async fn approve_code(state: &WebState, channel: &str, code: &str) -> Outcome {
    match state
        .agent
        .store()
        .approve_code(Some(channel), code, "web")
        .await
    {
        Ok(Some(who)) => {
            let name = sanitize_name(&who.display_name);
            let text = if state.config.agent.owners.contains(&who.sender) {
                format!(
                    "Approved {name} ({}) on {}; they are in agent.owners, so they are an owner.",
                    who.sender, who.channel
                )
            } else {
                format!(
                    "Approved {name} ({}) on {} as a member. To make them an owner, add \"{}\" to agent.owners in {} and restart the gateway.",
                    who.sender,
                    who.channel,
                    who.sender,
                    state.home.config_file.display()
                )
            };
            (StatusCode::OK, Ok(text))
        }
        Ok(None) => no_code(channel, code),
        Err(err) => store_failed(&err),
    }
}

/// `POST /access/deny`: drop a pending code; its sender is not let in.
pub(crate) async fn deny(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
    Form(form): Form<CodeForm>,
) -> Response {
    let outcome = match missing(&[("channel", &form.channel), ("code", &form.code)]) {
        Some(bad) => bad,
        None => deny_code(&state, form.channel.trim(), form.code.trim()).await,
    };
    render(&state, &login, Some(outcome)).await
}

async fn deny_code(state: &WebState, channel: &str, code: &str) -> Outcome {
    let store = &state.agent.store();
    let pending = match store.pending_codes(Some(channel)).await {
        Ok(pending) => pending,
        Err(err) => return store_failed(&err),
    };
    let wanted = code.to_ascii_uppercase();
    let Some(found) = pending.into_iter().find(|p| p.code == wanted) else {
        return no_code(channel, code);
    };
    if let Err(err) = store.delete_code(&found.channel, &found.code).await {
        return store_failed(&err);
    }
    (
        StatusCode::OK,
        Ok(format!(
            "Denied {} ({}) on {}: code {} no longer works. If they write again they get a new code; set dm_policy for {} in config.toml to stop codes altogether.",
            sanitize_name(&found.display_name),
            found.sender,
            found.channel,
            found.code,
            found.channel
        )),
    )
}

/// `POST /access/revoke`: take back a sender's approval.
pub(crate) async fn revoke(
    State(state): State<Arc<WebState>>,
    Extension(login): Extension<Login>,
    Form(form): Form<SenderForm>,
) -> Response {
    let (channel, sender) = (form.channel.trim(), form.sender.trim());
    let outcome = match missing(&[("channel", channel), ("sender", sender)]) {
        Some(bad) => bad,
        None => match state.agent.store().revoke(channel, sender).await {
            Ok(true) => {
                let canonical = if sender.contains(':') {
                    sender.to_string()
                } else {
                    format!("{channel}:{sender}")
                };
                let still_owner = if state.config.agent.owners.contains(&canonical) {
                    format!(
                        " They are still an owner (agent.owners in {}); remove them there and restart to shut them out.",
                        state.home.config_file.display()
                    )
                } else {
                    String::new()
                };
                (
                    StatusCode::OK,
                    Ok(format!("Revoked {sender} on {channel}.{still_owner}")),
                )
            }
            Ok(false) => (
                StatusCode::NOT_FOUND,
                Err(format!(
                    "{sender} is not approved on {channel}; the approved senders are listed below"
                )),
            ),
            Err(err) => store_failed(&err),
        },
    };
    render(&state, &login, Some(outcome)).await
}

/// A 400 naming the first empty field, if any.
fn missing(fields: &[(&str, &str)]) -> Option<Outcome> {
    fields
        .iter()
        .find(|(_, value)| value.trim().is_empty())
        .map(|(name, _)| {
            (
                StatusCode::BAD_REQUEST,
                Err(format!(
                    "the form had no {name}; use the buttons on this page"
                )),
            )
        })
}

/// The CLI's words for a code that is not pending.
fn no_code(channel: &str, code: &str) -> Outcome {
    (
        StatusCode::NOT_FOUND,
        Err(format!(
            "no pending code {code} on {channel} (wrong, or expired after 60 minutes); the pending ones are listed below"
        )),
    )
}

fn store_failed(err: &pincer_core::store::StoreError) -> Outcome {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        Err(format!("the database failed: {err}; see the gateway's log")),
    )
}

/// The page, with an action's outcome above it.
async fn render(state: &WebState, login: &Login, outcome: Option<Outcome>) -> Response {
    let (status, flash) = match outcome {
        Some((status, text)) => (status, Some(text)),
        None => (StatusCode::OK, None),
    };
    let body = html! {
        (layout::flash(&flash))
        (body(state, login).await)
    };
    (status, layout::page("Access", "/access", &login.csrf, body)).into_response()
}

async fn body(state: &WebState, login: &Login) -> Markup {
    let store = &state.agent.store();
    let tz = state.agent.timezone();
    let day = state.agent.start_of_day_ms();
    let owners = &state.config.agent.owners;
    let member_limit = state.config.access.member_day_cost_usd;
    let pending = store.pending_codes(None).await;
    let approved = store.approved(None).await;
    let mut spent = Vec::new();
    if let Ok(approved) = &approved {
        for who in approved {
            spent.push(store.sender_cost_since(&who.sender, day).await.ok());
        }
    }
    let owners_spent = store.owner_cost_since(day).await.ok();
    let now = now_ms();
    html! {
        h2 { "Waiting for approval" }
        @match &pending {
            Err(err) => p.flash.err { "cannot read the pairing codes: " (err) },
            Ok(pending) if pending.is_empty() => p.muted {
                "Nobody is waiting. Someone who writes to the bot in a direct chat gets a pairing code to show you (on channels with dm_policy = \"pairing\")."
            },
            Ok(pending) => div.table-wrap { table {
                tr { th { "Channel" } th { "Code" } th { "Name" } th { "Sender" } th { "Expires" } th { "" } }
                @for code in pending {
                    @let name = sanitize_name(&code.display_name);
                    tr {
                        td { (code.channel) }
                        td { code { (code.code) } }
                        td { (name) }
                        td { (code.sender) }
                        td { (layout::when(code.expires_at, tz)) br; span.muted { "in " ((code.expires_at - now).max(0) / 60_000) " min" } }
                        td {
                            form.inline method="post" action="/access/approve" {
                                input type="hidden" name="csrf" value=(login.csrf);
                                input type="hidden" name="channel" value=(code.channel);
                                input type="hidden" name="code" value=(code.code);
                                button.primary type="submit" { "Approve" }
                            }
                            " "
                            form.inline method="post" action="/access/deny"
                                data-confirm=(format!("Deny {name} on {}?", code.channel)) {
                                input type="hidden" name="csrf" value=(login.csrf);
                                input type="hidden" name="channel" value=(code.channel);
                                input type="hidden" name="code" value=(code.code);
                                button.danger type="submit" { "Deny" }
                            }
                        }
                    }
                }
            } }
        }
        h2 { "Approved senders" }
        @match &approved {
            Err(err) => p.flash.err { "cannot read the approved senders: " (err) },
            Ok(approved) if approved.is_empty() => p.muted { "Nobody approved yet." },
            Ok(approved) => { div.table-wrap { table {
                tr { th { "Channel" } th { "Sender" } th { "Name" } th { "Tier" } th.num { "Spent today" } th { "Approved" } th { "" } }
                @for (who, cost) in approved.iter().zip(&spent) {
                    @let name = sanitize_name(&who.display_name);
                    @let tier = if owners.contains(&who.sender) { Tier::Owner } else { Tier::Member };
                    tr {
                        td { (who.channel) }
                        td { (who.sender) }
                        td { (name) }
                        td { (tier.name()) }
                        td.num {
                            @match cost {
                                Some(cost) if tier == Tier::Member => { (usd(*cost)) " of " (usd(member_limit)) }
                                Some(_) => span.muted { "with the owners" },
                                None => span.muted { "unknown" },
                            }
                        }
                        td { (layout::when(who.approved_at, tz)) " by " (who.approved_by) }
                        td {
                            form.inline method="post" action="/access/revoke"
                                data-confirm=(format!("Revoke {name} on {}?", who.channel)) {
                                input type="hidden" name="csrf" value=(login.csrf);
                                input type="hidden" name="channel" value=(who.channel);
                                input type="hidden" name="sender" value=(who.sender);
                                button.danger type="submit" { "Revoke" }
                            }
                        }
                    }
                }
            } }
            p.muted { "A member may spend up to " (usd(member_limit)) " a day (access.member_day_cost_usd)." } }
        }
        h2 { "Owners" }
        @if owners.is_empty() {
            p.muted {
                "No owners: add your own id, e.g. \"telegram:123456789\", to agent.owners in "
                (state.home.config_file.display()) " and restart the gateway."
            }
        } @else {
            div.table-wrap { table {
                tr { th { "Sender" } th { "Tier" } }
                @for owner in owners {
                    tr { td { (owner) } td { (Tier::Owner.name()) } }
                }
            } }
            p.muted {
                "The owners' turns today cost "
                @match owners_spent { Some(cost) => (usd(cost)), None => "an unknown amount" }
                " together. Owners are set in agent.owners in " (state.home.config_file.display()) "."
            }
        }
    }
}
