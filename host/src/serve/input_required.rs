//! A person asked the 2026-07-28 way (SEP-2322): a stateless client has no
//! event stream to be asked on, so a call from a client that takes form
//! elicitation and needs a person's approval is answered at once with an
//! `InputRequiredResult`: the question today's elicitation asks (the same
//! words and schema, [`super::mcp::approval_question`]) and a
//! `requestState`. The client puts the question to its person and retries
//! the same call with the answer and the `requestState`.
//!
//! The approval is the row the console shows (its id, its expiry); the
//! `requestState` is only a sealed handle to it
//! ([`crate::approvals::Approvals::request_state`]). Nothing runs, nothing
//! is sent upstream and no handle is granted before the answer. The retry
//! goes through the boundary again (its policy checked anew), and the
//! answer decides the approval only if it is this very call's (same
//! session, tool and arguments) and still pending; once decided, a second
//! retry is refused. Nothing waits in memory, so any host of a fleet takes
//! the retry.

use super::mcp::ConnectorServer;
use crate::approvals::{ApprovalId, ByResult};
use crate::boundary::CallRequest;
use crate::policy::Rule;
use axum::http::HeaderMap;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequest, ElicitResult, ElicitationAction,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, MetaObject, ProtocolVersion,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The key of the approval's question in `inputRequests`, and of its answer
/// in the retry's `inputResponses`.
const QUESTION: &str = "approval";

/// The JSON-RPC answer to a stateless `tools/call` from a client that can
/// be asked: the call's result, or the question put to its person.
pub(super) async fn answer(
    server: &ConnectorServer,
    id: RequestId,
    params: CallToolRequestParams,
    meta: &MetaObject,
    gone: CancellationToken,
    headers: &HeaderMap,
) -> Result<String, serde_json::Error> {
    answer_over(server, id, params, meta, gone, Some(headers)).await
}

/// [`answer`] over HTTP (`headers`) or stdio (`None`).
pub(super) async fn answer_over(
    server: &ConnectorServer,
    id: RequestId,
    params: CallToolRequestParams,
    meta: &MetaObject,
    gone: CancellationToken,
    headers: Option<&HeaderMap>,
) -> Result<String, serde_json::Error> {
    let traced = super::mcp::trace_parent(meta, headers, &id);
    // In a task of its own: once allowed, the call runs to its end even if
    // its client goes away (an effect is never cut off halfway).
    let server = server.clone();
    let result = tokio::spawn(async move { call(&server, params, gone, &traced).await })
        .await
        .unwrap_or_else(|e| {
            tracing::error!(error = %e, "a tool call's task failed");
            Err(McpError::internal_error(
                "the call failed in the host",
                None,
            ))
        });
    serde_json::to_string(&match result {
        Ok(result) => ServerJsonRpcMessage::response(ServerResult::from(result), id),
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    })
}

/// One round of the call: the first (asks), or a retry (answers).
async fn call(
    server: &ConnectorServer,
    params: CallToolRequestParams,
    gone: CancellationToken,
    traced: &crate::telemetry::TraceParent,
) -> Result<CallToolResponse, McpError> {
    let (host, live) = server.parts()?;
    let approvals = host.host().approvals();
    let connector = server.connector.as_str();
    // The host's own tools ask nobody; a host that cannot seal the handle
    // cannot ask this way: the call waits as for a client that cannot be asked.
    if connector == super::host_tools::SCOUT_SERVER || !approvals.asks_by_result() {
        return server
            .call_directly(params, gone, traced.clone(), None, None)
            .await;
    }
    let by_result = match &params.request_state {
        None => ByResult::Ask,
        Some(state) => {
            let Some(approval) = approvals.opened_request_state(&live.session.id, state) else {
                return Err(McpError::invalid_params(
                    "the requestState is not one this host gave this session; call again without it to be asked anew",
                    None,
                ));
            };
            match answer_of(params.input_responses.as_ref()) {
                Some((approve, answer)) => ByResult::Answered {
                    approval,
                    approve,
                    answer,
                },
                // Retried without an answer: the same question again.
                None => ByResult::Ask,
            }
        }
    };
    let tool = params.name.to_string();
    let args = Value::Object(params.arguments.unwrap_or_default());
    // A remote server's own questions have no way to this client's person.
    if let Some(remote) = host.host().remote(connector) {
        remote.ask_through(&live.session.id, None);
    }
    let (asked, asked_for) = tokio::sync::oneshot::channel();
    let request = CallRequest::new(&tool, &args)
        .while_present(gone)
        .traced_from(traced)
        .telling(asked)
        .by_result(by_result);
    let result = host.host().call(&live, connector, request).await;
    if let Err(denied) = &result
        && denied.rule == Rule::ApprovalRequired
        && by_result == ByResult::Ask
        && let Ok(approval) = asked_for.await
    {
        let name = crate::policy::names::mcp(connector, &tool);
        return input_required(&host, &live.session.id, approval, &name, &args).await;
    }
    super::mcp::answer(&host, connector, result)
}

