//! A gated call's wait for a person, as the boundary sees it: the call's
//! rows and spans for the request, the decision and the withdrawal, and the
//! rule a wait that ends without an approval refuses the call by. The wait
//! itself (asking, the bell, the timeout, the withdrawal) and every decision
//! are the [`crate::approvals::Approvals`] service's.

use super::{AskedFor, Boundary, Denied};
use crate::approvals::{Ask, Decision, Ended, WaitRecord};
use crate::policy::Rule;
use crate::session::Session;
use crate::store::{ApprovalId, TraceEvent, TraceState};
use crate::trace::CallRows;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One call's wait.
pub(super) struct Wait<'a> {
    pub(super) session: &'a Session,
    pub(super) call_id: &'a str,
    pub(super) name: &'a str,
    pub(super) digest: &'a str,
    pub(super) args: &'a Value,
    pub(super) gone: &'a CancellationToken,
    pub(super) asked: Option<AskedFor>,
    /// The trace and span the call's rows name (see [`super::trace::CallTrace`]).
    pub(super) origin: &'a crate::store::Origin,
    /// The call's exported span, if spans are exported.
    pub(super) span: Option<&'a crate::telemetry::CallSpan>,
    /// What the call would reach, as its denials are counted by
    /// ([`super::lineage`]).
    pub(super) targets: &'a [String],
    /// For a reservation above the per-call threshold, asked while the call
    /// runs: what the trace's request and decision add (the estimate, its
    /// unit, the threshold). Such a wait records no `denied` event (the
    /// call goes on, and its guest is refused the reservation): the
    /// decision, or the withdrawal, is the wait's last event.
    pub(super) spend: Option<&'a Value>,
    /// A remote MCP server's tool (the connector as the call began, and
    /// the tool): an approval revoked because the tool changed or was
    /// reviewed anew ends the call with the rule that holds it now.
    pub(super) remote: Option<(&'a crate::runtime::LoadedComponent, &'a str)>,
    /// For a client that asks its person through an `input_required`
    /// result: ask and return, or spend the approval its answer decided.
    pub(super) by_result: Option<crate::approvals::ByResult>,
}

/// Where a wait's trace events go once written, besides the trace: a
/// decision and the request for it to the wait's span, a denial to the
/// call's.
#[derive(Clone, Copy, Default)]
struct Spans<'a> {
    call: Option<&'a crate::telemetry::CallSpan>,
    wait: Option<&'a crate::telemetry::WaitSpan>,
    /// The ids the call's rows carry.
    origin: Option<&'a crate::store::Origin>,
}

impl Spans<'_> {
    /// The trace and span a row in `state` names: the wait's span for the
    /// request and the decision, else the call's.
    fn origin(&self, state: TraceState) -> crate::store::Origin {
        match (state, self.wait) {
            (TraceState::Requested | TraceState::Decided, Some(wait)) => wait.origin(),
            _ => self.origin.cloned().unwrap_or_default(),
        }
    }

    fn written(&self, event: &TraceEvent) {
        match (event.state, self.wait, self.call) {
            (TraceState::Requested | TraceState::Decided, Some(wait), _) => wait.written(event),
            (_, _, Some(call)) => call.written(std::slice::from_ref(event)),
            _ => {}
        }
    }
}

/// One waiting call's rows: what the approvals service tells of its wait,
/// written to the call's trace and spans.
struct CallRecord<'a> {
    boundary: &'a Boundary,
    rows: CallRows<'a>,
    spans: Spans<'a>,
    spend: Option<&'a Value>,
    /// Asked while the call runs: the withdrawal is the wait's decision,
    /// not the call's end.
    during_call: bool,
}

impl WaitRecord for CallRecord<'_> {
    fn requested(&self, id: ApprovalId) {
        let asked = with_spend(json!({"approval": id.0}), self.spend);
        self.boundary
            .trace(self.rows.approval_asked(asked), self.spans);
    }

    /// Who decided, and when: a person through the approvals API or MCP
    /// elicitation, the timeout, or a revocation; how long the call waited
    /// (and, for a reservation above the threshold, its estimate).
    fn decided(&self, decision: &Decision) {
        let mut detail = with_spend(decision.detail(), self.spend);
        if let Some(sealed) = &decision.sealed_arguments {
            detail["sealed_arguments"] = sealed.clone();
        }
        self.boundary
            .trace(self.rows.decided(decision.outcome, detail), self.spans);
    }

    fn withdrawn(&self, id: ApprovalId) {
        self.boundary
            .trace(self.rows.withdrawn(id, self.during_call), self.spans);
    }
}

