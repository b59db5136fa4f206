//! DataForSEO's wire format, shared by every tool: the POST body (a JSON
//! array of exactly one task), the answer's envelope with its `status_code`
//! at the top and per task (which DataForSEO answers under HTTP 200, so no
//! SDK error format reads it), the codes' mapping to tool errors, and the
//! answer shapes several endpoints share.

use crate::bindings::exports::scout::dataforseo::read_tools::MonthlyVolume;
use scout_sdk::{ErrorFormat, Http, ToolError, UpstreamError, cut_message, parse_json};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// The client of DataForSEO's own origin.
pub fn client() -> Result<Http, ToolError> {
    Ok(Http::connect()?
        .with_header("accept", "application/json")
        .with_header("user-agent", "scout-connector-dataforseo"))
}

/// Keywords in one location and language.
#[derive(Serialize)]
pub struct KeywordsTask<'a> {
    pub keywords: &'a [String],
    pub location_code: u32,
    pub language_code: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u16>,
}

/// A domain or page in one location and language.
#[derive(Serialize)]
pub struct TargetTask<'a> {
    pub target: &'a str,
    pub location_code: u32,
    pub language_code: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u16>,
    /// Ranked keywords: organic results only, so that positions are organic ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_types: Option<[&'static str; 1]>,
}

/// The POST body: a JSON array of exactly one task.
pub fn task_body<T: Serialize>(task: &T) -> Result<Vec<u8>, ToolError> {
    serde_json::to_vec(&[task])
        .map_err(|e| ToolError::invalid(format!("cannot encode the task: {e}")))
}

// ---------------------------------------------------------------------------
// Answers: the envelope and its status codes
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct Envelope<T> {
    #[serde(default)]
    status_code: Option<u32>,
    #[serde(default)]
    status_message: Option<String>,
    #[serde(default = "Option::default")]
    tasks: Option<Vec<Task<T>>>,
}

#[derive(Deserialize)]
struct Task<T> {
    status_code: u32,
    #[serde(default)]
    status_message: Option<String>,
    #[serde(default = "Option::default")]
    result: Option<Vec<T>>,
}

/// Only the status of an error answer.
#[derive(Deserialize)]
struct StatusOnly {
    #[serde(default)]
    status_code: Option<u32>,
    #[serde(default)]
    status_message: Option<String>,
}

const OK: u32 = 20000;

/// A DataForSEO status code other than 20000 as a tool error.
fn status_error(http_status: u16, code: u32, message: Option<&str>) -> ToolError {
    let message = cut_message(format!(
        "DataForSEO {code}: {}",
        message.unwrap_or("no message").trim()
    ));
    match code {
        40500..=40599 => ToolError::InvalidInput(message),
        40400..=40499 | 40102 => ToolError::NotFound(message),
        _ => ToolError::Upstream(UpstreamError {
            status: http_status,
            message,
        }),
    }
}

/// The error a non-2xx answer is, in the SDK's shape (`not-found` for a 404,
/// `upstream` otherwise), its message DataForSEO's `status_message` (with
/// its code) when the body is DataForSEO's envelope, else the body's text.
fn http_error(status: u16, body: &[u8]) -> Option<ToolError> {
    let mut error = ErrorFormat::Message.status_error(status, body)?;
    if let Ok(StatusOnly {
        status_code,
        status_message: Some(m),
    }) = serde_json::from_slice::<StatusOnly>(body)
    {
        let text = cut_message(match status_code {
            Some(code) => format!("DataForSEO {code}: {}", m.trim()),
            None => m,
        });
        if let ToolError::NotFound(message) | ToolError::Upstream(UpstreamError { message, .. }) =
            &mut error
        {
            *message = text;
        }
    }
    Some(error)
}

