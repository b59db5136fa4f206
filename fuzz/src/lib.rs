//! Shared pieces of the fuzz targets: components built from WIT text (no
//! guest needed), the JSON Schema oracle, and the property checks that more
//! than one target makes.

use scout_host::convert::{Mismatch, args_to_vals, to_json};
use scout_host::schema::{params_schema, unsupported};
use serde_json::{Map, Value};
use std::sync::OnceLock;
use wasmtime::component::types::{ComponentItem, Type};
use wasmtime::component::{Component, Val};
use wasmtime::{Config, Engine, OptLevel};

/// One exported function: its name and its named parameters.
pub type Func = (String, Vec<(String, Type)>);

/// The engine every target compiles with: component model on, Cranelift
/// without optimisation (the dummy bodies are never run), single-threaded.
pub fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.wasm_component_model_fixed_length_lists(true);
        config.cranelift_opt_level(OptLevel::None);
        config.parallel_compilation(false);
        // Only the types are used: nothing that serves running code.
        config.generate_address_map(false);
        config.native_unwind_info(false);
        config.wasm_backtrace(false);
        Engine::new(&config).expect("the fuzz engine configuration is valid")
    })
}

/// Builds a component exporting `package fuzz:t; ... world w` from WIT
/// text: a dummy core module (bodies `unreachable`) with the component-type
/// metadata embedded, encoded and compiled. Returns the functions of every
/// exported instance, in export order.
pub fn component_funcs(wit: &str) -> Result<Vec<Func>, String> {
    let started = std::time::Instant::now();
    let mut resolve = wit_parser::Resolve::default();
    let pkg = resolve.push_str("fuzz.wit", wit).map_err(|e| format!("parse: {e:#}"))?;
    let world = resolve.select_world(&[pkg], Some("w")).map_err(|e| format!("world: {e:#}"))?;
    let mut module = wit_component::dummy_module(&resolve, world, wit_parser::ManglingAndAbi::Standard32);
    wit_component::embed_component_metadata(&mut module, &resolve, world, wit_component::StringEncoding::UTF8, false)
        .map_err(|e| format!("embed: {e:#}"))?;
    let bytes = wit_component::ComponentEncoder::default()
        .module(&module)
        .map_err(|e| format!("module: {e:#}"))?
        .validate(true)
        .encode()
        .map_err(|e| format!("encode: {e:#}"))?;
    let engine = engine();
    let encoded = started.elapsed();
    let component = Component::new(engine, &bytes).map_err(|e| format!("compile: {e:#}"))?;
    if std::env::var_os("SCOUT_FUZZ_TIME").is_some() {
        eprintln!("component: WIT to bytes {encoded:?}, compile {:?}", started.elapsed() - encoded);
    }
    let mut funcs = Vec::new();
    for (_, item) in component.component_type().exports(engine) {
        let ComponentItem::ComponentInstance(instance) = item.ty else { continue };
        for (fname, fitem) in instance.exports(engine) {
            if let ComponentItem::ComponentFunc(f) = fitem.ty {
                funcs.push((fname.to_string(), f.params().map(|(n, t)| (n.to_string(), t)).collect()));
            }
        }
    }
    Ok(funcs)
}

/// An independent check of the derived schema: the `jsonschema` crate,
/// draft 2020-12 (the draft `prefixItems` belongs to).
pub struct Oracle {
    validator: jsonschema::Validator,
}

impl Oracle {
    /// Compiles `schema`; an error means the schema itself is invalid.
    pub fn new(schema: &Value) -> Result<Oracle, String> {
        if !jsonschema::meta::is_valid(schema) {
            return Err("the schema does not validate against its meta-schema".to_string());
        }
        let validator = jsonschema::draft202012::new(schema).map_err(|e| e.to_string())?;
        Ok(Oracle { validator })
    }

    /// Whether the schema accepts `instance`.
    pub fn accepts(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }

