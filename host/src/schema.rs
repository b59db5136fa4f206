//! JSON Schema derived from WIT types (DESIGN D1).
//!
//! Records become objects with every non-option field required and no other
//! properties; options become optional fields (or `null` elsewhere); enums
//! become string enums; variants a `oneOf` of a case name or a one-key
//! object; lists arrays; integers bounded by their width, float32 by its
//! range.
//!
//! The schema accepts exactly what [`crate::convert::args_to_vals`] accepts
//! (the `json_to_value` and `wit_schema` fuzz targets check it), except
//! that the converter also reads `null` as "absent" where a value may be
//! absent: as the whole argument object, as an optional field, and as the
//! payload of a case that has none (`{"case": null}`).
//!
//! Component types carry no doc comments, so what the agent reads about a
//! parameter, a field or a case comes from the manifest
//! ([`scout_manifest::TypeDoc`], written by the SDK from the WIT at the
//! connector's compile time) and is laid over the derived schema by
//! [`describe`] as `description`s; a doc that names nothing in the type is
//! ignored, so it can never widen what the schema accepts. A parameter's
//! declared range (`minimum`, `maximum`) narrows it, and the call holds to
//! it ([`crate::convert::within_ranges`]); a `default` only says what the
//! tool assumes. A parameter of the contract's `json` type, a string in the
//! component's types, is marked in the manifest and shown as any JSON value.

use scout_manifest::TypeDoc;
use serde_json::{Value, json};
use wasmtime::component::types::Type;

/// The parameters of an input schema that say nothing about themselves:
/// an agent sees only their names. `scout-host build` lists them, and the
/// catalogue's test allows none.
pub fn undescribed_parameters(input_schema: &Value) -> Vec<&str> {
    let Some(properties) = input_schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .filter(|(_, p)| {
            p.get("description")
                .and_then(Value::as_str)
                .is_none_or(|d| d.trim().is_empty())
        })
        .map(|(name, _)| name.as_str())
        .collect()
}

/// Whether `ty`'s values are JSON numbers.
pub fn is_number(ty: &Type) -> bool {
    matches!(
        ty,
        Type::U8
            | Type::U16
            | Type::U32
            | Type::U64
            | Type::S8
            | Type::S16
            | Type::S32
            | Type::S64
            | Type::Float32
            | Type::Float64
    )
}

/// Whether a type can be a tool parameter (no resources, streams, futures).
pub fn unsupported(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Own(_) | Type::Borrow(_) => Some("a resource"),
        Type::Future(_) => Some("a future"),
        Type::Stream(_) => Some("a stream"),
        Type::ErrorContext => Some("an error-context"),
        Type::Map(_) => Some("a map"),
        Type::List(l) => unsupported(&l.ty()),
        Type::FixedLengthList(l) => unsupported(&l.ty()),
        Type::Option(o) => unsupported(&o.ty()),
        Type::Record(r) => r.fields().find_map(|f| unsupported(&f.ty)),
        Type::Tuple(t) => t.types().find_map(|t| unsupported(&t)),
        Type::Variant(v) => v.cases().find_map(|c| c.ty.as_ref().and_then(unsupported)),
        Type::Result(r) => r
            .ok()
            .as_ref()
            .and_then(unsupported)
            .or_else(|| r.err().as_ref().and_then(unsupported)),
        _ => None,
    }
}

/// The input schema of a tool: an object of its named parameters.
pub fn params_schema<'a>(params: impl Iterator<Item = (&'a str, &'a Type)>) -> Value {
    object_schema(params, Mode::Input)
}

/// Arguments an agent writes, where an absent option is left out, or a
/// result the host writes, where every record field is present and an
/// absent option is `null` (as [`crate::convert::to_json`] writes it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Input,
    Output,
}

