//! The tools the host serves itself, on a session's `scout` endpoint
//! (`/mcp/{session}/scout`, allowlisted as `mcp__scout__{tool}`): nothing
//! a connector does, only what the boundary knows of the session.
//!
//! - `scout_budget` (seed 003: "The model received remaining bounded budget
//!   at planning checkpoints"): per billing connector of the session, what
//!   its run and its brand's day have left in the connector's unit, and how
//!   many effects its delegation has left. Present where the session holds
//!   an allowance or a delegation with `maxEffects`. The same text is in
//!   the `instructions` of the session's MCP servers at `initialize`.
//!
//! Each call is traced (requested, executed with what it answered), like a
//! connector's read.

use super::{LiveSession, ServeHost};
use crate::store::{TraceEvent, TraceState};
use serde_json::{Value, json};

/// The host's own MCP server name.
pub const SCOUT_SERVER: &str = "scout";

/// The budget tool's name.
pub const BUDGET: &str = "scout_budget";

/// The host tools `session` is given.
pub(super) fn given(session: &crate::session::Session) -> Vec<&'static str> {
    let mut tools = Vec::new();
    let holds_allowance = session.holdings().is_some_and(|h| h.has_allowances());
    let counted = session
        .delegation()
        .is_some_and(|g| g.max_effects.is_some());
    if holds_allowance || counted {
        tools.push(BUDGET);
    }
    tools
}

/// The MCP description of host tool `name`.
pub(super) fn describe(name: &str) -> Option<rmcp::model::Tool> {
    let (description, schema) = match name {
        BUDGET => (
            "What this run may still spend, per billing connector (in the connector's unit: credits or micro-usd), what the brand's day has left for it, and how many writes and billed calls this run's delegation has left. Ask before planning a billed call.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        _ => return None,
    };
    let Value::Object(schema) = schema else {
        return None;
    };
    let mut tool =
        rmcp::model::Tool::new(name.to_string(), description, std::sync::Arc::new(schema));
    tool.annotations = Some(
        rmcp::model::ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .open_world(false),
    );
    Some(tool)
}

/// What `scout_budget` answers for `live`: only this session's run and its
/// own brand's day.
pub(super) fn budget(host: &ServeHost, live: &LiveSession) -> Value {
    let lines = live
        .session
        .holdings()
        .map(|h| h.budget(&host.ledger))
        .unwrap_or_default();
    let connectors: Vec<Value> = lines
        .iter()
        .map(|l| {
            json!({"connector": l.connector, "unit": l.unit, "run_left": l.run_left,
                   "per_run": l.per_run, "day_left": l.day_left, "per_day": l.per_day})
        })
        .collect();
    let mut answer = json!({"connectors": connectors});
    if let Some(grant) = live.session.delegation() {
        if let Some(max) = grant.max_effects {
            answer["effects_left"] = json!(max.saturating_sub(live.session.effects()));
            answer["max_effects"] = json!(max);
        }
        if let Some(expires) = &grant.expires_at {
            answer["delegation_expires_at"] = json!(expires);
        }
    }
    answer
}

/// The budget in words, for a server's `instructions`.
pub(super) fn budget_text(host: &ServeHost, live: &LiveSession) -> Option<String> {
    if !given(&live.session).contains(&BUDGET) {
        return None;
    }
    let answer = budget(host, live);
    let mut parts: Vec<String> = answer["connectors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            let day = match l["day_left"].as_u64() {
                Some(d) => format!("{d} of {} today", l["per_day"]),
                None => "the day's figure unknown".to_string(),
            };
            format!(
                "{}: {} of {} {} left in this run, {day}",
                l["connector"].as_str().unwrap_or(""),
                l["run_left"],
                l["per_run"],
                l["unit"].as_str().unwrap_or("")
            )
        })
        .collect();
    if let Some(left) = answer["effects_left"].as_u64() {
        parts.push(format!(
            "{left} of {} writes or billed calls left under this run's delegation",
            answer["max_effects"]
        ));
    }
    Some(format!(
        "Budget at the start of this session: {}. Call mcp__scout__scout_budget for the current figures before planning a billed call.",
        parts.join("; ")
    ))
}

/// Runs host tool `tool` for `live`: its answer, or `None` for a name the
/// session was not given. Traced as a read.
pub(super) fn call(host: &ServeHost, live: &LiveSession, tool: &str) -> Option<Value> {
    if !given(&live.session).contains(&tool) {
        return None;
    }
    let answer = match tool {
        BUDGET => budget(host, live),
        _ => return None,
    };
    let name = crate::policy::names::mcp(SCOUT_SERVER, tool);
    let call_id = format!("{}-host-{}", live.session.id, crate::store::now_ms());
    let event = |state, rule: Option<&str>, detail| TraceEvent {
        session: live.session.id.clone(),
        brand: live.session.brand.clone(),
        call_id: Some(call_id.clone()),
        tool: Some(name.clone()),
        state,
        rule: rule.map(str::to_string),
        detail,
        at_ms: crate::store::now_ms(),
    };
    let events = [
        event(TraceState::Requested, None, json!({})),
        event(TraceState::Allowed, Some("host_tool"), Value::Null),
        event(TraceState::Result, None, json!({"answer": answer})),
    ];
    if let Err(e) = host.store.record_all(&events) {
        tracing::error!(error = %e, "cannot record a host tool's call");
        return Some(json!({"error": "not run: the host could not record the call"}));
    }
    Some(answer)
}
