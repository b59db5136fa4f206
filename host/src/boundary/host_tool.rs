//! The host's own tools (`mcp__scout__*`) as calls of the boundary: the
//! same standing as every call (not shutting down, lease held, not paused,
//! delegation live) and access not revoked, a call id from the same
//! counter, and the same rows: the request by its arguments' digest, then
//! the pass (`host_tool`) and the answer, or the refusal, counted in the
//! session's lineage like any other.

use super::{Boundary, Denied, lineage};
use crate::policy::Rule;
use crate::session::Session;
use crate::store::{Origin, args_digest};
use crate::trace::CallRows;
use serde_json::Value;

/// Why a host tool gave no answer.
#[derive(Debug)]
pub enum HostToolRefused {
    /// The session may not call anything now (or its access was revoked).
    Denied(Denied),
    /// It ran, but its record could not be written, so its answer is withheld.
    Unrecorded,
}

impl Boundary {
    /// Runs host tool `name` (`mcp__scout__…`) for `session` with `args`
    /// if the session may call it now: `answer` is what it answers. Its
    /// rows name `origin`, the caller's trace.
    pub fn call_host_tool(
        &self,
        session: &Session,
        name: &str,
        args: &Value,
        origin: &Origin,
        answer: impl FnOnce() -> Value,
    ) -> Result<Value, HostToolRefused> {
        let call_id = self.new_call_id(session);
        let rows = CallRows::new(session, &call_id, name);
        let digest = args_digest(args);
        let refusal = match self.standing(session) {
            Err(rule) => Some(rule),
            Ok(()) if session.is_revoked() => Some(Rule::Revoked),
            Ok(()) => None,
        };
        if let Some(rule) = refusal {
            let tool = name.rsplit("__").next().unwrap_or(name);
            let targets = [format!("scout host-tool {tool}")];
            let lineage = lineage::record(session, &targets, rule, self.pause_after);
            let events = [
                rows.requested(&digest),
                rows.refused(rule, lineage.as_ref()),
            ];
            self.write_or_owe(&events, "a host tool's refusal");
            return Err(HostToolRefused::Denied(Denied {
                rule,
                lineage,
                detail: None,
            }));
        }
        let answer = answer();
        let events = rows.host_tool(&digest, &answer, origin);
        if let Err(e) = crate::store::block(self.store.record_all(&events)) {
            tracing::error!(error = %e, call = %call_id, "cannot record a host tool's call");
            return Err(HostToolRefused::Unrecorded);
        }
        Ok(answer)
    }
}