    /// The keyword that refused `instance` (the end of its schema path).
    pub fn why(&self, instance: &Value) -> String {
        match self.validator.validate(instance) {
            Ok(()) => "accepted".to_string(),
            Err(e) => {
                let path = e.schema_path().to_string();
                let tail: Vec<&str> = path.rsplit('/').take(2).collect();
                format!("schema refuses at .../{}", tail.into_iter().rev().collect::<Vec<_>>().join("/"))
            }
        }
    }
}

/// The schema of a function's parameters, checked for internal consistency.
///
/// Panics (property `schema-consistent`) if a type is refused by
/// `unsupported`, or a `required` name is missing from `properties`.
pub fn checked_schema(params: &[(String, Type)]) -> Value {
    for (name, ty) in params {
        if let Some(what) = unsupported(ty) {
            panic!("schema-consistent: parameter `{name}` of a supported kind is refused as {what}");
        }
    }
    let schema = params_schema(params.iter().map(|(n, t)| (n.as_str(), t)));
    check_required(&schema, "#");
    schema
}

fn check_required(schema: &Value, at: &str) {
    match schema {
        Value::Object(o) => {
            if let Some(required) = o.get("required") {
                let props = o.get("properties").and_then(Value::as_object);
                for r in required.as_array().into_iter().flatten() {
                    let name = r.as_str().unwrap_or_else(|| panic!("schema-consistent: non-string in `required` at {at}"));
                    assert!(
                        props.is_some_and(|p| p.contains_key(name)),
                        "schema-consistent: `{name}` is required at {at} but not in `properties`"
                    );
                }
            }
            for (k, v) in o {
                check_required(v, &format!("{at}/{k}"));
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                check_required(v, &format!("{at}/{i}"));
            }
        }
        _ => {}
    }
}

/// `args` with every `null` that the converter reads as "absent" taken out:
/// the whole argument object (a client that leaves `arguments` out), an
/// optional field or parameter (`{"limit": null}`), the payload of a case
/// that has none (`{"case": null}`). The schema states only the absent form;
/// the converter takes both, on purpose. Everything else is left as is.
pub fn absent_nulls(params: &[(String, Type)], args: &Value) -> Value {
    let fields: Vec<(&str, &Type)> = params.iter().map(|(n, t)| (n.as_str(), t)).collect();
    match args {
        Value::Null => Value::Object(Map::new()),
        Value::Object(o) => Value::Object(fields_without_nulls(&fields, o)),
        other => other.clone(),
    }
}

fn fields_without_nulls(fields: &[(&str, &Type)], object: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in object {
        let v = match fields.iter().find(|(n, _)| n == k) {
            Some((_, Type::Option(_))) if v.is_null() => continue,
            Some((_, Type::Option(inner))) => without_nulls(&inner.ty(), v),
            Some((_, ty)) => without_nulls(ty, v),
            None => v.clone(),
        };
        out.insert(k.clone(), v);
    }
    out
}

fn without_nulls(ty: &Type, v: &Value) -> Value {
    match (ty, v) {
        (Type::List(l), Value::Array(items)) => {
            let t = l.ty();
            Value::Array(items.iter().map(|i| without_nulls(&t, i)).collect())
        }
        (Type::FixedLengthList(l), Value::Array(items)) => {
            let t = l.ty();
            Value::Array(items.iter().map(|i| without_nulls(&t, i)).collect())
        }
        (Type::Tuple(t), Value::Array(items)) => {
            let types: Vec<Type> = t.types().collect();
            Value::Array(items.iter().enumerate().map(|(i, item)| match types.get(i) {
                Some(t) => without_nulls(t, item),
                None => item.clone(),
            }).collect())
        }
        (Type::Record(r), Value::Object(o)) => {
            let fields: Vec<(String, Type)> = r.fields().map(|f| (f.name.to_string(), f.ty)).collect();
            let refs: Vec<(&str, &Type)> = fields.iter().map(|(n, t)| (n.as_str(), t)).collect();
            Value::Object(fields_without_nulls(&refs, o))
        }
        (Type::Option(o), v) if !v.is_null() => without_nulls(&o.ty(), v),
        (Type::Variant(var), Value::Object(o)) if o.len() == 1 => {
            let (k, p) = o.iter().next().expect("one entry");
            match var.cases().find(|c| c.name == k) {
                Some(case) => case_without_nulls(k, case.ty.as_ref(), p),
                None => v.clone(),
            }
        }
        (Type::Result(r), Value::Object(o)) if o.len() == 1 => {
            let (k, p) = o.iter().next().expect("one entry");
            match k.as_str() {
                "ok" => case_without_nulls(k, r.ok().as_ref(), p),
                "err" => case_without_nulls(k, r.err().as_ref(), p),
                _ => v.clone(),
            }
        }
        _ => v.clone(),
    }
}

