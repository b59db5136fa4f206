//! A call's trace events, buffered until the moment they must be durable.

use super::Boundary;
use crate::capabilities::Capabilities;
use crate::policy::Rule;
use crate::runtime::CallOutcome;
use crate::session::Session;
use crate::store::{StoreError, TraceEvent};
use crate::trace::CallRows;
use serde_json::{Value, json};

/// HTTP exchanges of one call recorded in its `executed` event; more are counted.
pub(super) const TRACED_EXCHANGES: usize = 256;

/// The trace events of one call not yet written. Whatever is buffered when
/// the call ends (returns, is denied, or its future is dropped) is written.
/// Events holding what a guest or upstream produced are scrubbed with the
/// call's handles when they are written; only the request and the decision
/// (a digest and a rule, nothing a guest wrote) can be left for the drop.
pub(super) struct CallTrace<'a> {
    pub(super) boundary: &'a Boundary,
    pub(super) session: &'a Session,
    pub(super) call_id: String,
    pub(super) name: String,
    pub(super) events: Vec<TraceEvent>,
    /// The call's exported span: told each event once it is written.
    pub(super) span: Option<crate::telemetry::CallSpan>,
    /// What the call would reach, as its denials are counted by
    /// ([`super::lineage`]).
    pub(super) targets: std::borrow::Cow<'a, [String]>,
    /// The trace and span each of its rows names: its exported span's,
    /// else the caller's `traceparent`'s.
    pub(super) origin: crate::store::Origin,
}

impl CallTrace<'_> {
    /// The constructors of this call's rows ([`crate::trace`]).
    pub(super) fn rows(&self) -> CallRows<'_> {
        CallRows::new(self.session, &self.call_id, &self.name)
    }

    /// Buffers `event`, one of this call's rows, naming the call's trace.
    pub(super) fn push(&mut self, mut event: TraceEvent) {
        event.origin = self.origin.clone();
        self.events.push(event);
    }

    /// Records the call's denial by `rule` and returns it.
    pub(super) async fn deny(&mut self, rule: Rule) -> super::Denied {
        let lineage =
            super::lineage::record(self.session, &self.targets, rule, self.boundary.pause_after);
        self.push(self.rows().refused(rule, lineage.as_ref()));
        self.flush_async().await;
        super::Denied {
            rule,
            lineage,
            detail: None,
        }
    }

    /// Writes the buffered events, scrubbed of the secrets `caps` inject,
    /// in one group-committed transaction, without holding a runtime worker
    /// while the disk works. On an error they stay buffered.
    pub(super) async fn write_async(
        &mut self,
        caps: Option<&Capabilities>,
    ) -> Result<(), StoreError> {
        if self.events.is_empty() {
            return Ok(());
        }
        if let Some(caps) = caps {
            for event in &mut self.events {
                caps.scrub_json(&mut event.detail);
            }
        }
        // Out of the buffer before the await: if this future is dropped once
        // the rows are handed to the writer, the trace's drop does not write
        // them a second time. On an error they go back.
        let events = std::mem::take(&mut self.events);
        let started = std::time::Instant::now();
        match self.boundary.store.record_all(&events).await {
            Ok(()) => {
                if let Some(metrics) = &self.boundary.metrics {
                    metrics.trace_written(started.elapsed());
                }
                if let Some(span) = &self.span {
                    span.written(&events);
                }
                Ok(())
            }
            Err(e) => {
                self.events = events;
                Err(e)
            }
        }
    }

    /// [`CallTrace::write_async`] for events that hold nothing a guest
    /// wrote (a denial, the request before an approval wait).
    pub(super) async fn flush_async(&mut self) {
        if let Err(e) = self.write_async(None).await {
            tracing::error!(error = %e, "cannot record trace events; kept to be written once the store takes them");
            self.boundary.owe(std::mem::take(&mut self.events), &e);
        }
    }
}

impl Drop for CallTrace<'_> {
    fn drop(&mut self) {
        if self.events.is_empty() {
            return;
        }
        let events = std::mem::take(&mut self.events);
        if self.boundary.write_or_owe(&events, "trace events")
            && let Some(span) = &self.span
        {
            span.written(&events);
        }
    }
}

/// Trace events the store did not take when they were written (it was
/// away, or this host's lease had lapsed), kept in order to be written
/// once it takes them again: a call's end is never lost because the
/// database was away at that moment. Kept under the lease generation they
/// were made in: if another host recovered this one meanwhile, it marked
/// those calls `interrupted`, and they are dropped.
#[derive(Default)]
pub(super) struct Owed {
    events: parking_lot::Mutex<(u64, Vec<TraceEvent>)>,
}

/// Most events kept owed; past it the oldest go (logged).
const MAX_OWED: usize = 100_000;

