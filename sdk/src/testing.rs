//! What a connector's native unit tests need: answers to feed the functions
//! that decode them, and the kind of an error as the agent sees it. (The
//! host's imports are stubs natively, so tests exercise pure functions; the
//! replay cases of `scout-host test` cover the calls.)

use crate::{Response, ToolError};

/// An answer with `status` and `body`, JSON content type.
pub fn response(status: u16, body: &str) -> Response {
    Response {
        status,
        headers: vec![("content-type".to_string(), "application/json".to_string())],
        body: body.as_bytes().to_vec(),
    }
}

/// The error of a call expected to fail (a tool's data types need no
/// `Debug` for this, unlike `unwrap_err`).
pub fn fails<T>(result: Result<T, ToolError>) -> ToolError {
    match result {
        Err(e) => e,
        Ok(_) => panic!("expected a tool error"),
    }
}

/// The error's case as the agent reads it (`invalid-input`, `not-found`,
/// `refused`, `upstream`, `capability`, `bad-response`).
pub fn kind(error: &ToolError) -> &'static str {
    match error {
        ToolError::InvalidInput(_) => "invalid-input",
        ToolError::NotFound(_) => "not-found",
        ToolError::Refused(_) => "refused",
        ToolError::Upstream(_) => "upstream",
        ToolError::Capability(_) => "capability",
        ToolError::BadResponse(_) => "bad-response",
    }
}

/// The error's message (an upstream error's, with its status in front:
/// `403: ...`).
pub fn message(error: &ToolError) -> String {
    match error {
        ToolError::InvalidInput(m)
        | ToolError::NotFound(m)
        | ToolError::Refused(m)
        | ToolError::BadResponse(m) => m.clone(),
        ToolError::Upstream(e) => format!("{}: {}", e.status, e.message),
        ToolError::Capability(e) => e.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_checked_answer_reads_as_the_agent_would() {
        let answer = super::response(403, r#"{"message":"Resource not accessible"}"#);
        let e = crate::check_status(&answer).unwrap_err();
        assert_eq!(super::kind(&e), "upstream");
        assert_eq!(super::message(&e), "403: Resource not accessible");
    }
}
