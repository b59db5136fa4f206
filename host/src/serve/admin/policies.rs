//! `/v1/policies`: operators' Cedar policy documents, the configuration
//! file's and those stored through the API (issue 56), and the admin's
//! changes to them, acknowledged once every live host applies them
//! ([`crate::host::policies`]).

use super::*;
use crate::host::policies::PolicyChangeError;

impl From<PolicyChangeError> for ApiError {
    fn from(e: PolicyChangeError) -> ApiError {
        match e {
            PolicyChangeError::InvalidName(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_name", m)
            }
            PolicyChangeError::FileOwned(m) => ApiError::new(StatusCode::CONFLICT, "file_owned", m),
            PolicyChangeError::Invalid(errors) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_policy",
                format!(
                    "the policies do not validate against this deployment's schema; nothing was stored:\n{errors}"
                ),
            ),
            PolicyChangeError::NotFound(m) => ApiError::not_found(m),
            PolicyChangeError::Busy(m) => {
                ApiError::new(StatusCode::CONFLICT, "changed_meanwhile", m)
            }
            PolicyChangeError::Schema(m) => HostError::Unavailable(m).into(),
            e @ PolicyChangeError::NotApplied { .. } => {
                ApiError::new(StatusCode::GATEWAY_TIMEOUT, "not_applied", e.to_string())
            }
            PolicyChangeError::Store(e) => HostError::Store(e).into(),
        }
    }
}

/// `GET /v1/policies`: every document, the revision in force here, and
/// the live hosts that have not applied the store's latest change.
pub(super) async fn list_policies(
    State(host): State<Arc<ServeHost>>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!(host.host().policies().views().await?)))
}

/// `PUT /v1/policies/{name}`: the body is the document's Cedar text.
pub(super) async fn put_policy(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(name): Path<String>,
    text: String,
) -> Result<Json<Value>, ApiError> {
    if text.trim().is_empty() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_policy",
            "the body is the document's Cedar text (`Content-Type: text/plain`); to remove the document, `DELETE` it",
        ));
    }
    let changed = host
        .host()
        .policies()
        .put(&name, &text, &super::connectors::changed_by(&caller))
        .await?;
    Ok(Json(json!(changed)))
}

/// `DELETE /v1/policies/{name}`: a document stored through the API.
pub(super) async fn retire_policy(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let changed = host
        .host()
        .policies()
        .retire(&name, &super::connectors::changed_by(&caller))
        .await?;
    Ok(Json(json!(changed)))
}
