//! Sends the JSON filter it is given as the body of a read-only POST (and
//! a write's properties as the body of one that asks a person) and answers
//! the text it received, so a test sees what the host handed it.
//! It also sets an `Authorization` header, as an author might by mistake.

scout_sdk::bindings!();

use bindings::exports::scout::jsonargs::{read_tools, write_tools};
use scout_sdk::{Http, Json, Method, ToolError};

struct JsonArgs;

impl read_tools::Guest for JsonArgs {
    fn query(filter: Json, _sorts: Option<Json>) -> Result<String, ToolError> {
        // What a connector does with it: read it as JSON (the host already
        // refused text that is not).
        let _: serde_json::Value = scout_sdk::args::json("filter", &filter)?;
        // An author's trap: a header the host owns, dropped and reported to
        // the author by `call` and `test`.
        Http::connect()?
            .with_header("Authorization", "Bearer from-the-guest")
            .send(
                Method::Post,
                "/query",
                &[],
                Some(filter.clone().into_bytes()),
            )?;
        Ok(filter)
    }
}

impl write_tools::Guest for JsonArgs {
    fn create(properties: Json) -> Result<String, ToolError> {
        Http::connect()?.send(
            Method::Post,
            "/create",
            &[],
            Some(properties.clone().into_bytes()),
        )?;
        Ok(properties)
    }
}

scout_sdk::export!(JsonArgs);
