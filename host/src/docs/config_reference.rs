//! The configuration reference (`docs/configuration.md`), generated from the
//! JSON Schema schemars derives from [`ServeConfig`] and every type under it:
//! the doc comments are the descriptions and serde's defaults the defaults,
//! so the page says what `serve` actually reads. A key without a doc comment
//! is an error, never a blank entry: a key nobody explained is a key nobody
//! can set safely.

use crate::config::ServeConfig;
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// The configuration file's JSON Schema (draft 2020-12), as schemars derives
/// it from the types: what `scout-host config schema` prints.
pub fn configuration_schema() -> Value {
    schemars::schema_for!(ServeConfig).to_value()
}

/// The page, or every key lacking what the page must say about it.
pub fn configuration_page() -> Result<String, Vec<String>> {
    let schema = configuration_schema();
    let mut walker = Walker {
        defs: schema
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        sections: Vec::new(),
        errors: Vec::new(),
    };
    walker.sections.push(Section {
        table: None,
        presence: Presence::Always,
        description: "Keys written before any table.".to_string(),
        keys: Vec::new(),
    });
    walker.table(&schema, None, 0);
    if !walker.errors.is_empty() {
        return Err(walker.errors);
    }
    Ok(render(&walker.sections))
}

/// The file's top-level keys (`listen`, `store`, `connectors`, ...), each
/// of which the page documents as a key or a table: what a test checks the
/// page against.
pub fn top_level_keys() -> Vec<String> {
    configuration_schema()
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

/// One table of the file as the page shows it.
struct Section {
    /// `store`, `connectors.NAME`; `None` for the top level.
    table: Option<String>,
    /// What the page says about how often the table appears.
    presence: Presence,
    description: String,
    keys: Vec<Key>,
}

/// How often a table appears in a file.
#[derive(Clone, Copy, PartialEq)]
enum Presence {
    /// Always there (its keys' defaults apply when it is left out).
    Always,
    /// May be left out altogether.
    Optional,
    /// One per entry (`[connectors.NAME]`), none by default.
    PerEntry,
}

/// One key of a table.
struct Key {
    name: String,
    toml_type: String,
    /// `default: ...` or `**required**`, as the page shows it.
    default: String,
    description: String,
    /// An enumeration's values, each with its description when it has one.
    values: Vec<(String, Option<String>)>,
}

struct Walker {
    defs: Map<String, Value>,
    sections: Vec<Section>,
    errors: Vec<String>,
}

/// What a table of tables' entries are called in a key path.
fn entry_placeholder(table: &str) -> &'static str {
    match table {
        "brands" | "brand_roles" => "BRAND",
        "registries" => "\"HOST:PORT\"",
        "folders" => "FOLDER",
        _ => "NAME",
    }
}

/// What the page adds to the type of a key that names environment
/// variables (holding a secret, or whose presence is what matters) rather
/// than holding their values.
fn environment_note(key: &str) -> Option<&'static str> {
    match key {
        "requires_env" => Some(" (each names an environment variable)"),
        "deployment_headers" => Some(" (each value names an environment variable)"),
        _ if key.ends_with("_env") => Some(" (names an environment variable)"),
        _ => None,
    }
}

