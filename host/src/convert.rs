//! JSON arguments to component values and component values back to JSON.
//!
//! Arguments that do not fit the WIT types are refused here, with the path
//! of the offending field (`$.files[2].path`), before the guest runs.

use serde_json::{Map, Number, Value};
use wasmtime::component::Val;
use wasmtime::component::types::Type;

/// A JSON value that does not fit its WIT type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Where, as `$.field[index]`.
    pub path: String,
    /// What was expected.
    pub message: String,
}

type Result<T> = std::result::Result<T, Mismatch>;

fn fail<T>(path: &str, message: impl Into<String>) -> Result<T> {
    Err(Mismatch {
        path: path.to_string(),
        message: message.into(),
    })
}

/// Converts a tool's JSON arguments (an object keyed by parameter name) to
/// the parameter values, in order.
pub fn args_to_vals(params: &[(String, Type)], args: &Value) -> Result<Vec<Val>> {
    let empty = Map::new();
    let object = match args {
        Value::Object(o) => o,
        Value::Null => &empty,
        _ => return fail("$", "arguments must be a JSON object"),
    };
    let fields: Vec<(&str, &Type)> = params.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let vals = object_fields(&fields, object, "$")?;
    Ok(vals.into_iter().map(|(_, v)| v).collect())
}

/// Which of `params` are the contract's `json` type (`params[i]`'s): the
/// manifest marks them (`docs`, by name), and only a string (or an option
/// of one) can be, so a mark on anything else changes nothing.
pub fn json_params(
    params: &[(String, Type)],
    docs: &std::collections::BTreeMap<String, scout_manifest::TypeDoc>,
) -> Vec<bool> {
    params
        .iter()
        .map(|(name, ty)| docs.get(name).is_some_and(|d| d.json) && is_text(ty))
        .collect()
}

/// A string, or an option of one.
pub(crate) fn is_text(ty: &Type) -> bool {
    match ty {
        Type::String => true,
        Type::Option(o) => matches!(o.ty(), Type::String),
        _ => false,
    }
}

/// The agent's arguments with each `json` parameter (`json[i]` for
/// `params[i]`) that came as JSON text (a string that parses) replaced by
/// the value it denotes, so that what a person is shown, and what the
/// approval's digest covers, is the structured value, never an escaped
/// string. `None` when nothing changes; text that does not parse is left
/// for [`json_as_canonical_text`] to refuse.
pub fn json_text_as_values(
    params: &[(String, Type)],
    json: &[bool],
    args: &Value,
) -> Option<Value> {
    let object = args.as_object()?;
    let mut changed = None::<Map<String, Value>>;
    for ((name, _), _) in params.iter().zip(json).filter(|(_, is_json)| **is_json) {
        let Some(Value::String(text)) = object.get(name) else {
            continue;
        };
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        changed
            .get_or_insert_with(|| object.clone())
            .insert(name.clone(), value);
    }
    changed.map(Value::Object)
}

/// The arguments as the guest receives them: each `json` parameter's value
/// (`json[i]` for `params[i]`) replaced by its canonical text (keys sorted,
/// no spaces: the form [`crate::store::canonical_args_text`] writes
/// and the approval's digest covers). A string is read as JSON text and
/// refused, with the parameter's path, when it is not JSON. `None` when no
/// parameter is `json`.
pub fn json_as_canonical_text(
    params: &[(String, Type)],
    json: &[bool],
    args: &Value,
) -> Result<Option<Value>> {
    let Some(object) = args.as_object() else {
        return Ok(None);
    };
    let mut changed = None::<Map<String, Value>>;
    for ((name, ty), _) in params.iter().zip(json).filter(|(_, is_json)| **is_json) {
        let value = match object.get(name) {
            None => continue,
            Some(Value::Null) if matches!(ty, Type::Option(_)) => continue,
            Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
                Ok(value) => value,
                Err(e) => {
                    return fail(
                        &format!("$.{name}"),
                        format!("expected a JSON value; this text is not JSON ({e})"),
                    );
                }
            },
            Some(value) => value.clone(),
        };
        changed.get_or_insert_with(|| object.clone()).insert(
            name.clone(),
            Value::String(crate::store::canonical_args_text(&value)),
        );
    }
    Ok(changed.map(Value::Object))
}

