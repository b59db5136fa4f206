//! One module per connector (`connectors/NAME`): what is particular to it,
//! and the replay suite every connector gets, generated here from the list
//! the build script discovered (`scout_tests::foreach_connector!`) and from
//! each component's own manifest (its tools), so nothing restates it. A
//! connector without a module of its own fails the build.

use scout_host::{Runtime, RuntimeConfig};
use scout_tests::replay_suite::Suite;
use std::path::Path;

mod agentmail;
mod analytics;
mod cloudflare;
mod contentsquare;
mod dataforseo;
mod figma;
mod firecrawl;
mod github;
mod googleads;
mod microsoftads;
mod railway;
mod searchconsole;
mod seo;
mod sheets;
mod shopify;
mod tailscale;
mod writer;

/// Every tool the component declares has a passing case in its committed
/// fixtures, run through the real `scout-host test`.
fn every_tool_passes_its_replay_cases(connector: &str, component: &str) {
    let runtime = Runtime::new(RuntimeConfig {
        max_concurrent_calls: 1,
        ..Default::default()
    })
    .expect("a runtime");
    let info = runtime
        .inspect_file(Path::new(component))
        .unwrap_or_else(|e| panic!("{component}: {e}"));
    let tools: Vec<&str> = info.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(!tools.is_empty(), "{connector} declares no tools");
    Suite::of(connector).assert_all_pass(env!("CARGO_BIN_EXE_scout-host"), component, &tools);
}

/// Every committed fixture was written from the vendor's documentation and
/// says which page (`UNVERIFIED`, with an `https://` source): none was
/// recorded from the real service here. (A connector that reaches no
/// upstream, such as the SEO brief tools, has cases and no fixture.)
fn every_fixture_names_the_documentation_it_follows(connector: &str) {
    Suite::of(connector).assert_unverified("https://", 0);
}

/// Every parameter of every tool says what it is: the agent reads these
/// `description`s, and a bare `owner` or `git-ref` leaves it guessing.
fn every_parameter_is_described(connector: &str, component: &str) {
    let info = inspect(component);
    let undescribed = scout_host::runtime::undescribed_parameters(&info.tools);
    assert!(
        undescribed.is_empty(),
        "{connector}: {} parameter(s) without a description (add them under `Parameters:` in connectors/{connector}/wit): {}",
        undescribed.len(),
        undescribed.join(", ")
    );
}

/// The ranges the connector's code holds its parameters to (its
/// `args::bounded(name, value, default, min, max)` calls) are the ranges its
/// schema shows (`minimum`, `maximum`, `default`), both ways: no call
/// without a declared range of the same figures, no declared range without
/// a call. Read from the source, so a changed constant fails here.
fn declared_ranges_are_the_ones_the_source_enforces(connector: &str, component: &str) {
    let info = inspect(component);
    let enforced = bounded_calls(connector);
    let mut declared = Vec::new();
    for doc in &info.manifest.tools {
        let wire = info.manifest.wire_name(&doc.function);
        let tool = info.tools.iter().find(|t| t.name == wire).unwrap();
        for (param, param_doc) in &doc.params {
            let Some((min, max)) = param_doc.bounds.range() else {
                continue;
            };
            let default = param_doc.bounds.default.as_ref().and_then(|v| v.as_f64());
            // What the agent is shown is what is declared.
            let schema = &tool.input_schema["properties"][param];
            assert_eq!(
                (schema["minimum"].as_f64(), schema["maximum"].as_f64()),
                (Some(min), Some(max)),
                "{wire}.{param}: {schema}"
            );
            assert_eq!(
                schema["default"].as_f64(),
                default,
                "{wire}.{param}: {schema}"
            );
            declared.push((format!("{wire}.{param}"), param.clone(), min, max, default));
        }
    }
    for call in &enforced {
        assert!(
            declared.iter().any(|(_, name, min, max, default)| {
                *name == call.name
                    && *min == call.min
                    && *max == call.max
                    && (*default == call.default || call.default_varies && default.is_some())
            }),
            "{connector}: the code bounds `{}` to {} to {} (default {:?}) but no tool declares `- {} ({} to {}{})`; declared: {declared:?}",
            call.name,
            call.min,
            call.max,
            call.default,
            call.name,
            call.min,
            call.max,
            call.default
                .map(|d| format!(", default {d}"))
                .unwrap_or_default(),
        );
    }
    for (tool_param, name, min, max, default) in &declared {
        assert!(
            enforced.iter().any(|c| c.name == *name
                && c.min == *min
                && c.max == *max
                && (c.default == *default || c.default_varies && default.is_some())),
            "{connector}: {tool_param} declares {min} to {max} (default {default:?}), which no `bounded(\"{name}\", ..)` call in its source enforces"
        );
    }
}

fn inspect(component: &str) -> scout_host::runtime::ComponentInfo {
    let runtime = Runtime::new(RuntimeConfig {
        max_concurrent_calls: 1,
        ..Default::default()
    })
    .expect("a runtime");
    runtime
        .inspect_file(Path::new(component))
        .unwrap_or_else(|e| panic!("{component}: {e}"))
}

