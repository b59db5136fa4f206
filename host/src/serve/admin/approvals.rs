//! Approvals a person decides and capability requests a person answers,
//! shown so that what is approved can be judged (GraphQL operations spelled
//! out). The approvals handlers are adapters: they read the request, ask
//! the approvals service ([`crate::approvals::Approvals`]), and shape its
//! answer.

use super::*;
use crate::approvals::{DecideError, Decider};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApprovalsQuery {
    #[serde(default)]
    session: Option<String>,
}

pub(super) async fn list_approvals(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let q: ApprovalsQuery = query(raw)?;
    // Every live host's sessions: any host answers for any approval. Only
    // the brands the caller's roles cover.
    let views: Vec<Value> = host
        .all_sessions()?
        .into_iter()
        .filter(|v| v["brand"].as_str().is_some_and(|b| caller.sees(b)))
        .collect();
    let sessions: Vec<&Value> = match &q.session {
        Some(s) => views.iter().filter(|v| v["id"] == s.as_str()).collect(),
        None => views.iter().collect(),
    };
    let now_ms = crate::dates::now_ms();
    let mut pending = Vec::new();
    let mut listed: Vec<(&str, Option<&Value>)> = sessions
        .iter()
        .filter_map(|v| v["id"].as_str().map(|id| (id, Some(*v))))
        .collect();
    // A session asked for by id that no live host serves still answers
    // for its approvals (none are pending once it has ended).
    // Its brand is unknown then: only to a role over every brand.
    if let (Some(s), true, true) = (&q.session, listed.is_empty(), caller.covers_every_brand()) {
        listed.push((s.as_str(), None));
    }
    let approvals = host.host().approvals();
    for (session, view) in listed {
        for approval in approvals.pending(session).await? {
            let arguments = approvals.arguments(&approval);
            let mut value = json!(approval);
            value["waited_ms"] = json!((now_ms - approval.requested_at_ms).max(0));
            value["connector"] = json!(connector_of(&host, &approval.tool));
            value["role"] = view.map(|v| v["role"].clone()).unwrap_or(Value::Null);
            value["brand"] = view.map(|v| v["brand"].clone()).unwrap_or(Value::Null);
            // The exact text whose SHA-256 is `args_digest`: what a person
            // approves is what the call will be bound to.
            value["arguments_text"] = arguments
                .as_ref()
                .map(|a| json!(crate::approvals::canonical_args_text(a)))
                .unwrap_or(Value::Null);
            value["graphql"] =
                crate::serve::shown::graphql_shown(&host, &approval.tool, arguments.as_ref());
            // What a person needs to judge it: what the tool does and will
            // reach, how long until the call is refused unanswered, and
            // what the session did just before.
            value["tool_facts"] = crate::serve::shown::tool_shown(&host, &approval.tool);
            let timeout_ms = approvals.timeout().as_millis() as i64;
            value["refused_in_ms"] = json!((approval.requested_at_ms + timeout_ms - now_ms).max(0));
            value["recent"] = json!(recent_requests(&host, session).await);
            value["arguments"] = arguments.unwrap_or(Value::Null);
            pending.push(value);
        }
    }
    Ok(Json(json!({"pending": pending})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DecisionsQuery {
    #[serde(default)]
    session: Option<String>,
    /// `true`: only the caller's own decisions.
    #[serde(default)]
    mine: Option<String>,
}

/// Most decisions one answer lists, newest first.
const DECISIONS_SHOWN: usize = 50;
/// Most `decided` rows read to find them.
const DECISIONS_READ: usize = 2000;

/// The latest decisions on approvals the caller may see: one session's, or
/// the caller's own (`mine=true`), or every one; newest first, each with
/// who decided, the outcome, the tool and how long the call waited.
pub(super) async fn list_decisions(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let q: DecisionsQuery = query(raw)?;
    let mine = match q.mine.as_deref() {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::bad_request("`mine` is true or false")),
    };
    // `by` is "SUBJECT (CHANNEL)": the caller's own begin with its subject.
    let own = format!("{} (", caller.subject);
    let decisions: Vec<Value> = host
        .host()
        .approvals()
        .decisions(DECISIONS_READ)
        .await?
        .into_iter()
        .filter(|(_, e)| caller.sees(&e.brand))
        .filter(|(_, e)| q.session.as_deref().is_none_or(|s| e.session == s))
        .filter(|(_, e)| {
            !mine
                || e.detail["by"]
                    .as_str()
                    .is_some_and(|by| by.starts_with(&own))
        })
        .take(DECISIONS_SHOWN)
        .map(|(seq, e)| {
            json!({
                "seq": seq,
                "time": crate::dates::rfc3339_ms(e.at_ms),
                "at_ms": e.at_ms,
                "session": e.session,
                "brand": e.brand,
                "tool": e.tool,
                "outcome": e.rule,
                "by": e.detail["by"],
                "approval": e.detail["approval"],
                "waited_ms": e.detail["waited_ms"],
            })
        })
        .collect();
    Ok(Json(json!({"decisions": decisions})))
}

/// Requests a session made most recently (the calls, not its set-up): the
/// context a person deciding one of its writes reads.
async fn recent_requests(host: &ServeHost, session: &str) -> Vec<Value> {
    const SHOWN: usize = 8;
    let Ok(events) = host.host().trace().recent_requests(session, SHOWN).await else {
        return Vec::new();
    };
    events
        .iter()
        .map(|e| json!({"at_ms": e.at_ms, "tool": e.tool, "call_id": e.call_id}))
        .collect()
}

/// The connector of an approval's tool: the server of its MCP name
/// (`mcp__{server}__{tool}`), or the loaded component that offers it.
pub(super) fn connector_of(host: &ServeHost, tool: &str) -> Option<String> {
    if let Some((server, _)) = tool
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    {
        return Some(server.to_string());
    }
    host.host()
        .components()
        .iter()
        .find(|(_, component)| component.tool(tool).is_some())
        .map(|(name, _)| name.clone())
}

/// Who the bearer token proves and what its role may do: the console asks
/// this after sign-in to know whether to offer the decide buttons.
pub(super) async fn whoami(Extension(caller): Extension<Principal>) -> Json<Value> {
    let may = |method, route| crate::serve::identity::permit(caller.role, method, route).is_ok();
    let brands: serde_json::Map<String, Value> = caller
        .brands
        .iter()
        .map(|(brand, role)| (brand.clone(), json!(role.name())))
        .collect();
    Json(json!({
        "subject": caller.subject,
        "role": caller.role.name(),
        // The role over every brand (null: only over the brands listed).
        "every_brand": caller.every_brand.map(|r| r.name()),
        "brands": brands,
        // Whether it reads the exact arguments of decisions (the trace's):
        // of every brand, else of the brands listed.
        "reads_arguments": caller.reads_every_brands_arguments(),
        "reads_arguments_of": caller
            .brands
            .keys()
            .chain(caller.audited.iter())
            .filter(|brand| caller.reads_sealed_arguments(brand))
            .collect::<std::collections::BTreeSet<_>>(),
        "via": match caller.via {
            crate::serve::identity::Via::AdminToken => "admin-token",
            crate::serve::identity::Via::Oidc => "oidc",
        },
        "may_decide": may("POST", "/v1/approvals/{id}"),
        "may_end_sessions": may("DELETE", "/v1/sessions/{id}"),
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CapabilityRequestsQuery {
    #[serde(default)]
    session: Option<String>,
    /// `false`: answered ones too (default: only those waiting).
    #[serde(default)]
    pending: Option<String>,
}

/// The capability requests agents parked (every session's, or one's).
pub(super) async fn list_capability_requests(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let q: CapabilityRequestsQuery = query(raw)?;
    let pending_only = match q.pending.as_deref() {
        None | Some("true") => true,
        Some("false") => false,
        Some(_) => return Err(ApiError::bad_request("`pending` is true or false")),
    };
    let requests: Vec<_> = host
        .host()
        .sessions()
        .capability_requests_to_answer(q.session.as_deref(), pending_only)
        .await?
        .into_iter()
        .filter(|r| caller.sees(&r.brand))
        .collect();
    Ok(Json(json!({"requests": requests})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AnswerCapability {
    /// The person's answer, returned to the agent as evidence. It grants
    /// nothing: a grant or connection change is made apart.
    answer: String,
}

pub(super) async fn answer_capability_request(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    Body(request): Body<AnswerCapability>,
) -> Result<Json<Value>, ApiError> {
    use crate::sessions::Answered;
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::bad_request("a capability request id is a number"))?;
    // Another brand's request is answered as one that does not exist.
    let brand = host
        .host()
        .sessions()
        .capability_requests_to_answer(None, false)
        .await?
        .into_iter()
        .find(|r| r.id == id)
        .map(|r| r.brand);
    if !brand.is_some_and(|b| caller.may_in(&b, "POST", "/v1/capability-requests/{id}")) {
        return Err(ApiError::not_found(format!("no capability request {id}")));
    }
    let answer = request.answer.trim();
    if answer.is_empty() || answer.chars().count() > 4000 {
        return Err(ApiError::invalid_field(
            "invalid_answer",
            "answer",
            "`answer` is text of 1 to 4000 characters",
        ));
    }
    let by = format!("{} (admin API)", caller.subject);
    match host
        .host()
        .sessions()
        .answer_capability_request(id, answer, &by)
        .await?
    {
        Answered::Now(answered) => {
            let tool = crate::serve::host_tools::REQUEST_CAPABILITY;
            let event = crate::trace::capability_answered(
                &answered,
                tool,
                &by,
                caller.actor(),
                super::request_origin(),
            );
            host.host().trace().record(&event).await?;
            Ok(Json(json!({
                "request": id,
                "answered_by": caller.subject,
                "granted": false,
                "note": "recorded as the person's answer; nothing was granted (a grant or connection is changed apart)"
            })))
        }
        Answered::Already(_) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "already_answered",
            format!("capability request {id} was already answered"),
        )),
        Answered::Unknown => Err(ApiError::not_found(format!("no capability request {id}"))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Decide {
    approve: bool,
    /// Accepted so that older clients keep working, and not recorded: who
    /// decided is the verified caller.
    #[serde(default)]
    #[allow(dead_code)]
    by: Option<String>,
}

pub(super) async fn decide_approval(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    Body(request): Body<Decide>,
) -> Result<Json<Value>, ApiError> {
    let id: i64 = id
        .parse()
        .map_err(|_| ApiError::bad_request("an approval id is a number"))?;
    // The trace's `decided` event says who, and through which channel.
    let decider = Decider::Person {
        subject: &caller.subject,
        actor: caller.actor(),
    };
    host.host()
        .approvals()
        .decide_if(ApprovalId(id), request.approve, decider, |approval| {
            // Another brand's approval is answered as one that does not exist.
            super::require_session_brand(
                &host,
                &caller,
                &approval.session,
                "POST",
                "/v1/approvals/{id}",
                &format!("no approval {id}"),
            )
        })
        .await?;
    Ok(Json(
        json!({"approval": id, "approved": request.approve, "decided_by": caller.subject}),
    ))
}

impl From<DecideError> for ApiError {
    fn from(refused: DecideError) -> ApiError {
        match refused {
            DecideError::Unknown(id) => ApiError::not_found(format!("no approval {id}")),
            DecideError::NotPending { id, ended_by } => not_pending(id, ended_by),
            DecideError::Store(e) => e.into(),
            DecideError::Refused(other) => {
                ApiError::new(StatusCode::CONFLICT, "not_pending", other.to_string())
            }
        }
    }
}

/// 409 for an approval already decided or ended; one the host ended
/// (its host lost, or stopping) names that rule in `error.rule`, so a
/// person is told why there is nothing left to decide.
fn not_pending(id: ApprovalId, ended_by: Option<&'static str>) -> ApiError {
    match ended_by {
        Some(rule) => ApiError::new(
            StatusCode::CONFLICT,
            "not_pending",
            format!(
                "approval {id} is no longer pending: it was ended by `{rule}` ({}), and the call it was asked for never ran; nothing is left to decide (the agent may call again)",
                if rule == crate::approvals::HOST_LOST {
                    "the host serving the call stopped without draining"
                } else {
                    "the host serving the call shut down"
                }
            ),
        )
        .with_rule(rule),
        None => ApiError::new(
            StatusCode::CONFLICT,
            "not_pending",
            format!("approval {id} is no longer pending"),
        ),
    }
}