/// A line over stdio that is a 2026-07-28 `tools/call` (its protocol
/// version in its own `_meta`, no handshake) from a client that takes form
/// elicitation: its id, parameters and trace context. Anything else is
/// `None` (rmcp judges it).
pub(super) fn asked_over_stdio(
    line: &[u8],
) -> Option<(RequestId, Box<CallToolRequestParams>, MetaObject)> {
    use super::stateless::{Request, request, trace_context};
    let (id, Request::Call(params), meta) = request(line)? else {
        return None;
    };
    let modern = ProtocolVersion::V_2026_07_28;
    if !meta.missing_required_keys(&modern).is_empty()
        || meta.protocol_version()?.as_str() != modern.as_str()
    {
        return None;
    }
    let elicitation = meta.client_capabilities()?.elicitation.clone()?;
    (elicitation.form.is_some() || elicitation.url.is_none())
        .then(|| (id, params, trace_context(&meta)))
}

/// The question about `approval` as an `InputRequiredResult`, with the
/// approval's sealed handle as its `requestState`.
async fn input_required(
    host: &super::ServeHost,
    session: &str,
    approval: ApprovalId,
    name: &str,
    args: &Value,
) -> Result<CallToolResponse, McpError> {
    let cannot = |what: &str| {
        McpError::internal_error(
            format!(
                "approval #{approval} is pending, but the host cannot {what}; a person may decide it in the console"
            ),
            None,
        )
    };
    let question = super::mcp::approval_question(host, approval, name, args)
        .await
        .ok_or_else(|| cannot("word its question"))?;
    let state = host
        .host()
        .approvals()
        .request_state(session, approval)
        .ok_or_else(|| cannot("seal its requestState"))?;
    let mut requests = InputRequests::new();
    requests.insert(
        QUESTION.to_string(),
        InputRequest::Elicitation(ElicitRequest::new(question)),
    );
    Ok(InputRequiredResult::new(Some(requests), Some(state)).into())
}

/// The person's answer in a retry's `inputResponses`: whether it approves,
/// and its action as the trace names it; `None` without a readable answer.
fn answer_of(responses: Option<&InputResponses>) -> Option<(bool, &'static str)> {
    let result: ElicitResult = serde_json::from_value(responses?.get(QUESTION)?.clone()).ok()?;
    let action = match result.action {
        ElicitationAction::Accept => "accept",
        ElicitationAction::Decline => "decline",
        ElicitationAction::Cancel => "cancel",
        // An action this host does not know approves nothing.
        _ => "unknown",
    };
    Some((super::mcp::approves(&result), action))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn responses(answer: Value) -> InputResponses {
        InputResponses::from([(QUESTION.to_string(), answer)])
    }

    #[test]
    fn only_an_accepted_approve_approves() {
        let accept = responses(json!({"action": "accept", "content": {"approve": true}}));
        assert_eq!(answer_of(Some(&accept)), Some((true, "accept")));
        let no = responses(json!({"action": "accept", "content": {"approve": false}}));
        assert_eq!(answer_of(Some(&no)), Some((false, "accept")));
        let decline = responses(json!({"action": "decline"}));
        assert_eq!(answer_of(Some(&decline)), Some((false, "decline")));
        let cancel = responses(json!({"action": "cancel"}));
        assert_eq!(answer_of(Some(&cancel)), Some((false, "cancel")));
        assert_eq!(answer_of(None), None);
        let other = InputResponses::from([("other".to_string(), json!({"action": "accept"}))]);
        assert_eq!(answer_of(Some(&other)), None, "not the question asked");
    }
}
