//! A remote MCP server's resources, resource templates and prompts, as a
//! session's endpoint for that server serves them (issue 55 item 3).
//!
//! Only what an operator reviewed as it is now is listed
//! ([`crate::remote::content`]), and only to a session the boundary gives
//! the server ([`crate::boundary::Boundary::gives_connector`]): its role,
//! grant and selection offer it the server's tools. Resources and
//! templates are reads, so every such role is offered them, a read-only
//! one included. Prompts are offered only where a person is present (a
//! person's own chat): a prompt is text the server addresses to the model,
//! which MCP has a person pick; with nobody to pick it, it would be the
//! server steering an unattended agent.
//!
//! A read is decided before anything is sent: the session's standing, then
//! the URI against the reviewed resources and templates (a prompt's name
//! against the reviewed prompts). Refused, it is answered in the
//! boundary's words (`permission_denied`), traced and counted in the
//! session's lineage, and nothing reaches the server. Allowed, it is sent
//! on the session's upstream session with the brand's credential, traced
//! (the item it was admitted as, the answer's size, the HTTP exchanges),
//! capped ([`MAX_CONTENT_BYTES`]) and marked untrusted (`_meta
//! scout/untrusted`), as a tool's result is.
//!
//! The endpoint of a remote server declares `resources` and `prompts` in
//! `initialize` always, answering empty lists where nothing is offered;
//! a component's endpoint declares neither, and answers "method not
//! found" for both, so the protocol stays consistent. Subscriptions are
//! not offered (`subscribe` is not declared): the host relays no
//! server's notifications to a session.

use super::{LiveSession, ServeHost};
use crate::boundary::Denied;
use crate::remote::content::{ContentCandidate, ContentKind, ContentStatus, MAX_CONTENT_BYTES};
use crate::store::Origin;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CacheScope, ClientRequest, ErrorCode, GetPromptRequest, GetPromptRequestParams,
    GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    MetaObject, Prompt, PromptsCapability, ReadResourceRequest, ReadResourceRequestParams,
    ReadResourceResponse, Resource, ResourceTemplate, ResourcesCapability, ResultType,
    ServerCapabilities, ServerResult,
};
use serde_json::{Value, json};
use std::time::Instant;

/// Whether `connector`'s endpoint declares resources and prompts: a
/// remote server's does.
fn declared(host: &ServeHost, connector: &str) -> bool {
    host.host().remote(connector).is_some()
}

/// Declares resources and prompts in `capabilities` where `connector` is a
/// remote server (no `subscribe`, no `listChanged`: the host relays no
/// server's notifications).
pub(super) fn declare(
    capabilities: &mut ServerCapabilities,
    host: Option<&ServeHost>,
    connector: &str,
) {
    if host.is_some_and(|host| declared(host, connector)) {
        capabilities.resources = Some(ResourcesCapability::default());
        capabilities.prompts = Some(PromptsCapability::default());
    }
}

/// The answer to a method `connector`'s endpoint does not declare.
fn undeclared(host: &ServeHost, connector: &str, method: &str) -> Result<(), McpError> {
    if declared(host, connector) {
        return Ok(());
    }
    Err(McpError::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!(
            "{method}: `{connector}` offers no resources or prompts (only a remote MCP server's endpoint does)"
        ),
        None,
    ))
}

/// What `live` is offered of `connector`'s resources, templates and
/// prompts now: each reviewed as it is now, and a prompt only where a
/// person is present.
async fn offered(host: &ServeHost, live: &LiveSession, connector: &str) -> Vec<ContentCandidate> {
    let Some(server) = host.host().remote(connector) else {
        return Vec::new();
    };
    if !host
        .host()
        .boundary()
        .gives_connector(&live.session, connector)
    {
        return Vec::new();
    }
    let prompts = live.session.input.role.can_ask_a_person();
    let store = host.host().store().clone();
    let mut kept = Vec::new();
    for candidate in server.discovered().content {
        if candidate.kind == ContentKind::Prompt && !prompts {
            continue;
        }
        // Unreadable: not offered (the store is asked again next time).
        if let Ok(ContentStatus::Reviewed) =
            crate::remote::content::status(store.as_ref(), connector, &candidate).await
        {
            kept.push(candidate);
        }
    }
    kept
}

