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
//! - `scout_request_capability` (seed 003: "Dynamic requests went to a
//!   person, not an installer"): the agent parks a request for the person
//!   or run owner (its goal, the observation it lacks, the effect class it
//!   proposes, the safe alternative it tried), and later reads the answer.
//!   It grants nothing: the answer is a person's words, returned as
//!   evidence, and new authority only ever comes from a grant or connection
//!   a person makes. Present where someone can answer: person chat, a
//!   read-only route, coworker, specialist and goal agent runs; absent for
//!   an inbound email turn and the goal reviewer.
//!
//! Each call goes through the boundary's standing (pause, delegation,
//! revocation, lease, shutdown; refusals counted in the lineage) and is
//! traced (requested, allowed, result with what it answered).

use super::{LiveSession, ServeHost};
use crate::boundary::HostToolRefused;
use serde_json::{Value, json};

/// The host's own MCP server name.
pub const SCOUT_SERVER: &str = crate::policy::names::HOST_SERVER;

/// The budget tool's name.
pub const BUDGET: &str = "scout_budget";

/// The capability request tool's name.
pub const REQUEST_CAPABILITY: &str = "scout_request_capability";

/// Longest text of one field of a capability request.
const MAX_FIELD: usize = 2000;
/// Unanswered capability requests one session may have at once.
const MAX_PENDING_REQUESTS: usize = 20;

/// The host tools `session` is given.
pub(super) fn given(session: &crate::session::Session) -> Vec<&'static str> {
    let mut tools = Vec::new();
    let holds_allowance = session.holdings().is_some_and(|h| h.has_allowances());
    let counted = session
        .delegation()
        .is_some_and(|g| g.max_effects.is_some())
        || !session.limits().is_none();
    if holds_allowance || counted {
        tools.push(BUDGET);
    }
    if session.input.role.has_someone_to_answer() {
        tools.push(REQUEST_CAPABILITY);
    }
    tools
}

