//! The `scout:connector/http` interface over one call's handles: every
//! request matched once against the tool's declared routes, sent through
//! the handle of its destination, and recorded for the trace.

use super::super::bindings::http::{Host, HostClient};
use super::super::view::View;
use super::HttpCapability;
use super::{ClientHandle, HttpError, Request, Response};
use crate::capabilities::routes::RouteSet;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::Resource;

/// Longest operation summary a trace row keeps of one GraphQL request.
const MAX_GRAPHQL_SUMMARY: usize = 512;

/// One request as the trace records it (no headers, no bodies, no secret).
#[derive(Debug, Clone, Serialize)]
pub struct HttpExchange {
    /// The named destination, when not the connector's own origin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// Method.
    pub method: String,
    /// Path as the guest asked for it (query not included).
    pub path: String,
    /// The declared route it matched (`GET /repos/{owner}/{repo}`), if any:
    /// a request that matched none was refused before it was sent.
    pub route: Option<String>,
    /// Status, when the upstream answered.
    pub status: Option<u16>,
    /// Bytes of the request body the guest sent.
    pub request_bytes: u64,
    /// Bytes of the response body the guest received (after decoding).
    pub response_bytes: u64,
    /// For a GraphQL route, the operations the body held and their root
    /// fields (`mutation commentCreate`), as the host read them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graphql: Option<String>,
    /// The error the guest saw, when it did not.
    pub error: Option<String>,
    /// Time spent, in microseconds.
    pub micros: u64,
    /// Where and when it went, for its telemetry span; not in the trace row.
    #[serde(skip)]
    pub server: ExchangeServer,
}

/// The origin a request went to and when it started (the trace row keeps
/// the destination's name and the duration instead).
#[derive(Debug, Clone)]
pub struct ExchangeServer {
    pub host: String,
    pub port: Option<u16>,
    pub started_at: std::time::SystemTime,
}

/// What the `http` interface of one call holds: the clients granted, the
/// tool's routes every request is matched against, and the exchanges made.
pub(crate) struct HttpCtx {
    /// The client bound to the connector's own origin, if granted.
    pub(crate) http: Option<Arc<HttpCapability>>,
    /// Further clients by destination name.
    pub(crate) destinations: BTreeMap<String, Arc<HttpCapability>>,
    /// Whether a `(graphql)` route may carry a mutation in this call.
    pub(crate) graphql_mutations: bool,
    /// The routes of the tool being called.
    pub(crate) routes: Arc<RouteSet>,
    /// The tool being called (wire name), for refusals.
    pub(crate) tool: String,
    /// The requests made, as the trace records them.
    pub(crate) exchanges: Vec<HttpExchange>,
    /// Handles refused for want of a credential, and why (by destination).
    pub(crate) refused: BTreeMap<Option<String>, String>,
    /// What obtaining and renewing credentials did, for the trace.
    pub(crate) credential_events: Vec<serde_json::Value>,
    /// Handles renewed after a 401 in this call (once each).
    pub(crate) renewed: std::collections::BTreeSet<Option<String>>,
    /// Asked before each request is sent (see [`Capabilities::fence`]).
    pub(crate) fence: Option<crate::capabilities::Fence>,
}

impl Default for ExchangeServer {
    fn default() -> ExchangeServer {
        ExchangeServer {
            host: String::new(),
            port: None,
            started_at: std::time::UNIX_EPOCH,
        }
    }
}

impl Host for View<'_, HttpCtx> {
    fn connect(&mut self) -> wasmtime::Result<Result<Resource<ClientHandle>, HttpError>> {
        if let (None, Some(why)) = (&self.ctx.http, self.ctx.refused.get(&None)) {
            return Ok(Err(HttpError::Denied(why.clone())));
        }
        if self.ctx.http.is_none() {
            return Ok(Err(HttpError::Denied(
                "this session holds no HTTP capability for this connector".to_string(),
            )));
        }
        match self.handles.push(ClientHandle { destination: None })? {
            Some(handle) => Ok(Ok(handle)),
            None => Ok(Err(HttpError::Denied(format!(
                "at most {} handles per call",
                super::super::view::MAX_HANDLES
            )))),
        }
    }

    fn connect_to(
        &mut self,
        destination: String,
    ) -> wasmtime::Result<Result<Resource<ClientHandle>, HttpError>> {
        if !self.ctx.routes.names_destination(Some(&destination)) {
            let (shown, _) = self.ctx.scrub_and_cut(&destination, 64, false);
            return Ok(Err(HttpError::Denied(format!(
                "tool `{}` declares no route to destination `{shown}`",
                self.ctx.tool
            ))));
        }
        if let Some(why) = self.ctx.refused.get(&Some(destination.clone())) {
            return Ok(Err(HttpError::Denied(why.clone())));
        }
        if !self.ctx.destinations.contains_key(&destination) {
            return Ok(Err(HttpError::Denied(format!(
                "this session holds no HTTP capability for destination `{destination}` (not configured, or the connector it names is not live)"
            ))));
        }
        match self.handles.push(ClientHandle {
            destination: Some(destination),
        })? {
            Some(handle) => Ok(Ok(handle)),
            None => Ok(Err(HttpError::Denied(format!(
                "at most {} handles per call",
                super::super::view::MAX_HANDLES
            )))),
        }
    }
}

