//! GraphQL over the `http` handle: a body of `query` and `variables` (never
//! arguments spliced into the document), and an answer whose `errors` are
//! an upstream error even under a 200.

use crate::errors::ErrorFormat;
use crate::{Http, Method, ToolError, UpstreamError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

#[derive(Serialize)]
struct Body<'a, V: Serialize> {
    query: &'a str,
    variables: V,
}

/// The JSON body of a GraphQL request.
pub fn request(query: &str, variables: impl Serialize) -> Result<Vec<u8>, ToolError> {
    serde_json::to_vec(&Body { query, variables })
        .map_err(|e| ToolError::invalid(format!("cannot encode the GraphQL variables: {e}")))
}

#[derive(Deserialize)]
struct Errors {
    #[serde(default)]
    errors: Vec<Message>,
}

#[derive(Deserialize)]
struct Data<T> {
    data: Option<T>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    message: String,
}

/// The `data` of a GraphQL answer: a non-2xx status is the upstream's error
/// (its `errors`, else its text); `errors` under a 2xx is an `upstream`
/// error carrying the status and the messages, read before `data` (a
/// partial answer's nulls never hide them); no `data` is `bad-response`.
pub fn data<T: DeserializeOwned>(status: u16, body: &[u8]) -> Result<T, ToolError> {
    if let Some(e) = ErrorFormat::GraphQl.status_error(status, body) {
        return Err(e);
    }
    let bad = |e: serde_json::Error| {
        ToolError::BadResponse(format!("the GraphQL answer is not the expected JSON: {e}"))
    };
    let errors: Errors = serde_json::from_slice(body).map_err(bad)?;
    if !errors.errors.is_empty() {
        let messages: Vec<&str> = errors.errors.iter().map(|m| m.message.as_str()).collect();
        return Err(ToolError::Upstream(UpstreamError {
            status,
            message: crate::errors::cut_message(messages.join("; ")),
        }));
    }
    let answer: Data<T> = serde_json::from_slice(body).map_err(bad)?;
    answer
        .data
        .ok_or_else(|| ToolError::BadResponse("the GraphQL answer has no data".to_string()))
}

impl Http {
    /// POSTs a GraphQL `query` with `variables` to `path` and returns its `data`.
    pub fn graphql<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &str,
        variables: impl Serialize,
    ) -> Result<T, ToolError> {
        let response = self.send(Method::Post, path, &[], Some(request(query, variables)?))?;
        data(response.status, &response.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_under_a_200_are_upstream_errors() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct Shop {
            name: String,
        }
        assert_eq!(
            data::<Shop>(200, br#"{"data":{"name":"Acme"}}"#).unwrap(),
            Shop {
                name: "Acme".into()
            }
        );
        let e =
            data::<Shop>(200, br#"{"data":null,"errors":[{"message":"Throttled"}]}"#).unwrap_err();
        assert!(
            matches!(e, ToolError::Upstream(UpstreamError { status: 200, ref message }) if message == "Throttled")
        );
        let e = data::<Shop>(401, br#"{"errors":[{"message":"Invalid API key"}]}"#).unwrap_err();
        assert!(
            matches!(e, ToolError::Upstream(UpstreamError { status: 401, ref message }) if message == "Invalid API key")
        );
        assert!(matches!(
            data::<Shop>(200, b"{}"),
            Err(ToolError::BadResponse(_))
        ));
        assert_eq!(
            String::from_utf8(
                request(
                    "query($id: ID!) { x(id: $id) }",
                    serde_json::json!({"id": "1"})
                )
                .unwrap()
            )
            .unwrap(),
            r#"{"query":"query($id: ID!) { x(id: $id) }","variables":{"id":"1"}}"#
        );
    }
}
