//! What model calls cost, and who spent it. Every call is recorded with the sender its
//! turn ran for and that turn's tier, so the budget gates can ask three questions:
//! what the whole day cost (`agent.max_day_cost_usd` for non-owner turns), what the
//! owners' own turns cost (the owner is never stopped by someone else's spending), and
//! what one non-owner sender cost (`access.member_day_cost_usd` / `guest_day_cost_usd`).

use std::sync::Arc;

use pincer_config::Tier;
use rusqlite::params;

use rusqlite::Connection;

use super::messages::append_tiered;
use super::{Cached, Result, Role, Store, StoreError, now_ms};
use pincer_provider::{Part, Usage};

/// How long a cached day's spend is trusted before it is summed again, so that calls
/// made by another process (`pincer chat` beside the gateway) count within a minute.
const SPENT_FRESH: std::time::Duration = std::time::Duration::from_secs(60);

/// Money spent since `since_ms`, as of `at`: by everyone, and by owner-tier turns.
#[derive(Clone, Copy)]
pub(super) struct Spent {
    since_ms: i64,
    total: f64,
    owners: f64,
    at: std::time::Instant,
}

/// Who a model call was made for: the sender of the turn (its lowest-tier sender) and
/// the tier the turn ran at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spender {
    pub sender: String,
    pub tier: Tier,
}

impl Spender {
    /// Work done for the owners as a whole (a dream, a compaction the owner asked for).
    pub fn owner() -> Spender {
        Spender {
            sender: String::new(),
            tier: Tier::Owner,
        }
    }
}

/// Rows recorded before tiers existed carry none; they were the owner's.
const OWNER_ROWS: &str = "(tier IS NULL OR tier = 'owner')";

impl Store {
    pub async fn record_usage(
        &self,
        session_id: i64,
        model: &str,
        usage: Usage,
        cost_usd: f64,
        spender: &Spender,
    ) -> Result<()> {
        self.record_call(session_id, model, usage, cost_usd, spender, None)
            .await
            .map(|_| ())
    }

    /// A model call's usage (`record_usage`) and, when it answered something, its
    /// reply (`append_as`, as the assistant), in one store call. Returns the reply's
    /// id. A usage row that cannot be written is logged and does not cost the reply.
    pub async fn record_call(
        &self,
        session_id: i64,
        model: &str,
        usage: Usage,
        cost_usd: f64,
        spender: &Spender,
        reply: Option<(Vec<Part>, Option<Tier>)>,
    ) -> Result<Option<i64>> {
        // Counted whether or not the row is written: the tokens were spent.
        self.usage.usage(model, usage, cost_usd);
        let model = model.to_string();
        let (sender, tier) = (spender.sender.clone(), spender.tier);
        let spent = Arc::clone(&self.spent);
        self.run(move |conn| {
            // The reply first: if it cannot be stored, the call fails whole and the
            // cached sums are not touched.
            let id = reply
                .as_ref()
                .map(|(parts, tier)| append_tiered(conn, session_id, Role::Assistant, parts, *tier))
                .transpose()?;
            match insert_usage(conn, session_id, &model, usage, cost_usd, &sender, tier) {
                Ok(()) => add_spent(&spent, cost_usd, tier),
                Err(err) if id.is_none() => return Err(err),
                Err(err) => tracing::warn!("usage not recorded: {err}"),
            }
            Ok(id)
        })
        .await
    }

    /// Money spent on model calls since `since_ms` (unix milliseconds), by everyone.
    pub async fn cost_since(&self, since_ms: i64) -> Result<f64> {
        Ok(self.spent_since(since_ms).await?.total)
    }

    /// Money spent since `since_ms` by owner-tier turns only.
    pub async fn owner_cost_since(&self, since_ms: i64) -> Result<f64> {
        Ok(self.spent_since(since_ms).await?.owners)
    }

    /// Money spent since `since_ms` by turns that ran for `sender` below the owner tier.
    pub async fn sender_cost_since(&self, sender: &str, since_ms: i64) -> Result<f64> {
        let sender = sender.to_string();
        self.run(move |conn| {
            Ok(conn.row(
                &format!(
                    "SELECT COALESCE(SUM(cost_usd), 0) FROM usage
                     WHERE sender = ?1 AND created_at >= ?2 AND NOT {OWNER_ROWS}"
                ),
                params![sender, since_ms],
                |row| row.get(0),
            )?)
        })
        .await
    }

    async fn spent_since(&self, since_ms: i64) -> Result<Spent> {
        // A fresh sum needs no trip to the writer (every turn asks, at every step):
        // each call recorded since the sum was taken was added to it there.
        if let Some(fresh) = fresh(&*lock_spent(&self.spent)?, since_ms) {
            return Ok(fresh);
        }
        let spent = Arc::clone(&self.spent);
        self.run(move |conn| {
            let mut cached = lock_spent(&spent)?;
            if let Some(fresh) = fresh(&cached, since_ms) {
                return Ok(fresh);
            }
            let (total, owners) = conn.row(
                &format!(
                    "SELECT COALESCE(SUM(cost_usd), 0),
                            COALESCE(SUM(CASE WHEN {OWNER_ROWS} THEN cost_usd ELSE 0 END), 0)
                     FROM usage WHERE created_at >= ?1"
                ),
                [since_ms],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?;
            let fresh = Spent {
                since_ms,
                total,
                owners,
                at: std::time::Instant::now(),
            };
            *cached = Some(fresh);
            Ok(fresh)
        })
        .await
    }
}

fn lock_spent(
    spent: &std::sync::Mutex<Option<Spent>>,
) -> Result<std::sync::MutexGuard<'_, Option<Spent>>> {
    spent
        .lock()
        .map_err(|_| StoreError::Worker("the spend cache was poisoned".into()))
}

/// The cached sum if it is of `since_ms` and young enough to trust.
fn fresh(cached: &Option<Spent>, since_ms: i64) -> Option<Spent> {
    cached.filter(|c| c.since_ms == since_ms && c.at.elapsed() < SPENT_FRESH)
}

fn insert_usage(
    conn: &Connection,
    session_id: i64,
    model: &str,
    usage: Usage,
    cost_usd: f64,
    sender: &str,
    tier: Tier,
) -> Result<()> {
    conn.exec(
        "INSERT INTO usage (session_id, model, input_tokens, output_tokens,
            cache_read_tokens, cache_write_tokens, cost_usd, created_at, sender, tier)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            session_id,
            model,
            usage.input_tokens as i64,
            usage.output_tokens as i64,
            usage.cache_read_tokens as i64,
            usage.cache_write_tokens as i64,
            cost_usd,
            now_ms(),
            sender,
            tier.name()
        ],
    )?;
    Ok(())
}

/// Add a call just recorded to the cached sums. On the writer, like every read of the
/// sums: no call is counted twice or missed.
fn add_spent(spent: &std::sync::Mutex<Option<Spent>>, cost_usd: f64, tier: Tier) {
    if let Ok(mut cached) = spent.lock()
        && let Some(cached) = cached.as_mut()
        && now_ms() >= cached.since_ms
    {
        cached.total += cost_usd;
        if tier == Tier::Owner {
            cached.owners += cost_usd;
        }
    }
}