/// The output schema of a tool whose WIT result is `ty`
/// (`result<T, tool-error>`), as MCP wants it: an object. A record result
/// is that object; any other `T` is wrapped as `{"result": T}` (the second
/// value says so), and a result with no `T` is the empty object.
pub fn output_schema(ty: &Type) -> (Value, bool) {
    let ok = match ty {
        Type::Result(r) => r.ok(),
        _ => None,
    };
    match ok {
        Some(ty @ Type::Record(_)) => (schema_in(&ty, Mode::Output), false),
        Some(ty) => (
            json!({
                "type": "object",
                "properties": {"result": schema_in(&ty, Mode::Output)},
                "required": ["result"],
                "additionalProperties": false,
            }),
            true,
        ),
        None => (
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            false,
        ),
    }
}

fn object_schema<'a>(fields: impl Iterator<Item = (&'a str, &'a Type)>, mode: Mode) -> Value {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (name, ty) in fields {
        match ty {
            Type::Option(inner) if mode == Mode::Input => {
                properties.insert(name.to_string(), schema_in(&inner.ty(), mode));
            }
            other => {
                properties.insert(name.to_string(), schema_in(other, mode));
                required.push(Value::String(name.to_string()));
            }
        }
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn schema_in(ty: &Type, mode: Mode) -> Value {
    let schema_of = |ty: &Type| schema_in(ty, mode);
    match ty {
        Type::Bool => json!({"type": "boolean"}),
        Type::S8 => int(i8::MIN as i64, i8::MAX as u64),
        Type::U8 => int(0, u8::MAX as u64),
        Type::S16 => int(i16::MIN as i64, i16::MAX as u64),
        Type::U16 => int(0, u16::MAX as u64),
        Type::S32 => int(i32::MIN as i64, i32::MAX as u64),
        Type::U32 => int(0, u32::MAX as u64),
        Type::S64 => int(i64::MIN, i64::MAX as u64),
        Type::U64 => int(0, u64::MAX),
        // Beyond float32's range a value would be infinite.
        Type::Float32 => {
            json!({"type": "number", "minimum": -f32::MAX as f64, "maximum": f32::MAX as f64})
        }
        Type::Float64 => json!({"type": "number"}),
        Type::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        Type::String => json!({"type": "string"}),
        Type::List(l) => json!({"type": "array", "items": schema_of(&l.ty())}),
        Type::FixedLengthList(l) => {
            json!({"type": "array", "items": schema_of(&l.ty()), "minItems": l.len(), "maxItems": l.len()})
        }
        Type::Record(r) => {
            let fields: Vec<(String, Type)> =
                r.fields().map(|f| (f.name.to_string(), f.ty)).collect();
            object_schema(fields.iter().map(|(n, t)| (n.as_str(), t)), mode)
        }
        Type::Tuple(t) => {
            let items: Vec<Value> = t.types().map(|t| schema_of(&t)).collect();
            let n = items.len();
            json!({"type": "array", "prefixItems": items, "items": false, "minItems": n, "maxItems": n})
        }
        Type::Enum(e) => json!({"type": "string", "enum": e.names().collect::<Vec<_>>()}),
        Type::Flags(f) => {
            json!({"type": "array", "items": {"type": "string", "enum": f.names().collect::<Vec<_>>()}, "uniqueItems": true})
        }
        Type::Option(o) => json!({"anyOf": [schema_of(&o.ty()), {"type": "null"}]}),
        Type::Variant(v) => {
            let cases: Vec<Value> = v
                .cases()
                .map(|c| case_schema(c.name, c.ty.as_ref(), mode))
                .collect();
            json!({"oneOf": cases})
        }
        Type::Result(r) => json!({"oneOf": [
            case_schema("ok", r.ok().as_ref(), mode),
            case_schema("err", r.err().as_ref(), mode),
        ]}),
        // Refused at load by `unsupported`.
        Type::Own(_)
        | Type::Borrow(_)
        | Type::Future(_)
        | Type::Stream(_)
        | Type::ErrorContext
        | Type::Map(_) => {
            json!(false)
        }
    }
}