/// One `bounded(..)` call of a connector's source, its figures resolved.
#[derive(Debug)]
struct BoundedCall {
    name: String,
    min: f64,
    max: f64,
    /// `None` when the default is the value itself (no default).
    default: Option<f64>,
    /// The default is a variable the caller passes: each tool its own.
    default_varies: bool,
}

/// A Rust number literal's value: `100`, `1_000`, `1e9`, `0.5`, `100u16`.
fn literal(text: &str) -> Option<f64> {
    let text = text.trim().replace('_', "");
    if let Ok(n) = text.parse::<f64>() {
        return Some(n);
    }
    [
        "u8", "u16", "u32", "u64", "usize", "i8", "i16", "i32", "i64", "f32", "f64",
    ]
    .iter()
    .find_map(|suffix| text.strip_suffix(suffix)?.parse().ok())
}

/// The `bounded(` calls of `connectors/NAME/src` outside its tests, each
/// argument a literal or a `const` of the same crate.
fn bounded_calls(connector: &str) -> Vec<BoundedCall> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../connectors")
        .join(connector)
        .join("src");
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            // A file's unit tests come last: `#[cfg(test)] mod tests`.
            let tests = text
                .match_indices("#[cfg(test)]")
                .find(|(at, marker)| text[at + marker.len()..].trim_start().starts_with("mod "))
                .map_or(text.len(), |(at, _)| at);
            sources.push(text[..tests].to_string());
        }
    }
    let all = sources.join("\n");
    let value = |expr: &str| -> Option<f64> {
        let expr = expr.trim();
        if let Some(n) = literal(expr) {
            return Some(n);
        }
        let marker = format!("const {expr}:");
        let at = all.find(&marker)?;
        let rest = &all[at + marker.len()..];
        let (_, value) = rest.split_once('=')?;
        literal(value.split(';').next()?)
    };
    let mut calls = Vec::new();
    let mut rest = all.as_str();
    while let Some(at) = rest.find("bounded(") {
        let preceded = rest[..at].chars().last();
        rest = &rest[at + "bounded(".len()..];
        if preceded.is_some_and(|c| c.is_alphanumeric() || c == '_') || rest.starts_with(')') {
            continue;
        }
        // The arguments, up to the matching parenthesis, split at top-level commas.
        let (mut depth, mut args, mut current) = (0usize, Vec::new(), String::new());
        for c in rest.chars() {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' if depth == 0 => break,
                ')' | ']' => depth -= 1,
                ',' if depth == 0 => {
                    args.push(std::mem::take(&mut current));
                    continue;
                }
                _ => {}
            }
            current.push(c);
        }
        args.push(current);
        let args: Vec<&str> = args
            .iter()
            .map(|a| a.trim())
            .filter(|a| !a.is_empty())
            .collect();
        // `fn bounded<T>(what: &str, ...)` itself, or a call through a variable name.
        let Some(name) = args
            .first()
            .and_then(|a| a.strip_prefix('"'))
            .and_then(|a| a.strip_suffix('"'))
        else {
            continue;
        };
        assert_eq!(
            args.len(),
            5,
            "{connector}: `bounded({})` has five arguments",
            args.join(", ")
        );
        let figure = |expr: &str| {
            value(expr).unwrap_or_else(|| {
                panic!(
                    "{connector}: cannot read `{expr}` in `bounded({})` as a number or a const",
                    args.join(", ")
                )
            })
        };
        let no_default = args[2] == args[1].trim_start_matches("Some(").trim_end_matches(')');
        let default_varies =
            !no_default && args[2].chars().all(|c| c.is_ascii_lowercase() || c == '_');
        calls.push(BoundedCall {
            name: name.to_string(),
            min: figure(args[3]),
            max: figure(args[4]),
            default: (!no_default && !default_varies).then(|| figure(args[2])),
            default_varies,
        });
    }
    calls
}

macro_rules! replay_suite {
    ($($name:ident => $component:expr),* $(,)?) => {
        $(
            // A connector without its own module fails the build here.
            #[allow(unused_imports)]
            use self::$name as _;
        )*
        mod replay {
            $(
                mod $name {
                    #[test]
                    fn every_tool_passes_its_replay_cases() {
                        super::super::every_tool_passes_its_replay_cases(stringify!($name), $component);
                    }

                    #[test]
                    fn every_parameter_is_described() {
                        super::super::every_parameter_is_described(stringify!($name), $component);
                    }

                    #[test]
                    fn declared_ranges_are_the_ones_the_source_enforces() {
                        super::super::declared_ranges_are_the_ones_the_source_enforces(stringify!($name), $component);
                    }

                    #[test]
                    fn every_fixture_names_the_documentation_it_follows() {
                        super::super::every_fixture_names_the_documentation_it_follows(stringify!($name));
                    }
                }
            )*
        }
    };
}
scout_tests::foreach_connector!(replay_suite);
