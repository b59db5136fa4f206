//! The console's sign-in with the identity provider: what the page needs
//! to start the authorization code flow (PKCE), and the token endpoint it
//! redeems the code and the refresh token through. This host forwards them
//! to the token endpoint the issuer's discovery document names and nowhere
//! else, with the client id and nothing secret, and keeps nothing: the
//! tokens live in the tab. So the page makes no cross-origin request and
//! the issuer needs no CORS.

use super::*;
use crate::serve::identity::ExchangeRefused;

/// The sign-in routes: what the page needs to start the authorization
/// code flow, and the token endpoint it redeems through. No credential:
/// they hold nothing, and the issuer checks every code and token.
pub(super) fn sign_in_routes() -> Router<Arc<ServeHost>> {
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