/// Refuses a parameter value outside the range its tool declares
/// (`ranges[i]` for `params[i]`, from the manifest's `- name (1 to 100)`),
/// as the schema's `minimum` and `maximum` say, before the guest runs.
pub fn within_ranges(
    params: &[(String, Type)],
    ranges: &[Option<(f64, f64)>],
    vals: &[Val],
) -> Result<()> {
    for (((name, _), range), val) in params.iter().zip(ranges).zip(vals) {
        let (Some((min, max)), Some(value)) = (range, number_of(val)) else {
            continue;
        };
        if !(*min <= value && value <= *max) {
            return fail(
                &format!("$.{name}"),
                format!("must be between {min} and {max}, not {value}"),
            );
        }
    }
    Ok(())
}

/// A number's value (an option's, when it holds one).
fn number_of(val: &Val) -> Option<f64> {
    Some(match val {
        Val::U8(n) => f64::from(*n),
        Val::U16(n) => f64::from(*n),
        Val::U32(n) => f64::from(*n),
        Val::U64(n) => *n as f64,
        Val::S8(n) => f64::from(*n),
        Val::S16(n) => f64::from(*n),
        Val::S32(n) => f64::from(*n),
        Val::S64(n) => *n as f64,
        Val::Float32(n) => f64::from(*n),
        Val::Float64(n) => *n,
        Val::Option(Some(inner)) => return number_of(inner),
        _ => return None,
    })
}

fn object_fields(
    fields: &[(&str, &Type)],
    object: &Map<String, Value>,
    path: &str,
) -> Result<Vec<(String, Val)>> {
    for key in object.keys() {
        if !fields.iter().any(|(n, _)| n == key) {
            return fail(&format!("{path}.{key}"), "unknown field");
        }
    }
    let mut out = Vec::with_capacity(fields.len());
    for (name, ty) in fields {
        let field_path = format!("{path}.{name}");
        let val = match (object.get(*name), ty) {
            (None | Some(Value::Null), Type::Option(_)) => Val::Option(None),
            (None, _) => return fail(&field_path, "missing required field"),
            (Some(v), Type::Option(inner)) => {
                Val::Option(Some(Box::new(to_val(&inner.ty(), v, &field_path)?)))
            }
            (Some(v), ty) => to_val(ty, v, &field_path)?,
        };
        out.push((name.to_string(), val));
    }
    Ok(out)
}

