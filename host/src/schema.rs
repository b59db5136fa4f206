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

use serde_json::{Value, json};
use wasmtime::component::types::Type;

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
}
