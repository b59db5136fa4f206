//! A session's requests for a remote server's resources and prompts, at
//! the boundary: whether the session is given the server at all, its
//! standing (lease, pause, expiry, revocation) as for any call, and the
//! trace of each request (its arguments' digest, the refusal counted in
//! the session's lineage like a tool's, or the pass and the answer's size).
//! What is reviewed is decided by the caller ([`crate::remote::content`]);
//! an unreviewed URI is refused here before anything is sent upstream.

use super::{Boundary, Denied, lineage};
use crate::policy::Rule;
use crate::session::Session;
use crate::store::{Origin, TraceEvent, args_digest};
use crate::trace::{CallRows, Passed};
use serde_json::Value;

/// One `resources/read` or `prompts/get` of a session, admitted so far.
pub(crate) struct ContentCall<'a> {
    boundary: &'a Boundary,
    session: &'a Session,
    call_id: String,
    /// As the trace names it: `mcp__SERVER__resources/read`.
    name: String,
    /// What its refusals are counted against in the lineage.
    target: String,
    origin: Origin,
}

impl Boundary {
    /// Whether `session` is given remote connector `connector` now: not
    /// revoked or retired, and its role, grant and selection offer it at
    /// least one of the server's tools (reviewed or not). A session given
    /// the server may be offered its reviewed resources and prompts.
    pub(crate) fn gives_connector(&self, session: &Session, connector: &str) -> bool {
        if self.is_revoked(session, connector) || self.is_retired(connector) {
            return false;
        }
        let Ok(offered) = self.offered(session) else {
            return false;
        };
        offered.surface.names().iter().any(|name| {
            crate::policy::names::split_mcp(name).is_some_and(|(server, _)| server == connector)
        })
    }

    /// Starts `method` (`resources/read`, `prompts/get`) of `connector`
    /// for `session` with `args`: recorded as requested, and refused (the
    /// refusal recorded and counted) when the session may not run anything
    /// now or is not given the server.
    pub(crate) fn content_call<'a>(
        &'a self,
        session: &'a Session,
        connector: &str,
        method: &str,
        args: &Value,
        origin: Origin,
    ) -> Result<ContentCall<'a>, Denied> {
        let call = ContentCall {
            boundary: self,
            session,
            call_id: self.new_call_id(session),
            name: crate::policy::names::mcp(connector, method),
            target: format!("{connector} {method}"),
            origin,
        };
        let requested = call.with_origin(call.rows().requested(&args_digest(args)));
        let refusal = match self.standing(session) {
            Err(rule) => Some(rule),
            Ok(()) if self.is_revoked(session, connector) => Some(Rule::Revoked),
            Ok(()) if !self.gives_connector(session, connector) => Some(Rule::NotOffered),
            Ok(()) => None,
        };
        match refusal {
            Some(rule) => Err(call.refuse_after(Some(requested), rule)),
            None => {
                self.write_or_owe(&[requested], "a remote read's request");
                Ok(call)
            }
        }
    }
}

impl ContentCall<'_> {
    fn rows(&self) -> CallRows<'_> {
        CallRows::new(self.session, &self.call_id, &self.name)
    }

    fn with_origin(&self, mut event: TraceEvent) -> TraceEvent {
        event.origin = self.origin.clone();
        event
    }

    fn refuse_after(&self, requested: Option<TraceEvent>, rule: Rule) -> Denied {
        let lineage = lineage::record(
            self.session,
            std::slice::from_ref(&self.target),
            rule,
            self.boundary.pause_after,
        );
        let refused = self.with_origin(self.rows().refused(rule, lineage.as_ref()));
        let events: Vec<TraceEvent> = requested.into_iter().chain([refused]).collect();
        self.boundary
            .write_or_owe(&events, "a remote read's refusal");
        Denied {
            rule,
            lineage,
            detail: None,
        }
    }

    /// Refuses it by `rule` (an item not reviewed as it is now): nothing
    /// was sent upstream.
    pub(crate) fn refuse(self, rule: Rule) -> Denied {
        self.refuse_after(None, rule)
    }

    /// Records that it passed (`reviewed`: what of the server's it was
    /// admitted as) and what came of it (`answered`: its size, the HTTP
    /// exchanges, or why it failed). Whether the rows were written.
    pub(crate) fn finish(self, reviewed: Value, answered: Value) -> bool {
        let events = [
            self.with_origin(self.rows().allowed(Passed::Open, reviewed)),
            self.with_origin(self.rows().result(answered)),
        ];
        self.boundary
            .write_or_owe(&events, "a remote read's pass and answer")
    }
}
