//! Tool reviews: what each connector offers with its review status and, for
//! a component, what changed since the review; an operator approves a tool
//! as described by its digest. A remote MCP server's resources, resource
//! templates and prompts are reviewed the same way (`kind` names which,
//! [`crate::remote::content`]): shown under `content`, approved by digest.

use super::*;

pub(super) async fn list_reviews(
    State(host): State<Arc<ServeHost>>,
) -> Result<Json<Value>, ApiError> {
    let mut out = BTreeMap::new();
    let mut remote = BTreeMap::new();
    // Tools reviewed once that a new version of the component removed.
    let mut removed = BTreeMap::new();
    // A remote server's resources, templates and prompts.
    let mut content = BTreeMap::new();
    for (name, component) in host.host().components() {
        let reviews = host.host().reviews().of(&component)?;
        let server = host.host().remote(&name);
        let discovered = server.as_ref().map(|s| s.discovered());
        let tools: Vec<Value> = reviews
            .into_iter()
            .map(|r| {
                let tool = component.tool(&r.tool);
                let mut shown = json!({
                    "tool": r.tool,
                    "status": r.status,
                    "digest": r.digest,
                    "effect": tool.map(|t| t.effect.as_str()),
                    "description": tool.map(|t| t.description.as_str()),
                    "input_schema": tool.map(|t| &t.input_schema),
                });
                if let Some(now) = tool.and_then(|t| crate::review::facts_of(&component, t)) {
                    // A component's tool: the bytes it is reviewed in and,
                    // once changed, what changed since the review.
                    shown["component"] = json!(now.component);
                    shown["routes"] = json!(now.routes);
                    shown["gate"] = json!(now.gate);
                    shown["imports"] = json!(now.imports);
                    shown["reviewed_component"] = json!(r.reviewed.as_ref().map(|f| &f.component));
                    shown["changes"] = json!(r.changes);
                }
                if let Some(found) = &discovered {
                    // A remote tool: the effect is the operator's review
                    // (none until reviewed as it is now); what the server
                    // says of itself is its claim, never trusted.
                    shown["effect"] = json!(r.effect);
                    if let Some(c) = found.tools.iter().find(|c| c.name == r.tool) {
                        shown["output_schema"] = c
                            .described
                            .get("outputSchema")
                            .cloned()
                            .unwrap_or(Value::Null);
                        shown["server_claims"] = c.annotations().cloned().unwrap_or(Value::Null);
                        shown["flags"] = json!(crate::remote::flags(c, &found.tools));
                    }
                }
                shown
            })
            .collect();
        if let Some(found) = &discovered {
            content.insert(name.clone(), content_reviews(&host, &name, found).await?);
        }
        if let (Some(server), Some(found)) = (server, discovered) {
            remote.insert(
                name.clone(),
                json!({
                    "mcp": server.url().as_str(),
                    "listed_at_ms": found.listed_at_ms,
                    "error": found.error,
                    "left_out": found.left_out.iter().map(|(n, why)| json!({"tool": n, "why": why})).collect::<Vec<_>>(),
                }),
            );
        }
        out.insert(name.clone(), tools);
        if !component.is_remote() {
            let gone = host.host().reviews().removed(&component)?;
            if !gone.is_empty() {
                removed.insert(name.clone(), gone);
            }
        }
    }
    Ok(Json(
        json!({"required": host.host().config().require_review, "connectors": out, "remote": remote, "removed": removed, "content": content}),
    ))
}

