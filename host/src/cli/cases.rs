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
//! - `meter`: `{"unit": "micro-usd" | "credits", "per_run": N, "per_day": M}`
//!   (`per_day` defaults to `per_run`): the call holds a fresh run meter with
//!   this allowance; without it, it holds none. `expect_spent`: what the
//!   meter charged by the end of the call (checked when given).
//! - `folders`: `{"NAME": {"writable": true, "files": {"a/b.md": "text"}}}`: a
//!   fresh directory per case, seeded with these files, opened by the guest
//!   as `NAME`. `expect_files`: `{"NAME": {"a/b.md": "text" | null}}`: after the
//!   call each listed file holds exactly that text, or (null) does not exist.
//! - A fixture exchange whose request names a `destination` answers the
//!   guest's client for that destination (`Http::connect_to`); every
//!   destination a fixture of the case names is offered.
//! - `expect`: exactly one of `{"ok": V}` (the tool succeeds with exactly V),
//!   `{"err": V}` (the tool returns exactly the `tool-error` V) or
//!   `{"host_error": "text"}` (the host refuses or stops the call, e.g. invalid
//!   arguments or a trap, with a message containing the text). A new case
//!   may leave it out: it fails until `--bless` writes what the tool
//!   returns now into `cases.json` (only when every request it made matched
//!   a fixture; a case with an `expect` is never rewritten).
//!
//! A case fails when its outcome differs from `expect` (the first differing
//! JSON path is shown) or when any request it made matched no fixture, even if
//! the tool coped with the refusal. Exit status: 0 all passed, 1 any failed,
//! 2 bad usage or a cases/fixture file or component that does not load.

use super::call::REPLAY_ORIGIN;
use super::{EXIT_FAILED, EXIT_OK};
use anyhow::{Context, Result};
use scout_host::capabilities::folder::FolderCapability;
use scout_host::capabilities::http::HttpMode;
use scout_host::capabilities::meter::{Allowance, DayLedger};
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
    /// Writes into `cases.json` the outcome of each case that has no
    /// `expect` yet (a new case), once it ran with every request matched;
    /// cases that have one are checked as always, never rewritten.
    #[arg(long)]
    pub bless: bool,
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
    #[serde(default)]
    pub meter: Option<CaseMeter>,
    #[serde(default)]
    pub expect_spent: Option<u64>,
    #[serde(default)]
    pub folders: BTreeMap<String, CaseFolder>,
    #[serde(default)]
    pub expect_files: BTreeMap<String, BTreeMap<String, Option<String>>>,
    /// `None` for a new case: `--bless` records its outcome.
    #[serde(default)]
    pub expect: Option<Expect>,
}

/// A case's meter: the allowance of a fresh run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseMeter {
    pub unit: String,
    pub per_run: u64,
    #[serde(default)]
    pub per_day: Option<u64>,
}