/// The MCP description of host tool `name`.
pub(super) fn describe(name: &str) -> Option<rmcp::model::Tool> {
    let (description, schema) = match name {
        BUDGET => (
            "What this run may still spend, per billing connector (in the connector's unit: credits or micro-usd), what the brand's day has left for it, how many writes and billed calls this run's delegation has left, and the session's own limits (calls, writes and billed calls left, when its calls end). Ask before planning a billed call.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        REQUEST_CAPABILITY => (
            "Ask the person or run owner for a capability this session lacks. Asking grants nothing: a person answers in words, and any new authority only ever comes from a grant or connection a person makes. Give goal, missing_observation, proposed_effect and safe_alternative_tried to ask; give only `request` (the id an earlier ask returned) to read the answer.",
            json!({"type": "object", "additionalProperties": false, "properties": {
                "goal": {"type": "string", "description": "What you are trying to achieve."},
                "missing_observation": {"type": "string", "description": "What you cannot observe or do with the tools you have."},
                "proposed_effect": {"type": "string", "enum": ["read", "write", "billed", "other"], "description": "The class of effect the capability would have."},
                "safe_alternative_tried": {"type": "string", "description": "The safe alternative you tried first, and what it gave."},
                "request": {"type": "integer", "description": "Only to read the answer: the id an earlier ask returned."}
            }}),
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
        .map(|h| h.budget(host.host().grants().ledger()))
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
    // The session's own limits, as its orchestrator set them.
    let limits = live.session.limits();
    if !limits.is_none() {
        let left = |max: Option<u32>, used: u32| max.map(|m| m.saturating_sub(used));
        answer["session"] = json!({
            "expires_at": limits.expires_at_ms.map(crate::dates::rfc3339_ms),
            "calls_left": left(limits.max_calls, live.session.calls()),
            "max_calls": limits.max_calls,
            "effects_left": left(limits.max_effects, live.session.effects()),
            "max_effects": limits.max_effects,
        });
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
    let session = &answer["session"];
    if let Some(left) = session["calls_left"].as_u64() {
        parts.push(format!(
            "{left} of {} calls left in this session",
            session["max_calls"]
        ));
    }
    if let Some(left) = session["effects_left"].as_u64() {
        parts.push(format!(
            "{left} of {} writes or billed calls left in this session",
            session["max_effects"]
        ));
    }
    if let Some(end) = session["expires_at"].as_str() {
        parts.push(format!("this session's calls end at {end}"));
    }
    Some(format!(
        "Budget at the start of this session: {}. Call mcp__scout__scout_budget for the current figures before planning a billed call.",
        parts.join("; ")
    ))
}

/// `scout_request_capability`: parks a request, or reads one's answer.
/// An error is `{"error": ...}`, saying what to send instead.
fn request_capability(host: &ServeHost, live: &LiveSession, args: &Value) -> Value {
    if let Some(id) = args.get("request") {
        let Some(id) = id.as_i64() else {
            return json!({"error": "`request` is the number an earlier ask returned"});
        };
        let mine = host
            .host()
            .sessions()
            .capability_requests(&live.session.id, false)
            .map(|all| all.into_iter().find(|r| r.id == id));
        return match mine {
            Ok(Some(found)) => match found.answer {
                Some(answer) => json!({
                    "request": id,
                    "answer": answer,
                    "answered_by": found.answered_by,
                    "note": "A person's words, recorded as evidence; not a grant. Nothing in this session changed. New authority only ever comes from a grant or connection a person makes."
                }),
                None => json!({"request": id, "status": "waiting for a person to answer"}),
            },
            Ok(None) => json!({"error": format!("this session has no capability request {id}")}),
            Err(e) => {
                tracing::error!(error = %e, "cannot read capability requests");
                json!({"error": "the host could not read the request; try again"})
            }
        };
    }
    let mut request = serde_json::Map::new();
    for field in [
        "goal",
        "missing_observation",
        "proposed_effect",
        "safe_alternative_tried",
    ] {
        match args.get(field).and_then(Value::as_str).map(str::trim) {
            Some(text) if !text.is_empty() && text.chars().count() <= MAX_FIELD => {
                request.insert(field.to_string(), json!(text));
            }
            _ => {
                return json!({"error": format!(
                    "`{field}` is required: text of 1 to {MAX_FIELD} characters (goal, missing_observation, proposed_effect and safe_alternative_tried, or only `request` to read an answer)"
                )});
            }
        }
    }
    if !matches!(
        request["proposed_effect"].as_str(),
        Some("read" | "write" | "billed" | "other")
    ) {
        return json!({"error": "`proposed_effect` is one of read, write, billed, other"});
    }
    let request = Value::Object(request);
    // Bounded: a session cannot fill the store, or a person's console,
    // with requests nobody has answered yet.
    match host
        .host()
        .sessions()
        .capability_requests(&live.session.id, true)
    {
        Ok(pending) if pending.len() >= MAX_PENDING_REQUESTS => {
            return json!({"error": format!(
                "this session already has {MAX_PENDING_REQUESTS} requests waiting for an answer: read their answers with {{\"request\": id}} and ask again once one is answered"
            )});
        }
        Ok(_) => {}
        Err(e) => {
            tracing::error!(error = %e, "cannot read a session's capability requests");
            return json!({"error": "the host could not read this session's requests, so nobody was asked; try again"});
        }
    }
    match host.host().sessions().park_capability_request(
        &live.session.id,
        &live.session.brand,
        &request,
    ) {
        Ok(id) => json!({
            "request": id,
            "status": "parked for the person or run owner",
            "note": "Asking grants nothing. Call again with {\"request\": id} to read the answer; carry on with what this session can do."
        }),
        Err(e) => {
            tracing::error!(error = %e, "cannot park a capability request");
            json!({"error": "the host could not record the request, so nobody was asked; try again"})
        }
    }
}

/// Runs host tool `tool` for `live` with `args`: its answer, or `None` for
/// a name the session was not given. Traced like a read, its rows naming
/// the caller's trace (`origin`, from its `traceparent`).
pub(super) fn call(
    host: &ServeHost,
    live: &LiveSession,
    tool: &str,
    args: &Value,
    origin: crate::trace::Origin,
) -> Option<Value> {
    if !given(&live.session).contains(&tool) {
        return None;
    }
    let name = crate::policy::names::mcp(SCOUT_SERVER, tool);
    // The same boundary as every call: nothing runs in a paused session,
    // after the delegation expired, once access was revoked, on a host
    // shutting down or without its lease; traced as any call.
    let run: fn(&ServeHost, &LiveSession, &Value) -> Value = match tool {
        BUDGET => |host, live, _| budget(host, live),
        REQUEST_CAPABILITY => request_capability,
        _ => return None,
    };
    let answered =
        host.host()
            .boundary()
            .call_host_tool(&live.session, &name, args, &origin, || {
                run(host, live, args)
            });
    Some(match answered {
        Ok(answer) => answer,
        Err(HostToolRefused::Denied(denied)) => {
            json!({"error": denied.told(), "rule": denied.rule.told().name()})
        }
        Err(HostToolRefused::Unrecorded) => {
            json!({"error": "not run: the host could not record the call"})
        }
    })
}