impl Boundary {
    /// The id of a new call of `session`: unique to this boundary's
    /// process (its tag) and call.
    pub(super) fn new_call_id(&self, session: &Session) -> String {
        format!(
            "{}-{}{}",
            session.id,
            self.calls_from,
            self.next_call
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        )
    }

    /// Writes `events` now (blocking: for a caller that cannot await), or
    /// keeps them owed if the store refuses them; whether they were
    /// written. `what` names them in the log.
    pub(super) fn write_or_owe(&self, events: &[TraceEvent], what: &str) -> bool {
        if events.is_empty() {
            return true;
        }
        match crate::store::block(self.store.record_all(events)) {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "cannot record {what}; kept to be written once the store takes them");
                self.owe(events.to_vec(), &e);
                false
            }
        }
    }

    /// Keeps `events` the store refused with `error` to be written later.
    pub(super) fn owe(&self, events: Vec<TraceEvent>, error: &StoreError) {
        if events.is_empty() || matches!(error, StoreError::Fenced) {
            // Fenced: another host recovered this one and closed its calls.
            return;
        }
        let generation = self.store.lease_generation();
        let mut owed = self.owed.events.lock();
        if owed.0 != generation {
            *owed = (generation, Vec::new());
        }
        owed.1.extend(events);
        if owed.1.len() > MAX_OWED {
            let over = owed.1.len() - MAX_OWED;
            owed.1.drain(..over);
            tracing::error!(
                dropped = over,
                "too many trace events owed; the oldest are dropped"
            );
        }
    }

    /// Writes the events owed, if the store takes them now (called every
    /// second by `serve`); those of an earlier lease generation are
    /// dropped (the host that recovered this one closed their calls).
    pub async fn pay_owed(&self) {
        let (generation, events) = {
            let mut owed = self.owed.events.lock();
            if owed.1.is_empty() {
                return;
            }
            (owed.0, std::mem::take(&mut owed.1))
        };
        if generation != self.store.lease_generation() {
            tracing::warn!(
                events = events.len(),
                "trace events owed under an earlier identity are dropped: the host that recovered this one closed their calls"
            );
            return;
        }
        if let Err(e) = self.store.record_all(&events).await {
            let mut owed = self.owed.events.lock();
            let mut all = events;
            all.append(&mut owed.1);
            *owed = (generation, all);
            tracing::debug!(error = %e, "trace events owed still not taken");
        } else {
            tracing::info!(events = events.len(), "trace events owed are written");
        }
    }
}

/// The `executed` event's detail: the call's HTTP exchanges, guest logs and
/// captured output (each already capped by the runtime), and its duration.
pub(super) fn executed_detail(outcome: &CallOutcome) -> Value {
    // A guest may make as many requests as its deadline allows: the trace
    // keeps the first ones and counts the rest.
    let shown = &outcome.http[..outcome.http.len().min(TRACED_EXCHANGES)];
    let mut detail = json!({ "micros": outcome.micros, "http": shown, "logs": outcome.logs });
    if let Value::Object(map) = &mut detail {
        if outcome.http.len() > shown.len() {
            map.insert(
                "http_not_shown".to_string(),
                json!(outcome.http.len() - shown.len()),
            );
        }
        for (key, text) in [("stdout", &outcome.stdout), ("stderr", &outcome.stderr)] {
            if !text.is_empty() {
                map.insert(key.to_string(), Value::String(text.clone()));
            }
        }
        if outcome.output_dropped > 0 {
            map.insert("output_dropped".to_string(), json!(outcome.output_dropped));
        }
        if !outcome.credentials.is_empty() {
            map.insert("credentials".to_string(), json!(outcome.credentials));
        }
    }
    detail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ToolOutput;

    #[test]
    fn the_executed_event_keeps_the_first_exchanges_and_counts_the_rest() {
        let exchange = crate::capabilities::http::HttpExchange {
            destination: None,
            method: "GET".into(),
            path: "/items/1".into(),
            route: Some("GET /items/{id}".into()),
            status: Some(200),
            request_bytes: 0,
            response_bytes: 12,
            graphql: None,
            error: None,
            micros: 5,
            server: Default::default(),
        };
        let outcome = CallOutcome {
            output: ToolOutput::Ok(Value::Null),
            stdout: String::new(),
            stderr: "a line\n".into(),
            output_dropped: 0,
            logs: Vec::new(),
            http: vec![exchange; TRACED_EXCHANGES + 44],
            credentials: Vec::new(),
            micros: 9,
            instantiate_micros: 1,
            output_wrapped: true,
        };
        let detail = executed_detail(&outcome);
        assert_eq!(detail["http"].as_array().unwrap().len(), TRACED_EXCHANGES);
        assert_eq!(detail["http_not_shown"], 44);
        assert_eq!(detail["http"][0]["route"], "GET /items/{id}");
        assert_eq!(detail["stderr"], "a line\n");
        assert!(detail.get("stdout").is_none(), "empty output is left out");
    }
}
