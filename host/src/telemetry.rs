//! OpenTelemetry export of the trace: the spans a security team's collector
//! takes, built from the same events the durable trace holds.
//!
//! A tool call is one SERVER span named as the GenAI/MCP semantic
//! conventions say (`tools/call {tool}`), parented on the client's W3C
//! `traceparent` from the request's `_meta`. Each trace event the boundary
//! writes becomes an event of that span once it is written, so the export
//! never shows what the trace does not hold. A person's wait is an INTERNAL
//! child span, each upstream request a CLIENT child span carrying the
//! declared route (never the path as sent, a query, a header or a body).
//! The policy's decision is under `scout.*`; arguments and results are not
//! exported.
//!
//! Spans go out over OTLP/HTTP (protobuf) through a reqwest 0.12 client on
//! a small runtime of the exporter's own, configured by the standard
//! `OTEL_EXPORTER_OTLP_*` and `OTEL_BSP_*` variables. Export is off unless
//! an endpoint is set (or when `OTEL_SDK_DISABLED=true`).

use crate::store::{TraceEvent, TraceState};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    Span as _, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, Span, Tracer};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Attribute names of the GenAI semantic conventions' MCP page
/// (open-telemetry/semantic-conventions-genai v0.1.0), pinned here: the
/// conventions crate marks them deprecated and experimental.
mod semconv {
    pub const MCP_METHOD_NAME: &str = "mcp.method.name";
    pub const MCP_SESSION_ID: &str = "mcp.session.id";
    pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
    pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
    pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
    pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
    pub const NETWORK_TRANSPORT: &str = "network.transport";
    pub const ERROR_TYPE: &str = "error.type";
    pub const HTTP_REQUEST_METHOD: &str = "http.request.method";
    pub const HTTP_RESPONSE_STATUS_CODE: &str = "http.response.status_code";
    pub const SERVER_ADDRESS: &str = "server.address";
    pub const SERVER_PORT: &str = "server.port";
    pub const URL_TEMPLATE: &str = "url.template";
}

/// The longest an export request may take, reading its answer included.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a collector's answer read (the SDK's own clients' cap).
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Why export could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("cannot start the OTLP exporter's runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot build the OTLP HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    #[error("cannot build the OTLP span exporter (check OTEL_EXPORTER_OTLP_ENDPOINT): {0}")]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
}

/// One host's span export.
pub struct Telemetry {
    provider: SdkTracerProvider,
    tracer: Tracer,
    /// Ended last: the exporter's requests run on it until the provider is
    /// shut down.
    _runtime: ExportRuntime,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry").finish_non_exhaustive()
    }
}

/// Where the standard variables send traces, if they ask for export: the
/// traces endpoint as given, or the base endpoint with `/v1/traces`
/// (the OTLP exporter specification); `None` when neither is set or
/// `OTEL_SDK_DISABLED=true`.
pub fn traces_endpoint(env: &impl Fn(&str) -> Option<String>) -> Option<String> {
    let set = |name: &str| {
        env(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
        return None;
    }
    set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| {
        set("OTEL_EXPORTER_OTLP_ENDPOINT")
            .map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
    })
}