/// The described items of `kind`, as MCP types.
fn described<T: serde::de::DeserializeOwned>(
    items: &[ContentCandidate],
    kind: ContentKind,
) -> Vec<T> {
    items
        .iter()
        .filter(|c| c.kind == kind)
        .filter_map(|c| serde_json::from_value(c.described.clone()).ok())
        .collect()
}

pub(super) async fn list_resources(
    host: &ServeHost,
    live: &LiveSession,
    connector: &str,
) -> Result<ListResourcesResult, McpError> {
    undeclared(host, connector, "resources/list")?;
    let items = offered(host, live, connector).await;
    Ok(ListResourcesResult::with_all_items(described::<Resource>(
        &items,
        ContentKind::Resource,
    )))
}

pub(super) async fn list_resource_templates(
    host: &ServeHost,
    live: &LiveSession,
    connector: &str,
) -> Result<ListResourceTemplatesResult, McpError> {
    undeclared(host, connector, "resources/templates/list")?;
    let items = offered(host, live, connector).await;
    Ok(ListResourceTemplatesResult::with_all_items(described::<
        ResourceTemplate,
    >(
        &items,
        ContentKind::ResourceTemplate,
    )))
}

pub(super) async fn list_prompts(
    host: &ServeHost,
    live: &LiveSession,
    connector: &str,
) -> Result<ListPromptsResult, McpError> {
    undeclared(host, connector, "prompts/list")?;
    let items = offered(host, live, connector).await;
    Ok(ListPromptsResult::with_all_items(described::<Prompt>(
        &items,
        ContentKind::Prompt,
    )))
}

/// The protocol error of a refusal, in the boundary's words: a URI or
/// prompt not offered as a name outside the surface is, anything else
/// (a paused session, a lost lease) with the rule the agent may know.
fn refused(denied: &Denied) -> McpError {
    if denied.rule.is_not_offered() {
        return McpError::invalid_params(
            format!("permission_denied: {}", denied.told()),
            Some(json!({"reason": "not_offered"})),
        );
    }
    let mut data = json!({"denied": denied.rule.told().name()});
    if let Some(l) = denied.lineage.as_ref().filter(|l| l.repeat >= 2) {
        data["repeated"] = json!(l.repeat);
        data["paused"] = json!(l.paused);
    }
    McpError::invalid_request(format!("denied: {}", denied.told()), Some(data))
}

/// Sends `request` for `live`, admitted as `item`, and answers with the
/// server's result (capped), recording the pass and the answer.
async fn relay(
    host: &ServeHost,
    live: &LiveSession,
    connector: &str,
    call: crate::boundary::remote_content::ContentCall<'_>,
    item: &ContentCandidate,
    request: ClientRequest,
) -> Result<ServerResult, McpError> {
    let reviewed = json!({"kind": item.kind, "item": item.item, "digest": item.digest});
    let Some(upstream) = host.host().content_upstream(&live.session, connector).await else {
        let why = format!(
            "the brand has no usable credential for `{connector}`: connect it (PUT /v1/brands/BRAND/connections/{connector}), then ask again"
        );
        call.finish(reviewed, json!({"error": why}));
        return Err(McpError::invalid_request(why, None));
    };
    let timeout = host
        .host()
        .remote(connector)
        .map_or(std::time::Duration::from_secs(30), |s| s.call_timeout());
    let answer = upstream
        .content_request(request, Instant::now() + timeout)
        .await;
    let exchanges = json!(answer.exchanges);
    let renewals = answer.renewals;
    let result = match answer.result {
        Ok(result) => result,
        Err(failure) => {
            let why = match failure {
                crate::capabilities::mcp::McpFailure::Deadline => {
                    "the remote server did not answer in time".to_string()
                }
                crate::capabilities::mcp::McpFailure::Upstream(why) => why,
            };
            call.finish(
                reviewed,
                json!({"error": why, "http": exchanges, "renewals": renewals}),
            );
            return Err(McpError::new(ErrorCode::INTERNAL_ERROR, why, None));
        }
    };
    let bytes = serde_json::to_vec(&result).map_or(0, |b| b.len());
    if bytes > MAX_CONTENT_BYTES {
        let why = format!(
            "the remote server's answer ({bytes} bytes) is past the host's limit of {MAX_CONTENT_BYTES} bytes"
        );
        call.finish(
            reviewed,
            json!({"error": why, "bytes": bytes, "http": exchanges}),
        );
        return Err(McpError::new(ErrorCode::INTERNAL_ERROR, why, None));
    }
    call.finish(
        reviewed,
        json!({"bytes": bytes, "http": exchanges, "renewals": renewals}),
    );
    Ok(result)
}

