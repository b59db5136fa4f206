//! Hello in Rust: the read tools of the JavaScript and Python hello guests,
//! written as an author writes a Rust connector, so the `languages` bench
//! compares each language's cost on the same tool in the same run.

scout_sdk::bindings!();

use bindings::exports::scout::hello::read_tools;
use scout_sdk::{Http, Method, ToolError, UpstreamError};
use std::hash::{BuildHasher, Hasher};

struct Hello;

impl read_tools::Guest for Hello {
    fn greet(name: String) -> Result<String, ToolError> {
        // The guest's own check, as the other languages' hello guests make
        // it: refused before anything is sent.
        if name.chars().any(|c| c.is_ascii_digit()) {
            return Err(ToolError::invalid("name: letters only, no digits"));
        }
        let response = Http::connect()?.send(Method::Get, &format!("/hello/{name}"), &[], None)?;
        if response.status != 200 {
            return Err(ToolError::Upstream(UpstreamError {
                status: response.status,
                message: "not 200".to_string(),
            }));
        }
        scout_sdk::log::info(&format!("greeted {name}"));
        String::from_utf8(response.body).map_err(|_| ToolError::BadResponse("not UTF-8".into()))
    }

    fn now() -> Result<String, ToolError> {
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|_| ToolError::BadResponse("the clock is before 1970".into()))?
            .as_millis();
        // A hasher's keys are the guest's randomness (wasi:random).
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        Ok(format!("{millis} {random}"))
    }
}

scout_sdk::export!(Hello);
