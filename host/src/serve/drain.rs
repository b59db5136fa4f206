//! Stopping within a bounded grace, and the probes a platform asks.
//!
//! A SIGTERM (or SIGINT) starts the drain: from that moment the boundary
//! refuses every new call and every new session (`host_shutdown`), and
//! every call waiting for a person ends without running, its approval
//! revoked by `host_shutdown`. Calls already running finish, and their
//! answers are written to their clients before the listener closes (each
//! request that is not a stream listener is counted until its response
//! body has been handed over). Then the sessions' event streams end and
//! the process exits 0. All of it within `shutdown_grace_secs`: what is
//! still open when the grace ends is cut, and recovered as `interrupted`
//! (by the next start on SQLite; on PostgreSQL by the host itself, as it
//! then gives its lease back, so the others never count a drained host as
//! lost). A SIGHUP does not stop the host: it is logged and ignored (the
//! configuration is read at start).
//!
//! `/livez` and `/readyz` answer without a credential and whatever the
//! `Host` header (a kubelet sends the pod's IP; a cloud load balancer the
//! instance's), on the main listener and on `probe_listen`; the readiness
//! reason is one of a fixed few, never a driver's error text.

use super::ServeHost;
use axum::Json;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

/// Requests being answered (stream listeners aside), so that a drain
/// knows when every answer has been handed to its client.
#[derive(Default)]
pub(crate) struct InFlight {
    count: AtomicUsize,
    idle: tokio::sync::Notify,
}

/// One request being answered; counted until dropped.
pub(crate) struct Entered(Arc<InFlight>);

impl InFlight {
    fn enter(self: &Arc<Self>) -> Entered {
        self.count.fetch_add(1, Ordering::SeqCst);
        Entered(self.clone())
    }

    /// How many requests are being answered now.
    pub(crate) fn now(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Returns once no request is being answered.
    async fn until_idle(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.now() == 0 {
                return;
            }
            idle.await;
        }
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// A response body that keeps its request counted until it has been
/// handed over whole (or dropped, the client gone).
struct Tracked {
    body: Body,
    _entered: Entered,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Counts every request but an MCP stream listener (`GET`, open for the
/// session's life) until its response has been handed over.
pub(super) async fn track(
    State(host): State<Arc<ServeHost>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() == Method::GET && request.uri().path().starts_with("/mcp/") {
        return next.run(request).await;
    }
    let entered = host.in_flight.enter();
    let response = next.run(request).await;
    let (parts, body) = response.into_parts();
    Response::from_parts(
        parts,
        Body::new(Tracked {
            body,
            _entered: entered,
        }),
    )
}

/// The probe routes: no credential, no Host check.
pub(super) fn probes() -> axum::Router<Arc<ServeHost>> {
    axum::Router::new()
        .route("/livez", axum::routing::get(livez))
        .route("/readyz", axum::routing::get(readyz))
        // The older name, for load balancers configured with it.
        .route("/v1/ready", axum::routing::get(readyz))
}

/// The process is up and its event loop turns (this answer is written by it).
async fn livez() -> Json<serde_json::Value> {
    Json(json!({"live": true}))
}

/// 200 when the store answers, this host holds its lease and is not
/// draining; 503 with the reason otherwise.
async fn readyz(State(host): State<Arc<ServeHost>>) -> Response {
    match tokio::task::spawn_blocking(move || host.host().readiness()).await {
        Ok(Ok(())) => Json(json!({"ready": true})).into_response(),
        Ok(Err(why)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"ready": false, "reason": why})),
        )
            .into_response(),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"ready": false, "reason": "the readiness check did not finish"})),
        )
            .into_response(),
    }
}

/// What part of the grace the drain gives running calls; the rest is kept
/// for their answers to be written and the listener to close.
fn calls_share(grace: Duration) -> Duration {
    grace.saturating_sub((grace / 4).min(Duration::from_secs(2)))
}

/// The drain (see the module docs): returns when the listener may stop
/// taking connections.
pub(super) async fn drain(host: &ServeHost, grace: Duration) {
    host.host().begin_shutdown();
    let waiting = host.in_flight.now();
    tracing::warn!(
        requests = waiting,
        grace_secs = grace.as_secs(),
        "shutting down: new sessions and calls are refused, calls waiting for a person end, running calls finish"
    );
    if tokio::time::timeout(calls_share(grace), host.in_flight.until_idle())
        .await
        .is_err()
    {
        tracing::warn!(
            requests = host.in_flight.now(),
            "the shutdown grace ran out with requests still being answered; they are cut"
        );
    }
    // The sessions' event streams end, so no connection keeps the listener.
    host.host().end_streams();
}

/// Logs and ignores every SIGHUP: nothing is reloaded, and the host keeps
/// serving (the default action would end the process).
pub(super) fn ignore_hangups() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::hangup()) {
            Ok(mut hangups) => {
                tokio::spawn(async move {
                    while hangups.recv().await.is_some() {
                        // Said whatever the log's filter: it answers an
                        // operator's signal.
                        crate::logs::say(
                            "SIGHUP ignored: the configuration and switches are read at start; restart the host (SIGTERM) to change them",
                        );
                    }
                });
            }
            Err(e) => tracing::warn!(error = %e, "cannot handle SIGHUP"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_count_wakes_its_waiter_when_the_last_request_ends() {
        let in_flight = Arc::new(InFlight::default());
        in_flight.until_idle().await;
        let (one, two) = (in_flight.enter(), in_flight.enter());
        let waiter = tokio::spawn({
            let in_flight = in_flight.clone();
            async move { in_flight.until_idle().await }
        });
        drop(one);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "one request is still being answered");
        drop(two);
        waiter.await.unwrap();
        assert_eq!(in_flight.now(), 0);
    }

    #[test]
    fn calls_get_the_grace_less_a_margin_for_the_answers() {
        assert_eq!(
            calls_share(Duration::from_secs(20)),
            Duration::from_secs(18)
        );
        assert_eq!(calls_share(Duration::from_secs(4)), Duration::from_secs(3));
        assert_eq!(calls_share(Duration::ZERO), Duration::ZERO);
    }
}
