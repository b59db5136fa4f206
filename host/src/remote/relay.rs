//! What an agent session's client hears about one of its own calls while
//! it runs: `notifications/progress` and `notifications/message`.
//!
//! A client asks to hear them: progress by sending a `progressToken` with
//! its call, log messages by `logging/setLevel` in its MCP session (or, at
//! protocol 2026-07-28, the call's own `_meta` `io.modelcontextprotocol/logLevel`).
//! A client that asked for neither hears nothing, and its call is answered
//! as before (one JSON message); before `logging/setLevel` no message is
//! sent, which is what 2026-07-28 makes the rule and what is safe for the
//! older versions (the spec leaves it to the server).
//!
//! What is told, and nothing else: the host's own words about the call (it
//! was refused and why, in the words the agent may know; it waits for a
//! person), and what the remote server behind the call sends while it runs
//! (its progress, rewritten to the client's token; its log messages,
//! marked as the server's, scrubbed of the session's secrets like its
//! results, cut to a few lines). A server cannot flood a client: each call
//! relays at most [`BURST`] notices at once and [`PER_SECOND`] a second
//! after that, and says how many it dropped. Nothing crosses sessions: a
//! [`CallRelay`] belongs to one call, and an upstream session serves one
//! agent session.
//!
//! The relay travels with the call as a task-local ([`relaying`]): the
//! boundary and the runtime between the session's handler and the
//! upstream session need not know of it.

// Logging is deprecated in MCP (SEP-2577), but clients still ask for it.
#![allow(deprecated)]

use rmcp::model::{
    LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam,
    ProgressNotification, ProgressNotificationParam, ProgressToken, ServerNotification,
};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

/// A log message's level (the name of rmcp's deprecated type: logging is
/// deprecated by SEP-2577, and still asked for).
pub type Level = LoggingLevel;

/// Notices relayed at once before the rate applies.
pub const BURST: u32 = 20;
/// Notices relayed a second, past the burst.
pub const PER_SECOND: u32 = 10;
/// Longest text of a relayed log message or progress message.
const MAX_TEXT: usize = 1024;
/// Longest logger name kept of a remote server's message.
const MAX_LOGGER: usize = 64;
/// Notices waiting to be sent to the client; past that they are dropped.
const QUEUED: usize = 32;

/// The level's rank: `debug` lowest, `emergency` highest.
pub fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// One call's channel to its client.
pub struct CallRelay {
    /// The connector, named as the source of a remote server's messages.
    connector: String,
    /// The client's progress token, where its call carried one.
    progress: Option<ProgressToken>,
    /// The lowest level of message the client wants; `None`: none.
    level: Option<LoggingLevel>,
    sink: tokio::sync::mpsc::Sender<ServerNotification>,
    budget: parking_lot::Mutex<Budget>,
}

/// The call's rate budget and what it has sent.
struct Budget {
    tokens: f64,
    refilled: Instant,
    dropped: u64,
    /// The last progress relayed (progress only ever increases).
    last_progress: Option<f64>,
}

impl CallRelay {
    /// The relay of a call of `connector` whose client sent `progress` and
    /// wants messages at `level` and above; `None` when it asked for
    /// neither. The receiver carries the notices to send.
    pub fn new(
        connector: &str,
        progress: Option<ProgressToken>,
        level: Option<LoggingLevel>,
    ) -> Option<(
        Arc<CallRelay>,
        tokio::sync::mpsc::Receiver<ServerNotification>,
    )> {
        if progress.is_none() && level.is_none() {
            return None;
        }
        let (sink, notices) = tokio::sync::mpsc::channel(QUEUED);
        let relay = CallRelay {
            connector: connector.to_string(),
            progress,
            level,
            sink,
            budget: parking_lot::Mutex::new(Budget {
                tokens: f64::from(BURST),
                refilled: Instant::now(),
                dropped: 0,
                last_progress: None,
            }),
        };
        Some((Arc::new(relay), notices))
    }

    /// Whether the client takes progress of this call.
    pub fn wants_progress(&self) -> bool {
        self.progress.is_some()
    }

    /// The lowest level of message the client takes, if it takes any.
    pub fn level(&self) -> Option<Level> {
        self.level
    }

    /// Whether the client takes messages at `level`.
    pub fn wants(&self, level: LoggingLevel) -> bool {
        self.level.is_some_and(|wanted| rank(level) >= rank(wanted))
    }

    /// The host's own message about the call (never rate-limited away:
    /// the host sends a few per call at most).
    pub fn host_says(&self, level: LoggingLevel, text: &str) {
        if !self.wants(level) {
            return;
        }
        let message = LoggingMessageNotificationParam::new(level, Value::String(text.into()))
            .with_logger("scout");
        let _ = self
            .sink
            .try_send(LoggingMessageNotification::new(message).into());
    }

