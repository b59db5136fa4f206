//! The Contentsquare connector: five read tools over the Contentsquare
//! Metrics API v1, none of them grantable, and no write tools.
//!
//! Every request goes through the host's HTTP capability, bound to the
//! project's API origin (`https://api.{cloud}.contentsquare.com`, which the
//! OAuth token answer names) with the bearer token the host obtained from the
//! OAuth client credentials; this code never sees a secret. Every request is
//! a GET.
//!
//! Ids are typed as integers in WIT, so no text reaches a path; they are
//! still encoded with `encode_segment`. Dates are `YYYY-MM-DD`, checked to be
//! real calendar dates, in order, at most 92 days apart (the API's limit),
//! and sent as the first and last millisecond of those days in UTC.
//!
//! Contentsquare answers `{"payload": ..., "success": true}`, and errors as
//! `{"success": false, "errorMessage": "...", "errorCode": "..."}`; an
//! answer that says `success: false` is an error whatever its status. That
//! shape is none of the SDK's `ErrorFormat`s, so it is read here; the
//! message is cut with the SDK's `cut_message`.
//!
//! What Contentsquare answers was written from its documentation
//! (docs.contentsquare.com/en/api/metrics) and never observed.

scout_sdk::bindings!();

use bindings::exports::scout::contentsquare::read_tools::{
    self, Device, Mapping, MetricValue, PageGroup, Segment,
};
use scout_sdk::{
    Http, Method, ToolError, UpstreamError, args, cut_message, encode_segment, parse_json,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// Longest period the Metrics API accepts, in days.
const MAX_DAYS: i64 = 92;
/// Most segments intersected in one query.
const MAX_SEGMENTS: usize = 10;

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// A calendar date `YYYY-MM-DD` (the SDK's check) from 2000 to 2100, as
/// days since 1970-01-01.
fn day_number(what: &str, date: &str) -> Result<i64, ToolError> {
    let (y, m, d) = args::date(what, date)?;
    if !(2000..=2100).contains(&y) {
        return Err(ToolError::invalid(format!(
            "{what} must be a date YYYY-MM-DD from 2000 to 2100, not `{date}`"
        )));
    }
    Ok(days_from_civil(i64::from(y), i64::from(m), i64::from(d)))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The `startDate`/`endDate` pair of a metrics query: whole UTC days, in
/// order, at most 92 days, more than one day when split `daily`.
fn date_range(start: &str, end: &str, daily: bool) -> Result<(String, String), ToolError> {
    args::date_range(start, end)?;
    let s = day_number("the start date", start)?;
    let e = day_number("the end date", end)?;
    if e - s + 1 > MAX_DAYS {
        return Err(ToolError::invalid(format!(
            "{start} to {end} is {} days; the Metrics API allows at most {MAX_DAYS}",
            e - s + 1
        )));
    }
    if daily && e == s {
        return Err(ToolError::invalid(
            "daily needs a range of more than one day",
        ));
    }
    Ok((
        format!("{start}T00:00:00.000Z"),
        format!("{end}T23:59:59.999Z"),
    ))
}

fn device_param(d: Device) -> &'static str {
    match d {
        Device::All => "all",
        Device::Desktop => "desktop",
        Device::Mobile => "mobile",
        Device::Tablet => "tablet",
    }
}

/// The query of a metrics call: only what was given, in the API's names.
fn metrics_query(
    start: &str,
    end: &str,
    device: Option<Device>,
    daily: Option<bool>,
    segment_ids: Option<&[u64]>,
    goal_id: Option<u64>,
    project_id: Option<u64>,
) -> Result<Vec<(&'static str, String)>, ToolError> {
    let daily = daily.unwrap_or(false);
    let (start_date, end_date) = date_range(start, end, daily)?;
    let mut query = vec![("startDate", start_date), ("endDate", end_date)];
    if let Some(p) = project_id {
        query.insert(0, ("projectId", p.to_string()));
    }
    if let Some(d) = device {
        query.push(("device", device_param(d).to_string()));
    }
    if daily {
        query.push(("period", "daily".to_string()));
    }
    if let Some(ids) = segment_ids {
        if ids.is_empty() {
            return Err(ToolError::invalid(
                "segment-ids is empty; leave it out for all visitors",
            ));
        }
        if ids.len() > MAX_SEGMENTS {
            return Err(ToolError::invalid(format!(
                "segment-ids has more than {MAX_SEGMENTS} segments"
            )));
        }
        query.push((
            "segmentIds",
            ids.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
        ));
    }
    if let Some(g) = goal_id {
        query.push(("goalId", g.to_string()));
    }
    Ok(query)
}

fn project_query(project_id: Option<u64>) -> Vec<(&'static str, String)> {
    project_id
        .map(|p| vec![("projectId", p.to_string())])
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Contentsquare's wire format (only the fields used; extra fields are ignored)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct Answer<T> {
    success: Option<bool>,
    #[serde(rename = "errorMessage")]
    error_message: Option<String>,
    #[serde(rename = "errorCode")]
    error_code: Option<String>,
    payload: Option<T>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiMapping {
    id: u64,
    name: String,
    description: Option<String>,
    created_at: Option<String>,
    updated_at: Option<String>,
}

#[derive(Deserialize)]
struct ApiPageGroup {
    id: u64,
    name: String,
    category: Option<Named>,
}

/// A category: a name, or an object that has one.
#[derive(Deserialize)]
#[serde(untagged)]
enum Named {
    Name(String),
    Object { name: String },
}

#[derive(Deserialize)]
struct ApiSegment {
    id: u64,
    name: String,
    source: Option<String>,
}

#[derive(Deserialize)]
struct Values {
    #[serde(default)]
    values: Vec<ApiValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiValue {
    name: String,
    value: Option<f64>,
    start_date: String,
    end_date: String,
    currency: Option<String>,
}

// ---------------------------------------------------------------------------
// Mapping (pure; unit-tested)
// ---------------------------------------------------------------------------

/// The error message of an answer: `errorMessage (errorCode)`, else the body.
fn error_message(body: &[u8]) -> String {
    match serde_json::from_slice::<Answer<serde::de::IgnoredAny>>(body) {
        Ok(Answer {
            error_message: Some(m),
            error_code: Some(c),
            ..
        }) => cut_message(format!("{m} ({c})")),
        Ok(Answer {
            error_message: Some(m),
            ..
        }) => cut_message(m),
        _ => cut_message(String::from_utf8_lossy(body)),
    }
}

/// The payload of an answer: 404 is `not-found`, any other non-2xx (401
/// `JWT_EXPIRED`, 403, 429 concurrency limit, 5xx) `upstream`, in the SDK's
/// one shape with Contentsquare's message (a body none of the SDK's
/// `ErrorFormat`s reads); a 2xx that says `success: false` is `upstream` too.
fn payload<T: DeserializeOwned>(status: u16, body: &[u8]) -> Result<T, ToolError> {
    if !(200..300).contains(&status) {
        return Err(scout_sdk::errors::status_error_with(
            status,
            error_message(body),
        ));
    }
    let answer: Answer<T> = parse_json(body)?;
    if answer.success == Some(false) {
        return Err(ToolError::Upstream(UpstreamError {
            status,
            message: error_message(body),
        }));
    }
    answer
        .payload
        .ok_or_else(|| ToolError::BadResponse("Contentsquare's answer has no payload".to_string()))
}

fn metric_values(values: Values) -> Vec<MetricValue> {
    values
        .values
        .into_iter()
        .filter_map(|v| {
            Some(MetricValue {
                name: v.name,
                // A metric without a value (no traffic in the period) is left out.
                value: v.value?,
                start_date: v.start_date,
                end_date: v.end_date,
                currency: v.currency.filter(|c| !c.is_empty()),
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// GETs `path` from the Contentsquare API origin the host granted.
fn get<T: DeserializeOwned>(path: &str, query: &[(&'static str, String)]) -> Result<T, ToolError> {
    let http = Http::connect()?
        .with_header("accept", "application/json")
        .with_header("user-agent", "scout-connector-contentsquare");
    let pairs: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let response = http.send(Method::Get, path, &pairs, None)?;
    // A bad answer names the request, as the SDK's `Http::get` does.
    payload(response.status, &response.body).map_err(|e| match e {
        ToolError::BadResponse(m) => ToolError::BadResponse(format!("GET {path}: {m}")),
        other => other,
    })
}

fn not_found(what: String) -> impl FnOnce(ToolError) -> ToolError {
    move |e| match e {
        ToolError::NotFound(m) => ToolError::NotFound(format!("{what}: {m}")),
        other => other,
    }
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct Contentsquare;

impl read_tools::Guest for Contentsquare {
    fn mappings(project_id: Option<u64>) -> Result<Vec<Mapping>, ToolError> {
        let list: Vec<ApiMapping> = get("/v1/mappings", &project_query(project_id))?;
        Ok(list
            .into_iter()
            .map(|m| Mapping {
                id: m.id,
                name: m.name,
                description: m.description.filter(|d| !d.is_empty()),
                created_at: m.created_at,
                updated_at: m.updated_at,
            })
            .collect())
    }

    fn page_groups(mapping_id: u64, project_id: Option<u64>) -> Result<Vec<PageGroup>, ToolError> {
        let path = format!(
            "/v1/mappings/{}/page-groups",
            encode_segment(&mapping_id.to_string())
        );
        let list: Vec<ApiPageGroup> = get(&path, &project_query(project_id))
            .map_err(not_found(format!("mapping {mapping_id}")))?;
        Ok(list
            .into_iter()
            .map(|g| PageGroup {
                id: g.id,
                name: g.name,
                category: g.category.map(|c| match c {
                    Named::Name(n) | Named::Object { name: n } => n,
                }),
            })
            .collect())
    }

    fn segments(project_id: Option<u64>) -> Result<Vec<Segment>, ToolError> {
        let list: Vec<ApiSegment> = get("/v1/segments", &project_query(project_id))?;
        Ok(list
            .into_iter()
            .map(|s| Segment {
                id: s.id,
                name: s.name,
                source: s.source,
            })
            .collect())
    }

    fn site_metrics(
        start_date: String,
        end_date: String,
        device: Option<Device>,
        daily: Option<bool>,
        segment_ids: Option<Vec<u64>>,
        goal_id: Option<u64>,
        project_id: Option<u64>,
    ) -> Result<Vec<MetricValue>, ToolError> {
        let query = metrics_query(
            &start_date,
            &end_date,
            device,
            daily,
            segment_ids.as_deref(),
            goal_id,
            project_id,
        )?;
        let values: Values = get("/v1/metrics/site", &query)?;
        Ok(metric_values(values))
    }

    #[allow(clippy::too_many_arguments)]
    fn page_group_metrics(
        page_group_id: u64,
        start_date: String,
        end_date: String,
        device: Option<Device>,
        daily: Option<bool>,
        segment_ids: Option<Vec<u64>>,
        goal_id: Option<u64>,
        project_id: Option<u64>,
    ) -> Result<Vec<MetricValue>, ToolError> {
        let query = metrics_query(
            &start_date,
            &end_date,
            device,
            daily,
            segment_ids.as_deref(),
            goal_id,
            project_id,
        )?;
        let path = format!(
            "/v1/metrics/page-group/{}",
            encode_segment(&page_group_id.to_string())
        );
        let values: Values =
            get(&path, &query).map_err(not_found(format!("page group {page_group_id}")))?;
        Ok(metric_values(values))
    }
}

scout_sdk::export!(Contentsquare);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(
            day_number("d", "1970-01-01").ok(),
            None,
            "before 2000 is refused"
        );
        assert_eq!(
            day_number("d", "2000-03-01").unwrap() - day_number("d", "2000-02-28").unwrap(),
            2,
            "2000 is a leap year"
        );
        assert_eq!(
            day_number("d", "2026-03-01").unwrap() - day_number("d", "2026-02-28").unwrap(),
            1
        );
        for bad in [
            "",
            "2026-1-01",
            "2026-13-01",
            "2026-02-29",
            "2026-04-31",
            "2026/01/01",
            "2026-01-01T00:00",
            "+026-01-01",
            "２０２６-01-01",
        ] {
            assert!(day_number("d", bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            date_range("2026-11-01", "2026-11-30", false).unwrap(),
            (
                "2026-11-01T00:00:00.000Z".to_string(),
                "2026-11-30T23:59:59.999Z".to_string()
            )
        );
        assert!(
            matches!(date_range("2026-11-30", "2026-11-01", false), Err(ToolError::InvalidInput(m)) if m == "the start date 2026-11-30 is after the end date 2026-11-01")
        );
        assert!(
            matches!(date_range("1999-12-31", "2000-01-01", false), Err(ToolError::InvalidInput(m)) if m == "the start date must be a date YYYY-MM-DD from 2000 to 2100, not `1999-12-31`")
        );
        assert!(
            date_range("2026-01-01", "2026-04-02", false).is_ok(),
            "92 days"
        );
        assert!(
            date_range("2026-01-01", "2026-04-03", false).is_err(),
            "93 days"
        );
        assert!(date_range("2026-11-30", "2026-11-30", true).is_err());
        assert!(date_range("2026-11-30", "2026-11-30", false).is_ok());
    }

    #[test]
    fn queries() {
        let q = metrics_query(
            "2026-11-01",
            "2026-11-07",
            Some(Device::Mobile),
            Some(true),
            Some(&[3, 7]),
            Some(100),
            Some(42),
        )
        .unwrap();
        let keys: Vec<&str> = q.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            keys,
            [
                "projectId",
                "startDate",
                "endDate",
                "device",
                "period",
                "segmentIds",
                "goalId"
            ]
        );
        assert_eq!(q[5].1, "3,7");
        let q = metrics_query("2026-11-01", "2026-11-07", None, None, None, None, None).unwrap();
        assert_eq!(q.len(), 2);
        assert!(
            metrics_query(
                "2026-11-01",
                "2026-11-07",
                None,
                None,
                Some(&[]),
                None,
                None
            )
            .is_err()
        );
        assert!(
            metrics_query(
                "2026-11-01",
                "2026-11-07",
                None,
                None,
                Some(&[1; 11]),
                None,
                None
            )
            .is_err()
        );
    }

    #[test]
    fn answers() {
        let v: Values = payload(200, br#"{"payload":{"values":[{"name":"visits","value":51644,"startDate":"a","endDate":"b","currency":"USD"},{"name":"x","value":null,"startDate":"a","endDate":"b"}]},"success":true}"#).unwrap();
        let v = metric_values(v);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].value, 51644.0);
        let e = payload::<Values>(401, br#"{"success":false,"errorMessage":"Auth token is expired.","errorCode":"JWT_EXPIRED"}"#).err().unwrap();
        assert!(
            matches!(e, ToolError::Upstream(UpstreamError { status: 401, ref message }) if message == "Auth token is expired. (JWT_EXPIRED)")
        );
        let e = payload::<Values>(200, br#"{"success":false,"errorMessage":"nope"}"#)
            .err()
            .unwrap();
        assert!(matches!(
            e,
            ToolError::Upstream(UpstreamError { status: 200, .. })
        ));
        assert!(
            matches!(payload::<Values>(404, b"Not Found").err().unwrap(), ToolError::NotFound(m) if m == "Not Found")
        );
        assert!(
            matches!(payload::<Values>(500, "x".repeat(900).as_bytes()).err().unwrap(), ToolError::Upstream(u) if u.message.len() == 500)
        );
        assert!(matches!(
            payload::<Values>(200, b"[]").err().unwrap(),
            ToolError::BadResponse(_)
        ));
        let groups: Vec<ApiPageGroup> = serde_json::from_str(r#"[{"id":1,"name":"Home","category":"Home"},{"id":2,"name":"PDP","category":{"id":9,"name":"Product"}},{"id":3,"name":"Other"}]"#).unwrap();
        assert_eq!(groups.len(), 3);
    }
}
