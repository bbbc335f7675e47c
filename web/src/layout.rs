//! The page shell every panel page shares: the head, the navigation, a flash line for
//! an action's outcome, and the stylesheet and script (served from the binary, no
//! build step). Pages build their body with maud; text is escaped unless a page says
//! otherwise.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

const STYLESHEET: &str = include_str!("assets/panel.css");
const SCRIPT: &str = include_str!("assets/panel.js");

/// The pages in the navigation: path and label.
const PAGES: [(&str, &str); 7] = [
    ("/", "Overview"),
    ("/conversations", "Conversations"),
    ("/access", "Access"),
    ("/cron", "Scheduled"),
    ("/memory", "Memory"),
    ("/usage", "Usage"),
    ("/chat", "Chat"),
];

/// A whole page: `active` is its path in the navigation; `csrf` goes into the log-out
/// form and the page's meta tag (the chat script reads it there).
pub(crate) fn page(title: &str, active: &str, csrf: &str, body: Markup) -> Response {
    axum::response::Html(shell(title, active, csrf, body).into_string()).into_response()
}

fn shell(title: &str, active: &str, csrf: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="csrf-token" content=(csrf);
                title { (title) " · Pincer" }
                link rel="stylesheet" href="/assets/panel.css";
                script src="/assets/panel.js" defer {}
            }
            body {
                header {
                    nav {
                        span.brand { "Pincer" }
                        @for (path, label) in PAGES {
                            @if path == active {
                                a.active href=(path) aria-current="page" { (label) }
                            } @else {
                                a href=(path) { (label) }
                            }
                        }
                        form.logout method="post" action="/logout" {
                            input type="hidden" name="csrf" value=(csrf);
                            button type="submit" { "Log out" }
                        }
                    }
                }
                main { h1 { (title) } (body) }
            }
        }
    }
}

/// The outcome of an action, shown above a page: `ok` or an error.
pub(crate) fn flash(outcome: &Option<Result<String, String>>) -> Markup {
    html! {
        @match outcome {
            Some(Ok(text)) => p.flash.ok role="status" { (text) },
            Some(Err(text)) => p.flash.err role="alert" { (text) },
            None => {},
        }
    }
}

/// A page outside the panel (log in, refused): a title and one paragraph.
pub(crate) fn bare(title: &str, text: &str) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Pincer" }
                link rel="stylesheet" href="/assets/panel.css";
            }
            body { main { h1 { (title) } p { (text) } } }
        }
    }
    .into_string()
}

/// A page that moves on to `to` by itself (a same-site navigation, so the new
/// SameSite=Strict cookie goes with it).
pub(crate) fn forward(to: &str) -> String {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="refresh" content=(format!("0;url={to}"));
                title { "Logged in · Pincer" }
                link rel="stylesheet" href="/assets/panel.css";
            }
            body { main { p { "Logged in. " a href=(to) { "Continue" } } } }
        }
    }
    .into_string()
}

pub(crate) async fn stylesheet() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        STYLESHEET,
    )
        .into_response()
}

pub(crate) async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        SCRIPT,
    )
        .into_response()
}

/// A time in milliseconds since the epoch, in `tz`, to the minute.
pub(crate) fn when(ms: i64, tz: pincer_core::tz::Tz) -> String {
    use chrono::TimeZone;
    tz.timestamp_millis_opt(ms)
        .single()
        .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_default()
}

/// Dollars, to the cent below a dollar's worth of precision.
pub(crate) fn usd(amount: f64) -> String {
    if amount > 0.0 && amount < 0.01 {
        format!("${amount:.4}")
    } else {
        format!("${amount:.2}")
    }
}