/// Converts one JSON value to a value of type `ty`.
pub(crate) fn to_val(ty: &Type, v: &Value, path: &str) -> Result<Val> {
    Ok(match ty {
        Type::Bool => Val::Bool(v.as_bool().ok_or_else(|| mismatch(path, "a boolean", v))?),
        Type::S8 => Val::S8(signed(v, path, i8::MIN as i64, i8::MAX as i64)? as i8),
        Type::S16 => Val::S16(signed(v, path, i16::MIN as i64, i16::MAX as i64)? as i16),
        Type::S32 => Val::S32(signed(v, path, i32::MIN as i64, i32::MAX as i64)? as i32),
        Type::S64 => Val::S64(signed(v, path, i64::MIN, i64::MAX)?),
        Type::U8 => Val::U8(unsigned(v, path, u8::MAX as u64)? as u8),
        Type::U16 => Val::U16(unsigned(v, path, u16::MAX as u64)? as u16),
        Type::U32 => Val::U32(unsigned(v, path, u32::MAX as u64)? as u32),
        Type::U64 => Val::U64(unsigned(v, path, u64::MAX)?),
        Type::Float32 => {
            let f = v.as_f64().ok_or_else(|| mismatch(path, "a number", v))?;
            // Beyond this a float32 is infinite, which JSON cannot carry back.
            if f.abs() > f32::MAX as f64 {
                return fail(
                    path,
                    format!(
                        "expected a number of magnitude at most {:e} (float32)",
                        f32::MAX
                    ),
                );
            }
            Val::Float32(f as f32)
        }
        Type::Float64 => Val::Float64(v.as_f64().ok_or_else(|| mismatch(path, "a number", v))?),
        Type::Char => {
            let s = v
                .as_str()
                .ok_or_else(|| mismatch(path, "a one-character string", v))?;
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return fail(path, "expected exactly one character"),
            }
        }
        Type::String => Val::String(
            v.as_str()
                .ok_or_else(|| mismatch(path, "a string", v))?
                .to_string(),
        ),
        Type::List(l) => {
            let items = v.as_array().ok_or_else(|| mismatch(path, "an array", v))?;
            let ty = l.ty();
            Val::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| to_val(&ty, item, &format!("{path}[{i}]")))
                    .collect::<Result<_>>()?,
            )
        }
        Type::FixedLengthList(l) => {
            let items = v.as_array().ok_or_else(|| mismatch(path, "an array", v))?;
            if items.len() != l.len() as usize {
                return fail(path, format!("expected exactly {} items", l.len()));
            }
            let ty = l.ty();
            Val::FixedLengthList(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| to_val(&ty, item, &format!("{path}[{i}]")))
                    .collect::<Result<_>>()?,
            )
        }
        Type::Record(r) => {
            let object = v
                .as_object()
                .ok_or_else(|| mismatch(path, "an object", v))?;
            let fields: Vec<(String, Type)> =
                r.fields().map(|f| (f.name.to_string(), f.ty)).collect();
            let refs: Vec<(&str, &Type)> = fields.iter().map(|(n, t)| (n.as_str(), t)).collect();
            Val::Record(object_fields(&refs, object, path)?)
        }
        Type::Tuple(t) => {
            let items = v.as_array().ok_or_else(|| mismatch(path, "an array", v))?;
            let types: Vec<Type> = t.types().collect();
            if items.len() != types.len() {
                return fail(
                    path,
                    format!("expected an array of exactly {} items", types.len()),
                );
            }
            Val::Tuple(
                types
                    .iter()
                    .zip(items)
                    .enumerate()
                    .map(|(i, (ty, item))| to_val(ty, item, &format!("{path}[{i}]")))
                    .collect::<Result<_>>()?,
            )
        }
        Type::Enum(e) => {
            let s = v.as_str().ok_or_else(|| mismatch(path, "a string", v))?;
            if !e.names().any(|n| n == s) {
                return fail(
                    path,
                    format!(
                        "expected one of: {}",
                        e.names().collect::<Vec<_>>().join(", ")
                    ),
                );
            }
            Val::Enum(s.to_string())
        }
        Type::Flags(f) => {
            let items = v
                .as_array()
                .ok_or_else(|| mismatch(path, "an array of flag names", v))?;
            let mut names = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let s = item
                    .as_str()
                    .ok_or_else(|| mismatch(&format!("{path}[{i}]"), "a flag name", item))?;
                if !f.names().any(|n| n == s) {
                    return fail(
                        &format!("{path}[{i}]"),
                        format!(
                            "expected one of: {}",
                            f.names().collect::<Vec<_>>().join(", ")
                        ),
                    );
                }
                if names.iter().any(|n: &String| n == s) {
                    return fail(
                        &format!("{path}[{i}]"),
                        format!("flag `{s}` is given twice"),
                    );
                }
                names.push(s.to_string());
            }
            Val::Flags(names)
        }
        Type::Option(o) => match v {
            Value::Null => Val::Option(None),
            v => Val::Option(Some(Box::new(to_val(&o.ty(), v, path)?))),
        },
        Type::Variant(var) => {
            let (name, payload) = case_of(v, path)?;
            let Some(case) = var.cases().find(|c| c.name == name) else {
                return fail(
                    path,
                    format!(
                        "expected one of: {}",
                        var.cases().map(|c| c.name).collect::<Vec<_>>().join(", ")
                    ),
                );
            };
            let payload = payload_val(case.ty.as_ref(), payload, &format!("{path}.{name}"))?;
            Val::Variant(name.to_string(), payload)
        }
        Type::Result(r) => {
            let (name, payload) = case_of(v, path)?;
            match name {
                "ok" => Val::Result(Ok(payload_val(
                    r.ok().as_ref(),
                    payload,
                    &format!("{path}.ok"),
                )?)),
                "err" => Val::Result(Err(payload_val(
                    r.err().as_ref(),
                    payload,
                    &format!("{path}.err"),
                )?)),
                _ => return fail(path, "expected `ok` or `err`"),
            }
        }
        Type::Own(_)
        | Type::Borrow(_)
        | Type::Future(_)
        | Type::Stream(_)
        | Type::ErrorContext
        | Type::Map(_) => {
            return fail(path, "this type cannot be passed as an argument");
        }
    })
}