/// Turns DataForSEO's answer into its one task's `result` list (empty when
/// the task has none), or a tool error: a non-2xx HTTP status, then a
/// top-level status code other than 20000, then the task's.
pub fn interpret<T: DeserializeOwned>(status: u16, body: &[u8]) -> Result<Vec<T>, ToolError> {
    if let Some(error) = http_error(status, body) {
        return Err(error);
    }
    // The status first, so that an error answer whose task has an
    // unexpected shape is still reported as the error it is.
    if let Ok(head) = serde_json::from_slice::<Envelope<IgnoredAny>>(body) {
        if let Some(code) = head.status_code
            && code != OK
        {
            return Err(status_error(status, code, head.status_message.as_deref()));
        }
        if let Some(task) = head.tasks.as_ref().and_then(|t| t.first())
            && task.status_code != OK
        {
            return Err(status_error(
                status,
                task.status_code,
                task.status_message.as_deref(),
            ));
        }
    }
    let envelope: Envelope<T> = parse_json(body)?;
    let task = envelope
        .tasks
        .and_then(|t| t.into_iter().next())
        .ok_or_else(|| ToolError::BadResponse("the answer holds no task".into()))?;
    Ok(task.result.unwrap_or_default())
}

/// A `bad-response` naming the request (`POST /v3/...: ...`), as the SDK's
/// `Http::json` names it; any other error as it is.
pub fn naming(method: &str, path: &str, error: ToolError) -> ToolError {
    match error {
        ToolError::BadResponse(m) => ToolError::BadResponse(format!("{method} {path}: {m}")),
        other => other,
    }
}

/// The first result of a task that answers one object.
pub fn first<T>(results: Vec<T>, what: &str) -> Result<T, ToolError> {
    results
        .into_iter()
        .next()
        .ok_or_else(|| ToolError::NotFound(format!("DataForSEO returned no {what}")))
}

// ---------------------------------------------------------------------------
// Answer shapes several endpoints share
// ---------------------------------------------------------------------------

/// A result holding an `items` list.
#[derive(Deserialize)]
pub struct ApiItems<T> {
    #[serde(default = "Option::default")]
    items: Option<Vec<T>>,
}

/// The items of every result.
pub fn items<T>(results: Vec<ApiItems<T>>) -> Vec<T> {
    results
        .into_iter()
        .flat_map(|r| r.items.unwrap_or_default())
        .collect()
}

#[derive(Deserialize)]
pub struct ApiMonthly {
    year: u16,
    month: u8,
    #[serde(default)]
    search_volume: Option<u64>,
}

impl From<ApiMonthly> for MonthlyVolume {
    fn from(m: ApiMonthly) -> MonthlyVolume {
        MonthlyVolume {
            year: m.year,
            month: m.month,
            search_volume: m.search_volume,
        }
    }
}

pub fn monthly(list: Option<Vec<ApiMonthly>>) -> Vec<MonthlyVolume> {
    list.unwrap_or_default()
        .into_iter()
        .map(MonthlyVolume::from)
        .collect()
}

/// A 0–100 score as a whole number.
pub fn score(x: Option<f64>) -> Option<u8> {
    x.filter(|v| v.is_finite())
        .map(|v| v.round().clamp(0.0, 100.0) as u8)
}