fn case_without_nulls(name: &str, payload: Option<&Type>, p: &Value) -> Value {
    match payload {
        None if p.is_null() => Value::String(name.to_string()),
        None => serde_json::json!({ name: p }),
        Some(t) => serde_json::json!({ name: without_nulls(t, p) }),
    }
}

/// The properties of one conversion, shared by the targets:
///
/// - `absent-null`: the converter's one leniency is the one of
///   [`absent_nulls`]: `args` and `args` without its absent nulls convert
///   to the same values, or are both refused;
/// - `differential`: the schema accepts `args` without its absent nulls iff
///   `args_to_vals` does;
/// - `well-typed`: every value produced has its parameter's type;
/// - `round-trip`: converting the values back with `to_json` (through JSON
///   text, as a client would resend them) and again with `args_to_vals`
///   gives equal values, and the schema accepts that JSON (absent nulls out).
pub fn check_conversion(func: &str, params: &[(String, Type)], oracle: &Oracle, args: &Value) {
    let converted = args_to_vals(params, args);
    let plain = absent_nulls(params, args);
    let plain_converted = args_to_vals(params, &plain);
    // The only leniency: a `null` read as absent.
    match (&converted, &plain_converted) {
        (Ok(a), Ok(b)) if a == b => {}
        (Err(_), Err(_)) => {}
        (a, b) => violation(
            "absent-null",
            &format!("`{func}` {args} converts to {a:?} but without its absent nulls ({plain}) to {b:?}"),
            if a.is_ok() { "ok" } else { "err" },
        ),
    }
    let schema_ok = oracle.accepts(&plain);
    match &plain_converted {
        Ok(_) if !schema_ok => violation(
            "differential",
            &format!("`{func}` converter accepts what the schema refuses: {plain}"),
            &oracle.why(&plain),
        ),
        Err(Mismatch { path, message }) if schema_ok => violation(
            "differential",
            &format!("`{func}` schema accepts what the converter refuses ({path}: {message}): {plain}"),
            message,
        ),
        _ => {}
    }
    let Ok(vals) = converted else { return };
    assert_eq!(vals.len(), params.len(), "well-typed: `{func}` one value per parameter");
    for ((name, ty), val) in params.iter().zip(&vals) {
        if !well_typed(val, ty) {
            violation("well-typed", &format!("`{func}` parameter `{name}` got {val:?} for {ty:?}"), name);
        }
    }
    let back = Value::Object(params.iter().zip(&vals).map(|((name, _), v)| (name.clone(), to_json(v))).collect());
    let text = serde_json::to_string(&back).expect("a Value serialises");
    let Ok(reparsed) = serde_json::from_str::<Value>(&text) else {
        return violation("round-trip", &format!("to_json output does not parse: {text}"), "parse");
    };
    let reparsed_plain = absent_nulls(params, &reparsed);
    if !oracle.accepts(&reparsed_plain) {
        violation(
            "round-trip",
            &format!("`{func}` schema refuses to_json's output {reparsed_plain} (from {args})"),
            &oracle.why(&reparsed_plain),
        );
    }
    match args_to_vals(params, &reparsed) {
        Ok(again) if again == vals => {}
        Ok(again) => violation("round-trip", &format!("`{func}` {args} -> {vals:?} -> {reparsed} -> {again:?}"), "values"),
        Err(m) => violation(
            "round-trip",
            &format!("`{func}` converter refuses to_json's output {reparsed} ({}: {}), from {args}", m.path, m.message),
            &m.message,
        ),
    }
}