    /// A progress notification of the remote server, `scrub` applied to
    /// its message, sent with the client's token: only while it increases.
    pub fn remote_progress(
        &self,
        progress: &ProgressNotificationParam,
        scrub: &dyn Fn(&str) -> String,
    ) {
        let Some(token) = self.progress.clone() else {
            return;
        };
        if !progress.progress.is_finite() {
            return;
        }
        {
            let mut budget = self.budget.lock();
            if budget
                .last_progress
                .is_some_and(|last| progress.progress <= last)
            {
                return;
            }
            if !budget.take() {
                return;
            }
            budget.last_progress = Some(progress.progress);
        }
        let mut told = ProgressNotificationParam::new(token, progress.progress);
        told.total = progress.total.filter(|t| t.is_finite());
        told.message = progress.message.as_deref().map(|m| bounded(&scrub(m)));
        self.send(ProgressNotification::new(told).into());
    }

    /// A log message of the remote server, where the client takes its
    /// level: marked as the server's (logger `remote/<connector>[/<its
    /// logger>]`), `scrub` applied, cut to [`MAX_TEXT`].
    pub fn remote_log(
        &self,
        message: &LoggingMessageNotificationParam,
        scrub: &dyn Fn(&str) -> String,
    ) {
        if !self.wants(message.level) || !self.budget.lock().take() {
            return;
        }
        let logger = match &message.logger {
            Some(theirs) => {
                let theirs = crate::shown::text(&scrub(theirs)).text;
                let (theirs, _) = crate::capabilities::scrub::cut_at(theirs, MAX_LOGGER);
                format!("remote/{}/{theirs}", self.connector)
            }
            None => format!("remote/{}", self.connector),
        };
        let data = match &message.data {
            Value::String(text) => Value::String(bounded(&scrub(text))),
            other => {
                let text = other.to_string();
                let scrubbed = scrub(&text);
                if scrubbed == text && text.len() <= MAX_TEXT {
                    other.clone()
                } else {
                    Value::String(bounded(&scrubbed))
                }
            }
        };
        let told = LoggingMessageNotificationParam::new(message.level, data).with_logger(logger);
        self.send(LoggingMessageNotification::new(told).into());
    }

    /// Notes progress `sent` to the client by the host itself (while the
    /// call waited for a person): relayed progress goes on above it.
    pub fn sent_progress(&self, sent: f64) {
        let mut budget = self.budget.lock();
        budget.last_progress = Some(budget.last_progress.map_or(sent, |last| last.max(sent)));
    }

    /// Says how many of the remote server's notices were dropped, if any
    /// were (once, when its call ends).
    pub fn tell_dropped(&self) {
        let dropped = std::mem::take(&mut self.budget.lock().dropped);
        if dropped > 0 {
            self.host_says(
                LoggingLevel::Warning,
                &format!(
                    "{dropped} notices of the remote server `{}` were not relayed (more than {PER_SECOND} a second)",
                    self.connector
                ),
            );
        }
    }

    fn send(&self, notice: ServerNotification) {
        if self.sink.try_send(notice).is_err() {
            self.budget.lock().dropped += 1;
        }
    }
}