/// A text trimmed, or nothing when it is empty.
pub fn non_empty(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labs::ApiDifficulty;
    use scout_sdk::testing::fails;

    fn json(bytes: &[u8]) -> serde_json::Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn task_bodies_are_one_element_arrays() {
        let kw = vec!["running shoes".to_string()];
        let body = task_body(&KeywordsTask {
            keywords: &kw,
            location_code: 2840,
            language_code: "en",
            limit: Some(100),
        })
        .unwrap();
        assert_eq!(
            json(&body),
            serde_json::json!([{"keywords": ["running shoes"], "location_code": 2840, "language_code": "en", "limit": 100}])
        );
        let body = task_body(&TargetTask {
            target: "example.com",
            location_code: 2840,
            language_code: "en",
            limit: Some(5),
            item_types: Some(["organic"]),
        })
        .unwrap();
        assert_eq!(
            json(&body),
            serde_json::json!([{"target": "example.com", "location_code": 2840, "language_code": "en", "limit": 5, "item_types": ["organic"]}])
        );
    }

    #[test]
    fn status_codes_map_to_tool_errors() {
        let task_error = |code: u32, message: &str| {
            format!(
                r#"{{"status_code":20000,"status_message":"Ok.","cost":0,"tasks":[{{"status_code":{code},"status_message":"{message}","cost":0,"result":null}}]}}"#
            )
        };
        let e = fails(interpret::<IgnoredAny>(
            200,
            task_error(40501, "Invalid Field: 'location_code'.").as_bytes(),
        ));
        assert!(
            matches!(e, ToolError::InvalidInput(ref m) if m == "DataForSEO 40501: Invalid Field: 'location_code'."),
            "{e}"
        );
        let e = fails(interpret::<IgnoredAny>(
            200,
            task_error(40102, "No Search Results.").as_bytes(),
        ));
        assert!(matches!(e, ToolError::NotFound(_)), "{e}");
        let e = fails(interpret::<IgnoredAny>(
            200,
            task_error(40200, "Your balance is depleted.").as_bytes(),
        ));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 200 && u.message == "DataForSEO 40200: Your balance is depleted."),
            "{e}"
        );
        let e = fails(interpret::<IgnoredAny>(
            200,
            br#"{"status_code":40503,"status_message":"POST Data Is Invalid.","tasks":null}"#,
        ));
        assert!(matches!(e, ToolError::InvalidInput(_)), "{e}");
        let e = fails(interpret::<IgnoredAny>(
            401,
            br#"{"status_code":40100,"status_message":"You are not authorized.","cost":0}"#,
        ));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 401 && u.message == "DataForSEO 40100: You are not authorized."),
            "{e}"
        );
        let e = fails(interpret::<IgnoredAny>(500, b"Internal Server Error"));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 500 && u.message == "Internal Server Error"),
            "{e}"
        );
        let e = fails(interpret::<IgnoredAny>(404, b"nope"));
        assert!(
            matches!(e, ToolError::NotFound(ref m) if m == "nope"),
            "{e}"
        );
        let e = fails(interpret::<IgnoredAny>(
            404,
            br#"{"status_code":40400,"status_message":"Not Found."}"#,
        ));
        assert!(
            matches!(e, ToolError::NotFound(ref m) if m == "DataForSEO 40400: Not Found."),
            "{e}"
        );
        let long = format!(r#"{{"status_message":"{}"}}"#, "é".repeat(400));
        let e = fails(interpret::<IgnoredAny>(503, long.as_bytes()));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 503 && u.message.len() <= scout_sdk::errors::MAX_MESSAGE),
            "{e}"
        );
        let e = fails(interpret::<IgnoredAny>(
            200,
            br#"{"status_code":20000,"tasks":[]}"#,
        ));
        assert!(matches!(e, ToolError::BadResponse(_)), "{e}");
        let e = fails(interpret::<ApiDifficulty>(
            200,
            br#"{"status_code":20000,"tasks":[{"status_code":20000,"result":[{"keyword":7}]}]}"#,
        ));
        assert!(matches!(e, ToolError::BadResponse(_)), "{e}");
        assert!(
            matches!(naming("POST", "/v3/x", e), ToolError::BadResponse(ref m) if m.starts_with("POST /v3/x: ")),
        );
        let ok: Vec<ApiDifficulty> = interpret(
            200,
            br#"{"status_code":20000,"tasks":[{"status_code":20000,"result":null}]}"#,
        )
        .unwrap();
        assert!(ok.is_empty());
    }

    #[test]
    fn scores() {
        assert_eq!(score(Some(47.0)), Some(47));
        assert_eq!(score(Some(120.0)), Some(100));
        assert_eq!(score(Some(-3.0)), Some(0));
        assert_eq!(score(None), None);
    }
}
