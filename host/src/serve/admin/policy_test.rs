//! `POST /v1/policies/test`: the what-if before a policy change, on the
//! running host (issue 56, item 5). The body names one candidate document
//! (`{"name", "text"}`) that replaces the document of that name among
//! those in force, or is added; it is validated against this host's
//! schema (remote servers' tools as listed now included) and the calls
//! the store recorded are replayed under it, exactly as
//! `scout-host policy test` replays them
//! ([`crate::policy::operator::replay`]). Nothing is stored or applied.
//!
//! Admin and auditor only: the answer tells what the recorded calls did.
//! Arguments are opened for a caller who may read each brand's sealed
//! arguments (as the trace shows them); any other call is replayed without
//! its arguments and a policy reading them leaves it undecidable.

use super::*;
use crate::policy::operator::replay::{self, Selection};
use crate::policy::operator::{
    DeploymentSchema, OperatorPolicies, PolicyDoc, PolicyRevision, PolicySource,
};

/// Most recorded calls one request replays (the latest).
pub(super) const REPLAY_MAX: usize = 10_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PolicyTestBody {
    /// The candidate document's name.
    name: String,
    /// Its Cedar text.
    text: String,
    /// Only this session's calls.
    #[serde(default)]
    session: Option<String>,
    /// Only calls after this trace row (`seq`).
    #[serde(default)]
    since: Option<i64>,
}

pub(super) async fn test_policy(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    Body(body): Body<PolicyTestBody>,
) -> Result<Json<Value>, ApiError> {
    if !(caller.auditor || caller.every_brand == Some(super::super::identity::Role::Admin)) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the policy what-if replays every brand's recorded calls: it needs the admin role over every brand or an auditor of every brand",
        ));
    }
    if body.name.trim().is_empty() {
        return Err(ApiError::invalid_field(
            "invalid_policy",
            "name",
            "the candidate document needs a name (the document it replaces, or a new one)",
        ));
    }
    let served = host.host();
    let boundary = served.boundary();
    // The documents in force on the fleet: the configuration's, then those
    // stored through the API (`GET /v1/policies`, deleted ones left out).
    let views = served.policies().views().await?;
    let in_force: Vec<PolicyDoc> = views
        .policies
        .iter()
        .filter(|view| view.retired != Some(true))
        .map(|view| PolicyDoc {
            name: view.name.clone(),
            source: match (&view.path, view.source) {
                (Some(path), "file") => PolicySource::File(path.into()),
                _ => PolicySource::Api,
            },
            text: view.text.clone(),
        })
        .collect();
    let candidate = [PolicyDoc {
        name: body.name.clone(),
        source: PolicySource::Api,
        text: body.text,
    }];
    let docs = replay::with_candidate(&in_force, &candidate);
    // This host's schema now: every tool it serves, remote servers' as
    // listed and reviewed at this moment.
    let components = served.components();
    let schema = DeploymentSchema::of(&components.values().map(|c| c.as_ref()).collect::<Vec<_>>())
        .map_err(|e| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                format!("this host cannot build its deployment's policy schema: {e}"),
            )
        })?;
    let revision = PolicyRevision::of(views.stored_change, &docs);
    let policies = OperatorPolicies::compile(&docs, &schema, revision)
        .map_err(|errors| ApiError::invalid_field("invalid_policy", "text", errors.to_string()))?;
    let selection = Selection {
        session: body.session,
        after_seq: body.since.unwrap_or(0).max(0),
        since_ms: None,
        limit: Some(REPLAY_MAX),
    };
    let shown = boundary.clone();
    let open = move |event: &crate::store::TraceEvent| {
        let mut row = json!(event);
        shown.shown_row(&mut row, caller.reads_sealed_arguments(&event.brand));
        replay::shown_arguments(&row)
    };
    let calls = replay::recorded_calls(served.store().as_ref(), &selection, &open)
        .await
        .map_err(|e| ApiError::from(HostError::from(e)))?;
    // Up to REPLAY_MAX decisions, each some microseconds: off the workers
    // that answer requests.
    let report = tokio::task::spawn_blocking(move || replay::replay(&calls, &policies))
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "unavailable",
                "the replay stopped",
            )
        })?;
    Ok(Json(json!(report)))
}
