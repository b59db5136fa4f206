//! `scout-host test COMPONENT --fixtures DIR`: a connector's tests, run
//! against fixtures only (DESIGN D9). Every case gets a fresh store and a
//! replaying `http` handle that holds no network client, so a run is fast,
//! deterministic and opens no socket.
//!
//! `DIR/cases.json` is a JSON array of cases:
//!
//! ```json
//! [{"name": "reads the README",
//!   "tool": "github_read_file",
//!   "arguments": {"owner": "octo", "repo": "hello", "path": "README.md"},
//!   "fixtures": ["readme.json"],
//!   "expect": {"ok": {"path": "README.md", "text": "# Hello\n"}}}]
//! ```
//!
//! - `name` (unique) and `tool` (wire name, or WIT function name) are required;
//!   `arguments` defaults to `{}`.
//! - `fixtures`: file names in DIR, replayed in that order; default every
//!   `*.json` in DIR but `cases.json`, by name. Every fixture file in DIR is
//!   checked before any case runs: one that does not load stops the run.
//! - `expect`: exactly one of `{"ok": V}` (the tool succeeds with exactly V),
//!   `{"err": V}` (the tool returns exactly the `tool-error` V) or
//!   `{"host_error": "text"}` (the host refuses or stops the call, e.g. invalid
//!   arguments or a trap, with a message containing the text).
//!
//! A case fails when its outcome differs from `expect` (the first differing
//! JSON path is shown) or when any request it made matched no fixture, even if
//! the tool coped with the refusal. Exit status: 0 all passed, 1 any failed,
//! 2 bad usage or a cases/fixture file or component that does not load.

use super::call::REPLAY_ORIGIN;
use super::{EXIT_FAILED, EXIT_OK};
use anyhow::{Context, Result};
use scout_host::capabilities::http::HttpMode;
use scout_host::capabilities::replay::{FixtureFile, Replay, fixture_paths};
use scout_host::{Capabilities, HttpCapability, HttpConfig, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The cases file inside the fixtures directory.
pub const CASES_FILE: &str = "cases.json";

/// `scout-host test COMPONENT --fixtures DIR`
#[derive(clap::Args)]
pub struct TestArgs {
    /// The component (`.wasm`).
    pub component: PathBuf,
    /// The directory holding `cases.json` and the fixture files.
    #[arg(long, value_name = "DIR")]
    pub fixtures: PathBuf,
}

/// One case of `cases.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    pub tool: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
    #[serde(default)]
    pub fixtures: Option<Vec<String>>,
    pub expect: Expect,
}

fn empty_object() -> Value {
    json!({})
}

/// What a case expects.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Expect {
    /// The tool's success value, exactly.
    #[serde(rename = "ok")]
    Ok(Value),
    /// The tool's error, exactly.
    #[serde(rename = "err")]
    Err(Value),
    /// A host refusal whose message contains this text.
    #[serde(rename = "host_error")]
    HostError(String),
}

/// Reads `DIR/cases.json` and every fixture file in DIR, and checks that
/// each case's fixtures exist.
pub fn load_cases(dir: &Path) -> Result<(Vec<Case>, BTreeMap<String, FixtureFile>)> {
    let path = dir.join(CASES_FILE);
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let cases: Vec<Case> =
        serde_json::from_str(&text).with_context(|| format!("{} is not a list of cases", path.display()))?;
    let mut fixtures = BTreeMap::new();
    for file in fixture_paths(dir, &[CASES_FILE])? {
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        fixtures.insert(name, FixtureFile::load(&file)?);
    }
    let mut seen = std::collections::BTreeSet::new();
    for case in &cases {
        if !seen.insert(case.name.as_str()) {
            anyhow::bail!("{}: two cases are named `{}`", path.display(), case.name);
        }
        for name in case.fixtures.iter().flatten() {
            if !fixtures.contains_key(name) {
                anyhow::bail!("{}: case `{}` names fixture `{name}`, which is not a fixture file in {}", path.display(), case.name, dir.display());
            }
        }
    }
    Ok((cases, fixtures))
}

