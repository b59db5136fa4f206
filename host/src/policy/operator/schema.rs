//! The Cedar schema of a deployment: what a policy may name.
//!
//! Generated from what the host serves (every tool of every component and
//! of every remote MCP server as listed now), so a policy naming an
//! argument a tool does not have, or comparing one with the wrong type, is
//! refused when it is loaded rather than silently never matching. A
//! component tool's arguments are typed from its input schema, which is
//! derived from its WIT parameter types ([`crate::schema`]); a remote tool's
//! from the JSON Schema its server lists, where it maps.
//!
//! The mapping: a string or an enum is a `String`, an integer a `Long`, a
//! boolean a `Bool`, a list a `Set` of its item's type, a record a record
//! (its fields required as the record requires them), an option an
//! optional attribute. What Cedar cannot hold (a float, a `json` value, a
//! variant, a tuple, an integer beyond `Long`) is left out of the schema,
//! and a policy naming it is refused at load with a note that says why.

use crate::runtime::LoadedComponent;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One served tool, as the schema declares it.
#[derive(Debug, Clone)]
pub struct ServedTool {
    /// The connector (server name) serving it.
    pub connector: String,
    /// Its wire name (`github_create_branch`).
    pub tool: String,
    /// Its input JSON Schema (a component's derived from the WIT types).
    pub input_schema: Value,
}

/// The Cedar type an argument is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArgShape {
    String,
    Long,
    Bool,
    Set(Box<ArgShape>),
    Record(Vec<Field>),
}

/// One attribute of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Field {
    pub name: String,
    pub shape: ArgShape,
    pub required: bool,
}

/// One action (tool) of the schema.
#[derive(Debug, Clone)]
pub(crate) struct ActionShape {
    /// The connector whose tool it is.
    pub connector: String,
    /// `context.args`'s attributes.
    pub args: Vec<Field>,
    /// Arguments left out of the schema, with why (`path`, why).
    pub left_out: Vec<(String, &'static str)>,
}

/// The Cedar schema generated from a deployment.
#[derive(Debug, Clone)]
pub struct DeploymentSchema {
    text: String,
    schema: cedar_policy::Schema,
    /// By action id (the tool's MCP name).
    pub(crate) actions: BTreeMap<String, ActionShape>,
}

/// The entity types, common types and the context every action shares.
const PREAMBLE: &str = r#"namespace Scout {
  // Calls the policies allowed before this one (context.history).
  type Window = {
    in_session: Long,
    in_session_last_hour: Long,
    in_brand_last_hour: Long,
    in_brand_last_day: Long,
  };
  type History = {
    session_calls: Long,
    session_effects: Long,
    session_spent_units: Long,
    session_approvals: Long,
    tool: Window,
    connector: Window,
  };
  // The principal: the calling session.
  entity Session = {
    session: String,
    brand: String,
    role: String,
    base_role: String,
    profile?: String,
    requester?: String,
    person_can_be_asked: Bool,
  };
  // The resource: the connector, with the called tool's facts.
  entity Connector = {
    name: String,
    origin: String,
    effect: String,
    billing_unit?: String,
    routes: Set<String>,
    destination?: String,
  };
"#;

impl DeploymentSchema {
    /// The schema of `components` (remote MCP servers included, as listed now).
    pub fn of(components: &[&LoadedComponent]) -> Result<DeploymentSchema, SchemaFailed> {
        DeploymentSchema::from_tools(components.iter().flat_map(|c| {
            c.tools().iter().map(|t| ServedTool {
                connector: c.name().to_string(),
                tool: t.name.clone(),
                input_schema: t.input_schema.clone(),
            })
        }))
    }

