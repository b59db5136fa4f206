//! WIT types to JSON Schema (`scout_host::schema`), on arbitrary types.
//!
//! Input: a bounded type tree (every kind a tool parameter may have: all
//! scalars, lists, fixed-length lists, options, tuples, results, records,
//! variants, enums, flags), rendered as WIT and built into a real component
//! (a dummy module, no guest), then a JSON value shaped by the same input:
//! mostly well-formed for the types, with near misses mixed in (out-of-range
//! numbers, integral floats, missing or extra fields, duplicate flags, a
//! payload where none belongs, wrong kinds).
//!
//! Checked, beyond "no panic": no supported type is refused by
//! `unsupported`; the schema is valid (meta-schema and compiles); every
//! `required` name is a property; the schema and the converter agree on the
//! value; accepted values round-trip through `to_json`. What the schema
//! derivation must get right for any connector, not only the ones we ship.

#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use scout_fuzz::{Func, Oracle, check_conversion, checked_schema, component_funcs};
use serde_json::{Map, Number, Value, json};
use std::collections::HashMap;
use std::sync::Mutex;

/// Identifiers, some of them WIT keywords or JSON-ish words on purpose
/// (always written `%name`, so keywords are legal).
const NAMES: &[&str] = &[
    "a", "b", "c", "id", "ok", "err", "null", "type", "value", "list", "string", "none", "some", "x-y", "a1", "kebab-case-name",
    "enum", "record", "variant", "flags", "option", "result", "bool", "u8", "true", "false",
];

const MAX_DEPTH: u32 = 4;
const MAX_NODES: u32 = 24;

