//! The process's log, on stderr: `tracing` events as text (no colour codes
//! unless stderr is a terminal) or, with `log_format = "json"` in `serve`'s
//! configuration, one JSON object a line, the start banner included, so a
//! log collector reads every line alike. stdout stays the one line with
//! `serve`'s address (or the MCP protocol over stdio).
//!
//! `SCOUT_LOG` takes `tracing` filter directives; without it, warnings and
//! errors, the start banner and the access log (one line per admin API and
//! MCP request, [`ACCESS`]) are shown.

use std::io::IsTerminal;
use std::sync::OnceLock;

/// The target of the access log's lines.
pub const ACCESS: &str = "scout_host::access";
/// The target of the start banner's lines in JSON.
pub const START: &str = "scout_host::start";

/// How log lines are written.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Deserialize,
    serde::Serialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Sets up the process's log once, in `format`.
pub fn init(format: LogFormat) {
    let _ = FORMAT.set(format);
    let filter = tracing_subscriber::EnvFilter::try_from_env("SCOUT_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("warn,{ACCESS}=info,{START}=info"))
    });
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().with_current_span(false).init(),
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}

/// One line of what `serve` says as it starts and stops: `scout-host:
/// LINE` in text, an event of [`START`] in JSON.
pub fn say(line: impl std::fmt::Display) {
    if FORMAT.get() == Some(&LogFormat::Json) {
        tracing::info!(target: START, "{line}");
    } else {
        eprintln!("scout-host: {line}");
    }
}

/// A banner of its own lines (the switches): as it is in text, a line per
/// event in JSON.
pub fn banner(text: &str) {
    if FORMAT.get() == Some(&LogFormat::Json) {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            tracing::info!(target: START, "{}", line.trim_end());
        }
    } else {
        eprint!("{text}");
    }
}