/// Lays `docs` (by parameter name) over a tool's input schema.
pub fn describe_params<'a>(
    schema: &mut Value,
    params: impl Iterator<Item = (&'a str, &'a Type)>,
    docs: &std::collections::BTreeMap<String, TypeDoc>,
) {
    for (name, ty) in params {
        if let (Some(doc), Some(property)) = (
            docs.get(name),
            schema.get_mut("properties").and_then(|p| p.get_mut(name)),
        ) {
            if doc.json && crate::convert::is_text(ty) {
                *property = json_value_schema(doc);
            } else {
                describe(property, ty, doc);
            }
        }
    }
}

/// A `json` parameter's schema: any JSON value (no `type`), as
/// [`crate::convert::json_as_canonical_text`] takes it.
fn json_value_schema(doc: &TypeDoc) -> Value {
    let mut schema = json!({});
    let description = if doc.description.is_empty() {
        "Any JSON value.".to_string()
    } else {
        format!("{} (any JSON value)", doc.description)
    };
    schema["description"] = Value::String(description);
    if let Some(default) = &doc.bounds.default {
        schema["default"] = default.clone();
    }
    schema
}

/// Lays a result's docs over the output schema [`output_schema`] made from
/// `ty` (`wrapped`: its second value).
pub fn describe_output(schema: &mut Value, ty: &Type, wrapped: bool, doc: &TypeDoc) {
    let Type::Result(r) = ty else { return };
    let Some(ok) = r.ok() else { return };
    if wrapped {
        if let Some(result) = schema
            .get_mut("properties")
            .and_then(|p| p.get_mut("result"))
        {
            describe(result, &ok, doc);
        }
    } else {
        describe(schema, &ok, doc);
    }
}

/// Adds `doc`'s descriptions to `schema`, the schema derived from `ty`: the
/// value's own, its record fields', its list items', its variant cases';
/// an enum's or flags' cases are listed in the value's description (a
/// string enum has nowhere else to put them).
pub fn describe(schema: &mut Value, ty: &Type, doc: &TypeDoc) {
    if doc.is_empty() || !schema.is_object() {
        return;
    }
    let mut description = doc.description.clone();
    match ty {
        Type::Option(o) => {
            if let Some(inner) = schema.get_mut("anyOf").and_then(|a| a.get_mut(0)) {
                let quiet = TypeDoc {
                    description: String::new(),
                    bounds: scout_manifest::Bounds {
                        default: None,
                        ..doc.bounds.clone()
                    },
                    ..doc.clone()
                };
                describe(inner, &o.ty(), &quiet);
            } else {
                // An optional field of an argument object: the inner schema.
                describe(schema, &o.ty(), doc);
                return;
            }
        }
        Type::Record(r) => {
            for field in r.fields() {
                if let (Some(d), Some(property)) = (
                    doc.fields.get(field.name),
                    schema
                        .get_mut("properties")
                        .and_then(|p| p.get_mut(field.name)),
                ) {
                    describe(property, &field.ty, d);
                }
            }
        }
        Type::List(l) => {
            if let (Some(d), Some(items)) = (&doc.items, schema.get_mut("items")) {
                describe(items, &l.ty(), d);
            }
        }
        Type::FixedLengthList(l) => {
            if let (Some(d), Some(items)) = (&doc.items, schema.get_mut("items")) {
                describe(items, &l.ty(), d);
            }
        }
        Type::Enum(e) => list_cases(&mut description, e.names(), doc),
        Type::Flags(f) => list_cases(&mut description, f.names(), doc),
        Type::Variant(v) => {
            for (i, case) in v.cases().enumerate() {
                let (Some(d), Some(case_schema)) = (
                    doc.cases.get(case.name),
                    schema.get_mut("oneOf").and_then(|o| o.get_mut(i)),
                ) else {
                    continue;
                };
                match (
                    &case.ty,
                    case_schema
                        .get_mut("properties")
                        .and_then(|p| p.get_mut(case.name)),
                ) {
                    (Some(payload), Some(property)) => describe(property, payload, d),
                    _ if !d.description.is_empty() => {
                        case_schema["description"] = Value::String(d.description.clone());
                    }
                    _ => {}
                }
            }
        }
        ty if is_number(ty) => {
            if let (Some(min), Some(max)) = (&doc.bounds.minimum, &doc.bounds.maximum) {
                schema["minimum"] = Value::Number(min.clone());
                schema["maximum"] = Value::Number(max.clone());
            }
        }
        _ => {}
    }
    if let Some(default) = &doc.bounds.default {
        schema["default"] = default.clone();
    }
    if !description.is_empty() {
        schema["description"] = Value::String(description);
    }
}

