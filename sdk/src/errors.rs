//! Upstream error bodies, in the shapes vendors write them, turned into the
//! one error shape an agent sees: `not-found` for a 404, `upstream` with the
//! status and a bounded message for any other non-2xx.
//!
//! Each connector names its vendor's shape once ([`ErrorFormat`], e.g. on
//! [`crate::Http::with_errors`]) instead of decoding error bodies by hand;
//! every shape falls back to the body's text, and every message is cut at
//! [`MAX_MESSAGE`] bytes on a character boundary ([`cut_message`]). Bodies
//! are read with small typed structs, not `serde_json::Value`, which would
//! add some 10 KB to every component.

use crate::{ToolError, UpstreamError};
use serde::Deserialize;

/// Longest upstream message carried into a [`ToolError`], in bytes.
pub const MAX_MESSAGE: usize = 500;

/// `text`, trimmed and cut at [`MAX_MESSAGE`] bytes on a character boundary.
pub fn cut_message(text: impl Into<String>) -> String {
    cut_to(text.into().trim().to_string(), MAX_MESSAGE)
}

/// `text` cut at `max` bytes on a character boundary.
pub fn cut_to(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// How an upstream writes the message of an error body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ErrorFormat {
    /// `{"message": "..."}` (GitHub, Railway's REST, many others).
    #[default]
    Message,
    /// `{"error": "..."}` or `{"error": {"message": "..."}}` (Firebase,
    /// Firecrawl, AgentMail, OAuth token endpoints).
    Error,
    /// Google APIs: `{"error": {"code", "message", "status", "details":
    /// [{"errors": [{"errorCode": {...}, "message"}]}]}}`, written
    /// `STATUS: message` (Google Ads' error codes when present).
    Google,
    /// Cloudflare's v4 envelope: `{"success": false, "errors": [{"code",
    /// "message"}]}`, written `code: message; ...`.
    Cloudflare,
    /// GraphQL: `{"errors": [{"message"}]}`, the messages joined by `; `.
    GraphQl,
}

#[derive(Deserialize)]
struct WithMessage {
    message: String,
}

/// An `error` field: a text, or an object with a message (and, from Google,
/// a status and details). Read by a visitor, not `#[serde(untagged)]`,
/// whose buffering would add tens of KB to every component.
enum ErrorField {
    Text(String),
    Object(ErrorObject),
}

#[derive(Deserialize)]
struct ErrorObject {
    #[serde(default)]
    message: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    details: Vec<GoogleDetail>,
}

impl<'de> Deserialize<'de> for ErrorField {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = ErrorField;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a text or an object")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ErrorField, E> {
                Ok(ErrorField::Text(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ErrorField, A::Error> {
                ErrorObject::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ErrorField::Object)
            }
        }
        d.deserialize_any(Visit)
    }
}

#[derive(Deserialize)]
struct WithError {
    error: ErrorField,
}

