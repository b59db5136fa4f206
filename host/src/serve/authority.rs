//! `GET /v1/audit?role=ROLE[&brand=B[&profile=NAME]][&stale_days=N]`: the
//! audit of real authority ([`crate::authority`]) over the admin API, for
//! the components this host runs, its configuration and its store. A
//! `brand` reads that brand's connections and coworkers from the store;
//! `profile` names one of its saved profiles. The answer is the JSON
//! `scout-host audit --json` prints. Which sessions have ended is known
//! exactly here: those no live host serves.

use super::admin::error::ApiError;
use super::{HostError, ServeHost};
use crate::authority::{self, AuditError, Deployment, SessionState, Subject};
use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditQuery {
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    brand: Option<String>,
    #[serde(default)]
    profile: Option<String>,
    #[serde(default)]
    stale_days: Option<String>,
    /// `text`: the readable form `scout-host audit` prints; else JSON.
    #[serde(default)]
    format: Option<String>,
}

fn refusal(status: StatusCode, code: &'static str, message: impl Into<String>) -> Response {
    (
        status,
        Json(json!({"error": {"code": code, "message": message.into()}})),
    )
        .into_response()
}

fn invalid_query(message: impl Into<String>) -> Response {
    refusal(StatusCode::BAD_REQUEST, "invalid_query", message)
}

pub(super) async fn audit_endpoint(
    State(host): State<Arc<ServeHost>>,
    RawQuery(raw): RawQuery,
) -> Response {
    let text = raw.unwrap_or_default();
    let fields: serde_json::Map<String, Value> = url::form_urlencoded::parse(text.as_bytes())
        .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
        .collect();
    let q: AuditQuery = match serde_json::from_value(Value::Object(fields)) {
        Ok(q) => q,
        Err(e) => return invalid_query(e.to_string()),
    };
    let Some(role) = q.role else {
        return invalid_query(format!(
            "give `role`: one of {}",
            host.host().operator_roles().role_names()
        ));
    };
    let subject = match Subject::among(&role, host.host().operator_roles()) {
        Ok(s) => s,
        Err(e) => return invalid_query(e.to_string()),
    };
    let stale_days = match q.stale_days.as_deref() {
        None => authority::DEFAULT_STALE_DAYS,
        Some(t) => match t
            .parse::<u64>()
            .map_err(|_| ())
            .and_then(|d| authority::check_stale_days(d).map_err(|_| ()))
        {
            Ok(d) => d,
            Err(()) => {
                return invalid_query(format!(
                    "`stale_days` must be a number from 1 to {}",
                    authority::MAX_STALE_DAYS
                ));
            }
        },
    };
    if q.profile.is_some() && q.brand.is_none() {
        return invalid_query("`profile` names a saved profile of `brand`: give both");
    }
    let text = match q.format.as_deref() {
        None | Some("json") => false,
        Some("text") => true,
        Some(other) => {
            return invalid_query(format!("`format` is `json` or `text`, not `{other}`"));
        }
    };
    let brand = q.brand.map(|b| b.trim().to_string());
    let profile = q.profile;
    let answer = tokio::task::spawn_blocking(move || {
        host.audit(subject, brand.as_deref(), profile.as_deref(), stale_days)
    })
    .await;
    match answer {
        Ok(Ok(mut audit)) => {
            audit.switches_from = authority::SWITCHES_OF_THE_HOST;
            if text {
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "text/plain; charset=utf-8",
                    )],
                    audit.to_text(),
                )
                    .into_response()
            } else {
                Json(audit).into_response()
            }
        }
        Ok(Err(Refused::Host(e))) => ApiError::from(e).into_response(),
        Ok(Err(Refused::Audit(e))) => match e {
            AuditError::Store(e) => ApiError::from(HostError::from(e)).into_response(),
            other => refusal(StatusCode::BAD_REQUEST, "bad_request", other.to_string()),
        },
        Err(_) => refusal(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unavailable",
            "the audit stopped",
        ),
    }
}

enum Refused {
    Host(HostError),
    Audit(AuditError),
}

impl ServeHost {
    /// The audit of `subject`'s session on this host; see [`crate::authority`].
    fn audit(
        &self,
        subject: Subject,
        brand: Option<&str>,
        profile: Option<&str>,
        stale_days: u64,
    ) -> Result<authority::Audit, Refused> {
        let mut subject = subject;
        if let Some(brand) = brand {
            let saved = self
                .host()
                .sessions()
                .profile(brand, subject.role, profile)
                .map_err(Refused::Host)?;
            subject = subject.with_profile(profile.map(str::to_string), saved);
            subject.brand = Some(brand.to_string());
        }
        let roster = self.host().roster();
        let deployment = Deployment {
            catalog: (*self.host().catalog()).clone(),
            components: self.host().components(),
            platform: roster.platform.clone(),
            not_offered: roster.not_offered.clone(),
            ..Default::default()
        };
        let live: BTreeSet<String> = self
            .all_sessions()
            .map_err(Refused::Host)?
            .iter()
            .filter_map(|v| v["id"].as_str().map(str::to_string))
            .collect();
        let sessions = |id: &str| {
            Ok(if live.contains(id) {
                SessionState::Live
            } else {
                SessionState::Ended("no live host serves it".into())
            })
        };
        self.host()
            .resolving()
            .audited(
                &sessions,
                stale_days,
                self.host().config().require_review,
                |view| {
                    authority::audit(
                        &deployment,
                        Some(self.host().config()),
                        self.host().boundary().switches(),
                        &subject,
                        Some(view),
                    )
                },
            )
            .map_err(Refused::Audit)
    }
}
