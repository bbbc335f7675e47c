//! `getUpdates` — confirm by `offset`, answer what is pending, or hold the request until
//! something is injected or `min(timeout, 10)` seconds pass; a stalled one (`stall()`)
//! is never answered — and the webhook methods a polling bot calls first.

use std::time::Duration;

use serde_json::{Value, json};

use crate::telegram::fault::Answer;
use crate::telegram::params::Params;
use crate::telegram::state::{Inner, Shared};

/// The longest a poll is held, whatever `timeout` asks (teloxide's client gives up at 17 s).
const MAX_HOLD: Duration = Duration::from_secs(10);

pub(super) async fn get_updates(shared: &Shared, params: &Params) -> Answer {
    let offset = params.i64("offset").unwrap_or(0);
    let limit = params.i64("limit").unwrap_or(100).clamp(1, 100);
    let limit = usize::try_from(limit).unwrap_or(100);
    let hold = params
        .i64("timeout")
        .and_then(|t| u64::try_from(t).ok())
        .map_or(Duration::ZERO, Duration::from_secs)
        .min(MAX_HOLD);
    shared.update(|inner| inner.updates.confirm(offset));
    shared
        .wait_until(hold, |inner| {
            inner.updates.pending() > 0 || inner.stalls > 0
        })
        .await;
    if shared.update(Inner::take_stall) {
        // Silence: held until the client gives up and closes the connection (axum then
        // drops this future).
        std::future::pending::<()>().await;
    }
    Ok(Value::Array(
        shared.read(|inner| inner.updates.batch(limit)),
    ))
}

pub(super) fn get_webhook_info(inner: &Inner) -> Answer {
    Ok(json!({
        "url": "",
        "has_custom_certificate": false,
        "pending_update_count": inner.updates.pending(),
    }))
}

pub(super) fn delete_webhook(inner: &mut Inner, params: &Params) -> Answer {
    if params.bool("drop_pending_updates") {
        inner.updates.drop_all();
    }
    Ok(Value::Bool(true))
}