/// A code as vendors write it: a string or a number (anything else is kept
/// as `?`). Not `serde_json::Value` nor an untagged enum, for the
/// components' size.
enum Code {
    Text(String),
    Number(i64),
    Other,
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Code;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a code")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Code, E> {
                Ok(Code::Text(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Code, E> {
                Ok(Code::Number(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Code, E> {
                Ok(i64::try_from(v).map_or(Code::Other, Code::Number))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Code, E> {
                Ok(Code::Other)
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Code, E> {
                Ok(Code::Other)
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Code, E> {
                Ok(Code::Other)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Code, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Code::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Code, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Code::Other)
            }
        }
        d.deserialize_any(Visit)
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Code::Text(t) => f.write_str(t),
            Code::Number(n) => write!(f, "{n}"),
            Code::Other => f.write_str("?"),
        }
    }
}

#[derive(Deserialize)]
struct GoogleDetail {
    #[serde(default)]
    errors: Vec<GoogleAdsError>,
}

#[derive(Deserialize)]
struct GoogleAdsError {
    #[serde(default, rename = "errorCode")]
    error_code: std::collections::BTreeMap<String, Code>,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct WithErrors {
    errors: Vec<CodedMessage>,
}

#[derive(Deserialize)]
struct CodedMessage {
    #[serde(default)]
    code: Option<Code>,
    #[serde(default)]
    message: String,
}

/// A decoder of one format's message, `None` when the body is not in it.
pub type Decoder = fn(&[u8]) -> Option<String>;

fn message_field(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<WithMessage>(body)
        .ok()
        .map(|m| m.message)
}

fn error_field(body: &[u8], with_status: bool) -> Option<String> {
    let w = serde_json::from_slice::<WithError>(body).ok()?;
    Some(match w.error {
        ErrorField::Text(text) => text,
        ErrorField::Object(ErrorObject {
            message,
            status,
            details,
        }) => {
            let codes: Vec<String> = details
                .iter()
                .flat_map(|d| &d.errors)
                .map(|e| {
                    let code: Vec<String> = e
                        .error_code
                        .iter()
                        .map(|(kind, v)| format!("{kind}.{v}"))
                        .collect();
                    if code.is_empty() {
                        e.message.clone()
                    } else {
                        format!("{}: {}", code.join(","), e.message)
                    }
                })
                .collect();
            let detail = if codes.is_empty() {
                message
            } else {
                codes.join("; ")
            };
            if status.is_empty() || !with_status {
                detail
            } else {
                format!("{status}: {detail}")
            }
        }
    })
}

fn errors_list(body: &[u8], with_code: bool) -> Option<String> {
    let w = serde_json::from_slice::<WithErrors>(body).ok()?;
    if w.errors.is_empty() {
        return None;
    }
    Some(
        w.errors
            .iter()
            .map(|e| match &e.code {
                Some(code) if with_code => format!("{code}: {}", e.message),
                _ => e.message.clone(),
            })
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// The message `found`, or else the body's text; cut.
fn finish(found: Option<String>, body: &[u8]) -> String {
    cut_message(
        found
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned()),
    )
}

impl ErrorFormat {
    /// This format's decoder. A plain function per format, so that a
    /// component links only the decoders it names (a format chosen by a
    /// constant folds away the others).
    #[inline]
    pub fn decoder(self) -> Decoder {
        match self {
            ErrorFormat::Message => message_field,
            ErrorFormat::Error => |b| error_field(b, false),
            ErrorFormat::Google => |b| error_field(b, true),
            ErrorFormat::Cloudflare => |b| errors_list(b, true),
            ErrorFormat::GraphQl => |b| errors_list(b, false),
        }
    }

    /// The message of an error `body`, or the body's text; always cut.
    #[inline]
    pub fn message(self, body: &[u8]) -> String {
        finish(self.decoder()(body), body)
    }

    /// The error a non-2xx answer is (`None` for a 2xx): `not-found` for a
    /// 404, `upstream` with the status and the message otherwise.
    #[inline]
    pub fn status_error(self, status: u16, body: &[u8]) -> Option<ToolError> {
        decoded_status_error(self.decoder(), status, body)
    }
}

/// [`ErrorFormat::status_error`] with a decoder in hand.
pub fn decoded_status_error(decoder: Decoder, status: u16, body: &[u8]) -> Option<ToolError> {
    if (200..300).contains(&status) {
        return None;
    }
    Some(status_error_with(status, finish(decoder(body), body)))
}

/// The error a non-2xx answer is, for a vendor whose error bodies are in
/// none of the [`ErrorFormat`]s: the connector decodes the message, this
/// gives it the one shape (`not-found` for a 404, `upstream` otherwise;
/// the message cut).
pub fn status_error_with(status: u16, message: impl Into<String>) -> ToolError {
    let message = cut_message(message);
    if status == 404 {
        ToolError::NotFound(message)
    } else {
        ToolError::Upstream(UpstreamError { status, message })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upstream(e: Option<ToolError>) -> (u16, String) {
        match e {
            Some(ToolError::Upstream(UpstreamError { status, message })) => (status, message),
            Some(ToolError::NotFound(m)) => (404, m),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_format_reads_its_vendors_shape_and_falls_back_to_the_text() {
        let cases: [(ErrorFormat, &str, &str); 10] = [
            (
                ErrorFormat::Message,
                r#"{"message":"Bad credentials"}"#,
                "Bad credentials",
            ),
            (
                ErrorFormat::Error,
                r#"{"error":"Permint denied"}"#,
                "Permint denied",
            ),
            (
                ErrorFormat::Error,
                r#"{"error":{"message":"no such inbox"}}"#,
                "no such inbox",
            ),
            (
                ErrorFormat::Google,
                r#"{"error":{"code":403,"message":"The caller does not have permission","status":"PERMISSION_DENIED"}}"#,
                "PERMISSION_DENIED: The caller does not have permission",
            ),
            (
                ErrorFormat::Google,
                r#"{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT","details":[{"errors":[{"errorCode":{"queryError":"BAD_FIELD_NAME"},"message":"Unrecognized field"}]}]}}"#,
                "INVALID_ARGUMENT: queryError.BAD_FIELD_NAME: Unrecognized field",
            ),
            (
                ErrorFormat::Cloudflare,
                r#"{"success":false,"errors":[{"code":10000,"message":"Authentication error"}],"messages":[],"result":null}"#,
                "10000: Authentication error",
            ),
            (
                ErrorFormat::GraphQl,
                r#"{"errors":[{"message":"Field 'x' doesn't exist"},{"message":"second"}]}"#,
                "Field 'x' doesn't exist; second",
            ),
            (ErrorFormat::Message, "  plain text  ", "plain text"),
            (
                ErrorFormat::Google,
                r#"{"message":"not Google's shape"}"#,
                r#"{"message":"not Google's shape"}"#,
            ),
            (ErrorFormat::GraphQl, r#"{"errors":[]}"#, r#"{"errors":[]}"#),
        ];
        for (format, body, want) in cases {
            assert_eq!(
                upstream(format.status_error(400, body.as_bytes())),
                (400, want.to_string()),
                "{format:?} {body}"
            );
        }
        assert!(ErrorFormat::Message.status_error(204, b"").is_none());
        assert_eq!(
            upstream(ErrorFormat::Message.status_error(404, b"{\"message\":\"gone\"}")),
            (404, "gone".into())
        );
    }

    #[test]
    fn messages_are_cut_on_a_character_boundary() {
        let long = "é".repeat(400);
        let cut = cut_message(long.as_str());
        assert!(cut.len() <= MAX_MESSAGE && cut.len() >= MAX_MESSAGE - 1);
        assert!(long.starts_with(&cut));
        let body = format!("{{\"message\":\"{}\"}}", "x".repeat(2000));
        assert_eq!(
            ErrorFormat::Message.message(body.as_bytes()).len(),
            MAX_MESSAGE
        );
    }
}