impl Walker {
    /// `$ref` resolved (once more if it points at another reference).
    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        let mut current = schema;
        for _ in 0..4 {
            match current
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .and_then(|name| self.defs.get(name))
            {
                Some(target) => current = target,
                None => break,
            }
        }
        current
    }

    /// The schema without its `null` alternative, and whether it had one
    /// (an `Option` field: the key may be left out).
    fn without_null(&self, schema: &Value) -> (Value, bool) {
        if let Some(alternatives) = schema.get("anyOf").and_then(Value::as_array) {
            let others: Vec<&Value> = alternatives
                .iter()
                .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            if others.len() < alternatives.len() && others.len() == 1 {
                return (self.resolve(others[0]).clone(), true);
            }
        }
        let resolved = self.resolve(schema).clone();
        if let Some(types) = resolved.get("type").and_then(Value::as_array)
            && types.iter().any(|t| t == "null")
        {
            let mut narrowed = resolved.clone();
            let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
            narrowed["type"] = match rest.as_slice() {
                [one] => one.clone(),
                _ => Value::Array(rest),
            };
            return (narrowed, true);
        }
        (resolved, false)
    }

    /// Whether `schema` (resolved) is a table with named keys.
    fn is_table(schema: &Value) -> bool {
        schema.get("properties").is_some_and(Value::is_object)
    }

    /// The entries' schema when `schema` is a table of entries by name.
    fn entries<'a>(&'a self, schema: &'a Value) -> Option<&'a Value> {
        schema
            .get("additionalProperties")
            .filter(|v| v.is_object())
            .map(|v| self.resolve(v))
    }

    /// Walks the table `schema` at `path` into the section at `index`.
    fn table(&mut self, schema: &Value, path: Option<&str>, index: usize) {
        let required: Vec<String> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (name, property) in properties.clone() {
            let full = match path {
                Some(table) => format!("[{table}] {name}"),
                None => name.clone(),
            };
            let child_path = match path {
                Some(table) => format!("{table}.{name}"),
                None => name.clone(),
            };
            let description = property
                .get("description")
                .and_then(Value::as_str)
                .map(tidy)
                .unwrap_or_default();
            if description.is_empty() {
                self.errors.push(format!(
                    "`{full}` has no doc comment: say what it does on its field"
                ));
            }
            let (inner, nullable) = self.without_null(&property);
            if Self::is_table(&inner) {
                let described = join_descriptions(&description, &type_description(&inner));
                self.sections.push(Section {
                    table: Some(child_path.clone()),
                    presence: if nullable {
                        Presence::Optional
                    } else {
                        Presence::Always
                    },
                    description: described,
                    keys: Vec::new(),
                });
                let at = self.sections.len() - 1;
                self.table(&inner, Some(&child_path), at);
                continue;
            }
            if let Some(entry) = self.entries(&inner).cloned()
                && Self::is_table(&entry)
            {
                let entry_path = format!("{child_path}.{}", entry_placeholder(&name));
                let described = join_descriptions(&description, &type_description(&entry));
                self.sections.push(Section {
                    table: Some(entry_path.clone()),
                    presence: Presence::PerEntry,
                    description: described,
                    keys: Vec::new(),
                });
                let at = self.sections.len() - 1;
                self.table(&entry, Some(&entry_path), at);
                continue;
            }
            let mut toml_type = self.type_name(&inner);
            if let Some(note) = environment_note(&name) {
                toml_type.push_str(note);
            }
            let default = match property.get("default") {
                Some(Value::Null) => "default: unset".to_string(),
                Some(value) => format!("default: `{}`", toml_literal(value)),
                None if required.contains(&name) => "**required**".to_string(),
                None if nullable => "default: unset".to_string(),
                None if inner.get("type").and_then(Value::as_str) == Some("object") => {
                    "default: empty".to_string()
                }
                None => {
                    self.errors.push(format!(
                        "`{full}`: its default cannot be read from the schema; derive serde::Serialize on its type"
                    ));
                    String::new()
                }
            };
            let values = self.values(&inner);
            self.sections[index].keys.push(Key {
                name,
                toml_type,
                default,
                description,
                values,
            });
        }
    }

    /// An enumeration's values, with each value's doc comment when written.
    fn values(&self, schema: &Value) -> Vec<(String, Option<String>)> {
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return values
                .iter()
                .filter(|v| !v.is_null())
                .map(|v| (toml_literal(v), None))
                .collect();
        }
        let alternatives = schema
            .get("oneOf")
            .or_else(|| schema.get("anyOf"))
            .and_then(Value::as_array);
        let Some(alternatives) = alternatives else {
            return Vec::new();
        };
        let mut values = Vec::new();
        for alternative in alternatives {
            let alternative = self.resolve(alternative);
            if let Some(constant) = alternative.get("const") {
                values.push((
                    toml_literal(constant),
                    alternative
                        .get("description")
                        .and_then(Value::as_str)
                        .map(tidy),
                ));
            } else if let Some(inner) = alternative.get("enum").and_then(Value::as_array) {
                let description = alternative
                    .get("description")
                    .and_then(Value::as_str)
                    .map(tidy);
                for value in inner {
                    values.push((toml_literal(value), description.clone()));
                }
            }
        }
        values
    }

    /// The TOML type `schema` accepts, in words.
    fn type_name(&self, schema: &Value) -> String {
        let schema = self.resolve(schema);
        if schema.get("enum").is_some() || schema.get("const").is_some() {
            return "string".to_string();
        }
        if let Some(alternatives) = schema
            .get("oneOf")
            .or_else(|| schema.get("anyOf"))
            .and_then(Value::as_array)
        {
            let mut names: Vec<String> = Vec::new();
            for alternative in alternatives {
                let name = self.type_name(alternative);
                if name != "null" && !names.contains(&name) {
                    names.push(name);
                }
            }
            return names.join(" or ");
        }
        match schema.get("type") {
            Some(Value::String(t)) => match t.as_str() {
                "string" => "string".to_string(),
                "integer" => "integer".to_string(),
                "number" => "float".to_string(),
                "boolean" => "boolean".to_string(),
                "array" => match schema.get("items") {
                    Some(items) => format!("array of {}s", self.type_name(items)),
                    None => "array".to_string(),
                },
                "object" => {
                    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                        let keys: Vec<&str> = properties.keys().map(String::as_str).collect();
                        format!("table {{ {} }}", keys.join(", "))
                    } else if let Some(entry) = self.entries(schema) {
                        format!("table (each entry: {})", self.type_name(entry))
                    } else {
                        "table".to_string()
                    }
                }
                other => other.to_string(),
            },
            Some(Value::Array(types)) => types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .map(|t| self.type_name(&serde_json::json!({ "type": t })))
                .collect::<Vec<_>>()
                .join(" or "),
            _ => "any".to_string(),
        }
    }
}

