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
//! refresh token redeemed through this host (`admin/sign_in.rs`), which
//! forwards them to the token endpoint the issuer's discovery document
//! names and nowhere else. So the page needs no cross-origin request (its
//! policy allows this origin only) and the issuer no CORS; the host adds no
//! secret and keeps nothing: the tokens live in the tab.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

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
