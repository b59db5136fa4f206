//! The approvals console at `/console`: a page where a person sees the
//! writes waiting for them (with the exact arguments each approval is
//! bound to) and approves or denies them.
//!
//! Three files compiled into the binary, no build step and nothing fetched
//! from elsewhere at run time. The page holds no data of its own: its script
//! signs in with a bearer token (the admin token or an OIDC token, kept in
//! the tab's `sessionStorage`) and reads and decides through the admin API,
//! where the caller's role is checked as for any client. No cookie is ever
//! set, so a cross-site request carries no credential (CSRF has nothing to
//! ride on); the content security policy allows only this origin's script,
//! style and API, and no framing.
//!
//! With `[oidc] console_client_id`, the page signs in with the issuer
//! itself: the authorization code flow with PKCE (S256), the code and the
//! refresh token redeemed through this host ([`sign_in_routes`]), which
//! forwards them to the token endpoint the issuer's discovery document
//! names and nowhere else. So the page needs no cross-origin request (its
//! policy allows this origin only) and the issuer no CORS; the host adds no
//! secret and keeps nothing: the tokens live in the tab.

use super::ServeHost;
use super::admin::{ApiError, Body};
use super::identity::ExchangeRefused;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

const INDEX_HTML: &str = include_str!("index.html");
const CONSOLE_JS: &str = include_str!("console.js");
const CONSOLE_CSS: &str = include_str!("console.css");

/// The policy every console response carries: only this origin, no inline
/// script or style, no framing, no form posts anywhere.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The console's routes; they need no credential (the files hold no data).
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/console",
            get(|| async { asset(INDEX_HTML, "text/html; charset=utf-8") }),
        )
        .route(
            "/console/",
            get(|| async { asset(INDEX_HTML, "text/html; charset=utf-8") }),
        )
        .route(
            "/console/console.js",
            get(|| async { asset(CONSOLE_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/console/console.css",
            get(|| async { asset(CONSOLE_CSS, "text/css; charset=utf-8") }),
        )
}

/// The sign-in routes: what the page needs to start the authorization
/// code flow, and the token endpoint it redeems through. No credential:
/// they hold nothing, and the issuer checks every code and token.
pub(crate) fn sign_in_routes() -> Router<Arc<ServeHost>> {
    Router::new()
        .route("/console/sign-in", get(sign_in))
        .route("/console/token", post(token))
}

/// `{"oidc": null}` without a console client; else where to send the
/// person and what to ask for.
async fn sign_in(State(host): State<Arc<ServeHost>>) -> Result<Json<Value>, ApiError> {
    let Some(identity) = host.identity() else {
        return Ok(Json(json!({"oidc": null})));
    };
    let config = identity.config();
    let Some(client_id) = &config.console_client_id else {
        return Ok(Json(json!({"oidc": null})));
    };
    let discovery = identity.discovery().await.map_err(unavailable)?;
    let authorization = discovery.authorization_endpoint.clone().ok_or_else(|| {
        unavailable("the issuer's discovery document names no authorization_endpoint".into())
    })?;
    Ok(Json(json!({"oidc": {
        "issuer": config.issuer,
        "client_id": client_id,
        "authorization_endpoint": authorization,
        "scope": config.console_scope,
        "bearer": config.console_bearer,
    }})))
}

/// What the page sends to redeem: a code with its PKCE verifier, or a
/// refresh token.
#[derive(Deserialize)]
#[serde(tag = "grant_type", rename_all = "snake_case", deny_unknown_fields)]
enum Redeem {
    AuthorizationCode {
        code: String,
        code_verifier: String,
        redirect_uri: String,
    },
    RefreshToken {
        refresh_token: String,
    },
}

/// Most bytes of a code, verifier, redirect URI or refresh token.
const MAX_GRANT_FIELD: usize = 8 * 1024;

async fn token(
    State(host): State<Arc<ServeHost>>,
    Body(redeem): Body<Redeem>,
) -> Result<Json<Value>, ApiError> {
    let Some((identity, client_id)) = host
        .identity()
        .and_then(|i| i.config().console_client_id.clone().map(|c| (i, c)))
    else {
        return Err(ApiError::not_found(
            "the console signs in with an identity provider only with [oidc] console_client_id",
        ));
    };
    let mut form: Vec<(&str, &str)> = vec![("client_id", client_id.as_str())];
    match &redeem {
        Redeem::AuthorizationCode {
            code,
            code_verifier,
            redirect_uri,
        } => {
            // RFC 7636 4.1: 43 to 128 unreserved characters.
            let verifier_ok = (43..=128).contains(&code_verifier.len())
                && code_verifier
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
            if !verifier_ok {
                return Err(ApiError::bad_request(
                    "`code_verifier` must be 43 to 128 of A-Z, a-z, 0-9, `-`, `.`, `_`, `~` (RFC 7636)",
                ));
            }
            form.extend([
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("code_verifier", code_verifier.as_str()),
                ("redirect_uri", redirect_uri.as_str()),
            ]);
        }
        Redeem::RefreshToken { refresh_token } => {
            form.extend([
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token.as_str()),
            ]);
        }
    }
    if form
        .iter()
        .any(|(_, v)| v.is_empty() || v.len() > MAX_GRANT_FIELD)
    {
        return Err(ApiError::bad_request(format!(
            "every field is 1 to {MAX_GRANT_FIELD} bytes"
        )));
    }
    match identity.exchange(&form).await {
        // Only the tokens and their lifetime go back to the page.
        Ok(answer) => {
            let mut kept = serde_json::Map::new();
            for key in [
                "id_token",
                "access_token",
                "refresh_token",
                "expires_in",
                "token_type",
            ] {
                if let Some(value) = answer.get(key) {
                    kept.insert(key.to_string(), value.clone());
                }
            }
            Ok(Json(Value::Object(kept)))
        }
        Err(ExchangeRefused::Refused(why)) => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "sign_in_refused",
            format!("the identity provider refused it ({why}): sign in again"),
        )),
        Err(ExchangeRefused::Unavailable(why)) => Err(unavailable(why)),
    }
}

fn unavailable(why: String) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "identity_unavailable",
        format!("the identity provider cannot be reached ({why}); try again shortly"),
    )
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_nothing_from_elsewhere_and_writes_no_markup_from_data() {
        for text in [INDEX_HTML, CONSOLE_JS, CONSOLE_CSS] {
            assert!(
                !text.contains("http://") && !text.contains("https://"),
                "no remote URL"
            );
        }
        assert!(
            !INDEX_HTML.contains("<script>"),
            "no inline script (the CSP forbids it)"
        );
        assert!(
            !INDEX_HTML.contains("style="),
            "no inline style (the CSP forbids it)"
        );
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!CONSOLE_JS.contains(sink), "the script never uses {sink}");
        }
        assert!(CONSOLE_JS.contains("sessionStorage") && !CONSOLE_JS.contains("localStorage"));
        assert!(!CONSOLE_JS.contains("document.cookie"));
    }
}
