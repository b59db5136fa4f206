//! A brand's connections: stored (a secret, an OAuth grant, client
//! credentials or a broker's connection), disabled, shared and listed; never
//! shown back.

use super::*;

/// A connection as the admin API takes it: exactly one of a `secret` (the
/// token itself; for `google` with its `scopes`) or a token source the host
/// obtains tokens from (`oauth`, `client_credentials`, `broker`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PutConnection {
    /// The credential. For `google`: the token.
    #[serde(default)]
    secret: Option<String>,
    /// For `google` only, with `secret`: the scopes the token holds.
    #[serde(default)]
    scopes: Option<Vec<String>>,
    #[serde(default)]
    oauth: Option<Value>,
    #[serde(default)]
    client_credentials: Option<Value>,
    #[serde(default)]
    broker: Option<Value>,
}

/// The Tailscale API's read scopes (seed 000: "every token is requested
/// with read scopes only").
pub(super) fn is_read_scope(scope: &str) -> bool {
    scope.ends_with(":read")
}

/// The token source a body names, checked field by field (422 naming the
/// field at fault).
pub(super) fn token_source(
    connector: &str,
    kind: &'static str,
    body: Value,
) -> Result<crate::credentials::TokenSource, ApiError> {
    use crate::credentials::TokenSource;
    use crate::credentials::tokens::{BrokerConnection, ClientGrant, RefreshGrant};
    let invalid = |field: String, message: String| {
        ApiError::invalid_field("invalid_connection", field, message)
    };
    // serde names a missing or unknown field in its message; a wrong type
    // or value is told without repeating what was sent (it may be a
    // secret in the wrong field).
    let read = |e: serde_json::Error| {
        let text = e.to_string();
        let named = text.starts_with("missing field") || text.starts_with("unknown field");
        let field = text
            .split('`')
            .nth(1)
            .filter(|_| named)
            .map_or_else(|| kind.to_string(), |f| format!("{kind}.{f}"));
        let message = if named {
            format!("`{kind}`: {text}")
        } else {
            let expected = text
                .split(", expected ")
                .nth(1)
                .map(|e| format!(" (expected {e})"))
                .unwrap_or_default();
            format!("`{kind}`: a field has the wrong type or value{expected}")
        };
        invalid(field, message)
    };
    let source = match kind {
        "oauth" => {
            let grant = serde_json::from_value::<RefreshGrant>(body).map_err(read)?;
            if grant.issued.is_some() {
                return Err(invalid(
                    "oauth.issued".into(),
                    "`oauth.issued` is the host's own record of a token it was issued: leave it out".into(),
                ));
            }
            TokenSource::Oauth(grant)
        }
        "client_credentials" => TokenSource::ClientCredentials(
            serde_json::from_value::<ClientGrant>(body).map_err(read)?,
        ),
        _ => TokenSource::Broker(serde_json::from_value::<BrokerConnection>(body).map_err(read)?),
    };
    source
        .validate()
        .map_err(|e| invalid(e.field.clone(), e.to_string()))?;
    if connector == crate::credentials::GOOGLE && source.scopes().is_empty() {
        return Err(invalid(
            format!("{kind}.scopes"),
            "a google connection names the scopes it was granted (they decide which Google products it serves)".into(),
        ));
    }
    if connector == "tailscale"
        && (source.scopes().is_empty() || !source.scopes().iter().all(|s| is_read_scope(s)))
    {
        return Err(invalid(
            format!("{kind}.scopes"),
            "a tailscale connection asks for read scopes only (`devices:core:read`, `users:read`, `policy_file:read`, `dns:read`)".into(),
        ));
    }
    Ok(source)
}

/// What a brand's connection to `connector` is, as the audit trail says
/// it: how its credential is given (`secret`, `oauth`, ...), never the
/// credential; `null` when there is none.
fn connection_shown(host: &ServeHost, brand: &str, connector: &str) -> Value {
    host.host()
        .list_connections(brand)
        .ok()
        .and_then(|list| list.into_iter().find(|(c, _)| c == connector))
        .map(|(_, source)| json!({"source": source}))
        .unwrap_or(Value::Null)
}