/// A case's folder: seeded afresh for the case.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFolder {
    #[serde(default)]
    pub writable: bool,
    #[serde(default)]
    pub files: BTreeMap<String, String>,
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
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let cases: Vec<Case> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a list of cases", path.display()))?;
    let mut fixtures = BTreeMap::new();
    for file in fixture_paths(dir, &[CASES_FILE])? {
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        fixtures.insert(name, FixtureFile::load(&file)?);
    }
    let mut seen = std::collections::BTreeSet::new();
    for case in &cases {
        if !seen.insert(case.name.as_str()) {
            anyhow::bail!("{}: two cases are named `{}`", path.display(), case.name);
        }
        for name in case.fixtures.iter().flatten() {
            if !fixtures.contains_key(name) {
                anyhow::bail!(
                    "{}: case `{}` names fixture `{name}`, which is not a fixture file in {}",
                    path.display(),
                    case.name,
                    dir.display()
                );
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
    // New cases' outcomes, by name, to write into cases.json.
    let mut blessed: BTreeMap<String, Value> = BTreeMap::new();
    for case in &cases {
        let case_started = Instant::now();
        let files: Vec<&FixtureFile> = match &case.fixtures {
            Some(names) => names.iter().filter_map(|n| fixtures.get(n)).collect(),
            None => fixtures.values().collect(),
        };
        let destinations: std::collections::BTreeSet<String> = files
            .iter()
            .flat_map(|f| f.exchanges.iter().filter_map(|e| e.destination.clone()))
            .collect();
        let replay = Arc::new(Replay::from_files(files));
        let http = HttpCapability::new(
            HttpConfig::new(REPLAY_ORIGIN).mode(HttpMode::Replay(replay.clone())),
        )
        .context("configuring the replaying http handle")?;
        let mut caps = Capabilities::with_http(http);
        for name in destinations {
            let config = HttpConfig::new(REPLAY_ORIGIN)
                .mode(HttpMode::Replay(replay.clone()))
                .destination(name.clone());
            caps.destinations.insert(
                name,
                HttpCapability::new(config).context("configuring a replaying destination")?,
            );
        }
        let mut problems = Vec::new();
        let _dirs = match case_capabilities(case, &mut caps) {
            Ok(dirs) => dirs,
            Err(e) => {
                println!("FAILED  {}: {e:#}", case.name);
                failed.push(case.name.clone());
                continue;
            }
        };
        let tool = super::tool_name(&component, &case.tool).unwrap_or_else(|_| case.tool.clone());
        caps.graphql_mutations = super::graphql_mutations_for(&component, &tool, &case.arguments);
        let outcome = rt.block_on(component.call(&tool, &case.arguments, &caps));
        // Still dropped, never a failure: the author learns the header is
        // not theirs to set.
        for name in caps
            .http
            .iter()
            .chain(caps.destinations.values())
            .flat_map(|http| http.dropped_headers())
        {
            println!(
                "note    {}: the guest set header `{name}`, which the host owns: dropped, not sent",
                case.name
            );
        }
        // Unmatched requests first: they are usually why the output differs.
        problems.extend(
            replay
                .misses()
                .into_iter()
                .map(|m| format!("unmatched request: {m}")),
        );
        if let (Some(want), Some(meter)) = (case.expect_spent, &caps.meter)
            && meter.spent() != want
        {
            problems.push(format!(
                "expected the meter to have charged {want} {}, it charged {}",
                meter.unit(),
                meter.spent()
            ));
        }
        for (folder, files) in &case.expect_files {
            let Some(dir) = _dirs
                .iter()
                .find(|(n, _)| n == folder)
                .map(|(_, d)| d.path())
            else {
                problems.push(format!(
                    "expect_files names folder `{folder}`, which the case does not give"
                ));
                continue;
            };
            for (rel, want) in files {
                let got = std::fs::read_to_string(dir.join(rel)).ok();
                if &got != want {
                    problems.push(format!(
                        "{folder}/{rel}: expected {}, found {}",
                        shown(want),
                        shown(&got)
                    ));
                }
            }
        }
        let mut details = Vec::new();
        let Some(expect) = &case.expect else {
            let ms = case_started.elapsed().as_secs_f64() * 1000.0;
            match (&outcome, args.bless, problems.is_empty()) {
                (Ok(ran), true, true) => {
                    let recorded = output_json(&ran.output);
                    println!(
                        "blessed {} ({ms:.1} ms): expect {}",
                        case.name,
                        short(&recorded)
                    );
                    blessed.insert(case.name.clone(), recorded);
                    passed += 1;
                }
                (Err(e), true, true) => {
                    println!(
                        "FAILED  {}: the host refused the call ({e}); write its `expect` (`host_error`) by hand",
                        case.name
                    );
                    failed.push(case.name.clone());
                }
                (_, true, false) => {
                    println!(
                        "FAILED  {}: not blessed: {}",
                        case.name,
                        problems.join("; ")
                    );
                    failed.push(case.name.clone());
                }
                (_, false, _) => {
                    println!(
                        "FAILED  {}: no `expect`: run with --bless to record what it does now",
                        case.name
                    );
                    failed.push(case.name.clone());
                }
            }
            continue;
        };
        match (expect, outcome) {
            (Expect::HostError(want), Err(e)) => {
                if !e.to_string().contains(want.as_str()) {
                    problems.push(format!(
                        "expected a host error containing {want:?}, got host error: {e}"
                    ));
                }
            }
            (Expect::HostError(want), Ok(outcome)) => {
                problems.push(format!(
                    "expected a host error containing {want:?}, got {}",
                    short(&output_json(&outcome.output))
                ));
            }
            (_, Err(e)) => problems.push(format!(
                "expected {}, got host error: {e}",
                short(&expected_json(expect))
            )),
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
    if !blessed.is_empty() {
        bless(&args.fixtures, &blessed)?;
        println!(
            "wrote the expected outcome of {} new case(s) into {}",
            blessed.len(),
            args.fixtures.join(CASES_FILE).display()
        );
    }
    let secs = started.elapsed().as_secs_f64();
    if failed.is_empty() {
        println!(
            "test result: ok. {passed} passed; 0 failed ({secs:.2} s, replayed, nothing sent)"
        );
        Ok(EXIT_OK)
    } else {
        println!(
            "test result: FAILED. {passed} passed; {} failed: {} ({secs:.2} s)",
            failed.len(),
            failed.join(", ")
        );
        Ok(EXIT_FAILED)
    }
}

/// Writes each of `outcomes` (by case name) as that case's `expect` in
/// `DIR/cases.json`, leaving every other case and field as it was.
fn bless(dir: &Path, outcomes: &BTreeMap<String, Value>) -> Result<()> {
    let path = dir.join(CASES_FILE);
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut cases: Vec<serde_json::Map<String, Value>> = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a list of cases", path.display()))?;
    for case in &mut cases {
        if let Some(outcome) = case
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| outcomes.get(name))
            && !case.contains_key("expect")
        {
            case.insert("expect".to_string(), outcome.clone());
        }
    }
    let mut written = serde_json::to_string_pretty(&cases)?;
    written.push('\n');
    std::fs::write(&path, written).with_context(|| format!("writing {}", path.display()))
}

/// Adds the case's meter and folders to `caps`; the folders' directories
/// live as long as the returned guards.
fn case_capabilities(
    case: &Case,
    caps: &mut Capabilities,
) -> Result<Vec<(String, tempfile::TempDir)>> {
    if let Some(m) = &case.meter {
        let allowance = Allowance {
            per_run: m.per_run,
            per_day: m.per_day.unwrap_or(m.per_run),
        };
        let meter = DayLedger::new(m.unit.clone())
            .start_run(allowance)
            .context("the case's meter allowance")?;
        caps.meter = Some(meter);
    } else if case.expect_spent.is_some() {
        anyhow::bail!("`expect_spent` needs a `meter`");
    }
    let mut dirs = Vec::new();
    for (name, folder) in &case.folders {
        let dir = tempfile::tempdir().context("creating the case's folder")?;
        for (rel, text) in &folder.files {
            let path = dir.path().join(rel);
            if rel
                .split('/')
                .any(|p| p.is_empty() || p == "." || p == "..")
            {
                anyhow::bail!("folder `{name}`: seed file `{rel}` is not a plain relative path");
            }
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&path, text)?;
        }
        caps.folders.push(
            FolderCapability::open(name.clone(), dir.path(), folder.writable)
                .context("opening the case's folder")?,
        );
        dirs.push((name.clone(), dir));
    }
    Ok(dirs)
}

fn shown(text: &Option<String>) -> String {
    match text {
        Some(t) => short(&Value::String(t.clone())),
        None => "no file".to_string(),
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
            g.iter()
                .find(|(k, _)| !w.contains_key(*k))
                .map(|(k, v)| format!("at {path}.{k}: not expected (got {})", short(v)))
        }
        (Value::Array(w), Value::Array(g)) => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                if let Some(d) = first_difference(&format!("{path}[{i}]"), wv, gv) {
                    return Some(d);
                }
            }
            (w.len() != g.len())
                .then(|| format!("at {path}: expected {} items, got {}", w.len(), g.len()))
        }
        _ if want == got => None,
        _ => Some(format!(
            "at {path}: expected {}, got {}",
            short(want),
            short(got)
        )),
    }
}