impl HostClient for View<'_, HttpCtx> {
    async fn send(
        &mut self,
        handle: Resource<ClientHandle>,
        req: Request,
    ) -> wasmtime::Result<Result<Response, HttpError>> {
        let destination = self.handles.get(&handle)?.destination.clone();
        let Some(http) = self.ctx.handle_for(&destination) else {
            return Ok(Err(HttpError::Denied(
                "this session holds no HTTP capability for this connector".to_string(),
            )));
        };
        // A credential the host obtained and the upstream refused is renewed
        // once per call and handle, and the same request sent again.
        let retry = (http.renewal().is_some() && !self.ctx.renewed.contains(&destination))
            .then(|| req.clone());
        let result = self.ctx.send_once(&http, destination.clone(), req).await;
        let Some(req) = retry.filter(|_| matches!(&result, Ok(r) if r.status == 401)) else {
            return Ok(result);
        };
        self.ctx.renewed.insert(destination.clone());
        let Some(renewal) = http.renewal() else {
            return Ok(result);
        };
        // A renewal asks a token endpoint: an effect like any other.
        if self.ctx.fence.as_ref().is_some_and(|may_act| !may_act()) {
            return Ok(Err(HttpError::Denied(
                crate::capabilities::LEASE_NOT_HELD.to_string(),
            )));
        }
        let renewed = renewal.renewed().await;
        self.ctx.credential_events.push(renewed.event);
        let Some(fresh) = renewed.http else {
            // Not renewed: the call fails with the bounded reason, as when
            // the first token could not be had (the trace has the event).
            return Ok(Err(HttpError::Denied(
                super::CREDENTIAL_NOT_REFRESHED.to_string(),
            )));
        };
        match &destination {
            None => self.ctx.http = Some(fresh.clone()),
            Some(d) => {
                self.ctx.destinations.insert(d.clone(), fresh.clone());
            }
        }
        Ok(self.ctx.send_once(&fresh, destination, req).await)
    }

    fn drop(&mut self, handle: Resource<ClientHandle>) -> wasmtime::Result<()> {
        self.handles.drop(handle)?;
        Ok(())
    }
}

impl HttpCtx {
    /// The client a handle to `destination` sends through now.
    fn handle_for(
        &self,
        destination: &Option<String>,
    ) -> Option<std::sync::Arc<super::HttpCapability>> {
        match destination {
            None => self.http.clone(),
            Some(d) => self.destinations.get(d).cloned(),
        }
    }

    /// Sends `req` through `http` and records the exchange.
    async fn send_once(
        &mut self,
        http: &super::HttpCapability,
        destination: Option<String>,
        req: Request,
    ) -> Result<Response, HttpError> {
        // At the moment of the effect: a host that lost its lease sends nothing.
        if self.fence.as_ref().is_some_and(|may_act| !may_act()) {
            return Err(HttpError::Denied(
                crate::capabilities::LEASE_NOT_HELD.to_string(),
            ));
        }
        let started = Instant::now();
        let server = ExchangeServer {
            host: http.origin().host_str().unwrap_or_default().to_string(),
            port: http.origin().port_or_known_default(),
            started_at: std::time::SystemTime::now(),
        };
        let (method, path) = (
            crate::capabilities::routes::method_name(req.method).to_string(),
            req.path.clone(),
        );
        // Matched once: the same match decides and is traced.
        let matched = self.routes.find(destination.as_deref(), req.method, &path);
        let route = matched.as_ref().map(|m| m.route.clone());
        let request_bytes = req.body.as_ref().map_or(0, |b| b.len() as u64);
        let mut graphql_read = None;
        let result = http
            .send_matched(
                req,
                &self.tool,
                &self.routes,
                destination.as_deref(),
                matched.as_ref(),
                self.graphql_mutations,
                &mut graphql_read,
            )
            .await;
        // What the trace says the body asked for: the operations and their
        // root fields the decision read (bounded in length).
        let graphql = graphql_read.map(|ops| {
            let mut text = crate::capabilities::graphql::summary(&ops);
            if text.len() > MAX_GRAPHQL_SUMMARY {
                let mut end = MAX_GRAPHQL_SUMMARY;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
                text.push_str(" …");
            }
            text
        });
        self.exchanges.push(HttpExchange {
            destination,
            method,
            path: http.scrub_text(&path),
            route,
            status: result.as_ref().ok().map(|r| r.status),
            request_bytes,
            response_bytes: result.as_ref().map_or(0, |r| r.body.len() as u64),
            graphql,
            error: result.as_ref().err().map(|e| format!("{e:?}")),
            micros: started.elapsed().as_micros() as u64,
            server,
        });
        result
    }

    /// Text cut and scrubbed of the secrets this call's clients inject.
    fn scrub_and_cut(&self, text: &str, cap: usize, already_cut: bool) -> (String, u64) {
        crate::capabilities::Capabilities {
            http: self.http.clone(),
            destinations: self.destinations.clone(),
            ..Default::default()
        }
        .scrub_and_cut(text, cap, already_cut)
    }
}