    /// The schema declaring `tools`.
    pub fn from_tools(
        tools: impl IntoIterator<Item = ServedTool>,
    ) -> Result<DeploymentSchema, SchemaFailed> {
        let mut actions = BTreeMap::new();
        for tool in tools {
            let mut left_out = Vec::new();
            let args = record_fields(&tool.input_schema, "", &mut left_out);
            actions.insert(
                crate::policy::names::mcp(&tool.connector, &tool.tool),
                ActionShape {
                    connector: tool.connector,
                    args,
                    left_out,
                },
            );
        }
        let text = schema_text(&actions);
        let schema = cedar_policy::Schema::from_cedarschema_str(&text)
            .map(|(schema, _warnings)| schema)
            .map_err(|e| SchemaFailed(e.to_string()))?;
        Ok(DeploymentSchema {
            text,
            schema,
            actions,
        })
    }

    /// The schema of a deployment serving nothing.
    pub fn empty() -> DeploymentSchema {
        match DeploymentSchema::from_tools([]) {
            Ok(schema) => schema,
            // The preamble is a constant the unit tests parse.
            Err(e) => unreachable_preamble(e),
        }
    }

    /// The schema in Cedar's schema syntax (`scout-host policy schema`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The parsed schema the validator uses.
    pub fn cedar(&self) -> &cedar_policy::Schema {
        &self.schema
    }

    /// Every action id (tool MCP name) it declares.
    pub fn actions(&self) -> impl Iterator<Item = &str> {
        self.actions.keys().map(String::as_str)
    }
}

#[allow(clippy::panic)]
fn unreachable_preamble(e: SchemaFailed) -> DeploymentSchema {
    // Never reached: `empty_schema_parses` checks the constant preamble.
    panic!("the policy schema's preamble does not parse: {e}")
}

/// The generated schema did not parse (a bug in the generator: the
/// message is Cedar's).
#[derive(Debug, Clone, thiserror::Error)]
#[error("the deployment's policy schema could not be generated: {0}")]
pub struct SchemaFailed(String);

/// The connector group action every tool of `connector` is in.
pub(crate) fn connector_group(connector: &str) -> String {
    format!("connector:{connector}")
}

fn schema_text(actions: &BTreeMap<String, ActionShape>) -> String {
    let mut text = String::from(PREAMBLE);
    let groups: std::collections::BTreeSet<&str> =
        actions.values().map(|a| a.connector.as_str()).collect();
    if !groups.is_empty() {
        text.push_str("  // Every tool of a connector is in its group.\n");
    }
    for connector in groups {
        let _ = writeln!(text, "  action {};", quoted(&connector_group(connector)));
    }
    for (name, action) in actions {
        for (path, why) in &action.left_out {
            let _ = writeln!(text, "  // args.{path} is left out: {why}");
        }
        let _ = writeln!(
            text,
            "  action {} in [{}] appliesTo {{\n    principal: [Session],\n    resource: [Connector],\n    context: {{\n      args: {},\n      history: History,\n      now: Long,\n      email_domains: Set<String>,\n    }}\n  }};",
            quoted(name),
            quoted(&connector_group(&action.connector)),
            record_text(&action.args, 3),
        );
    }
    text.push_str("}\n");
    text
}

fn record_text(fields: &[Field], depth: usize) -> String {
    if fields.is_empty() {
        return "{}".into();
    }
    let indent = "  ".repeat(depth + 1);
    let mut text = String::from("{\n");
    for field in fields {
        let _ = writeln!(
            text,
            "{indent}{}{}: {},",
            quoted(&field.name),
            if field.required { "" } else { "?" },
            shape_text(&field.shape, depth + 1)
        );
    }
    let _ = write!(text, "{}}}", "  ".repeat(depth));
    text
}

fn shape_text(shape: &ArgShape, depth: usize) -> String {
    match shape {
        ArgShape::String => "String".into(),
        ArgShape::Long => "Long".into(),
        ArgShape::Bool => "Bool".into(),
        ArgShape::Set(item) => format!("Set<{}>", shape_text(item, depth)),
        ArgShape::Record(fields) => record_text(fields, depth),
    }
}

/// A Cedar string literal.
pub(crate) fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The attributes of an object schema; what does not map goes to `left_out`.
fn record_fields(
    schema: &Value,
    prefix: &str,
    left_out: &mut Vec<(String, &'static str)>,
) -> Vec<Field> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = Vec::new();
    for (name, property) in properties {
        let path = format!("{prefix}{name}");
        let (inner, nullable) = unwrap_nullable(property);
        match shape_of(inner, &path, left_out) {
            Ok(shape) => fields.push(Field {
                name: name.clone(),
                shape,
                required: required.contains(&name.as_str()) && !nullable,
            }),
            Err(why) => left_out.push((path, why)),
        }
    }
    fields
}

/// `anyOf: [T, null]` or `type: [T, "null"]` is `T`, optional.
fn unwrap_nullable(schema: &Value) -> (&Value, bool) {
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array)
        && any.len() == 2
        && let Some(null_at) = any.iter().position(is_null_type)
    {
        return (&any[1 - null_at], true);
    }
    (schema, false)
}