/// A WIT type.
#[derive(Debug, Clone)]
enum Ty {
    Bool,
    S8,
    U8,
    S16,
    U16,
    S32,
    U32,
    S64,
    U64,
    F32,
    F64,
    Char,
    String,
    List(Box<Ty>),
    Fixed(Box<Ty>, u32),
    Option(Box<Ty>),
    Tuple(Vec<Ty>),
    Result(Option<Box<Ty>>, Option<Box<Ty>>),
    Record(Vec<(&'static str, Ty)>),
    Variant(Vec<(&'static str, Option<Ty>)>),
    Enum(Vec<&'static str>),
    Flags(Vec<&'static str>),
}

struct Gen<'a, 'b> {
    u: &'a mut Unstructured<'b>,
    nodes: u32,
}

impl Gen<'_, '_> {
    fn ty(&mut self, depth: u32) -> Result<Ty> {
        self.nodes += 1;
        let leaf = depth >= MAX_DEPTH || self.nodes >= MAX_NODES;
        let kinds = if leaf { 15 } else { 22 };
        Ok(match self.u.int_in_range(0..=kinds - 1)? {
            0 => Ty::Bool,
            1 => Ty::S8,
            2 => Ty::U8,
            3 => Ty::S16,
            4 => Ty::U16,
            5 => Ty::S32,
            6 => Ty::U32,
            7 => Ty::S64,
            8 => Ty::U64,
            9 => Ty::F32,
            10 => Ty::F64,
            11 => Ty::Char,
            12 => Ty::String,
            13 => Ty::Enum(self.names(1, 6)?),
            14 => Ty::Flags(self.names(1, 6)?),
            15 => Ty::List(Box::new(self.ty(depth + 1)?)),
            16 => Ty::Fixed(Box::new(self.ty(depth + 1)?), self.u.int_in_range(1..=3)?),
            17 => Ty::Option(Box::new(self.ty(depth + 1)?)),
            18 => {
                let n = self.u.int_in_range(1..=3)?;
                Ty::Tuple((0..n).map(|_| self.ty(depth + 1)).collect::<Result<_>>()?)
            }
            19 => {
                let ok = if self.u.arbitrary()? { Some(Box::new(self.ty(depth + 1)?)) } else { None };
                let err = if self.u.arbitrary()? { Some(Box::new(self.ty(depth + 1)?)) } else { None };
                Ty::Result(ok, err)
            }
            20 => {
                let names = self.names(1, 4)?;
                Ty::Record(names.into_iter().map(|n| Ok((n, self.ty(depth + 1)?))).collect::<Result<_>>()?)
            }
            _ => {
                let names = self.names(1, 4)?;
                let mut cases = Vec::new();
                for n in names {
                    let payload = if self.u.arbitrary()? { Some(self.ty(depth + 1)?) } else { None };
                    cases.push((n, payload));
                }
                Ty::Variant(cases)
            }
        })
    }

    /// Distinct names, `min..=max` of them.
    fn names(&mut self, min: usize, max: usize) -> Result<Vec<&'static str>> {
        let n = self.u.int_in_range(min..=max)?;
        let mut out: Vec<&'static str> = Vec::new();
        for _ in 0..n {
            let name = *self.u.choose(NAMES)?;
            if !out.contains(&name) {
                out.push(name);
            }
        }
        Ok(out)
    }
}

/// Renders types as WIT, naming records, variants, enums and flags `tN`.
struct Wit {
    defs: Vec<String>,
}

impl Wit {
    fn render(&mut self, ty: &Ty) -> String {
        match ty {
            Ty::Bool => "bool".into(),
            Ty::S8 => "s8".into(),
            Ty::U8 => "u8".into(),
            Ty::S16 => "s16".into(),
            Ty::U16 => "u16".into(),
            Ty::S32 => "s32".into(),
            Ty::U32 => "u32".into(),
            Ty::S64 => "s64".into(),
            Ty::U64 => "u64".into(),
            Ty::F32 => "f32".into(),
            Ty::F64 => "f64".into(),
            Ty::Char => "char".into(),
            Ty::String => "string".into(),
            Ty::List(t) => format!("list<{}>", self.render(t)),
            Ty::Fixed(t, n) => format!("list<{}, {n}>", self.render(t)),
            Ty::Option(t) => format!("option<{}>", self.render(t)),
            Ty::Tuple(ts) => format!("tuple<{}>", ts.iter().map(|t| self.render(t)).collect::<Vec<_>>().join(", ")),
            Ty::Result(None, None) => "result".into(),
            Ty::Result(Some(ok), None) => format!("result<{}>", self.render(ok)),
            Ty::Result(None, Some(err)) => format!("result<_, {}>", self.render(err)),
            Ty::Result(Some(ok), Some(err)) => format!("result<{}, {}>", self.render(ok), self.render(err)),
            Ty::Record(fields) => {
                let body: Vec<String> = fields.iter().map(|(n, t)| format!("%{n}: {}", self.render(t))).collect();
                self.def("record", &body)
            }
            Ty::Variant(cases) => {
                let body: Vec<String> = cases
                    .iter()
                    .map(|(n, t)| match t {
                        Some(t) => format!("%{n}({})", self.render(t)),
                        None => format!("%{n}"),
                    })
                    .collect();
                self.def("variant", &body)
            }
            Ty::Enum(names) => self.def("enum", &names.iter().map(|n| format!("%{n}")).collect::<Vec<_>>()),
            Ty::Flags(names) => self.def("flags", &names.iter().map(|n| format!("%{n}")).collect::<Vec<_>>()),
        }
    }

    fn def(&mut self, kind: &str, body: &[String]) -> String {
        let name = format!("t{}", self.defs.len());
        self.defs.push(format!("    {kind} {name} {{ {} }}", body.join(", ")));
        name
    }
}

/// The WIT text of one function `f` taking `params`.
fn wit_of(params: &[(&'static str, Ty)]) -> String {
    let mut wit = Wit { defs: Vec::new() };
    let rendered: Vec<String> = params.iter().map(|(n, t)| format!("%{n}: {}", wit.render(t))).collect();
    format!(
        "package fuzz:t;\n\ninterface tools {{\n{}\n    f: func({}) -> result<string, string>;\n}}\n\nworld w {{\n    export tools;\n}}\n",
        wit.defs.join("\n"),
        rendered.join(", ")
    )
}

/// A JSON value for `ty`: well-formed unless the input picks a near miss.
fn value(u: &mut Unstructured, ty: &Ty, depth: u32) -> Result<Value> {
    // One draw in 16 is a near miss at this node.
    if u.int_in_range(0..=15u8)? == 0 {
        return near_miss(u, ty);
    }
    Ok(match ty {
        Ty::Bool => Value::Bool(u.arbitrary()?),
        Ty::S8 => int(u, i8::MIN as i128, i8::MAX as i128)?,
        Ty::U8 => int(u, 0, u8::MAX as i128)?,
        Ty::S16 => int(u, i16::MIN as i128, i16::MAX as i128)?,
        Ty::U16 => int(u, 0, u16::MAX as i128)?,
        Ty::S32 => int(u, i32::MIN as i128, i32::MAX as i128)?,
        Ty::U32 => int(u, 0, u32::MAX as i128)?,
        Ty::S64 => int(u, i64::MIN as i128, i64::MAX as i128)?,
        Ty::U64 => int(u, 0, u64::MAX as i128)?,
        Ty::F32 | Ty::F64 => float(u)?,
        Ty::Char => Value::String(char::arbitrary(u)?.to_string()),
        Ty::String => Value::String(String::arbitrary(u)?),
        Ty::List(t) => {
            let n = if depth > 6 { 0 } else { u.int_in_range(0..=3)? };
            Value::Array((0..n).map(|_| value(u, t, depth + 1)).collect::<Result<_>>()?)
        }
        Ty::Fixed(t, n) => Value::Array((0..*n).map(|_| value(u, t, depth + 1)).collect::<Result<_>>()?),
        Ty::Option(t) => {
            if u.arbitrary()? {
                Value::Null
            } else {
                value(u, t, depth + 1)?
            }
        }
        Ty::Tuple(ts) => Value::Array(ts.iter().map(|t| value(u, t, depth + 1)).collect::<Result<_>>()?),
        Ty::Result(ok, err) => {
            if u.arbitrary()? {
                case(u, "ok", ok.as_deref(), depth)?
            } else {
                case(u, "err", err.as_deref(), depth)?
            }
        }
        Ty::Record(fields) => {
            let mut o = Map::new();
            for (n, t) in fields {
                // An option field may be left out.
                if matches!(t, Ty::Option(_)) && u.arbitrary()? {
                    continue;
                }
                o.insert(n.to_string(), value(u, t, depth + 1)?);
            }
            Value::Object(o)
        }
        Ty::Variant(cases) => {
            let (n, t) = u.choose(cases)?;
            case(u, n, t.as_ref(), depth)?
        }
        Ty::Enum(names) => Value::String(u.choose(names)?.to_string()),
        Ty::Flags(names) => {
            let mut picked = Vec::new();
            for n in names {
                if u.arbitrary()? {
                    picked.push(Value::String(n.to_string()));
                }
            }
            Value::Array(picked)
        }
    })
}

fn case(u: &mut Unstructured, name: &str, payload: Option<&Ty>, depth: u32) -> Result<Value> {
    Ok(match payload {
        None => Value::String(name.to_string()),
        Some(t) => json!({ name: value(u, t, depth + 1)? }),
    })
}

fn int(u: &mut Unstructured, min: i128, max: i128) -> Result<Value> {
    let n = match u.int_in_range(0..=5u8)? {
        0 => min,
        1 => max,
        2 => 0,
        _ => u.int_in_range(min..=max)?,
    };
    Ok(number(n))
}

fn number(n: i128) -> Value {
    if let Ok(i) = i64::try_from(n) {
        Value::from(i)
    } else if let Ok(i) = u64::try_from(n) {
        Value::from(i)
    } else {
        Number::from_f64(n as f64).map(Value::Number).unwrap_or(Value::Null)
    }
}

fn float(u: &mut Unstructured) -> Result<Value> {
    let f = match u.int_in_range(0..=7u8)? {
        0 => f32::MAX as f64,
        1 => -(f32::MAX as f64),
        2 => f64::MAX,
        3 => -0.0,
        4 => f32::MIN_POSITIVE as f64 / 2.0,
        5 => Value::from(i64::arbitrary(u)?).as_f64().unwrap_or(0.0),
        _ => f64::arbitrary(u)?,
    };
    Ok(Number::from_f64(f).map(Value::Number).unwrap_or(Value::Null))
}

/// Something close to a value of `ty` but maybe not one.
fn near_miss(u: &mut Unstructured, ty: &Ty) -> Result<Value> {
    let bounds = match ty {
        Ty::S8 => Some((i8::MIN as i128, i8::MAX as i128)),
        Ty::U8 => Some((0, u8::MAX as i128)),
        Ty::S16 => Some((i16::MIN as i128, i16::MAX as i128)),
        Ty::U16 => Some((0, u16::MAX as i128)),
        Ty::S32 => Some((i32::MIN as i128, i32::MAX as i128)),
        Ty::U32 => Some((0, u32::MAX as i128)),
        Ty::S64 => Some((i64::MIN as i128, i64::MAX as i128)),
        Ty::U64 => Some((0, u64::MAX as i128)),
        _ => None,
    };
    Ok(match u.int_in_range(0..=9u8)? {
        // Just outside the range, or an integral float inside or outside it.
        0 if bounds.is_some() => {
            let (min, max) = bounds.expect("checked");
            match u.int_in_range(0..=4u8)? {
                0 => number(min - 1),
                1 => number(max + 1),
                2 => Number::from_f64(min as f64).map(Value::Number).unwrap_or(Value::Null),
                3 => Number::from_f64(max as f64).map(Value::Number).unwrap_or(Value::Null),
                _ => Number::from_f64(u.int_in_range(min..=max)? as f64 + 0.5).map(Value::Number).unwrap_or(Value::Null),
            }
        }
        1 => match ty {
            // A flag twice, or one that is not a flag.
            Ty::Flags(names) => {
                let n = u.choose(names)?;
                if u.arbitrary()? { json!([n, n]) } else { json!(["not-a-flag"]) }
            }
            // A payload on a case without one, or none on a case with one.
            Ty::Variant(cases) => {
                let (n, t) = u.choose(cases)?;
                match t {
                    None => json!({ *n: Value::Null }),
                    Some(_) => Value::String(n.to_string()),
                }
            }
            Ty::Result(..) => json!({ "ok": null }),
            Ty::Enum(_) | Ty::Char => Value::String(String::arbitrary(u)?),
            Ty::F32 | Ty::F64 => float(u)?,
            Ty::Record(fields) => {
                // One field dropped, or an extra one.
                let mut o = Map::new();
                let skip = u.choose_index(fields.len())?;
                for (i, (n, _)) in fields.iter().enumerate() {
                    if i != skip {
                        o.insert(n.to_string(), Value::Null);
                    }
                }
                if u.arbitrary()? {
                    o.insert("extra".to_string(), Value::Bool(true));
                }
                Value::Object(o)
            }
            _ => Value::Null,
        },
        2 => Value::Null,
        3 => Value::Bool(u.arbitrary()?),
        4 => Value::String(String::arbitrary(u)?),
        5 => Value::Array(Vec::new()),
        6 => json!({}),
        7 => json!(1.5),
        8 => Value::from(u64::arbitrary(u)?),
        _ => Value::from(i64::arbitrary(u)?),
    })
}

/// Components built so far, by WIT text: the mutator often keeps the types
/// and changes only the value.
fn cached(wit: &str) -> Option<(Func, std::sync::Arc<Oracle>)> {
    type Entry = Option<(Func, std::sync::Arc<Oracle>)>;
    static CACHE: Mutex<Option<HashMap<String, Entry>>> = Mutex::new(None);
    let mut guard = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let cache = guard.get_or_insert_with(HashMap::new);
    if let Some(hit) = cache.get(wit) {
        return hit.clone();
    }
    let entry = match component_funcs(wit) {
        Ok(funcs) => {
            let [func] = <[Func; 1]>::try_from(funcs).unwrap_or_else(|f| panic!("build: {} functions exported, one expected", f.len()));
            let started = std::time::Instant::now();
            let schema = checked_schema(&func.1);
            let oracle = Oracle::new(&schema).unwrap_or_else(|e| panic!("schema-valid: {e}: {schema}\n{wit}"));
            if std::env::var_os("SCOUT_FUZZ_TIME").is_some() {
                eprintln!("schema and oracle: {:?}", started.elapsed());
            }
            Some((func, std::sync::Arc::new(oracle)))
        }
        // A generated interface the toolchain refuses (none expected; see
        // `build-ok`) is not the converter's business.
        Err(e) => panic!("build-ok: the generated WIT does not build a component: {e}\n{wit}"),
    };
    if cache.len() >= 512 {
        cache.clear();
    }
    cache.insert(wit.to_string(), entry.clone());
    entry
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let mut g = Gen { u: &mut u, nodes: 0 };
    let Ok(names) = g.names(0, 3) else { return };
    let mut params = Vec::new();
    for n in names {
        let Ok(t) = g.ty(0) else { return };
        params.push((n, t));
    }
    let wit = wit_of(&params);
    let Some(((fname, fparams), oracle)) = cached(&wit) else { return };
    // Many values per type tree: compiling is the slow part (tens of
    // milliseconds), and mutations of the value bytes hit the cache.
    for _ in 0..32 {
        let mut o = Map::new();
        for (n, t) in &params {
            if matches!(t, Ty::Option(_)) && u.arbitrary().unwrap_or(false) {
                continue;
            }
            let Ok(v) = value(&mut u, t, 0) else { return };
            o.insert(n.to_string(), v);
        }
        // Through JSON text, as a client would send it.
        let Ok(text) = serde_json::to_string(&Value::Object(o)) else { return };
        let Ok(args) = serde_json::from_str::<Value>(&text) else { return };
        check_conversion(&fname, &fparams, &oracle, &args);
        if u.is_empty() {
            break;
        }
    }
});
