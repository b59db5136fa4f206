//! The seed's own per-brand session limits, which nothing enforced before:
//! "Each brand's inbound turns are rate-limited, and they count against the
//! live session cap" (seed 000, Inbound email turn). Every session open is
//! held to its brand's cap on live sessions (every role counted, inbound
//! ones too) and, for an inbound-email session, to its brand's rate of
//! inbound sessions per hour. Both are counted and the new session recorded
//! in one transaction under a per-brand lock ([`BrandLimitStore`]), so two
//! hosts opening sessions for one brand at once admit exactly as many as
//! the limits hold. A refusal opens nothing: the admin API answers 429
//! naming its rule (`brand_live_sessions`, `brand_inbound_rate`), with
//! `Retry-After` for the rate; it is traced (`session_refused`) and counted
//! (`scout_sessions_refused_total{rule}`).

use super::{HostError, Sessions};
use crate::config::ServeConfig;
use crate::policy::Role;
use crate::store::Store;
use crate::store::brand_limits::{BrandLimit, BrandLimits, SessionSlot};
use std::fmt;
use std::sync::Arc;

/// The limits a session of `brand` opens under: its `[brands.NAME]` table's
/// where it sets them, the deployment's defaults otherwise.
pub fn limits_for(config: &ServeConfig, brand: &str) -> BrandLimits {
    let stated = config.brands.get(brand);
    BrandLimits {
        max_live_sessions: stated
            .and_then(|b| b.max_live_sessions)
            .unwrap_or(config.max_live_sessions_per_brand),
        inbound_per_hour: stated
            .and_then(|b| b.inbound_sessions_per_hour)
            .unwrap_or(config.inbound_sessions_per_hour_per_brand),
    }
}

/// A session open its brand's limits refused: nothing was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub rule: BrandLimit,
    pub brand: String,
    /// The role asked for.
    pub role: String,
    /// What the brand already counts against the limit.
    pub counted: u32,
    /// The limit.
    pub allowed: u32,
    /// When one more would fit (the inbound rate), in whole seconds.
    pub retry_after_secs: Option<u64>,
}

impl Refusal {
    /// What the trace keeps of it (no secret: names and figures).
    pub fn detail(&self) -> serde_json::Value {
        serde_json::json!({
            "rule": self.rule.name(),
            "brand": self.brand,
            "role": self.role,
            "counted": self.counted,
            "allowed": self.allowed,
            "retry_after_secs": self.retry_after_secs,
        })
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let brand = self.brand.escape_debug();
        match self.rule {
            BrandLimit::LiveSessions => write!(
                f,
                "brand `{brand}` already has {} live sessions, its cap (`max_live_sessions_per_brand`, or `max_live_sessions` in `[brands.\"{brand}\"]`): end one (`DELETE /v1/sessions/{{id}}`) or wait for one to end, or have the operator raise the cap; nothing was opened",
                self.counted
            ),
            BrandLimit::InboundRate => write!(
                f,
                "brand `{brand}` opened {} inbound-email sessions in the last hour, its rate (`inbound_sessions_per_hour_per_brand`, or `inbound_sessions_per_hour` in `[brands.\"{brand}\"]`): try again in {} s; nothing was opened",
                self.counted,
                self.retry_after_secs.unwrap_or(3600)
            ),
        }
    }
}

/// A session admitted under its brand's limits, counted as live from now
/// on. Dropped before [`Admitted::keep`] (its open failed after it was
/// admitted), it stops counting.
#[must_use = "an admitted session that is not kept stops counting when dropped"]
pub struct Admitted {
    store: Arc<dyn Store>,
    session_id: String,
    kept: bool,
}

impl Admitted {
    /// The session opened: it counts as live until it ends.
    pub fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if !self.kept {
            slot_ended(&*self.store, &self.session_id);
        }
    }
}

/// Session `id` stops counting as live (logged when the store refuses: the
/// slot then counts until the session's own end).
fn slot_ended(store: &dyn Store, id: &str) {
    if let Err(e) = crate::store::block(store.session_slot_ended(id, crate::dates::now_ms())) {
        tracing::error!(session = %id, error = %e, "cannot record that the session no longer counts against its brand's live sessions");
    }
}

impl<E> Sessions<E> {
    /// Admits session `session_id` of `brand`, asked for as `role_name`
    /// (of seed role `role`: an inbound email turn counts against the
    /// inbound rate), under `limits`; refused ([`HostError::Limited`]) when
    /// one more would not fit, counted in the metrics. Counted and recorded
    /// in one transaction under the brand's lock, on every host.
    pub fn admit(
        &self,
        session_id: &str,
        brand: &str,
        role: Role,
        role_name: &str,
        limits: BrandLimits,
    ) -> Result<Admitted, HostError> {
        let at_ms = crate::dates::now_ms();
        let ttl_ms = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        let slot = SessionSlot {
            session_id,
            brand,
            inbound: role == Role::InboundEmailTurn,
            at_ms,
            expires_at_ms: at_ms.saturating_add(ttl_ms),
        };
        match crate::store::block(self.store.admit_session(&slot, limits))? {
            None => Ok(Admitted {
                store: self.store.clone(),
                session_id: session_id.to_string(),
                kept: false,
            }),
            Some(reached) => {
                self.metrics.session_refused(reached.limit.name());
                Err(HostError::Limited(Box::new(Refusal {
                    rule: reached.limit,
                    brand: brand.to_string(),
                    role: role_name.to_string(),
                    counted: reached.counted,
                    allowed: reached.allowed,
                    retry_after_secs: reached
                        .retry_after_ms
                        .map(|ms| u64::try_from(ms).unwrap_or(0).div_ceil(1000).max(1)),
                })))
            }
        }
    }

    /// Session `id` ended: it no longer counts against its brand's live
    /// sessions.
    pub(crate) fn slot_ended(&self, id: &str) {
        slot_ended(&*self.store, id);
    }
}