fn is_null_type(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

fn shape_of(
    schema: &Value,
    path: &str,
    left_out: &mut Vec<(String, &'static str)>,
) -> Result<ArgShape, &'static str> {
    let ty = match schema.get("type") {
        Some(Value::String(ty)) => ty.as_str(),
        Some(Value::Array(types)) => {
            let named: Vec<&str> = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            match named.as_slice() {
                [one] => *one,
                _ => return Err("a value of several types, which Cedar cannot hold"),
            }
        }
        _ => {
            return Err("a value of no single type (any JSON, a variant), which Cedar cannot hold");
        }
    };
    match ty {
        "string" => Ok(ArgShape::String),
        "boolean" => Ok(ArgShape::Bool),
        "integer" => {
            let max = schema.get("maximum").and_then(Value::as_f64);
            if max.is_some_and(|m| m > i64::MAX as f64) {
                Err("an integer beyond Cedar's Long (u64), which Cedar cannot hold whole")
            } else {
                Ok(ArgShape::Long)
            }
        }
        "number" => Err("a number that may have a fraction, and Cedar holds no floats"),
        "array" => {
            if schema.get("prefixItems").is_some() {
                return Err("a tuple, which Cedar cannot hold");
            }
            let items = schema.get("items").unwrap_or(&Value::Null);
            let item_path = format!("{path}[]");
            shape_of(items, &item_path, left_out).map(|item| ArgShape::Set(Box::new(item)))
        }
        "object" => Ok(ArgShape::Record(record_fields(
            schema,
            &format!("{path}."),
            left_out,
        ))),
        _ => Err("a type Cedar cannot hold"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_schema_parses() {
        let schema = DeploymentSchema::empty();
        assert!(schema.text().contains("entity Session"));
    }

    #[test]
    fn types_map_and_what_cedar_cannot_hold_is_left_out() {
        let schema = DeploymentSchema::from_tools([ServedTool {
            connector: "github".into(),
            tool: "github_create_branch".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "branch": {"type": "string"},
                    "depth": {"type": "integer", "minimum": 0, "maximum": 4294967295u64},
                    "big": {"type": "integer", "minimum": 0, "maximum": 18446744073709551615u64},
                    "ratio": {"type": "number"},
                    "labels": {"type": "array", "items": {"type": "string"}},
                    "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "body": {},
                    "where": {"type": "object", "properties": {"owner": {"type": "string"}}, "required": ["owner"]},
                },
                "required": ["branch", "depth", "big", "ratio", "labels", "body", "where"],
            }),
        }])
        .unwrap();
        let text = schema.text();
        assert!(text.contains("\"branch\": String,"), "{text}");
        assert!(text.contains("\"depth\": Long,"), "{text}");
        assert!(text.contains("\"labels\": Set<String>,"), "{text}");
        assert!(text.contains("\"note\"?: String,"), "{text}");
        assert!(text.contains("\"owner\": String,"), "{text}");
        assert!(!text.contains("\"ratio\""), "{text}");
        assert!(!text.contains("\"big\""), "{text}");
        assert!(text.contains("args.ratio is left out"), "{text}");
        assert!(text.contains("args.body is left out"), "{text}");
        assert!(text.contains("action \"connector:github\";"), "{text}");
    }
}
