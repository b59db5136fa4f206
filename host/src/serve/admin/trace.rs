//! The trace, page by page for a session or brand, and the audit export.

use super::*;

/// Events per trace page unless `limit` says otherwise, and at most.
pub(super) const TRACE_PAGE: usize = 500;
pub(super) const TRACE_PAGE_MAX: usize = 5000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TraceQuery {
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    brand: Option<String>,
    /// Only events after this sequence number (the last page's `next_after`).
    #[serde(default)]
    after: Option<String>,
    /// Events per page, 1 to 5000 (default 500).
    #[serde(default)]
    limit: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ExportQuery {
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

/// Most rows one export request answers.
pub(super) const EXPORT_MAX: usize = 10_000;

/// The audit export (see [`crate::audit`]): every trace row after `since`,
/// as JSON lines; `Scout-Next-Cursor` is where to resume.
pub(super) async fn trace_export(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let q: ExportQuery = query(raw)?;
    let since = match q.since.as_deref() {
        None => 0,
        Some(t) => t.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_query",
                "`since` is a row's `seq` (0 or more)".to_string(),
            )
        })?,
    };
    let limit = match q.limit.as_deref() {
        None => crate::audit::EXPORT_PAGE,
        Some(t) => t
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=EXPORT_MAX).contains(n))
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_query",
                    format!("`limit` must be a number from 1 to {EXPORT_MAX}"),
                )
            })?,
    };
    let trace = host.host().trace();
    let shown = host.clone();
    let (body, done) = tokio::task::spawn_blocking(move || {
        let mut body = Vec::new();
        let shape = |row: &mut Value| {
            let reveal = caller.reads_sealed_arguments(row["brand"].as_str().unwrap_or_default());
            shown.host().boundary().shown_row(row, reveal)
        };
        trace
            .export_shown(since, Some(limit), &mut body, &shape)
            .map(|done| (body, done))
    })
    .await
    .map_err(|_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unavailable",
            "the export stopped".to_string(),
        )
    })?
    .map_err(|e| match e {
        crate::audit::ExportError::Store(e) => ApiError::from(crate::serve::HostError::from(e)),
        other => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unavailable",
            other.to_string(),
        ),
    })?;
    Ok((
        [
            (
                axum::http::header::CONTENT_TYPE,
                "application/x-ndjson".to_string(),
            ),
            (
                axum::http::HeaderName::from_static("scout-next-cursor"),
                done.cursor.to_string(),
            ),
            (
                axum::http::HeaderName::from_static("scout-rows"),
                done.rows.to_string(),
            ),
        ],
        body,
    )
        .into_response())
}

pub(super) async fn trace(
    State(host): State<Arc<ServeHost>>,
    Extension(caller): Extension<Principal>,
    RawQuery(raw): RawQuery,
) -> Result<Json<Value>, ApiError> {
    let q: TraceQuery = query(raw)?;
    let number =
        |name: &str, text: Option<&String>, default: u64, max: u64| -> Result<u64, ApiError> {
            match text {
                None => Ok(default),
                Some(t) => t.parse::<u64>().ok().filter(|n| *n <= max).ok_or_else(|| {
                    ApiError::new(
                        StatusCode::BAD_REQUEST,
                        "invalid_query",
                        format!("`{name}` must be a number up to {max}"),
                    )
                }),
            }
        };
    let after = number("after", q.after.as_ref(), 0, i64::MAX as u64)? as i64;
    let limit = number(
        "limit",
        q.limit.as_ref(),
        TRACE_PAGE as u64,
        TRACE_PAGE_MAX as u64,
    )?
    .max(1) as usize;
    let filter = match (&q.session, &q.brand) {
        (Some(session), None) => TraceFilter::Session(session),
        (None, Some(brand)) if !caller.sees(brand) => {
            return Err(ApiError::brand_refused(&caller, brand));
        }
        (None, Some(brand)) => TraceFilter::Brand(brand),
        _ => {
            return Err(ApiError::bad_request(
                "give exactly one of `session` or `brand`",
            ));
        }
    };
    let page = host.host().trace().page(filter, after, limit).await?;
    let next_after = (page.len() == limit)
        .then(|| page.last().map(|(seq, _)| *seq))
        .flatten();
    // A session's rows carry its brand: another brand's are left out (the
    // page's cursor still moves past them).
    let events: Vec<Value> = page
        .into_iter()
        .filter(|(_, event)| caller.sees(&event.brand))
        .map(|(seq, event)| {
            let mut value = json!(event);
            value["seq"] = json!(seq);
            value["time"] = json!(crate::dates::rfc3339_ms(event.at_ms));
            host.host()
                .boundary()
                .shown_row(&mut value, caller.reads_sealed_arguments(&event.brand));
            value
        })
        .collect();
    Ok(Json(json!({"events": events, "next_after": next_after})))
}
