//! The `log` capability: structured lines from the guest into the trace,
//! bounded in count and size so a guest cannot flood the host.

use super::bindings::log::{Host, Level};
use super::view::View;
use serde::Serialize;

/// Most log lines kept per call; later lines are counted, not kept.
pub(crate) const MAX_LINES: usize = 256;
/// Longest line kept; longer lines are cut.
pub(crate) const MAX_LINE_BYTES: usize = 4096;

/// One line logged by a guest.
#[derive(Debug, Clone, Serialize)]
pub struct GuestLog {
    /// `trace`, `debug`, `info`, `warn` or `error`.
    pub level: &'static str,
    /// The line, cut to [`MAX_LINE_BYTES`] and scrubbed of the secret.
    pub message: String,
}

impl Host for View<'_, LogCtx> {
    fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        if self.ctx.lines.len() >= MAX_LINES {
            self.ctx.dropped += 1;
            return Ok(());
        }
        // Scrubbed before it is cut, so no part of a secret survives the cut.
        let (message, _) = self
            .ctx
            .scrub
            .scrub_and_cut(&message, MAX_LINE_BYTES, false);
        let level = match level {
            Level::Trace => "trace",
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        };
        tracing::debug!(target: "scout_host::guest", level, %message);
        self.ctx.lines.push(GuestLog { level, message });
        Ok(())
    }
}

/// What the `log` interface of one call holds: the lines kept, how many
/// were dropped, and the handles whose secrets are scrubbed from them.
pub(crate) struct LogCtx {
    pub(crate) lines: Vec<GuestLog>,
    pub(crate) dropped: u64,
    pub(crate) scrub: super::Capabilities,
}