/// Runs the command; the exit status on success.
pub fn run(args: TestArgs) -> Result<i32> {
    let started = Instant::now();
    let (cases, fixtures) = load_cases(&args.fixtures)?;
    let component = super::load(&args.component)?;
    let rt = super::tokio()?;
    let (mut passed, mut failed) = (0, Vec::new());
    for case in &cases {
        let case_started = Instant::now();
        let files: Vec<&FixtureFile> = match &case.fixtures {
            Some(names) => names.iter().filter_map(|n| fixtures.get(n)).collect(),
            None => fixtures.values().collect(),
        };
        let replay = Arc::new(Replay::from_files(files));
        let http = HttpCapability::new(HttpConfig::new(REPLAY_ORIGIN).mode(HttpMode::Replay(replay.clone())))
            .context("configuring the replaying http handle")?;
        let caps = Capabilities::with_http(http);
        let tool = super::tool_name(&component, &case.tool).unwrap_or_else(|_| case.tool.clone());
        let outcome = rt.block_on(component.call(&tool, &case.arguments, &caps));
        // Unmatched requests first: they are usually why the output differs.
        let mut problems: Vec<String> = replay.misses().into_iter().map(|m| format!("unmatched request: {m}")).collect();
        let mut details = Vec::new();
        match (&case.expect, outcome) {
            (Expect::HostError(want), Err(e)) => {
                if !e.to_string().contains(want.as_str()) {
                    problems.push(format!("expected a host error containing {want:?}, got host error: {e}"));
                }
            }
            (Expect::HostError(want), Ok(outcome)) => {
                problems.push(format!("expected a host error containing {want:?}, got {}", short(&output_json(&outcome.output))));
            }
            (_, Err(e)) => problems.push(format!("expected {}, got host error: {e}", short(&expected_json(&case.expect)))),
            (expect, Ok(outcome)) => {
                let (want, got) = (expected_json(expect), output_json(&outcome.output));
                if want != got {
                    let at = first_difference("$", &want, &got).unwrap_or_default();
                    problems.push(format!("output differs {at}"));
                    details.push(format!("expected {}", short(&want)));
                    details.push(format!("got      {}", short(&got)));
                }
            }
        }
        let ms = case_started.elapsed().as_secs_f64() * 1000.0;
        if problems.is_empty() {
            passed += 1;
            println!("ok      {} ({ms:.1} ms)", case.name);
        } else {
            println!("FAILED  {}: {}", case.name, problems.join("; "));
            for line in details {
                println!("        {line}");
            }
            failed.push(case.name.clone());
        }
    }
    let secs = started.elapsed().as_secs_f64();
    if failed.is_empty() {
        println!("test result: ok. {passed} passed; 0 failed ({secs:.2} s, replayed, nothing sent)");
        Ok(EXIT_OK)
    } else {
        println!("test result: FAILED. {passed} passed; {} failed: {} ({secs:.2} s)", failed.len(), failed.join(", "));
        Ok(EXIT_FAILED)
    }
}

fn output_json(output: &ToolOutput) -> Value {
    serde_json::to_value(output).unwrap_or(Value::Null)
}

fn expected_json(expect: &Expect) -> Value {
    match expect {
        Expect::Ok(v) => json!({ "ok": v }),
        Expect::Err(v) => json!({ "err": v }),
        Expect::HostError(s) => json!({ "host_error": s }),
    }
}

/// A value's compact JSON, cut to a readable length.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 300 {
        return text;
    }
    let mut end = 300;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The first JSON path at which `got` differs from `want`, and how.
fn first_difference(path: &str, want: &Value, got: &Value) -> Option<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (key, wv) in w {
                let sub = format!("{path}.{key}");
                match g.get(key) {
                    None => return Some(format!("at {sub}: missing (expected {})", short(wv))),
                    Some(gv) => {
                        if let Some(d) = first_difference(&sub, wv, gv) {
                            return Some(d);
                        }
                    }
                }
            }
            g.iter().find(|(k, _)| !w.contains_key(*k)).map(|(k, v)| format!("at {path}.{k}: not expected (got {})", short(v)))
        }
        (Value::Array(w), Value::Array(g)) => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                if let Some(d) = first_difference(&format!("{path}[{i}]"), wv, gv) {
                    return Some(d);
                }
            }
            (w.len() != g.len()).then(|| format!("at {path}: expected {} items, got {}", w.len(), g.len()))
        }
        _ if want == got => None,
        _ => Some(format!("at {path}: expected {}, got {}", short(want), short(got))),
    }
}
