//! The trace's rows and [`TraceStore`], the durable record of every call.

use super::*;

/// A state recorded for a tool call or a connector in the trace (D6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceState {
    Registered,
    Eligible,
    Offered,
    Requested,
    Allowed,
    Denied,
    Executed,
    Result,
    PermissionDenied,
    /// Appended when a host starts after one that stopped (killed, crashed,
    /// lost power) while this call was in flight: the call never reached a
    /// terminal state, and the trace says so rather than leaving it open.
    Interrupted,
    /// At a session's start: a tool the session is not given, with the rule
    /// that removed it (an operator switch by name, registration, or the
    /// role's ceiling); see [`crate::policy::removed`].
    Removed,
    /// A person's (or the timeout's) answer to a call's approval request:
    /// who decided, when, and how long the call waited.
    Decided,
    /// A connector added, upgraded or retired at runtime, by whom (the
    /// verified caller), with its artifact digests and what it revoked:
    /// recorded under no session (`tool` names the connector).
    Deployed,
    /// What the host holds changed through the admin API, and who changed
    /// it (`detail.actor`): a session opened or ended (under its id), a
    /// connection stored, disabled, shared or unshared, a tool reviewed,
    /// a profile saved or deleted (under the brand, or no brand for a
    /// review); `rule` names the change, `detail.before` and `detail.after`
    /// what it was and became, never a secret.
    Changed,
}

impl TraceState {
    /// The name stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceState::Registered => "registered",
            TraceState::Eligible => "eligible",
            TraceState::Offered => "offered",
            TraceState::Requested => "requested",
            TraceState::Allowed => "allowed",
            TraceState::Denied => "denied",
            TraceState::Executed => "executed",
            TraceState::Result => "result",
            TraceState::PermissionDenied => "permission_denied",
            TraceState::Interrupted => "interrupted",
            TraceState::Removed => "removed",
            TraceState::Decided => "decided",
            TraceState::Deployed => "deployed",
            TraceState::Changed => "changed",
        }
    }

    /// The state stored as `name`, if any.
    pub fn parse(name: &str) -> Option<TraceState> {
        Some(match name {
            "registered" => TraceState::Registered,
            "eligible" => TraceState::Eligible,
            "offered" => TraceState::Offered,
            "requested" => TraceState::Requested,
            "allowed" => TraceState::Allowed,
            "denied" => TraceState::Denied,
            "executed" => TraceState::Executed,
            "result" => TraceState::Result,
            "permission_denied" => TraceState::PermissionDenied,
            "interrupted" => TraceState::Interrupted,
            "removed" => TraceState::Removed,
            "decided" => TraceState::Decided,
            "deployed" => TraceState::Deployed,
            "changed" => TraceState::Changed,
            _ => return None,
        })
    }
}

impl fmt::Display for TraceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whose events a trace query reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFilter<'a> {
    Session(&'a str),
    Brand(&'a str),
    /// Every row, whoever's: the audit export.
    All,
}

/// One recorded decision or step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent {
    pub session: String,
    pub brand: String,
    pub call_id: Option<String>,
    pub tool: Option<String>,
    pub state: TraceState,
    /// The rule that decided (for `allowed`, `denied`, `permission_denied`).
    pub rule: Option<String>,
    pub detail: serde_json::Value,
    /// Milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// Where it came from: the host and the OpenTelemetry span.
    #[serde(flatten)]
    pub origin: Origin,
}

/// Where a trace row came from, so an auditor can pivot from it to the
/// host's logs and to the request's spans in OpenTelemetry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The host that wrote the row. Each store writes its own id (the
    /// fleet's `hosts.host_id`, or a single host's id for this start), so
    /// this is filled when a row is read and ignored when one is written.
    pub host: Option<String>,
    /// The W3C trace id (32 hex digits) of the request the row belongs to:
    /// the call's exported span's, else the one the caller's `traceparent`
    /// named. `None` when neither was there.
    pub trace_id: Option<String>,
    /// The span (16 hex digits): the host's exported span for the call (or
    /// a person's wait), else the caller's span its `traceparent` named.
    pub span_id: Option<String>,
}

impl Origin {
    /// The trace and span a W3C `traceparent` header names, when it is
    /// well formed (version `00`, ids not all zeros); `None` otherwise.
    pub fn from_traceparent(value: &str) -> Option<Origin> {
        let mut parts = value.trim().split('-');
        let (version, trace, span, _flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let hex = |s: &str, len: usize| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                && s.bytes().any(|b| b != b'0')
        };
        (version == "00" && parts.next().is_none() && hex(trace, 32) && hex(span, 16)).then(|| {
            Origin {
                host: None,
                trace_id: Some(trace.to_string()),
                span_id: Some(span.to_string()),
            }
        })
    }
}

/// The trace of every decision (D6): appended durably before the call goes
/// on, read in pages.
#[async_trait::async_trait]
pub trait TraceStore: Send + Sync {
    /// Appends one event to the trace.
    async fn record(&self, event: &TraceEvent) -> Result<(), StoreError>;
    /// Appends events in order, all or none (one durable write for a call's
    /// steps that happen together).
    async fn record_all(&self, events: &[TraceEvent]) -> Result<(), StoreError> {
        for event in events {
            self.record(event).await?;
        }
        Ok(())
    }
    /// Trace transactions committed by this store so far (each one fsync):
    /// what tells a read's one commit from a write's two. 0 for a store
    /// that does not count them.
    fn trace_commits(&self) -> u64 {
        0
    }
    /// What this store's trace writer measures, for `/metrics`.
    fn writer_metrics(&self) -> Option<WriterMetrics> {
        None
    }
    /// Up to `limit` events matching `filter` recorded after sequence number
    /// `after` (0: from the start), in order, each with its sequence number:
    /// how a long trace is read in bounded pages.
    async fn trace_page(
        &self,
        filter: TraceFilter<'_>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, TraceEvent)>, StoreError>;
    /// A session's events in the order they were recorded.
    async fn trace_for_session(&self, session: &str) -> Result<Vec<TraceEvent>, StoreError>;
    /// The last `limit` decisions on approvals (`decided` rows), of every
    /// session, newest first.
    async fn recent_decisions(&self, limit: usize) -> Result<Vec<(i64, TraceEvent)>, StoreError>;
    /// A session's last `limit` calls as requested (their `requested`
    /// rows), oldest first: the context a person deciding one reads.
    async fn recent_requests(
        &self,
        session: &str,
        limit: usize,
    ) -> Result<Vec<TraceEvent>, StoreError>;
    /// A brand's events in the order they were recorded.
    async fn trace_for_brand(&self, brand: &str) -> Result<Vec<TraceEvent>, StoreError>;
}