/// Each resource, template and prompt `connector`'s server lists, with how
/// it stands against its review and what a reviewer should read twice (a
/// prompt is always flagged as text for the model).
async fn content_reviews(
    host: &ServeHost,
    connector: &str,
    found: &crate::remote::Discovered,
) -> Result<Vec<Value>, ApiError> {
    let store = host.host().store().clone();
    let mut shown = Vec::with_capacity(found.content.len());
    for candidate in &found.content {
        let status = crate::remote::content::status(store.as_ref(), connector, candidate)
            .await
            .map_err(crate::sessions::HostError::Store)?;
        shown.push(json!({
            "kind": candidate.kind,
            "item": candidate.item,
            "status": status,
            "digest": candidate.digest,
            "described": candidate.described,
            "flags": candidate.flags(),
        }));
    }
    Ok(shown)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApproveReview {
    connector: String,
    /// What is reviewed: `tool` (the default), or a remote server's
    /// `resource`, `resource_template` or `prompt`, named by `item`.
    #[serde(default)]
    kind: Option<String>,
    /// The resource's URI, the template's URI template, the prompt's name.
    #[serde(default)]
    item: Option<String>,
    #[serde(default)]
    tool: String,
    /// The digest the operator reviewed (from `GET /v1/reviews`): a tool
    /// that changed since is not approved by an older review.
    digest: String,
    /// A remote MCP server's tool: what calling it does (`read`, `write`,
    /// `billed`), the operator's classification. Required for a remote
    /// tool, refused for a component's (its WIT says).
    #[serde(default)]
    effect: Option<String>,
    /// Accepted and not recorded, as for approvals: who reviewed is the
    /// verified caller.
    #[serde(default)]
    #[allow(dead_code)]
    by: Option<String>,
}

pub(super) async fn approve_review(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Body(request): Body<ApproveReview>,
) -> Result<Json<Value>, ApiError> {
    if let Some(kind) = request.kind.as_deref().filter(|k| *k != "tool") {
        return approve_content(&host, &caller, kind, &request).await;
    }
    let component = host
        .host()
        .component(&request.connector)
        .ok_or_else(|| ApiError::not_found(format!("no connector `{}`", request.connector)))?;
    let remote = host.host().remote(&request.connector).is_some();
    let effect = match (remote, request.effect.as_deref()) {
        (true, None) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_review",
                "`effect`: a remote MCP server's tool is reviewed with what calling it does: \"read\", \"write\" or \"billed\"",
            ));
        }
        (true, Some(e)) => Some(
            crate::remote::RemoteEffect::parse(e)
                .ok_or_else(|| {
                    ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid_review",
                        format!("`effect`: `{e}` is not \"read\", \"write\" or \"billed\""),
                    )
                })?
                .as_str(),
        ),
        (false, Some(_)) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_review",
                "`effect`: a component's tool has the effect its WIT declares; leave `effect` out",
            ));
        }
        (false, None) => None,
    };
    let tool = component.tool(&request.tool).ok_or_else(|| {
        ApiError::not_found(format!(
            "`{}` has no tool `{}`",
            request.connector, request.tool
        ))
    })?;
    let current = crate::review::tool_digest(&component, tool);
    let previous = host
        .host()
        .reviews()
        .last(&request.connector, &request.tool)
        .await
        .ok()
        .flatten();
    let before = previous
        .as_ref()
        .map(|r| json!({"digest": r.digest, "effect": r.effect}));
    if current != request.digest {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "stale_review",
            "the tool changed since this digest: review it again",
        ));
    }
    host.host()
        .reviews()
        .approve(&component, tool, effect, &caller.subject)?;
    // A remote tool is served with its reviewed effect from now on: here
    // at once, on the other hosts when the store tells them, and on any
    // host before it decides a call of the tool (it reads the review then).
    if remote {
        host.host().refresh_remote(&request.connector);
    }
    // Sessions that held the tool offer it from their next request.
    host.host().boundary().changed();
    // Reviewed anew (another effect, or the tool as it is now rather than
    // as it was): a person asked about the tool under the old review did
    // not approve this one, so its pending approvals end, on every host.
    let anew = previous
        .as_ref()
        .is_some_and(|r| r.digest != current || r.effect.as_deref() != effect);
    let revoked = if anew {
        host.host().approvals().revoke_tools(
            &request.connector,
            std::slice::from_ref(&request.tool),
            &format!("{} (the tool was reviewed anew)", caller.subject),
        )
    } else {
        Vec::new()
    };
    super::record_change(
        &host,
        &caller,
        "",
        "",
        crate::trace::Change::ToolReviewed,
        json!({"connector": request.connector, "tool": request.tool, "before": before, "after": {"digest": current, "effect": effect}, "approvals_revoked": revoked}),
    )
    .await?;
    let mut answer = json!({"connector": request.connector, "tool": request.tool, "reviewed": true, "reviewed_by": caller.subject, "approvals_revoked": revoked});
    if let Some(effect) = effect {
        answer["effect"] = json!(effect);
    }
    Ok(Json(answer))
}

fn invalid_review(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_review", message)
}

/// An operator's review of a remote server's resource, template or prompt
/// as it is now (its digest): offered from the next request of every
/// session given the server. Each is a read: `effect` may be left out or
/// be `read`.
async fn approve_content(
    host: &Arc<ServeHost>,
    caller: &Principal,
    kind: &str,
    request: &ApproveReview,
) -> Result<Json<Value>, ApiError> {
    use crate::remote::content::ContentKind;
    let kind = ContentKind::parse(kind).ok_or_else(|| {
        invalid_review(format!(
            "`kind`: `{kind}` is not \"tool\", \"resource\", \"resource_template\" or \"prompt\""
        ))
    })?;
    let server = host.host().remote(&request.connector).ok_or_else(|| {
        match host.host().component(&request.connector) {
            Some(_) => invalid_review(format!(
                "`{}` is a component: only a remote MCP server offers resources and prompts to review",
                request.connector
            )),
            None => ApiError::not_found(format!("no connector `{}`", request.connector)),
        }
    })?;
    if !request.tool.is_empty() {
        return Err(invalid_review(
            "`tool`: a resource, template or prompt is named by `item`",
        ));
    }
    let item = request.item.as_deref().ok_or_else(|| {
        invalid_review(
            "`item`: the resource's URI, the template's URI template or the prompt's name",
        )
    })?;
    if request.effect.as_deref().is_some_and(|e| e != "read") {
        return Err(invalid_review(
            "`effect`: a resource, template or prompt is read, never written: leave `effect` out",
        ));
    }
    let candidate = server
        .discovered()
        .content
        .into_iter()
        .find(|c| c.kind == kind && c.item == item)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "`{}` lists no {} `{item}`",
                request.connector,
                kind.as_str()
            ))
        })?;
    if candidate.digest != request.digest {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "stale_review",
            format!(
                "the {} changed since this digest: review it again",
                kind.as_str()
            ),
        ));
    }
    let store = host.host().store().clone();
    let key = candidate.review_key();
    let previous = store
        .reviewed(&request.connector, &key)
        .await
        .ok()
        .flatten();
    store
        .approve_tool(
            &request.connector,
            &key,
            &candidate.digest,
            Some("read"),
            None,
            &caller.subject,
        )
        .await
        .map_err(crate::sessions::HostError::Store)?;
    // Sessions given the server offer it from their next request.
    host.host().boundary().changed();
    let flags = candidate.flags();
    super::record_change(
        host,
        caller,
        "",
        "",
        crate::trace::Change::ToolReviewed,
        json!({"connector": request.connector, "kind": kind, "item": item, "flags": flags, "before": previous.map(|r| json!({"digest": r.digest})), "after": {"digest": candidate.digest}}),
    )
    .await?;
    Ok(Json(json!({
        "connector": request.connector,
        "kind": kind,
        "item": item,
        "reviewed": true,
        "reviewed_by": caller.subject,
        "flags": flags,
    })))
}