fn case_of<'a>(v: &'a Value, path: &str) -> Result<(&'a str, Option<&'a Value>)> {
    match v {
        Value::String(s) => Ok((s.as_str(), None)),
        Value::Object(o) if o.len() == 1 => {
            let (k, v) = o.iter().next().expect("one entry");
            Ok((k.as_str(), Some(v)))
        }
        _ => fail(
            path,
            "expected a case name, or an object with exactly one case",
        ),
    }
}

fn payload_val(ty: Option<&Type>, payload: Option<&Value>, path: &str) -> Result<Option<Box<Val>>> {
    match (ty, payload) {
        (None, None | Some(Value::Null)) => Ok(None),
        (None, Some(_)) => fail(path, "this case has no payload"),
        (Some(_), None) => fail(path, "this case needs a payload"),
        (Some(ty), Some(v)) => Ok(Some(Box::new(to_val(ty, v, path)?))),
    }
}

fn mismatch(path: &str, expected: &str, got: &Value) -> Mismatch {
    let kind = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    Mismatch {
        path: path.to_string(),
        message: format!("expected {expected}, found {kind}"),
    }
}

/// The integer a JSON number denotes, if it denotes one: JSON Schema's
/// `integer` (and so the schema a model is shown) includes `1.0` and `1e2`.
/// Integral floats beyond 2^64 in magnitude are out of every range anyway.
fn integer(v: &Value) -> Option<i128> {
    if let Some(n) = v.as_i64() {
        return Some(n.into());
    }
    if let Some(n) = v.as_u64() {
        return Some(n.into());
    }
    // Exact: an integral f64 below 2^64 in magnitude converts without loss.
    v.as_f64()
        .filter(|f| f.fract() == 0.0 && f.abs() < 18446744073709551616.0)
        .map(|f| f as i128)
}

fn signed(v: &Value, path: &str, min: i64, max: i64) -> Result<i64> {
    match integer(v) {
        Some(n) if n >= min.into() && n <= max.into() => Ok(n as i64),
        _ if v.is_number() => fail(path, format!("expected an integer from {min} to {max}")),
        _ => Err(mismatch(
            path,
            &format!("an integer from {min} to {max}"),
            v,
        )),
    }
}

fn unsigned(v: &Value, path: &str, max: u64) -> Result<u64> {
    match integer(v) {
        Some(n) if n >= 0 && n <= max.into() => Ok(n as u64),
        _ if v.is_number() => fail(path, format!("expected an integer from 0 to {max}")),
        _ => Err(mismatch(path, &format!("an integer from 0 to {max}"), v)),
    }
}

/// Converts a component value to JSON, mirroring [`to_val`].
pub fn to_json(val: &Val) -> Value {
    match val {
        Val::Bool(b) => Value::Bool(*b),
        Val::S8(n) => Value::from(*n),
        Val::U8(n) => Value::from(*n),
        Val::S16(n) => Value::from(*n),
        Val::U16(n) => Value::from(*n),
        Val::S32(n) => Value::from(*n),
        Val::U32(n) => Value::from(*n),
        Val::S64(n) => Value::from(*n),
        Val::U64(n) => Value::from(*n),
        Val::Float32(f) => Number::from_f64(*f as f64)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Val::Float64(f) => Number::from_f64(*f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Val::Char(c) => Value::String(c.to_string()),
        Val::String(s) => Value::String(s.clone()),
        Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => {
            Value::Array(items.iter().map(to_json).collect())
        }
        Val::Map(pairs) => Value::Array(
            pairs
                .iter()
                .map(|(k, v)| Value::Array(vec![to_json(k), to_json(v)]))
                .collect(),
        ),
        Val::Record(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), to_json(v)))
                .collect(),
        ),
        Val::Variant(name, payload) => case_json(name, payload.as_deref()),
        Val::Enum(name) => Value::String(name.clone()),
        Val::Option(None) => Value::Null,
        Val::Option(Some(v)) => to_json(v),
        Val::Result(Ok(v)) => case_json("ok", v.as_deref()),
        Val::Result(Err(v)) => case_json("err", v.as_deref()),
        Val::Flags(names) => Value::Array(names.iter().cloned().map(Value::String).collect()),
        Val::Resource(_) | Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => Value::Null,
    }
}

