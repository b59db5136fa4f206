//! Sends the JSON filter it is given as the body of a read-only POST and
//! answers the text it received, so a test sees what the host handed it.

scout_sdk::bindings!();

use bindings::exports::scout::jsonargs::read_tools;
use scout_sdk::{Http, Json, Method, ToolError};

struct JsonArgs;

impl read_tools::Guest for JsonArgs {
    fn query(filter: Json, _sorts: Option<Json>) -> Result<String, ToolError> {
        // What a connector does with it: read it as JSON (the host already
        // refused text that is not).
        let _: serde_json::Value = scout_sdk::args::json("filter", &filter)?;
        Http::connect()?.send(
            Method::Post,
            "/query",
            &[],
            Some(filter.clone().into_bytes()),
        )?;
        Ok(filter)
    }
}

scout_sdk::export!(JsonArgs);
