//! The admin API's one error shape, `{"error": {"code", "message"}}` with
//! a stable `code`, and the JSON body and query extractors whose refusals
//! take that shape. Every handler module uses these; none of them needs the
//! router.

use super::super::HostError;
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A refusal, as JSON: `{"error": {"code", "message"}}`.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// The request field at fault, where one is (`oauth.token_url`).
    field: Option<String>,
    /// The rule that already ended what the request wanted to change
    /// (an approval ended by `host_lost`), where one did.
    rule: Option<&'static str>,
    /// Seconds until the request may succeed (`Retry-After`), where known.
    retry_after: Option<u64>,
}

impl ApiError {
    pub(crate) fn new(
        status: StatusCode,
        code: &'static str,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
            rule: None,
            retry_after: None,
        }
    }
    /// The same error, naming the rule that ended its object.
    pub(crate) fn with_rule(self, rule: &'static str) -> ApiError {
        ApiError {
            rule: Some(rule),
            ..self
        }
    }
    /// 422: the body's `field` is not acceptable.
    pub(crate) fn invalid_field(
        code: &'static str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError {
            field: Some(field.into()),
            ..ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
        }
    }
    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }
    /// A brand named in the request that the caller's roles do not cover
    /// (for what to do: a role over that brand).
    pub(crate) fn brand_refused(
        caller: &crate::serve::identity::Principal,
        brand: &str,
    ) -> ApiError {
        let held = match caller.role_for(brand) {
            Some(role) => format!(
                "your role over brand `{}` is `{}`, which may not do this",
                brand.escape_debug(),
                role.name()
            ),
            None => format!(
                "your roles cover brand(s) {}, not `{}`",
                caller.brand_names(),
                brand.escape_debug()
            ),
        };
        ApiError::new(
            StatusCode::FORBIDDEN,
            "brand_not_granted",
            format!(
                "{held}: ask for a role over it (e.g. approver:{})",
                brand.escape_debug()
            ),
        )
    }

    pub(crate) fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(field) = self.field {
            error["field"] = json!(field);
        }
        if let Some(rule) = self.rule {
            error["rule"] = json!(rule);
        }
        let mut response = (self.status, Json(json!({ "error": error }))).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        response
    }
}

impl From<HostError> for ApiError {
    fn from(e: HostError) -> ApiError {
        match e {
            HostError::BadRequest(m) => ApiError::bad_request(m),
            HostError::NotFound(m) => ApiError::not_found(m),
            HostError::Conflict(m) => ApiError::new(StatusCode::CONFLICT, "conflict", m),
            HostError::InvalidProfile(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_profile", m)
            }
            HostError::NotSelectable(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_selection", m)
            }
            HostError::InvalidLimits(m) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_limits", m)
            }
            HostError::Unavailable(m) => {
                tracing::error!(error = %m, "unavailable");
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", m)
            }
            HostError::Limited(refusal) => ApiError {
                retry_after: refusal.retry_after_secs,
                ..ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    refusal.rule.name(),
                    refusal.to_string(),
                )
            },
            HostError::Store(e) => {
                tracing::error!(error = %e, "store error");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    "the store is unavailable",
                )
            }
        }
    }
}

impl From<crate::error::StoreError> for ApiError {
    fn from(e: crate::error::StoreError) -> ApiError {
        HostError::from(e).into()
    }
}

/// A JSON body whose rejections are [`ApiError`]s.
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(Body(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "the request body is too large",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "send `Content-Type: application/json`",
        ),
        _ => ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            rejection.body_text(),
        ),
    }
}

pub(super) fn query<T: DeserializeOwned>(raw: Option<String>) -> Result<T, ApiError> {
    let text = raw.unwrap_or_default();
    serde_json::from_value(Value::Object(
        url::form_urlencoded::parse(text.as_bytes())
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect(),
    ))
    .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_query", e.to_string()))
}