fn case_json(name: &str, payload: Option<&Val>) -> Value {
    match payload {
        None => Value::String(name.to_string()),
        Some(v) => {
            let mut o = Map::new();
            o.insert(name.to_string(), to_json(v));
            Value::Object(o)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;
    use wasmtime::component::Component;
    use wasmtime::component::types::ComponentItem;

    /// The parameters of `f: func(PARAMS)` in an interface that also has
    /// the type definitions `defs`, from a component built around a dummy
    /// module (no guest needed).
    pub(crate) fn params(defs: &str, params: &str) -> Vec<(String, Type)> {
        let wit = format!(
            "package t:t;\ninterface i {{\n{defs}\nf: func({params});\n}}\nworld w {{ export i; }}\n"
        );
        let mut resolve = wit_parser::Resolve::default();
        let pkg = resolve.push_str("t.wit", &wit).unwrap();
        let world = resolve.select_world(&[pkg], Some("w")).unwrap();
        let mut module =
            wit_component::dummy_module(&resolve, world, wit_parser::ManglingAndAbi::Standard32);
        wit_component::embed_component_metadata(
            &mut module,
            &resolve,
            world,
            wit_component::StringEncoding::UTF8,
            false,
        )
        .unwrap();
        let bytes = wit_component::ComponentEncoder::default()
            .module(&module)
            .unwrap()
            .validate(true)
            .encode()
            .unwrap();
        let mut config = wasmtime::Config::new();
        config.wasm_component_model(true);
        let engine = wasmtime::Engine::new(&config).unwrap();
        let component = Component::new(&engine, &bytes).unwrap();
        for (_, item) in component.component_type().exports(&engine) {
            if let ComponentItem::ComponentInstance(instance) = item.ty {
                for (_, item) in instance.exports(&engine) {
                    if let ComponentItem::ComponentFunc(f) = item.ty {
                        return f.params().map(|(n, t)| (n.to_string(), t)).collect();
                    }
                }
            }
        }
        panic!("no function in {wit}");
    }

    fn one(params: &[(String, Type)], args: Value) -> std::result::Result<Val, Mismatch> {
        args_to_vals(params, &args).map(|mut v| v.remove(0))
    }

    // Found by the `json_to_value` and `wit_schema` fuzz targets: the schema
    // says `"type": "integer"`, which JSON Schema defines to include `1.0`
    // and `1e2`, and the converter refused them.
    #[test]
    fn integral_floats_are_integers() {
        let p = params("", "x: u8");
        assert_eq!(one(&p, json!({"x": 255.0})), Ok(Val::U8(255)));
        assert_eq!(
            one(&p, serde_json::from_str(r#"{"x": 1e2}"#).unwrap()),
            Ok(Val::U8(100))
        );
        assert_eq!(one(&p, json!({"x": -0.0})), Ok(Val::U8(0)));
        assert!(one(&p, json!({"x": 256.0})).is_err());
        assert!(one(&p, json!({"x": 1.5})).is_err());
        assert!(one(&p, json!({"x": -1.0})).is_err());
        let p = params("", "x: s64");
        assert_eq!(
            one(&p, json!({"x": -9223372036854775808.0})),
            Ok(Val::S64(i64::MIN))
        );
        // 2^63, the nearest float to i64::MAX, is out of range.
        assert!(one(&p, json!({"x": 9223372036854775807.0})).is_err());
        let p = params("", "x: u64");
        assert_eq!(
            one(&p, json!({"x": 18446744073709549568.0})),
            Ok(Val::U64(18446744073709549568))
        );
        assert!(
            one(&p, json!({"x": 18446744073709551615.0})).is_err(),
            "2^64 as a float"
        );
        assert!(one(&p, json!({"x": 1e300})).is_err());
    }

    // Found by the `json_to_value` fuzz target: `3.4048e38` became an infinite
    // float32, which `to_json` writes as `null`, which is then refused.
    #[test]
    fn float32_beyond_its_range_is_refused() {
        let p = params("", "x: f32");
        assert_eq!(
            one(&p, json!({"x": f32::MAX as f64})),
            Ok(Val::Float32(f32::MAX))
        );
        assert_eq!(
            one(&p, json!({"x": -(f32::MAX as f64)})),
            Ok(Val::Float32(-f32::MAX))
        );
        let next = f64::from_bits((f32::MAX as f64).to_bits() + 1);
        assert!(one(&p, json!({"x": next})).is_err());
        assert!(one(&p, json!({"x": -1e39})).is_err());
        let p = params("", "x: f64");
        assert_eq!(one(&p, json!({"x": 1e300})), Ok(Val::Float64(1e300)));
    }

    // Found reading the converter against the schema while writing the fuzz
    // targets: the schema says `uniqueItems`, and the converter silently
    // dropped the repeat.
    #[test]
    fn a_flag_given_twice_is_refused() {
        let p = params("flags p { a, b }", "x: p");
        assert_eq!(
            one(&p, json!({"x": ["b", "a"]})),
            Ok(Val::Flags(vec!["b".into(), "a".into()]))
        );
        let err = one(&p, json!({"x": ["a", "b", "a"]})).unwrap_err();
        assert_eq!(err.path, "$.x[2]");
    }

    // The deliberate leniency the schema does not state: `null` read as
    // absent (the fuzz targets check it is the only one).
    #[test]
    fn null_is_read_as_absent_where_a_value_may_be_absent() {
        let p = params("variant v { a, b(u8) }", "x: option<u8>, y: v");
        let absent = args_to_vals(&p, &json!({"y": "a"})).unwrap();
        assert_eq!(
            args_to_vals(&p, &json!({"x": null, "y": {"a": null}})).unwrap(),
            absent
        );
        assert!(
            args_to_vals(&p, &json!({"y": {"b": null}})).is_err(),
            "a payload that is due is not absent"
        );
        assert_eq!(
            args_to_vals(&params("", "x: option<u8>"), &Value::Null).unwrap(),
            vec![Val::Option(None)]
        );
    }

    /// A `json` parameter takes any JSON value and reaches the guest as its
    /// canonical text; JSON text in a string is read, bad text refused with
    /// the parameter's path; a string parameter not marked is untouched.
    #[test]
    fn json_parameters_reach_the_guest_as_canonical_text() {
        let p = params(
            "",
            "filter: string, sorts: option<string>, title: string, n: u8",
        );
        let mut docs = std::collections::BTreeMap::new();
        for name in ["filter", "sorts", "n"] {
            docs.insert(
                name.to_string(),
                scout_manifest::TypeDoc {
                    json: true,
                    ..Default::default()
                },
            );
        }
        let json = json_params(&p, &docs);
        assert_eq!(
            json,
            [true, true, false, false],
            "a number is never JSON text"
        );

        let args = json!({"filter": {"z": [1, 2.5, null], "a": {"y": true, "b": "x"}}, "title": "{\"b\":1}", "n": 3});
        let given = json_as_canonical_text(&p, &json, &args).unwrap().unwrap();
        assert_eq!(
            given["filter"],
            r#"{"a":{"b":"x","y":true},"z":[1,2.5,null]}"#
        );
        assert_eq!(given["title"], "{\"b\":1}", "not marked: as sent");
        assert!(given.get("sorts").is_none(), "absent stays absent");
        let vals = args_to_vals(&p, &given).unwrap();
        assert_eq!(
            vals[0],
            Val::String(r#"{"a":{"b":"x","y":true},"z":[1,2.5,null]}"#.into())
        );
        assert_eq!(vals[1], Val::Option(None));

        // Text that is JSON is the same value, for the guest and the digest.
        let text = json!({"filter": "{ \"z\": [1, 2.5, null], \"a\": {\"y\": true, \"b\": \"x\"} }", "title": "t", "n": 3, "sorts": null});
        let shown = json_text_as_values(&p, &json, &text).unwrap();
        assert_eq!(shown["filter"], args["filter"]);
        assert_eq!(
            crate::store::canonical_args_text(&shown["filter"]),
            given["filter"].as_str().unwrap(),
            "the digest covers the text the guest receives"
        );
        let from_text = json_as_canonical_text(&p, &json, &text).unwrap().unwrap();
        assert_eq!(from_text["filter"], given["filter"]);
        assert_eq!(
            from_text["sorts"],
            Value::Null,
            "an absent option stays absent"
        );

        let bad = json!({"filter": "{bad", "title": "t", "n": 3});
        assert!(json_text_as_values(&p, &json, &bad).is_none());
        let refused = json_as_canonical_text(&p, &json, &bad).unwrap_err();
        assert_eq!(refused.path, "$.filter");
        assert!(refused.message.contains("not JSON"), "{}", refused.message);

        assert!(
            json_as_canonical_text(&p, &[false; 4], &args)
                .unwrap()
                .is_none()
        );
    }
}