/// A type's own doc comment, when its schema carries one.
fn type_description(schema: &Value) -> String {
    schema
        .get("description")
        .and_then(Value::as_str)
        .map(tidy)
        .unwrap_or_default()
}

fn join_descriptions(field: &str, type_doc: &str) -> String {
    match (field.is_empty(), type_doc.is_empty()) {
        (_, true) => field.to_string(),
        (true, false) => type_doc.to_string(),
        (false, false) => format!("{field}\n\n{type_doc}"),
    }
}

/// A doc comment as Markdown outside rustdoc: intra-doc links become code.
fn tidy(text: &str) -> String {
    text.replace("[`", "`")
        .replace("`]", "`")
        .trim()
        .to_string()
}

/// `value` as it is written in TOML.
fn toml_literal(value: &Value) -> String {
    match value {
        Value::Null => "unset".to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(toml_literal)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(entries) if entries.is_empty() => "{}".to_string(),
        Value::Object(entries) => format!(
            "{{ {} }}",
            entries
                .iter()
                .map(|(k, v)| format!("{k} = {}", toml_literal(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

const PREAMBLE: &str = "# Configuration reference

Every key of `serve`'s configuration file (TOML), generated from the types
the host reads it into: the descriptions are their doc comments, the
defaults serde's. Regenerate with `cargo run -p scout-host -- config
reference`; a test (`config_reference`) fails when this page drifts from the
code. Check a file before starting a host with `scout-host config check
FILE`: it reports every error at once with its key and line, and what the
file would serve (see \"Checking a configuration\" in
[operating.md](operating.md)).

Secrets are never in the file: a key whose type says *names an environment
variable* holds the variable's name, and the host reads the value from its
environment at start. Relative paths are relative to the configuration
file's folder. An unknown key is an error, never ignored.
";

/// The page from its sections.
fn render(sections: &[Section]) -> String {
    let mut page = String::from(PREAMBLE);
    for section in sections {
        if section.keys.is_empty() && section.table.is_some() && section.description.is_empty() {
            continue;
        }
        let heading = match &section.table {
            Some(table) => format!("`[{table}]`"),
            None => "Top-level keys".to_string(),
        };
        // One blank line before each table, whatever ended the last one.
        while page.ends_with("\n\n") {
            page.pop();
        }
        let _ = write!(page, "\n## {heading}\n\n");
        match section.presence {
            Presence::Always => {}
            Presence::Optional => page.push_str("*Optional table.*\n\n"),
            Presence::PerEntry => page.push_str("*One table per entry; none by default.*\n\n"),
        }
        if !section.description.is_empty() {
            let _ = writeln!(page, "{}\n", section.description);
        }
        for key in &section.keys {
            let path = match &section.table {
                Some(table) => format!("[{table}] {}", key.name),
                None => key.name.clone(),
            };
            let _ = write!(
                page,
                "### `{path}`\n\n{} · {}\n\n{}\n",
                key.toml_type, key.default, key.description
            );
            if !key.values.is_empty() {
                page.push_str("\nValues:\n\n");
                for (value, description) in &key.values {
                    match description {
                        Some(d) => {
                            let _ = writeln!(page, "- `{value}`: {}", d.replace('\n', " "));
                        }
                        None => {
                            let _ = writeln!(page, "- `{value}`");
                        }
                    }
                }
            }
            page.push('\n');
        }
    }
    while page.ends_with("\n\n") {
        page.pop();
    }
    page
}