impl Telemetry {
    /// Export configured by the process environment, or `None` when no
    /// endpoint is set. `host_id` becomes `service.instance.id`.
    pub fn from_env(
        host_id: &str,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Telemetry>, TelemetryError> {
        let Some(endpoint) = traces_endpoint(env) else {
            return Ok(None);
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("scout-otlp")
            .enable_all()
            .build()
            .map_err(TelemetryError::Runtime)?;
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(TelemetryError::Client)?;
        let exporter = SpanExporter::builder()
            .with_http()
            .with_endpoint(endpoint)
            .with_http_client(OtlpClient {
                client,
                runtime: runtime.handle().clone(),
                warned_at: Default::default(),
            })
            .build()
            .map_err(TelemetryError::Exporter)?;
        let mut resource = Resource::builder()
            .with_attribute(KeyValue::new("service.instance.id", host_id.to_string()))
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
        if env("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name("scout-host");
        }
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build();
        let tracer = provider.tracer("scout-host");
        Ok(Some(Telemetry {
            provider,
            tracer,
            _runtime: ExportRuntime(Some(runtime)),
        }))
    }

    /// Sends what is buffered and stops exporting. Blocks: call it from a
    /// thread that may wait.
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "cannot flush the last spans to the OTLP collector");
        }
    }

    /// The SERVER span of one `tools/call`.
    pub(crate) fn call_span(&self, call: CallSpanStart<'_>) -> CallSpan {
        let span = self.server_span(
            format!("tools/call {}", call.tool),
            vec![
                KeyValue::new(semconv::MCP_METHOD_NAME, "tools/call"),
                KeyValue::new(semconv::GEN_AI_TOOL_NAME, call.tool.to_string()),
                KeyValue::new(semconv::GEN_AI_OPERATION_NAME, "execute_tool"),
            ],
            &call,
        );
        CallSpan {
            tracer: self.tracer.clone(),
            span: Mutex::new(span),
        }
    }

    /// The SERVER span of one `tools/list` (`call.tool` is not used); it
    /// ends when dropped.
    pub(crate) fn list_span(&self, call: CallSpanStart<'_>) -> Span {
        self.server_span(
            "tools/list".to_string(),
            vec![KeyValue::new(semconv::MCP_METHOD_NAME, "tools/list")],
            &call,
        )
    }

    fn server_span(
        &self,
        name: String,
        mut attributes: Vec<KeyValue>,
        call: &CallSpanStart<'_>,
    ) -> Span {
        let parent = call.parent.map(TraceParent::context).unwrap_or_default();
        attributes.extend([
            KeyValue::new("scout.session.id", call.session.to_string()),
            KeyValue::new("scout.brand", call.brand.to_string()),
            KeyValue::new("scout.connector", call.connector.to_string()),
            KeyValue::new("scout.role", call.role.to_string()),
        ]);
        if let Some(parent) = call.parent {
            if let Some(id) = &parent.transport_session {
                attributes.push(KeyValue::new(semconv::MCP_SESSION_ID, id.clone()));
            }
            if let Some(version) = &parent.protocol_version {
                attributes.push(KeyValue::new(
                    semconv::MCP_PROTOCOL_VERSION,
                    version.clone(),
                ));
            }
            if let Some(id) = &parent.request_id {
                attributes.push(KeyValue::new(semconv::JSONRPC_REQUEST_ID, id.clone()));
            }
            attributes.push(KeyValue::new(semconv::NETWORK_TRANSPORT, parent.transport));
        }
        self.tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent)
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        // Already shut down is fine: the provider says so and nothing is lost.
        let _ = self.provider.shutdown_with_timeout(Duration::from_secs(2));
    }
}

/// The exporter's runtime, shut down without waiting when dropped (allowed
/// in any context).
struct ExportRuntime(Option<tokio::runtime::Runtime>);

impl Drop for ExportRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// The OTLP exporter's HTTP client: the host's reqwest 0.12 on the
/// exporter's own runtime (the SDK's batch thread is not a tokio thread).
#[derive(Debug)]
struct OtlpClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    /// When a failed export was last logged (seconds since the Unix epoch).
    warned_at: std::sync::atomic::AtomicU64,
}

/// A collector that stays away is logged once a minute, not per batch.
const WARN_EVERY_SECS: u64 = 60;

impl OtlpClient {
    fn warn(&self, what: &dyn std::fmt::Display) {
        use std::sync::atomic::Ordering;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let last = self.warned_at.load(Ordering::Relaxed);
        if (last == 0 || now.saturating_sub(last) >= WARN_EVERY_SECS)
            && self
                .warned_at
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(error = %what, "cannot export spans to the OTLP collector; spans are dropped until it answers");
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for OtlpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let sent = self.send(request).await;
        match &sent {
            Err(e) => self.warn(e),
            Ok(response) if !response.status().is_success() => self.warn(&format_args!(
                "the collector answered {}",
                response.status()
            )),
            Ok(_) => {}
        }
        sent
    }
}

impl OtlpClient {
    async fn send(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let request = reqwest::Request::try_from(request)?;
            let mut answer = client.execute(request).await?;
            let mut response = Response::builder().status(answer.status());
            if let Some(headers) = response.headers_mut() {
                *headers = std::mem::take(answer.headers_mut());
            }
            let mut body = Vec::new();
            while let Some(chunk) = answer.chunk().await? {
                if body.len() + chunk.len() > MAX_ANSWER_BYTES {
                    return Err::<_, HttpError>(
                        "the collector's answer is larger than 4 MiB".into(),
                    );
                }
                body.extend_from_slice(&chunk);
            }
            Ok(response.body(Bytes::from(body))?)
        });
        sent.await?
    }
}

/// What the client's request says about its trace and transport.
#[derive(Debug, Clone, Default)]
pub struct TraceParent {
    /// W3C `traceparent` from the request's `_meta` (SEP-414).
    pub traceparent: Option<String>,
    /// W3C `tracestate` beside it.
    pub tracestate: Option<String>,
    /// The transport's session (`Mcp-Session-Id`), for `mcp.session.id`.
    pub transport_session: Option<String>,
    /// `MCP-Protocol-Version`, when the client sent it.
    pub protocol_version: Option<String>,
    /// The JSON-RPC request id, as text.
    pub request_id: Option<String>,
    /// `tcp` (streamable HTTP) or `pipe` (stdio).
    pub transport: &'static str,
}