impl Budget {
    /// Takes one notice's place, or counts it dropped.
    fn take(&mut self) -> bool {
        let now = Instant::now();
        let earned = now.duration_since(self.refilled).as_secs_f64() * f64::from(PER_SECOND);
        self.tokens = (self.tokens + earned).min(f64::from(BURST));
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
}

/// `text` shown safely (invisible and look-alike characters as markers)
/// and cut to [`MAX_TEXT`].
fn bounded(text: &str) -> String {
    let shown = crate::shown::text(text).text;
    let (mut cut, was_cut) = crate::capabilities::scrub::cut_at(shown, MAX_TEXT);
    if was_cut {
        cut.push('…');
    }
    cut
}

tokio::task_local! {
    static CURRENT: Arc<CallRelay>;
}

/// Runs `call` with `relay` as its relay, where there is one.
pub async fn relaying<F: Future>(relay: Option<Arc<CallRelay>>, call: F) -> F::Output {
    match relay {
        Some(relay) => CURRENT.scope(relay, call).await,
        None => call.await,
    }
}

/// The relay of the call running in this task, if its client asked for one.
pub fn current() -> Option<Arc<CallRelay>> {
    CURRENT.try_with(Arc::clone).ok()
}

/// The relay of the call running in this task, where its client asked for
/// one; `params` (its request to the remote server) then names the level
/// the client takes: a server of 2026-07-28 sends messages only to a
/// request that names one, an older one ignores the key.
pub fn for_request(params: &mut rmcp::model::CallToolRequestParams) -> Option<Arc<CallRelay>> {
    let relay = current()?;
    if let Some(level) = relay.level() {
        params
            .meta
            .get_or_insert_with(Default::default)
            .set_log_level(level);
    }
    Some(relay)
}

/// A notice as the JSON-RPC message sent on the call's event stream.
pub fn message(notice: ServerNotification) -> Option<String> {
    serde_json::to_string(&rmcp::model::ServerJsonRpcMessage::notification(notice)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    fn token() -> ProgressToken {
        ProgressToken(NumberOrString::String("theirs".into()))
    }

    fn same(text: &str) -> String {
        text.to_string()
    }

    #[test]
    fn a_call_whose_client_asked_for_nothing_has_no_relay() {
        assert!(CallRelay::new("everything", None, None).is_none());
    }

    #[test]
    fn messages_below_the_level_are_not_sent_and_the_servers_are_marked() {
        let (relay, mut notices) =
            CallRelay::new("everything", None, Some(LoggingLevel::Warning)).unwrap();
        relay.remote_log(
            &LoggingMessageNotificationParam::new(LoggingLevel::Info, "quiet".into()),
            &same,
        );
        relay.remote_log(
            &LoggingMessageNotificationParam::new(LoggingLevel::Error, "key sk-1 leaked".into())
                .with_logger("db"),
            &|t: &str| t.replace("sk-1", "[redacted]"),
        );
        let sent = serde_json::to_value(notices.try_recv().unwrap()).unwrap();
        assert_eq!(sent["params"]["level"], "error", "{sent}");
        assert_eq!(sent["params"]["logger"], "remote/everything/db", "{sent}");
        assert_eq!(sent["params"]["data"], "key [redacted] leaked", "{sent}");
        assert!(
            notices.try_recv().is_err(),
            "the info message is below the level"
        );
        // Progress was not asked for.
        relay.remote_progress(&ProgressNotificationParam::new(token(), 1.0), &same);
        assert!(notices.try_recv().is_err());
    }

    #[test]
    fn progress_is_sent_with_the_clients_token_only_while_it_increases() {
        let (relay, mut notices) = CallRelay::new("everything", Some(token()), None).unwrap();
        let upstream = ProgressToken(NumberOrString::String("scout-relay-1".into()));
        for p in [0.0, 50.0, 50.0, 10.0, 100.0] {
            relay.remote_progress(&ProgressNotificationParam::new(upstream.clone(), p), &same);
        }
        let mut sent = Vec::new();
        while let Ok(notice) = notices.try_recv() {
            let notice = serde_json::to_value(notice).unwrap();
            assert_eq!(notice["params"]["progressToken"], "theirs", "{notice}");
            sent.push(notice["params"]["progress"].as_f64().unwrap());
        }
        assert_eq!(sent, vec![0.0, 50.0, 100.0]);
        // No log level: the host says nothing either.
        relay.host_says(LoggingLevel::Emergency, "refused");
        assert!(notices.try_recv().is_err());
    }

    #[test]
    fn a_flood_is_cut_to_the_burst_and_the_drop_is_said() {
        let (relay, mut notices) =
            CallRelay::new("everything", None, Some(LoggingLevel::Debug)).unwrap();
        let long = "x".repeat(10 * MAX_TEXT);
        for _ in 0..1000 {
            relay.remote_log(
                &LoggingMessageNotificationParam::new(LoggingLevel::Info, long.clone().into()),
                &same,
            );
        }
        let mut sent = 0;
        while let Ok(notice) = notices.try_recv() {
            let notice = serde_json::to_value(notice).unwrap();
            assert!(notice["params"]["data"].as_str().unwrap().len() <= MAX_TEXT + 3);
            sent += 1;
        }
        assert!(sent <= BURST as usize + 1, "{sent} sent");
        relay.tell_dropped();
        let said = serde_json::to_value(notices.try_recv().unwrap()).unwrap();
        assert_eq!(said["params"]["logger"], "scout", "{said}");
        assert!(
            said["params"]["data"]
                .as_str()
                .unwrap()
                .contains("not relayed"),
            "{said}"
        );
    }

    #[tokio::test]
    async fn the_relay_travels_with_the_call() {
        assert!(current().is_none());
        let (relay, _notices) = CallRelay::new("c", Some(token()), None).unwrap();
        let seen = relaying(Some(relay), async { current().is_some() }).await;
        assert!(seen);
        assert!(relaying(None, async { current().is_none() }).await);
    }
}
