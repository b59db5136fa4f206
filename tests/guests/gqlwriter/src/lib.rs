//! Sends the GraphQL request bodies it is given through routes that name
//! their root fields, so a test can make it send what its tool does not say.

scout_sdk::bindings!();

use bindings::exports::scout::gqlwriter::{read_tools, write_tools};
use scout_sdk::{Http, Method, ToolError};

struct GraphqlWriter;

fn post(request: String) -> Result<u16, ToolError> {
    Ok(Http::connect()?
        .send(Method::Post, "/graphql", &[], Some(request.into_bytes()))?
        .status)
}

impl read_tools::Guest for GraphqlWriter {
    fn issues(request: String) -> Result<u16, ToolError> {
        post(request)
    }
}

impl write_tools::Guest for GraphqlWriter {
    fn create_comment(_issue_id: String, _body: String, request: String) -> Result<u16, ToolError> {
        post(request)
    }
}

scout_sdk::export!(GraphqlWriter);
