//! JSON arguments to component values (`scout_host::convert`), on a fixed
//! rich WIT interface: every integer width, floats, bool, char, string,
//! records with option fields, nested lists, tuples, enums, flags, variants
//! with and without payloads, results, nested options.
//!
//! Input: one selector byte (which function) and JSON text. Checked, beyond
//! "no panic": the converter and the derived JSON Schema (through an
//! independent validator) accept exactly the same arguments, the one
//! leniency being a `null` the converter reads as absent (see
//! `scout_fuzz::absent_nulls`); accepted values are well-typed; and
//! `to_json` then `args_to_vals` gives the same values back. Those are the promises a model relies on: what the schema it was
//! shown allows is what the host takes, and nothing else.

#![no_main]

use libfuzzer_sys::fuzz_target;
use scout_fuzz::{Func, Oracle, check_conversion, checked_schema, component_funcs};
use serde_json::Value;
use std::sync::OnceLock;

const WIT: &str = r#"
package fuzz:t;

interface tools {
    enum color { red, green, blue }
    flags perms { read, write, exec, %type }
    variant shape {
        none,
        circle(f64),
        rect(tuple<u32, u32>),
        named(string),
        maybe(option<color>),
        ok,
    }
    record inner {
        id: u64,
        tag: option<string>,
        tags: list<string>,
        %null: option<option<u8>>,
    }
    record outer {
        name: string,
        inner: inner,
        maybe: option<inner>,
        items: list<list<s8>>,
        shapes: list<shape>,
        grid: list<tuple<u8, char>>,
        kebab-case: option<perms>,
    }

    ints: func(a: s8, b: s16, c: s32, d: s64, e: u8, f: u16, g: u32, h: u64) -> result<string, string>;
    floats: func(a: f32, b: f64, c: option<f32>, d: list<f64>) -> result<string, string>;
    scalars: func(flag: bool, c: char, s: string, o: option<char>) -> result<string, string>;
    records: func(o: outer, opt: option<outer>) -> result<string, string>;
    variants: func(s: shape, c: color, p: perms, r: result<u8, string>) -> result<string, string>;
    results: func(bare: result, ok-only: result<string>, err-only: result<_, u8>, nested: result<option<s16>, list<color>>) -> result<string, string>;
    options: func(a: option<option<u8>>, b: list<option<string>>, c: option<list<option<bool>>>) -> result<string, string>;
    tuples: func(t: tuple<bool, tuple<s64, f32>, list<u16>>, single: tuple<char>) -> result<string, string>;
    fixed: func(xs: list<u8, 3>, pairs: list<tuple<string, bool>, 2>) -> result<string, string>;
    empty: func() -> result<string, string>;
}

world w {
    export tools;
}
"#;

struct Target {
    funcs: Vec<Func>,
    oracles: Vec<Oracle>,
}

fn target() -> &'static Target {
    static TARGET: OnceLock<Target> = OnceLock::new();
    TARGET.get_or_init(|| {
        let funcs = component_funcs(WIT).expect("the fixed WIT builds a component");
        let oracles = funcs
            .iter()
            .map(|(name, params)| {
                let schema = checked_schema(params);
                Oracle::new(&schema).unwrap_or_else(|e| panic!("schema-valid: `{name}`: {e}: {schema}"))
            })
            .collect();
        Target { funcs, oracles }
    })
}

fuzz_target!(|data: &[u8]| {
    let t = target();
    let Some((&selector, json)) = data.split_first() else { return };
    let Ok(args) = serde_json::from_slice::<Value>(json) else { return };
    let i = selector as usize % t.funcs.len();
    let (name, params) = &t.funcs[i];
    check_conversion(name, params, &t.oracles[i], &args);
});