impl TraceParent {
    /// The trace and the caller's span its `traceparent` names, for the
    /// rows of a call whose own span is not exported.
    pub(crate) fn origin(&self) -> crate::store::Origin {
        self.traceparent
            .as_deref()
            .and_then(crate::store::Origin::from_traceparent)
            .unwrap_or_default()
    }

    fn context(&self) -> Context {
        let mut carrier = HashMap::new();
        if let Some(value) = &self.traceparent {
            carrier.insert("traceparent".to_string(), value.clone());
        }
        if let Some(value) = &self.tracestate {
            carrier.insert("tracestate".to_string(), value.clone());
        }
        // An invalid traceparent is ignored, as W3C says: a new trace.
        TraceContextPropagator::new().extract(&carrier)
    }
}

/// What the SERVER span of a call is named and labelled with.
pub(crate) struct CallSpanStart<'a> {
    pub tool: &'a str,
    pub connector: &'a str,
    pub session: &'a str,
    pub brand: &'a str,
    pub role: &'a str,
    pub parent: Option<&'a TraceParent>,
}

/// The SERVER span of one call; ends (and is exported) when dropped.
pub(crate) struct CallSpan {
    tracer: Tracer,
    span: Mutex<Span>,
}

impl CallSpan {
    /// Records `events` once they are in the durable trace: an event each,
    /// with its rule; a denial or failure sets `error.type` and the status.
    pub(crate) fn written(&self, events: &[TraceEvent]) {
        let mut span = self.span.lock();
        for event in events {
            let rule = event.rule.clone();
            let attributes: Vec<KeyValue> = rule
                .iter()
                .map(|r| KeyValue::new("scout.rule", r.clone()))
                .collect();
            span.add_event_with_timestamp(
                event.state.as_str().to_string(),
                at(event.at_ms),
                attributes,
            );
            let (outcome, error) = match event.state {
                // The deciding rule: the pass that let it run.
                TraceState::Allowed => ("allowed", None),
                TraceState::Denied | TraceState::PermissionDenied => (
                    "denied",
                    Some(rule.clone().unwrap_or_else(|| "denied".into())),
                ),
                TraceState::Result if event.detail["ok"] == false => {
                    let kind = if event.detail.get("host_error").is_some() {
                        "host_error"
                    } else {
                        "tool_error"
                    };
                    (kind, Some(kind.to_string()))
                }
                TraceState::Result => ("ok", None),
                _ => continue,
            };
            span.set_attribute(KeyValue::new("scout.outcome", outcome));
            if let Some(rule) = rule.filter(|_| event.state != TraceState::Result) {
                span.set_attribute(KeyValue::new("scout.rule", rule));
            }
            if let Some(error) = error {
                // The bounded reason the agent was given, never a guest's text.
                let reason = event.detail["reason"]
                    .as_str()
                    .unwrap_or(&error)
                    .to_string();
                span.set_attribute(KeyValue::new(semconv::ERROR_TYPE, error.clone()));
                span.set_status(Status::error(reason));
            }
        }
    }

    /// The child span of a person's wait, started now.
    pub(crate) fn wait(&self, tool: &str) -> WaitSpan {
        let parent = self.context();
        let span = self
            .tracer
            .span_builder(format!("approval {tool}"))
            .with_kind(SpanKind::Internal)
            .start_with_context(&self.tracer, &parent);
        WaitSpan(Mutex::new(span))
    }

    /// A CLIENT span for each upstream request the call made.
    pub(crate) fn upstream(&self, exchanges: &[crate::capabilities::http::HttpExchange]) {
        let parent = self.context();
        for exchange in exchanges {
            let method = exchange.method.clone();
            // The declared route: a refused request matched none and was never sent.
            let target = exchange
                .route
                .as_deref()
                .and_then(|r| r.split_once(' ').map(|(_, path)| path.to_string()));
            let mut attributes = vec![
                KeyValue::new(semconv::HTTP_REQUEST_METHOD, method.clone()),
                KeyValue::new(semconv::SERVER_ADDRESS, exchange.server.host.clone()),
            ];
            if let Some(port) = exchange.server.port {
                attributes.push(KeyValue::new(semconv::SERVER_PORT, i64::from(port)));
            }
            if let Some(template) = &target {
                attributes.push(KeyValue::new(semconv::URL_TEMPLATE, template.clone()));
            }
            if let Some(destination) = &exchange.destination {
                attributes.push(KeyValue::new("scout.destination", destination.clone()));
            }
            if let Some(status) = exchange.status {
                attributes.push(KeyValue::new(
                    semconv::HTTP_RESPONSE_STATUS_CODE,
                    i64::from(status),
                ));
            }
            let name = match &target {
                Some(template) => format!("{method} {template}"),
                None => method,
            };
            let started = exchange.server.started_at;
            let mut span = self
                .tracer
                .span_builder(name)
                .with_kind(SpanKind::Client)
                .with_start_time(started)
                .with_attributes(attributes)
                .start_with_context(&self.tracer, &parent);
            match (exchange.status, &exchange.error) {
                (Some(status), _) if status >= 400 => {
                    span.set_attribute(KeyValue::new(semconv::ERROR_TYPE, status.to_string()));
                    span.set_status(Status::error(""));
                }
                (None, _) => {
                    let kind = if exchange.route.is_none() {
                        "refused"
                    } else {
                        "transport"
                    };
                    span.set_attribute(KeyValue::new(semconv::ERROR_TYPE, kind));
                    span.set_status(Status::error(""));
                }
                _ => {}
            }
            span.end_with_timestamp(started + Duration::from_micros(exchange.micros));
        }
    }

