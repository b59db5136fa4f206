//! `metrics_listen`: a listener that serves `/metrics` and nothing else, so
//! a scraper (Prometheus, an OpenTelemetry collector) never holds the admin
//! token, which can approve writes and store connections. On a loopback or
//! pod address it asks for no credential; with `metrics_token_env`, for
//! that token alone, which reads nothing but this.

use super::ServeHost;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The metrics listener's routes.
pub(super) fn router() -> axum::Router<Arc<ServeHost>> {
    axum::Router::new().route("/metrics", axum::routing::get(scrape))
}

/// The OpenMetrics text, once the metrics token (when one is set) is shown.
async fn scrape(State(host): State<Arc<ServeHost>>, request: Request) -> Response {
    if let Some(expected) = host.metrics_token_digest {
        let shown = super::identity::bearer(request.headers()).map(super::digest);
        if shown != Some(expected) {
            return (
                StatusCode::UNAUTHORIZED,
                [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
                "this listener serves /metrics to the token metrics_token_env names",
            )
                .into_response();
        }
    }
    openmetrics(&host).await
}

/// `/metrics` as OpenMetrics text, on either listener.
pub(super) async fn openmetrics(host: &ServeHost) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        host.host().metrics_text().await,
    )
        .into_response()
}
