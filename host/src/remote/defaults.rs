//! SEP-1034: a form's defaults are the client's to apply. When the person
//! accepts a remote server's form elicitation, every field the answer
//! leaves out that the requested schema gives a `default` is filled in
//! before the answer goes to the server, so a server sees what the person
//! was shown as chosen. A default is applied only where it is a value of
//! its field's type (an enum's only where it is one of its values): a
//! server's malformed default is not passed back as the person's answer.

use serde_json::{Map, Value};

/// `content` (the accepted answer) with `schema`'s defaults for the
/// fields it omits.
pub(crate) fn apply(schema: &Value, content: Option<Value>) -> Option<Value> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return content;
    };
    let mut answer = match content {
        None => Map::new(),
        Some(Value::Object(answer)) => answer,
        Some(other) => return Some(other),
    };
    for (name, field) in properties {
        if answer.contains_key(name) {
            continue;
        }
        if let Some(default) = field.get("default").filter(|d| fits(field, d)) {
            answer.insert(name.clone(), default.clone());
        }
    }
    Some(Value::Object(answer))
}

/// Whether `value` is a value of `field`'s type (and of its enum, where
/// it has one).
fn fits(field: &Value, value: &Value) -> bool {
    match field.get("type").and_then(Value::as_str) {
        Some("string") => value.is_string() && one_of(field, value),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some("array") => {
            let items = field.get("items").unwrap_or(&Value::Null);
            value
                .as_array()
                .is_some_and(|chosen| chosen.iter().all(|v| v.is_string() && one_of(items, v)))
        }
        _ => false,
    }
}

/// Whether `value` is among `field`'s choices (`enum`, or the `const` of
/// each `oneOf`/`anyOf` entry); true for a field without choices.
fn one_of(field: &Value, value: &Value) -> bool {
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        return values.contains(value);
    }
    for titled in ["oneOf", "anyOf"] {
        if let Some(options) = field.get(titled).and_then(Value::as_array) {
            return options.iter().any(|o| o.get("const") == Some(value));
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::apply;
    use serde_json::json;

    fn schema() -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "score": {"type": "number", "default": 95.5},
                "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                "verified": {"type": "boolean", "default": true},
                "plain": {"type": "string"}
            },
            "required": []
        })
    }

    #[test]
    fn an_empty_acceptance_gets_every_default() {
        let filled = apply(&schema(), Some(json!({}))).unwrap();
        assert_eq!(
            filled,
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true})
        );
        assert_eq!(apply(&schema(), None), Some(filled));
    }

    #[test]
    fn what_the_person_gave_is_kept() {
        let filled = apply(&schema(), Some(json!({"name": "Ann", "verified": false}))).unwrap();
        assert_eq!(filled["name"], "Ann");
        assert_eq!(filled["verified"], false);
        assert_eq!(filled["age"], 30);
    }

    #[test]
    fn a_default_of_the_wrong_type_or_outside_its_enum_is_not_applied() {
        let schema = json!({
            "type": "object",
            "properties": {
                "age": {"type": "integer", "default": 2.5},
                "flag": {"type": "boolean", "default": "yes"},
                "status": {"type": "string", "enum": ["a", "b"], "default": "c"},
                "titled": {"type": "string", "oneOf": [{"const": "x", "title": "X"}], "default": "x"},
                "many": {"type": "array", "items": {"type": "string", "enum": ["p", "q"]}, "default": ["p", "z"]}
            }
        });
        assert_eq!(
            apply(&schema, Some(json!({}))),
            Some(json!({"titled": "x"}))
        );
    }
}