    fn context(&self) -> Context {
        let span = self.span.lock();
        Context::new().with_remote_span_context(span.span_context().clone())
    }

    /// The trace and span ids this call's trace rows carry.
    pub(crate) fn origin(&self) -> crate::store::Origin {
        origin_of(&self.span.lock())
    }
}

/// The ids of `span`, as a trace row keeps them.
fn origin_of(span: &Span) -> crate::store::Origin {
    let context = span.span_context();
    crate::store::Origin {
        host: None,
        trace_id: Some(context.trace_id().to_string()),
        span_id: Some(context.span_id().to_string()),
    }
}

impl Drop for CallSpan {
    fn drop(&mut self) {
        // A call that did not fail leaves the status unset, as the conventions say.
        self.span.get_mut().end();
    }
}

/// A person's wait for one call; ends when dropped.
pub(crate) struct WaitSpan(Mutex<Span>);

impl WaitSpan {
    /// The ids the wait's rows (its request and decision) carry.
    pub(crate) fn origin(&self) -> crate::store::Origin {
        origin_of(&self.0.lock())
    }

    /// Records the trace events of the wait once written (`requested`
    /// with the approval id, `decided` with who and how long).
    pub(crate) fn written(&self, event: &TraceEvent) {
        let mut span = self.0.lock();
        let mut attributes = Vec::new();
        if let Some(rule) = &event.rule {
            attributes.push(KeyValue::new("scout.rule", rule.clone()));
        }
        if let Some(id) = event.detail["approval"].as_i64() {
            span.set_attribute(KeyValue::new("scout.approval.id", id));
        }
        if event.state == TraceState::Decided {
            let outcome = event.rule.clone().unwrap_or_default();
            if outcome != "approved" {
                span.set_attribute(KeyValue::new(
                    semconv::ERROR_TYPE,
                    format!("approval_{outcome}"),
                ));
                span.set_status(Status::error(format!("the approval was {outcome}")));
            }
            span.set_attribute(KeyValue::new("scout.approval.outcome", outcome));
            if let Some(by) = event.detail["by"].as_str() {
                span.set_attribute(KeyValue::new("scout.approval.decided_by", by.to_string()));
            }
            if let Some(waited) = event.detail["waited_ms"].as_i64() {
                span.set_attribute(KeyValue::new("scout.approval.waited_ms", waited));
            }
        }
        span.add_event_with_timestamp(
            event.state.as_str().to_string(),
            at(event.at_ms),
            attributes,
        );
    }
}

impl Drop for WaitSpan {
    fn drop(&mut self) {
        self.0.get_mut().end();
    }
}

fn at(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_is_off_without_an_endpoint_and_when_disabled() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(traces_endpoint(&vars(&[])), None);
        assert_eq!(
            traces_endpoint(&vars(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])),
            None
        );
        assert_eq!(
            traces_endpoint(&vars(&[(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://127.0.0.1:4318/"
            )])),
            Some("http://127.0.0.1:4318/v1/traces".into())
        );
        assert_eq!(
            traces_endpoint(&vars(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c/custom"),
            ])),
            Some("http://c/custom".into()),
            "the traces endpoint is taken as given"
        );
        assert_eq!(
            traces_endpoint(&vars(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_SDK_DISABLED", "TRUE"),
            ])),
            None
        );
    }

    #[test]
    fn a_client_traceparent_becomes_the_parent_and_a_bad_one_starts_a_trace() {
        let parent = TraceParent {
            traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
            ..TraceParent::default()
        };
        let cx = parent.context();
        let span = cx.span();
        let remote = span.span_context();
        assert!(remote.is_valid() && remote.is_remote());
        assert_eq!(
            remote.trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        let bad = TraceParent {
            traceparent: Some("00-zz-b7ad6b7169203331-01".into()),
            ..TraceParent::default()
        };
        assert!(!bad.context().span().span_context().is_valid());
    }
}
