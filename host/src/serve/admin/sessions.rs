//! Sessions and the profiles they run from: open, list, show, end, resume, and
//! the configuration an orchestrator hands its agent runtime.

use super::*;

pub(super) async fn create_session(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Body(mut request): Body<OpenSession>,
) -> Result<Response, ApiError> {
    let brand = request.brand.trim().to_string();
    if !caller.may_in(&brand, "POST", "/v1/sessions") {
        return Err(ApiError::brand_refused(&caller, &brand));
    }
    // Components for this session alone: pulled and verified here first
    // (only digests an operator stored), kept until the session holds them.
    let pinned = host
        .host()
        .load_session_components(request.components.as_deref().unwrap_or_default())
        .await?;
    request.loaded = pinned.names.clone();
    let view = host.open_session(&request);
    drop(pinned);
    let view = view?;
    super::record_change(
        &host,
        &caller,
        &view.id,
        &view.brand,
        crate::trace::Change::SessionOpened,
        json!({"after": {"role": view.role, "brand": view.brand, "profile": view.profile,
                         "connectors": request.connectors, "tools": request.tools,
                         "components": request.components, "limits": view.limits}}),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

pub(super) async fn list_sessions(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
) -> Result<Json<Value>, ApiError> {
    let sessions: Vec<Value> = host
        .all_sessions()?
        .into_iter()
        .filter(|v| v["brand"].as_str().is_some_and(|b| caller.sees(b)))
        .collect();
    Ok(Json(json!({"sessions": sessions})))
}

/// The 404 of a session that is not open, or not the caller's to see.
fn no_session(id: &str) -> String {
    format!("no open session `{id}`")
}

pub(super) async fn get_session(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    super::require_session_brand(
        &host,
        &caller,
        &id,
        "GET",
        "/v1/sessions/{id}",
        &no_session(&id),
    )?;
    let view = host
        .session_view(&id)?
        .ok_or_else(|| ApiError::not_found(format!("no open session `{id}`")))?;
    Ok(Json(view))
}

pub(super) async fn end_session(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    super::require_session_brand(
        &host,
        &caller,
        &id,
        "DELETE",
        "/v1/sessions/{id}",
        &no_session(&id),
    )?;
    use crate::serve::SessionEnd;
    let before = host.session_view(&id)?;
    let ended = host.host().end_any_session(&id).await?;
    if let (Some(before), false) = (&before, matches!(ended, SessionEnd::Unknown)) {
        super::record_change(
            &host,
            &caller,
            &id,
            before["brand"].as_str().unwrap_or_default(),
            crate::trace::Change::SessionEnded,
            json!({"before": {"role": before["role"], "brand": before["brand"], "profile": before["profile"]}}),
        )
        .await?;
    }
    match ended {
        SessionEnd::Ended => Ok(Json(json!({"ended": id})).into_response()),
        SessionEnd::Ending { host } => Ok((
            StatusCode::ACCEPTED,
            Json(json!({
                "ending": id,
                "host": host,
                "note": "the host serving this session has not ended it yet; it ends it when it next hears from the database, and a host that stays silent is fenced when its lease runs out",
            })),
        )
            .into_response()),
        SessionEnd::Unknown => Err(ApiError::not_found(format!("no open session `{id}`"))),
    }
}

/// A person resumes a session that repeated refusals paused: its calls are
/// decided again and its refusals count afresh. Recorded in its trace
/// under the verified caller.
pub(super) async fn resume_session(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    super::require_session_brand(
        &host,
        &caller,
        &id,
        "POST",
        "/v1/sessions/{id}/resume",
        &no_session(&id),
    )?;
    // A session the fleet keeps is taken up here to be resumed.
    let live = match host.host().session(&id) {
        Some(live) => Some(live),
        None => host.take_up(&id, None).await,
    };
    let Some(live) = live else {
        return Err(match host.session_view(&id)? {
            Some(_) => ApiError::new(
                StatusCode::CONFLICT,
                "served_elsewhere",
                format!("session `{id}` is served by another host: resume it through that host"),
            ),
            None => ApiError::not_found(format!("no open session `{id}`")),
        });
    };
    let was_paused = live.session.resume();
    if was_paused {
        let by = format!("{} (admin API)", caller.subject);
        let event = crate::trace::session_resumed(
            &live.session,
            by,
            caller.actor(),
            super::request_origin(),
        );
        host.host().trace().record(&event).await?;
    }
    Ok(Json(
        json!({"session": id, "resumed": was_paused, "by": caller.subject}),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AgentConfigQuery {
    #[serde(default)]
    format: Option<String>,
}

/// The session's allowlist and MCP endpoints as an agent runtime takes
/// them (see [`crate::serve::agent_config`]); never its token.
pub(super) async fn agent_config(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    super::require_session_brand(
        &host,
        &caller,
        &id,
        "GET",
        "/v1/sessions/{id}/agent-config",
        &no_session(&id),
    )?;
    use crate::serve::agent_config::{FORMAT_NAMES, Format, TOKEN_ENV};
    let q: AgentConfigQuery = query(raw)?;
    let format = q
        .format
        .as_deref()
        .and_then(Format::from_name)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                format!("`format` must be one of {FORMAT_NAMES}"),
            )
        })?;
    let config = host
        .agent_config(&id, format)
        .ok_or_else(|| ApiError::not_found(format!("no open session `{id}`")))?;
    Ok((
        [(
            header::HeaderName::from_static("scout-token-env"),
            TOKEN_ENV,
        )],
        Json(config),
    )
        .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SaveProfile {
    /// `coworker` (coworker and specialist), `goal_agent` or `reviewer`.
    kind: ProfileKind,
    profile: Profile,
}

pub(super) async fn save_profile(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path((brand, name)): Path<(String, String)>,
    Body(mut request): Body<SaveProfile>,
) -> Result<Json<Value>, ApiError> {
    // Who made the grant is the verified caller, whatever the body says.
    request.profile.grant.granted_by = Some(caller.subject.clone());
    let before = host.host().profiles().load(&brand, &name).await?;
    if request.profile.name != name {
        return Err(ApiError::bad_request(format!(
            "the profile is named `{}` but the path says `{name}`",
            request.profile.name
        )));
    }
    match host
        .host()
        .profiles()
        .save(
            &brand,
            &request.profile,
            request.kind,
            &host.host().catalog(),
        )
        .await
    {
        Ok(()) => {
            // A session opened from it keeps what it was opened with; the
            // revision is bumped so anything derived from profiles is redone.
            host.host().boundary().changed();
            super::record_change(
                &host,
                &caller,
                "",
                &brand,
                crate::trace::Change::ProfileSaved,
                json!({"profile": name, "before": before, "after": {"kind": request.kind, "profile": request.profile}}),
            )
            .await?;
            Ok(Json(json!({"saved": name, "kind": request.kind})))
        }
        Err(SaveProfileError::Invalid(rule)) => {
            Err(HostError::InvalidProfile(rule.to_string()).into())
        }
        Err(SaveProfileError::Store(e)) => Err(e.into()),
    }
}

pub(super) async fn get_profile(
    State(host): State<Arc<ServeHost>>,
    Path((brand, name)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let saved = host
        .host()
        .profiles()
        .load(&brand, &name)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("brand `{brand}` has no profile `{name}`")))?;
    Ok(Json(json!(saved)))
}

pub(super) async fn list_profiles(
    State(host): State<Arc<ServeHost>>,
    Path(brand): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(
        json!({"profiles": host.host().profiles().list(&brand).await?}),
    ))
}

pub(super) async fn delete_profile(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Path((brand, name)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let before = host.host().profiles().load(&brand, &name).await?;
    if host.host().profiles().delete(&brand, &name).await? {
        super::record_change(
            &host,
            &caller,
            "",
            &brand,
            crate::trace::Change::ProfileDeleted,
            json!({"profile": name, "before": before, "after": null}),
        )
        .await?;
        Ok(Json(json!({"deleted": name})))
    } else {
        Err(ApiError::not_found(format!(
            "brand `{brand}` has no profile `{name}`"
        )))
    }
}
