//! `/v1/connectors`: the connectors a fleet serves, and the admin's
//! runtime changes to them ([`crate::deployments`]).

use super::*;
use crate::deployments::{ChangedBy, DeployError};

impl From<DeployError> for ApiError {
    fn from(e: DeployError) -> ApiError {
        match e {
            DeployError::Refused(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_connector", m)
            }
            DeployError::FileOwned(m) => ApiError::new(StatusCode::CONFLICT, "file_owned", m),
            DeployError::NameTaken(m) => ApiError::new(StatusCode::CONFLICT, "name_taken", m),
            DeployError::NotFound(m) => ApiError::not_found(m),
            DeployError::Store(e) => HostError::Store(e).into(),
        }
    }
}

/// `caller`, acting in the admin API request this task serves, as the
/// maker of a change of the deployment.
pub(super) fn changed_by(caller: &Principal) -> ChangedBy<'_> {
    let (actor, origin) = match super::super::identity::Acting::now() {
        Some(acting) => (Some(acting.actor), acting.origin),
        None => (None, Default::default()),
    };
    ChangedBy {
        subject: &caller.subject,
        actor,
        origin,
    }
}

pub(super) async fn list_connectors(
    State(host): State<Arc<ServeHost>>,
) -> Result<Json<Value>, ApiError> {
    let host = host.clone();
    let views = tokio::task::spawn_blocking(move || host.host().deployments().connector_views())
        .await
        .map_err(|e| HostError::Unavailable(format!("listing the connectors stopped: {e}")))??;
    Ok(Json(json!({ "connectors": views })))
}

pub(super) async fn get_connector(
    State(host): State<Arc<ServeHost>>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let views = {
        let host = host.clone();
        tokio::task::spawn_blocking(move || host.host().deployments().connector_views())
            .await
            .map_err(|e| HostError::Unavailable(format!("listing the connectors stopped: {e}")))??
    };
    let view = views.into_iter().find(|v| v.name == name).ok_or_else(|| {
        ApiError::not_found(format!(
            "no connector `{name}`: `GET /v1/connectors` lists them"
        ))
    })?;
    Ok(Json(json!(view)))
}

pub(super) async fn put_connector(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(name): Path<String>,
    Body(settings): Body<Value>,
) -> Result<Json<Value>, ApiError> {
    if !settings.is_object() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_connector",
            "the body is the connector's settings: a JSON object with the fields of a `[connectors.NAME]` table, `component` an `oci://` artifact",
        ));
    }
    let view = host
        .host()
        .deployments()
        .put_connector(&name, settings, &changed_by(&caller))
        .await?;
    Ok(Json(json!(view)))
}

pub(super) async fn retire_connector(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let view = host
        .host()
        .deployments()
        .retire_connector(&name, &changed_by(&caller))
        .await?;
    Ok(Json(json!(view)))
}

/// `GET /v1/session-components`: the components sessions may name.
pub(super) async fn list_session_components(
    State(host): State<Arc<ServeHost>>,
) -> Result<Json<Value>, ApiError> {
    let host = host.clone();
    let views = tokio::task::spawn_blocking(move || host.host().session_component_views())
        .await
        .map_err(|e| {
            HostError::Unavailable(format!("listing the session components stopped: {e}"))
        })??;
    Ok(Json(json!({ "session_components": views })))
}

/// `PUT /v1/session-components/{name}`: a component an orchestrator may
/// load for one session, pinned at the digest the caller chose.
pub(super) async fn put_session_component(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(name): Path<String>,
    Body(settings): Body<Value>,
) -> Result<Json<Value>, ApiError> {
    if !settings.is_object() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_connector",
            "the body is the component's connector settings: a JSON object with the fields of a `[connectors.NAME]` table, `component` an `oci://REGISTRY/REPO@sha256:…` artifact",
        ));
    }
    Ok(Json(
        host.host()
            .deployments()
            .put_session_component(&name, settings, &changed_by(&caller))
            .await?,
    ))
}

/// `DELETE /v1/session-components/{name}`: no session opened from now on
/// loads it.
pub(super) async fn drop_session_component(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(name): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(
        host.host()
            .deployments()
            .drop_session_component(&name, &changed_by(&caller))
            .await?,
    ))
}