/// A property failed: a panic (libFuzzer's crash), or with
/// `SCOUT_FUZZ_KEEP_GOING` set, one line on stderr per distinct kind of
/// failure (property and reason, digits dropped) and the run goes on: for
/// surveying every disagreement in one run before fixing any.
fn violation(property: &str, detail: &str, reason: &str) {
    static KEEP_GOING: OnceLock<bool> = OnceLock::new();
    if !*KEEP_GOING.get_or_init(|| std::env::var_os("SCOUT_FUZZ_KEEP_GOING").is_some()) {
        panic!("{property}: {detail}");
    }
    static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let kind = format!("{property}: {}", reason.chars().filter(|c| !c.is_ascii_digit()).collect::<String>());
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    if !seen.contains(&kind) {
        eprintln!("VIOLATION {kind}\n    {detail}");
        seen.push(kind);
    }
}

/// Whether `val` is a value of type `ty`.
pub fn well_typed(val: &Val, ty: &Type) -> bool {
    match (ty, val) {
        (Type::Bool, Val::Bool(_))
        | (Type::S8, Val::S8(_))
        | (Type::U8, Val::U8(_))
        | (Type::S16, Val::S16(_))
        | (Type::U16, Val::U16(_))
        | (Type::S32, Val::S32(_))
        | (Type::U32, Val::U32(_))
        | (Type::S64, Val::S64(_))
        | (Type::U64, Val::U64(_))
        | (Type::Char, Val::Char(_))
        | (Type::String, Val::String(_)) => true,
        (Type::Float32, Val::Float32(f)) => f.is_finite(),
        (Type::Float64, Val::Float64(f)) => f.is_finite(),
        (Type::List(l), Val::List(items)) => {
            let t = l.ty();
            items.iter().all(|v| well_typed(v, &t))
        }
        (Type::FixedLengthList(l), Val::FixedLengthList(items)) => {
            let t = l.ty();
            items.len() == l.len() as usize && items.iter().all(|v| well_typed(v, &t))
        }
        (Type::Record(r), Val::Record(fields)) => {
            let types: Vec<_> = r.fields().collect();
            types.len() == fields.len()
                && types.iter().zip(fields).all(|(f, (name, v))| f.name == name && well_typed(v, &f.ty))
        }
        (Type::Tuple(t), Val::Tuple(items)) => {
            let types: Vec<Type> = t.types().collect();
            types.len() == items.len() && types.iter().zip(items).all(|(t, v)| well_typed(v, t))
        }
        (Type::Enum(e), Val::Enum(name)) => e.names().any(|n| n == name),
        (Type::Flags(f), Val::Flags(names)) => {
            names.iter().all(|n| f.names().any(|m| m == n))
                && names.iter().enumerate().all(|(i, n)| !names[..i].contains(n))
        }
        (Type::Option(_), Val::Option(None)) => true,
        (Type::Option(o), Val::Option(Some(v))) => well_typed(v, &o.ty()),
        (Type::Variant(var), Val::Variant(name, payload)) => match var.cases().find(|c| c.name == name) {
            Some(case) => payload_typed(case.ty.as_ref(), payload.as_deref()),
            None => false,
        },
        (Type::Result(r), Val::Result(Ok(p))) => payload_typed(r.ok().as_ref(), p.as_deref()),
        (Type::Result(r), Val::Result(Err(p))) => payload_typed(r.err().as_ref(), p.as_deref()),
        _ => false,
    }
}

fn payload_typed(ty: Option<&Type>, val: Option<&Val>) -> bool {
    match (ty, val) {
        (None, None) => true,
        (Some(t), Some(v)) => well_typed(v, t),
        _ => false,
    }
}