pub(super) async fn put_connection(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path((brand, connector)): Path<(String, String)>,
    Body(request): Body<PutConnection>,
) -> Result<Json<Value>, ApiError> {
    let before = connection_shown(&host, &brand, &connector);
    let google = connector == crate::credentials::GOOGLE;
    if !google && host.host().catalog().connector(&connector).is_none() {
        return Err(ApiError::not_found(format!(
            "`{connector}` is not a connector this host serves or the seed catalogue names: add a `[connectors.{connector}]` table with its component to serve's configuration and restart"
        )));
    }
    let PutConnection {
        secret,
        scopes,
        oauth,
        client_credentials,
        broker,
    } = request;
    let sources: Vec<(&'static str, Value)> = [
        ("oauth", oauth),
        ("client_credentials", client_credentials),
        ("broker", broker),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect();
    let sealed = match (secret, sources.len()) {
        (Some(secret), 0) => {
            if secret.is_empty() || secret.len() > 16 * 1024 {
                return Err(ApiError::bad_request("`secret` must be 1 to 16384 bytes"));
            }
            // Stored as given, it would read back as a token source that
            // was never checked.
            if crate::credentials::TokenSource::from_sealed(&secret).is_some() {
                return Err(ApiError::invalid_field(
                    "invalid_connection",
                    "secret",
                    "a `secret` cannot be written as a stored token source: give the source as `oauth`, `client_credentials` or `broker`",
                ));
            }
            match (google, scopes) {
                (true, Some(scopes)) => {
                    crate::credentials::GoogleConnection::new(secret, scopes).encode()
                }
                (true, None) => {
                    return Err(ApiError::bad_request("a google connection needs `scopes`"));
                }
                (false, Some(_)) => {
                    return Err(ApiError::bad_request(
                        "`scopes` is for the google connection only",
                    ));
                }
                (false, None) => secret,
            }
        }
        (None, 1) => {
            if scopes.is_some() {
                return Err(ApiError::invalid_field(
                    "invalid_connection",
                    "scopes",
                    "a token source names its scopes inside it",
                ));
            }
            let (kind, body) = sources
                .into_iter()
                .next()
                .unwrap_or(("broker", Value::Null));
            token_source(&connector, kind, body)?.seal_text()
        }
        _ => {
            return Err(ApiError::invalid_field(
                "invalid_connection",
                "secret",
                "give exactly one of `secret`, `oauth`, `client_credentials` or `broker`",
            ));
        }
    };
    host.host().put_connection(&brand, &connector, &sealed)?;
    super::record_change(
        &host,
        &caller,
        "",
        &brand,
        crate::trace::Change::ConnectionStored,
        json!({"connector": connector, "before": before, "after": connection_shown(&host, &brand, &connector)}),
    )
    .await?;
    // Nothing of it is ever echoed.
    Ok(Json(
        json!({"brand": brand, "connector": connector, "stored": true}),
    ))
}

pub(super) async fn disable_connection(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path((brand, connector)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let before = connection_shown(&host, &brand, &connector);
    if host.host().disable_connection(&brand, &connector)? {
        super::record_change(
            &host,
            &caller,
            "",
            &brand,
            crate::trace::Change::ConnectionDisabled,
            json!({"connector": connector, "before": before, "after": null}),
        )
        .await?;
        Ok(Json(
            json!({"brand": brand, "connector": connector, "disabled": true}),
        ))
    } else {
        Err(ApiError::not_found(format!(
            "brand `{brand}` has no `{connector}` connection"
        )))
    }
}

pub(super) async fn list_connections(
    State(host): State<Arc<ServeHost>>,
    Path(brand): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let expired = host.host().expired_connections(&brand)?;
    let list: Vec<Value> = host
        .host()
        .list_connections(&brand)?
        .into_iter()
        .map(|(c, source)| {
            let mut shown = json!({"connector": c, "source": source});
            if expired.contains(&c) {
                shown["state"] = json!(crate::credentials::TokenError::EXPIRED);
            } else if let Some(needed) = remote_scope_needed(&host, &c) {
                shown["state"] = json!(format!(
                    "{}{}",
                    crate::remote::oauth::STEP_UP_PREFIX,
                    needed.into_iter().collect::<Vec<_>>().join(" ")
                ));
            }
            shown
        })
        .collect();
    Ok(Json(json!({"brand": brand, "connections": list})))
}

/// What the remote server `connector` asked for beyond its token, if it is
/// one and did.
fn remote_scope_needed(
    host: &ServeHost,
    connector: &str,
) -> Option<std::collections::BTreeSet<String>> {
    let url = host.host().settings(connector)?.mcp.clone()?;
    crate::remote::oauth::scope_needed(crate::remote::endpoint(&url).ok()?.as_str())
}

/// Refuses a share by a caller who is not an admin of both brands. A
/// share lends `owner`'s credential to `with`: every session of `with`
/// then acts with it, so it is a change to both brands, and the role over
/// `owner` alone (what the route's `{brand}` checks) is not enough. The
/// host has no account owner above the brands: a global admin (or the
/// admin token), or a caller who is admin of both, may share.
fn require_admin_of_both(
    caller: &Principal,
    owner: &str,
    connector: &str,
    with: &str,
) -> Result<(), ApiError> {
    use crate::serve::identity::Role;
    let lacking: Vec<String> = [owner, with]
        .into_iter()
        .filter(|b| caller.role_for(b) != Some(Role::Admin))
        .map(|b| format!("`{}`", b.escape_debug()))
        .collect();
    if lacking.is_empty() {
        return Ok(());
    }
    let held = match caller.every_brand {
        Some(role) => format!("your role over every brand is `{}`", role.name()),
        None if caller.brands.is_empty() => "you hold no role over a brand".to_string(),
        None => format!(
            "your roles: {}",
            caller
                .brands
                .iter()
                .map(|(b, r)| format!("{}:{}", r.name(), b.escape_debug()))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        "brand_not_granted",
        format!(
            "sharing brand `{}`'s `{}` connection with brand `{}` lends its credential to every session of `{}`, so it needs the admin role over both brands (a global admin, or admin of each); you are not admin of {}: {held}. Ask an admin of both brands",
            owner.escape_debug(),
            connector.escape_debug(),
            with.escape_debug(),
            with.escape_debug(),
            lacking.join(" and "),
        ),
    ))
}

/// Records a share or unshare on both brands' audit trail: under the
/// owning brand (`with` names the other) and under the brand it is
/// shared with (`owner` names the lender), each with the caller as actor.
async fn record_share(
    host: &ServeHost,
    caller: &Principal,
    rule: crate::trace::Change,
    owner: &str,
    connector: &str,
    with: &str,
    shared: bool,
) -> Result<(), ApiError> {
    let (before, after) = if shared {
        (Value::Null, json!({"shared_with": with}))
    } else {
        (json!({"shared_with": with}), Value::Null)
    };
    let detail = json!({"connector": connector, "owner": owner, "with": with, "before": before, "after": after});
    for brand in [owner, with] {
        super::record_change(host, caller, "", brand, rule, detail.clone()).await?;
    }
    Ok(())
}

pub(super) async fn share(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path((brand, connector, with)): Path<(String, String, String)>,
) -> Result<Json<Value>, ApiError> {
    if brand == with {
        return Err(ApiError::bad_request(
            "a brand cannot share a connection with itself",
        ));
    }
    crate::config::check_brand_name(&with)
        .map_err(|why| ApiError::invalid_field("invalid_share", "with", why))?;
    require_admin_of_both(&caller, &brand, &connector, &with)?;
    host.host().share_connection(&brand, &connector, &with)?;
    record_share(
        &host,
        &caller,
        crate::trace::Change::ConnectionShared,
        &brand,
        &connector,
        &with,
        true,
    )
    .await?;
    Ok(Json(
        json!({"owner": brand, "connector": connector, "shared_with": with}),
    ))
}

pub(super) async fn unshare(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path((brand, connector, with)): Path<(String, String, String)>,
) -> Result<Json<Value>, ApiError> {
    // Withdrawing a share takes authority away only: the lending brand's
    // admin (the route's `{brand}` check) may always stop lending its own
    // credential, as it may disable it; both brands' trails record it.
    if host.host().unshare_connection(&brand, &connector, &with)? {
        record_share(
            &host,
            &caller,
            crate::trace::Change::ConnectionUnshared,
            &brand,
            &connector,
            &with,
            false,
        )
        .await?;
        Ok(Json(
            json!({"owner": brand, "connector": connector, "unshared_with": with}),
        ))
    } else {
        Err(ApiError::not_found("no such share"))
    }
}
