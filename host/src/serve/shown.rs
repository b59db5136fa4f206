//! What a person deciding a call is shown of it, beyond its arguments:
//! what the tool does and may reach, and the GraphQL operations and root
//! fields an approved call may send. The approvals API and MCP elicitation
//! show the same words.

use super::ServeHost;
use crate::runtime::LoadedComponent;
use serde_json::{Value, json};
use std::sync::Arc;

/// The loaded component serving `tool` (its MCP name, `mcp__SERVER__TOOL`),
/// with the server's name and the tool's own.
fn serving<'a>(
    host: &ServeHost,
    tool: &'a str,
) -> Option<(Arc<LoadedComponent>, &'a str, &'a str)> {
    let (server, wire) = tool.strip_prefix("mcp__")?.split_once("__")?;
    let component = host.host().component(server)?;
    component.tool(wire)?;
    Some((component, server, wire))
}

/// What a person deciding a call of `tool` is told of the tool itself: what
/// it does (its description), that it writes and whether it bills, and the
/// requests it may make (each declared route, with the origin it reaches).
/// `null` for a tool no loaded connector offers.
pub(crate) fn tool_shown(host: &ServeHost, tool: &str) -> Value {
    let Some((component, server, wire)) = serving(host, tool) else {
        return Value::Null;
    };
    let Some(found) = component.tool(wire) else {
        return Value::Null;
    };
    let settings = host.host().config().connectors.get(server);
    let origin_of = |destination: Option<&str>| -> Option<String> {
        let settings = settings?;
        match destination {
            None => settings.origin.clone(),
            Some(name) => settings.origins.get(name).map(|o| o.origin().to_string()),
        }
    };
    let reaches: Vec<Value> = found
        .routes
        .iter()
        .map(|route| {
            json!({
                "route": route.to_string(),
                "origin": origin_of(route.destination.as_deref()),
            })
        })
        .collect();
    json!({
        "description": found.description,
        "effect": found.effect.as_str(),
        "billed": component.info().manifest.billing.is_some(),
        "reaches": reaches,
        "input_schema": found.input_schema,
    })
}

/// What an approved call may send over GraphQL, for the person deciding:
/// per GraphQL route of the tool, the operation it may carry and the root
/// fields it may select; for a route that names none (the tool's `query`
/// argument is the whole document), the operations that document holds,
/// as the host reads them. `null` for a tool with no GraphQL route.
pub(crate) fn graphql_shown(host: &ServeHost, tool: &str, arguments: Option<&Value>) -> Value {
    let Some((component, _, wire)) = serving(host, tool) else {
        return Value::Null;
    };
    let Some(found) = component.tool(wire) else {
        return Value::Null;
    };
    let shown: Vec<Value> = found
        .routes
        .iter()
        .filter_map(|route| {
            let body = route.graphql?;
            let mut entry = json!({"route": route.to_string()});
            if route.graphql_fields.is_empty() {
                let document = arguments
                    .and_then(|a| a.get("query"))
                    .and_then(Value::as_str);
                entry["root_fields"] = json!("any");
                entry["document"] = match document.map(crate::capabilities::graphql::document) {
                    Some(Ok(ops)) => json!(crate::capabilities::graphql::summary(&ops)),
                    Some(Err(why)) => json!(format!("unreadable: {why}")),
                    None => Value::Null,
                };
            } else {
                entry["operation"] = json!(match body {
                    scout_manifest::GraphqlBody::QueriesOnly => "query",
                    scout_manifest::GraphqlBody::Gated => "mutation or query",
                });
                entry["root_fields"] = json!(route.graphql_fields);
            }
            Some(entry)
        })
        .collect();
    if shown.is_empty() {
        Value::Null
    } else {
        Value::Array(shown)
    }
}

/// [`graphql_shown`] in words, for a question put to a person (MCP
/// elicitation); `None` for a tool with no GraphQL route.
pub(crate) fn graphql_words(shown: &Value) -> Option<String> {
    let routes = shown.as_array()?;
    let lines: Vec<String> = routes
        .iter()
        .map(|r| {
            let route = r["route"].as_str().unwrap_or("");
            match r["root_fields"].as_array() {
                Some(fields) => {
                    let fields: Vec<&str> = fields.iter().filter_map(Value::as_str).collect();
                    format!(
                        "{route}: {} selecting only {}",
                        r["operation"].as_str().unwrap_or(""),
                        fields.join(", ")
                    )
                }
                None => format!(
                    "{route}: any root field; this document holds {}",
                    r["document"].as_str().unwrap_or("nothing readable")
                ),
            }
        })
        .collect();
    Some(format!("It may send over GraphQL: {}.", lines.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_is_told_what_a_graphql_tool_may_send() {
        let pinned = json!([{"route": "POST /graphql (graphql: commentCreate)",
                             "operation": "mutation or query", "root_fields": ["commentCreate"]}]);
        assert_eq!(
            graphql_words(&pinned).as_deref(),
            Some(
                "It may send over GraphQL: POST /graphql (graphql: commentCreate): mutation or query selecting only commentCreate."
            )
        );
        let any = json!([{"route": "POST /admin/api/2026-10/graphql.json (graphql)",
                          "root_fields": "any", "document": "mutation productUpdate"}]);
        assert_eq!(
            graphql_words(&any).as_deref(),
            Some(
                "It may send over GraphQL: POST /admin/api/2026-10/graphql.json (graphql): any root field; this document holds mutation productUpdate."
            )
        );
        assert_eq!(graphql_words(&Value::Null), None);
    }
}