/// The untrusted mark a relayed answer carries: what the server put in it
/// is data for the model, never instructions to the host.
fn untrusted() -> MetaObject {
    let mut meta = MetaObject::new();
    meta.0.insert("scout/untrusted".to_string(), json!(true));
    meta
}

pub(super) async fn read_resource(
    host: &ServeHost,
    live: &LiveSession,
    connector: &str,
    request: ReadResourceRequestParams,
    origin: Origin,
) -> Result<ReadResourceResponse, McpError> {
    undeclared(host, connector, "resources/read")?;
    let uri = request.uri;
    let call = host
        .host()
        .boundary()
        .content_call(
            &live.session,
            connector,
            "resources/read",
            &json!({"uri": uri}),
            origin,
        )
        .map_err(|d| refused(&d))?;
    let items = offered(host, live, connector).await;
    // The resource itself first, then a template that covers the URI.
    let item = items
        .iter()
        .filter(|c| c.kind == ContentKind::Resource)
        .chain(
            items
                .iter()
                .filter(|c| c.kind == ContentKind::ResourceTemplate),
        )
        .find(|c| c.covers(&uri));
    let Some(item) = item else {
        return Err(refused(&call.refuse(crate::policy::Rule::NotOffered)));
    };
    let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
        ReadResourceRequestParams::new(uri),
    ));
    match relay(host, live, connector, call, item, request).await? {
        ServerResult::ReadResourceResult(mut result) => {
            result.result_type = Some(ResultType::COMPLETE);
            // The session's own answer: never kept for anyone else, and
            // never fresh past this request (a review can withdraw it).
            result.ttl_ms = Some(0);
            result.cache_scope = Some(CacheScope::Private);
            result.meta = Some(untrusted());
            Ok(result.into())
        }
        _ => Err(McpError::internal_error(
            "the remote server answered resources/read with something else",
            None,
        )),
    }
}

pub(super) async fn get_prompt(
    host: &ServeHost,
    live: &LiveSession,
    connector: &str,
    request: GetPromptRequestParams,
    origin: Origin,
) -> Result<GetPromptResponse, McpError> {
    undeclared(host, connector, "prompts/get")?;
    let arguments = request.arguments.clone().map(Value::Object);
    let call = host
        .host()
        .boundary()
        .content_call(
            &live.session,
            connector,
            "prompts/get",
            &json!({"name": request.name, "arguments": arguments}),
            origin,
        )
        .map_err(|d| refused(&d))?;
    let items = offered(host, live, connector).await;
    let Some(item) = items
        .iter()
        .find(|c| c.kind == ContentKind::Prompt && c.item == request.name)
    else {
        return Err(refused(&call.refuse(crate::policy::Rule::NotOffered)));
    };
    let mut params = GetPromptRequestParams::new(request.name.clone());
    params.arguments = request.arguments;
    let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
    match relay(host, live, connector, call, item, request).await? {
        ServerResult::GetPromptResult(mut result) => {
            result.result_type = Some(ResultType::COMPLETE);
            result.meta = Some(untrusted());
            Ok(result.into())
        }
        _ => Err(McpError::internal_error(
            "the remote server answered prompts/get with something else",
            None,
        )),
    }
}