/// Appends `- \`case\`: its doc` for each documented case.
fn list_cases<'a>(description: &mut String, names: impl Iterator<Item = &'a str>, doc: &TypeDoc) {
    for name in names {
        let Some(case) = doc.cases.get(name).filter(|c| !c.description.is_empty()) else {
            continue;
        };
        if !description.is_empty() {
            description.push('\n');
        }
        description.push_str(&format!("- `{name}`: {}", case.description));
    }
}

fn case_schema(name: &str, payload: Option<&Type>, mode: Mode) -> Value {
    match payload {
        None => json!({"const": name}),
        Some(ty) => json!({
            "type": "object",
            "properties": { name: schema_in(ty, mode) },
            "required": [name],
            "additionalProperties": false,
        }),
    }
}

fn int(min: i64, max: u64) -> Value {
    json!({"type": "integer", "minimum": min, "maximum": max})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::args_to_vals;
    use crate::convert::tests::params;

    fn schema(params: &[(String, Type)]) -> Value {
        params_schema(params.iter().map(|(n, t)| (n.as_str(), t)))
    }

    // Found by the `json_to_value` fuzz target (`3.4e38` became an infinite
    // float32), fixed in the converter: the schema bounds float32 exactly
    // where the converter does.
    #[test]
    fn float32_is_bounded_where_the_converter_is() {
        let p = params("", "x: f32, y: f64");
        let s = schema(&p);
        let max = f32::MAX as f64;
        assert_eq!(
            s["properties"]["x"],
            json!({"type": "number", "minimum": -max, "maximum": max})
        );
        assert_eq!(s["properties"]["y"], json!({"type": "number"}));
        assert!(args_to_vals(&p, &json!({"x": max, "y": 1e300})).is_ok());
        assert!(
            args_to_vals(&p, &json!({"x": f64::from_bits(max.to_bits() + 1), "y": 0})).is_err()
        );
    }

    #[test]
    fn outputs_are_objects_with_every_field_present() {
        let p = params(
            "record rec { a: option<u8>, b: string }",
            "r: result<rec, string>, l: result<list<string>, string>, n: result<_, string>",
        );
        let (rec, wrapped) = output_schema(&p[0].1);
        assert!(!wrapped);
        assert_eq!(
            rec["required"],
            json!(["a", "b"]),
            "an absent option is written as null, so it is present"
        );
        assert_eq!(rec["properties"]["a"]["anyOf"][1], json!({"type": "null"}));
        let (list, wrapped) = output_schema(&p[1].1);
        assert!(wrapped);
        assert_eq!(list["properties"]["result"]["type"], "array");
        assert_eq!(output_schema(&p[2].1).0["type"], "object");
    }

    /// Docs are laid over the derived schema and change nothing it accepts;
    /// a doc naming nothing in the type is ignored.
    #[test]
    fn docs_become_descriptions_where_the_type_has_them() {
        use scout_manifest::TypeDoc;
        let p = params(
            "enum level { low, high } variant pick { one(rec), none } record rec { a: option<u8>, l: list<rec2> } record rec2 { z: string }",
            "r: rec, v: pick, e: option<level>",
        );
        let plain = schema(&p);
        let text = |s: &str| TypeDoc {
            description: s.to_string(),
            ..TypeDoc::default()
        };
        let mut rec = text("a record");
        rec.fields.insert("a".into(), text("field a"));
        let mut items = TypeDoc::default();
        items.fields.insert("z".into(), text("field z"));
        let mut list = text("the list");
        list.items = Some(Box::new(items));
        rec.fields.insert("l".into(), list);
        rec.fields.insert("nowhere".into(), text("ignored"));
        let mut pick = TypeDoc::default();
        pick.cases.insert("one".into(), text("the one"));
        pick.cases.insert("none".into(), text("nothing"));
        let mut level = text("how much");
        level.cases.insert("high".into(), text("a lot"));
        let docs = [
            ("r", rec),
            ("v", pick),
            ("e", level),
            ("x", text("no such")),
        ]
        .into_iter()
        .map(|(n, d)| (n.to_string(), d))
        .collect();
        let mut s = plain.clone();
        describe_params(&mut s, p.iter().map(|(n, t)| (n.as_str(), t)), &docs);
        let r = &s["properties"]["r"];
        assert_eq!(r["description"], "a record");
        assert_eq!(r["properties"]["a"]["description"], "field a");
        assert_eq!(r["properties"]["l"]["description"], "the list");
        assert_eq!(
            r["properties"]["l"]["items"]["properties"]["z"]["description"],
            "field z"
        );
        assert!(r["properties"].get("nowhere").is_none());
        assert_eq!(
            s["properties"]["v"]["oneOf"][0]["properties"]["one"]["description"],
            "the one"
        );
        assert_eq!(s["properties"]["v"]["oneOf"][1]["description"], "nothing");
        assert_eq!(
            s["properties"]["e"]["description"],
            "how much\n- `high`: a lot"
        );
        assert!(s["properties"].get("x").is_none());
        // Without the descriptions, the schema is what it was.
        fn strip(v: &mut Value) {
            match v {
                Value::Object(m) => {
                    m.remove("description");
                    m.values_mut().for_each(strip);
                }
                Value::Array(a) => a.iter_mut().for_each(strip),
                _ => {}
            }
        }
        strip(&mut s);
        assert_eq!(s, plain);
    }

    #[test]
    fn option_fields_are_optional_and_the_rest_required() {
        let p = params(
            "record rec { a: option<u8>, b: string }",
            "r: rec, o: option<rec>",
        );
        let s = schema(&p);
        assert_eq!(s["required"], json!(["r"]));
        assert_eq!(s["properties"]["r"]["required"], json!(["b"]));
        assert_eq!(s["properties"]["r"]["properties"]["a"]["maximum"], 255);
        assert_eq!(s["properties"]["o"]["required"], json!(["b"]));
    }

    /// A `json` parameter is any JSON value in the schema (no `type`), an
    /// optional one stays optional; a mark on a number changes nothing.
    #[test]
    fn json_parameters_are_any_json_value() {
        let p = params("", "filter: string, sorts: option<string>, n: u8");
        let plain = schema(&p);
        let mut docs = std::collections::BTreeMap::new();
        for (name, description) in [("filter", "the filter"), ("sorts", ""), ("n", "")] {
            docs.insert(
                name.to_string(),
                TypeDoc {
                    description: description.to_string(),
                    json: true,
                    ..TypeDoc::default()
                },
            );
        }
        let mut s = plain.clone();
        describe_params(&mut s, p.iter().map(|(n, t)| (n.as_str(), t)), &docs);
        assert_eq!(
            s["properties"]["filter"],
            json!({"description": "the filter (any JSON value)"})
        );
        assert_eq!(
            s["properties"]["sorts"],
            json!({"description": "Any JSON value."})
        );
        assert_eq!(s["properties"]["n"], plain["properties"]["n"]);
        assert_eq!(s["required"], json!(["filter", "n"]));
    }
}