impl Boundary {
    /// Waits for a person to approve this exact call; the approval it
    /// consumed, or why it may not run.
    pub(super) async fn await_approval(&self, wait: Wait<'_>) -> Result<ApprovalId, Denied> {
        let during_call = wait.spend.is_some();
        let rows = CallRows::new(wait.session, wait.call_id, wait.name);
        if !wait.session.input.approval_channel {
            let spans = Spans {
                call: wait.span,
                wait: None,
                origin: Some(wait.origin),
            };
            let refusal = Refusal {
                rows,
                spans,
                during_call,
                targets: wait.targets,
            };
            return Err(self.refuse(wait.session, Rule::ApprovalRequired, &refusal));
        }
        let wait_span = wait.span.map(|s| s.wait(wait.name));
        let spans = Spans {
            call: wait.span,
            wait: wait_span.as_ref(),
            origin: Some(wait.origin),
        };
        let record = CallRecord {
            boundary: self,
            rows,
            spans,
            spend: wait.spend,
            during_call,
        };
        let ask = Ask {
            session: &wait.session.id,
            tool: wait.name,
            digest: wait.digest,
            args: wait.args,
            call_id: wait.call_id,
            gone: wait.gone,
            asked: wait.asked,
            by_result: wait.by_result,
        };
        let ended = match self.approvals.wait(ask, &record).await {
            Ok(id) => return Ok(id),
            Err(ended) => ended,
        };
        let refusal = Refusal {
            rows,
            spans,
            during_call,
            targets: wait.targets,
        };
        Err(self
            .wait_ended(wait.session, ended, wait.remote, &refusal)
            .await)
    }

    /// The refusal of a call whose wait ended without an approval.
    async fn wait_ended(
        &self,
        session: &Session,
        ended: Ended,
        remote: Option<(&crate::runtime::LoadedComponent, &str)>,
        refusal: &Refusal<'_>,
    ) -> Denied {
        let rule = match ended {
            // Its own request revoked as it went: the withdrawal is recorded.
            Ended::Withdrawn => return Denied::by(Rule::ApprovalWithdrawn),
            // Put to the client's person by an `input_required` result: the
            // request is recorded, and the retry's call tells the rest.
            Ended::AskedByResult(_) => return Denied::by(Rule::ApprovalRequired),
            Ended::AnswerRefused => Rule::ApprovalAnswerRefused,
            Ended::Unrecorded => Rule::Unrecorded,
            Ended::HostShutdown => Rule::HostShutdown,
            Ended::CallerGone => Rule::CallerGone,
            Ended::TimedOut => Rule::ApprovalTimedOut,
            Ended::Denied => Rule::ApprovalDenied,
            // Revoked because the tool changed (the server's listing, its
            // review): the rule that holds it now.
            Ended::Revoked => match remote {
                Some((component, tool)) => self
                    .remote_review_now(component, tool)
                    .await
                    .err()
                    .unwrap_or(Rule::Revoked),
                None => Rule::Revoked,
            },
        };
        self.refuse(session, rule, refusal)
    }

    /// The call's denial by `rule`, or for a wait during a call (a
    /// reservation above the threshold) the refusal alone: the call goes
    /// on, so no `denied` event, which would end its story in the trace.
    fn refuse(&self, session: &Session, rule: Rule, refusal: &Refusal<'_>) -> Denied {
        if refusal.during_call {
            return Denied::by(rule);
        }
        let lineage = super::lineage::record(session, refusal.targets, rule, self.pause_after);
        let refused = refusal.rows.refused(rule, lineage.as_ref());
        self.trace(refused, refusal.spans);
        Denied {
            rule,
            lineage,
            detail: None,
        }
    }

    /// Writes one row of the wait, naming the span `spans` give its state.
    fn trace(&self, mut event: TraceEvent, spans: Spans<'_>) {
        event.origin = spans.origin(event.state);
        if self.write_or_owe(std::slice::from_ref(&event), "a trace event") {
            spans.written(&event);
        }
    }
}

/// What a refused wait's denial is written with.
struct Refusal<'a> {
    rows: CallRows<'a>,
    spans: Spans<'a>,
    during_call: bool,
    targets: &'a [String],
}

/// `detail` with the fields of a reservation above the threshold added.
fn with_spend(mut detail: Value, spend: Option<&Value>) -> Value {
    if let (Some(Value::Object(extra)), Value::Object(fields)) = (spend, &mut detail) {
        for (k, v) in extra {
            fields.insert(k.clone(), v.clone());
        }
    }
    detail
}
