//! The seed's per-brand session limits in the store ([`BrandLimitStore`]):
//! "each brand's inbound turns are rate-limited, and they count against the
//! live session cap" (seed 000). A session open is admitted or refused by
//! counting the brand's live sessions and its inbound-email sessions of the
//! last hour and recording the new one in ONE transaction under a per-brand
//! lock (SQLite's single writer; a PostgreSQL advisory transaction lock), so
//! two hosts opening sessions for one brand at once admit exactly as many
//! as the limits hold, as the allowance ledger does for runs.

use super::StoreError;

/// The window of the inbound-email rate: an hour, sliding.
pub const INBOUND_WINDOW_MS: i64 = 60 * 60 * 1000;

/// How long a slot recorded by an open that never recorded its session
/// counts as live (PostgreSQL: a host that died mid-open leaves one): an
/// open takes well under this.
pub const UNCONFIRMED_SLOT_MS: i64 = 60 * 1000;

/// The limits one brand's session opens are held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrandLimits {
    /// Live sessions of the brand, every role counted (inbound ones too).
    pub max_live_sessions: u32,
    /// Inbound-email sessions of the brand opened in the last hour.
    pub inbound_per_hour: u32,
}

/// One session about to open, as its brand's limits count it.
#[derive(Debug, Clone, Copy)]
pub struct SessionSlot<'a> {
    pub session_id: &'a str,
    pub brand: &'a str,
    /// Opened with the inbound-email role (or an operator role based on it).
    pub inbound: bool,
    pub at_ms: i64,
    /// When it ends by itself: it stops counting as live then.
    pub expires_at_ms: i64,
}

/// Which limit refused an open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BrandLimit {
    /// The brand holds `max_live_sessions` live sessions already.
    LiveSessions,
    /// The brand opened `inbound_per_hour` inbound-email sessions in the
    /// last hour already.
    InboundRate,
}

impl BrandLimit {
    /// The rule's name, as the admin API's error `code`, the trace and the
    /// metric label give it.
    pub fn name(self) -> &'static str {
        match self {
            BrandLimit::LiveSessions => "brand_live_sessions",
            BrandLimit::InboundRate => "brand_inbound_rate",
        }
    }
}

/// Why an open was refused: the limit, what the brand already counts
/// against it, and when one more would fit (the inbound rate only: a live
/// session ends when its orchestrator ends it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitReached {
    pub limit: BrandLimit,
    pub counted: u32,
    pub allowed: u32,
    pub retry_after_ms: Option<i64>,
}

/// Session opens held to their brand's limits.
#[async_trait::async_trait]
pub trait BrandLimitStore: Send + Sync {
    /// Counts `slot.brand`'s live sessions and its inbound-email sessions of
    /// the last hour and, if `limits` hold one more, records `slot` as live
    /// (`Ok(None)`); otherwise records nothing and says which limit was
    /// reached. One transaction under a per-brand lock, on every host.
    async fn admit_session(
        &self,
        slot: &SessionSlot<'_>,
        limits: BrandLimits,
    ) -> Result<Option<LimitReached>, StoreError>;

    /// Session `session_id` ended (or its open failed after it was
    /// admitted): it no longer counts as live. Its inbound open still counts
    /// against the hour. Ending one twice, or one never admitted, changes
    /// nothing.
    async fn session_slot_ended(&self, session_id: &str, at_ms: i64) -> Result<(), StoreError>;
}

/// The decision both backends make from what they counted under the lock:
/// `live`, the brand's live sessions; `inbound_opened_ms`, when each of its
/// inbound-email sessions of the last hour opened, oldest first.
pub(crate) fn decide(
    slot: &SessionSlot<'_>,
    limits: BrandLimits,
    live: i64,
    inbound_opened_ms: &[i64],
) -> Option<LimitReached> {
    let counted = |n: i64| u32::try_from(n.max(0)).unwrap_or(u32::MAX);
    if live >= i64::from(limits.max_live_sessions) {
        return Some(LimitReached {
            limit: BrandLimit::LiveSessions,
            counted: counted(live),
            allowed: limits.max_live_sessions,
            retry_after_ms: None,
        });
    }
    let opened = inbound_opened_ms.len();
    let allowed = limits.inbound_per_hour as usize;
    if slot.inbound && opened >= allowed {
        // One more fits once all but `allowed - 1` of them have left the
        // window: the (opened - allowed)-th oldest leaves it first.
        let retry_after_ms = inbound_opened_ms
            .get(opened - allowed)
            .map(|at| (at + INBOUND_WINDOW_MS - slot.at_ms).max(1000))
            .or(Some(INBOUND_WINDOW_MS));
        return Some(LimitReached {
            limit: BrandLimit::InboundRate,
            counted: counted(opened as i64),
            allowed: limits.inbound_per_hour,
            retry_after_ms,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(inbound: bool, at_ms: i64) -> SessionSlot<'static> {
        SessionSlot {
            session_id: "s-1",
            brand: "acme",
            inbound,
            at_ms,
            expires_at_ms: at_ms + 1000,
        }
    }

    const LIMITS: BrandLimits = BrandLimits {
        max_live_sessions: 3,
        inbound_per_hour: 2,
    };

    #[test]
    fn the_live_cap_counts_every_role_and_the_inbound_rate_only_inbound_opens() {
        assert_eq!(decide(&slot(false, 0), LIMITS, 2, &[]), None);
        let full = decide(&slot(false, 0), LIMITS, 3, &[]).expect("the fourth live session");
        assert_eq!(full.limit, BrandLimit::LiveSessions);
        assert_eq!(
            (full.counted, full.allowed, full.retry_after_ms),
            (3, 3, None)
        );
        // Two inbound opens this hour: a person's session still opens, a
        // third inbound one does not.
        assert_eq!(decide(&slot(false, 0), LIMITS, 1, &[10, 20]), None);
        assert_eq!(decide(&slot(true, 0), LIMITS, 1, &[10]), None);
        let rate = decide(&slot(true, 5_000), LIMITS, 1, &[1_000, 2_000])
            .expect("the third inbound open in an hour");
        assert_eq!(rate.limit, BrandLimit::InboundRate);
        assert_eq!(
            rate.retry_after_ms,
            Some(1_000 + INBOUND_WINDOW_MS - 5_000),
            "free once the oldest leaves the hour"
        );
        // Lowered to one while three are in the window: the second oldest
        // must leave too.
        let lowered = BrandLimits {
            inbound_per_hour: 1,
            ..LIMITS
        };
        let rate = decide(&slot(true, 5_000), lowered, 0, &[1_000, 2_000, 3_000]).unwrap();
        assert_eq!(rate.retry_after_ms, Some(3_000 + INBOUND_WINDOW_MS - 5_000));
        // None allowed at all: an hour.
        let none = BrandLimits {
            inbound_per_hour: 0,
            ..LIMITS
        };
        let rate = decide(&slot(true, 5_000), none, 0, &[]).unwrap();
        assert_eq!(rate.retry_after_ms, Some(INBOUND_WINDOW_MS));
    }
}
