//! MCP over stdio, `tools/list` and `tools/call` answered without rmcp's
//! service loop.
//!
//! rmcp's stdio service reads each line into its message type (an untagged
//! enum: the whole message buffered and each shape tried in turn), spawns a
//! task for each request, hands the answer back to its loop over a channel
//! and spawns another task to write it. Here each line of the client is read
//! once. After the handshake, a `tools/list` or a `tools/call` is read as
//! [`super::stateless::request`] reads it and answered by the same handler
//! code (a list in this loop, a call in a task of its own), as one line.
//! A call that waits for a person, from a client that declared at
//! `initialize` that it takes form elicitation, asks through rmcp's peer of
//! the session (the question is rmcp's line, the client's answer goes to
//! rmcp like any response).
//!
//! rmcp stays the judge of everything else, which is passed to it unchanged:
//! the handshake, notifications, `ping`, answers to its own requests, a
//! request carrying a protocol version of its own, and anything malformed.
//! The exception: a 2026-07-28 `tools/call` from a client that takes form
//! elicitation is answered here, its person asked through an
//! `input_required` result ([`super::input_required`]).
//! rmcp's output and the answers written here share one writer, a whole
//! line at a time. A line longer than rmcp's limit is skipped, as rmcp
//! skips it.

use super::mcp::ConnectorServer;
use super::stateless::{
    PROGRESS_TOKEN, Request, call_message, list_message, request, trace_context, waiting_progress,
};
use crate::person::Asker;
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ClientRequest, RequestId};
use rmcp::{Peer, RoleServer};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

/// The longest line read, as rmcp's own stdio transport bounds it.
const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// Bytes buffered between this front and rmcp, each way.
const TO_RMCP: usize = 64 * 1024;

/// How long calls still running when the client closes its input may take
/// to answer before their waits are withdrawn (rmcp waits as long).
const DRAIN: Duration = Duration::from_secs(5);

/// Serves `server` to the client on `input` and `output` until the client
/// closes `input`; calls waiting for a person send progress every
/// `keep_alive` when their request carried a progress token.
pub(super) async fn serve<R, W>(
    server: ConnectorServer,
    input: R,
    output: W,
    keep_alive: Duration,
) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    use rmcp::ServiceExt;
    let out = Arc::new(Out(tokio::sync::Mutex::new(output)));
    // rmcp's end closes both ways once rmcp drops it; this end's writer
    // is shut down when the client closes its input.
    let (front_end, rmcp_end) = tokio::io::duplex(TO_RMCP);
    let (from_rmcp, to_rmcp) = tokio::io::split(front_end);
    let relay = tokio::spawn(relay(from_rmcp, out.clone()));
    // rmcp's peer of the client, once the handshake is done: how a call
    // asks the client's person.
    let (handshaken, peer) = tokio::sync::watch::channel(None);
    let front = Front {
        server: server.clone(),
        out,
        keep_alive,
        stage: Stage::Handshake { takes_form: None },
        running: Default::default(),
        peer,
        asker: None,
    };
    let front = tokio::spawn(front.run(input, to_rmcp));
    // rmcp reads the handshake the front passes it before this returns.
    let served = match server.serve(rmcp_end).await {
        Ok(running) => {
            let _ = handshaken.send(Some(running.peer().clone()));
            let _ = running.waiting().await;
            Ok(())
        }
        Err(e) => Err(anyhow::Error::new(e)),
    };
    // rmcp ends when the front closes its input, after the client closed
    // the front's; if rmcp ended first, nothing reads what the front passes.
    front.abort();
    let _ = front.await;
    let _ = relay.await;
    served
}

/// The client's output: rmcp's lines and the answers written here, each
/// written whole.
struct Out<W>(tokio::sync::Mutex<W>);

impl<W: AsyncWrite + Unpin> Out<W> {
    /// Writes `line`, which ends with its newline.
    async fn write(&self, line: &[u8]) -> std::io::Result<()> {
        let mut output = self.0.lock().await;
        output.write_all(line).await?;
        output.flush().await
    }

    /// Writes `message` and a newline.
    async fn message(&self, mut message: String) -> std::io::Result<()> {
        message.push('\n');
        self.write(message.as_bytes()).await
    }
}

/// Passes rmcp's lines to the client; once the client's output is gone,
/// keeps reading them so that rmcp never blocks on a full buffer.
async fn relay<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(from_rmcp: R, out: Arc<Out<W>>) {
    let mut lines = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    let mut open = true;
    loop {
        line.clear();
        match lines.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) if open => open = out.write(&line).await.is_ok(),
            Ok(_) => {}
        }
    }
}

/// Where the session is.
#[derive(Debug)]
enum Stage {
    /// Before the client's `notifications/initialized`: every line is
    /// rmcp's; whether the client's `initialize` declared that it takes
    /// form elicitation, once seen.
    Handshake { takes_form: Option<bool> },
    /// Lists and calls are answered here; a call waiting for a person asks
    /// the client's person when `asks`.
    Direct { asks: bool },
    /// A handshake this front could not follow: every line is rmcp's.
    Rmcp,
}

/// Reads the client's lines and answers or passes on each.
struct Front<W> {
    server: ConnectorServer,
    out: Arc<Out<W>>,
    keep_alive: Duration,
    stage: Stage,
    /// The calls answered here and still running, each withdrawn by its
    /// client's `notifications/cancelled`.
    running: Arc<parking_lot::Mutex<HashMap<RequestId, CancellationToken>>>,
    /// rmcp's peer of the client, once rmcp has done the handshake.
    peer: tokio::sync::watch::Receiver<Option<Peer<RoleServer>>>,
    /// The peer, as calls ask through it.
    asker: Option<Arc<dyn Asker>>,
}

impl<W: AsyncWrite + Unpin + Send + 'static> Front<W> {
    async fn run<R: AsyncRead + Unpin>(mut self, input: R, mut to_rmcp: impl AsyncWrite + Unpin) {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        // Each call answered here holds a sender; all are dropped once
        // every call has ended.
        let (alive, mut ended) = tokio::sync::mpsc::channel::<()>(1);
        while let Ok(true) = next_line(&mut input, &mut line).await {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if self.answered_here(&line, &alive).await {
                continue;
            }
            line.push(b'\n');
            if to_rmcp.write_all(&line).await.is_err() {
                break;
            }
        }
        // The client closed its input: the calls still running are given
        // rmcp's time to answer, then their waits are withdrawn.
        drop(alive);
        if tokio::time::timeout(DRAIN, ended.recv()).await.is_err() {
            self.running
                .lock()
                .values()
                .for_each(CancellationToken::cancel);
            ended.recv().await;
        }
        // rmcp sees the end of its input and ends.
        let _ = to_rmcp.shutdown().await;
    }

    /// Answers `line` here if it is a list or call this front answers;
    /// otherwise notes what the line tells of the session, and returns
    /// `false` to pass it to rmcp.
    async fn answered_here(&mut self, line: &[u8], alive: &tokio::sync::mpsc::Sender<()>) -> bool {
        // A 2026-07-28 call (no handshake) from a client that takes form
        // elicitation: a person is asked through an `input_required` result.
        if matches!(self.stage, Stage::Handshake { .. })
            && let Some((id, params, meta)) = super::input_required::asked_over_stdio(line)
        {
            let (server, out, alive) = (self.server.clone(), self.out.clone(), alive.clone());
            tokio::spawn(async move {
                let _alive = alive;
                let gone = CancellationToken::new();
                let message =
                    super::input_required::answer_over(&server, id, *params, &meta, gone, None)
                        .await;
                Front::answer_to(&out, message).await;
            });
            return true;
        }
        let asks = match &mut self.stage {
            Stage::Rmcp => return false,
            Stage::Handshake { takes_form } => {
                if let Some(next) = handshake(line, takes_form) {
                    self.stage = next;
                }
                return false;
            }
            Stage::Direct { asks } => *asks,
        };
        match request(line) {
            // A request with a protocol version of its own is rmcp's to check.
            Some((id, request, meta)) if meta.protocol_version().is_none() => {
                let meta = trace_context(&meta);
                match request {
                    Request::List => self.list(id, &meta).await,
                    Request::Call(params) => {
                        let asker = if asks {
                            match self.asker().await {
                                Some(asker) => Some(asker),
                                // rmcp ended at the handshake: the line is its to judge.
                                None => return false,
                            }
                        } else {
                            None
                        };
                        self.call(id, *params, &meta, alive.clone(), asker);
                    }
                }
                true
            }
            _ => {
                if let Some(id) = super::in_session::cancelled_call(line)
                    && let Some(gone) = self.running.lock().get(&id)
                {
                    gone.cancel();
                }
                false
            }
        }
    }

    /// rmcp's peer of the client, waited for until rmcp has read the
    /// handshake this front passed it; `None` if rmcp ended first.
    async fn asker(&mut self) -> Option<Arc<dyn Asker>> {
        if self.asker.is_none() {
            let peer = self.peer.wait_for(Option::is_some).await.ok()?.clone()?;
            self.asker = Some(Arc::new(peer));
        }
        self.asker.clone()
    }

    /// Answers a `tools/list` with the list serialised for this revision.
    async fn list(&self, id: RequestId, meta: &rmcp::model::MetaObject) {
        self.answer(list_message(&self.server, id, meta, None, true))
            .await;
    }

    /// Runs a call in a task of its own. Once allowed, it runs to its end;
    /// its client's cancellation withdraws it while it waits for a person,
    /// and a cancelled call is not answered (as the protocol asks). While
    /// it waits, `asker` puts the question to the client's person; a client
    /// that cannot be asked hears progress if it sent a progress token.
    fn call(
        &self,
        id: RequestId,
        params: rmcp::model::CallToolRequestParams,
        meta: &rmcp::model::MetaObject,
        alive: tokio::sync::mpsc::Sender<()>,
        asker: Option<Arc<dyn Asker>>,
    ) {
        let gone = CancellationToken::new();
        self.running.lock().insert(id.clone(), gone.clone());
        let traced = super::mcp::trace_parent(meta, None, &id);
        let progress = meta
            .0
            .get(PROGRESS_TOKEN)
            .filter(|_| asker.is_none())
            .cloned();
        // What the client hears of its call while it runs, where it asked
        // (`logging/setLevel` over stdio is the process's, [`super::logging`]).
        let level = self.server.levels().of("");
        let (relay, notices) = self
            .server
            .relay(super::logging::progress_in(meta), level)
            .unzip();
        let (server, out, running) = (self.server.clone(), self.out.clone(), self.running.clone());
        let keep_alive = self.keep_alive;
        tokio::spawn(async move {
            let _alive = alive;
            let telling = notices.map(|notices| tokio::spawn(tell(out.clone(), notices)));
            let (asked, approval) = tokio::sync::oneshot::channel();
            let call = server.call_directly(params, gone.clone(), traced, Some(asked), asker);
            let call = crate::remote::relay::relaying(relay, call);
            // The call (and its relay) is dropped at the end of this block.
            let finished = {
                tokio::pin!(call);
                tokio::select! {
                    finished = &mut call => finished,
                    Ok(_) = approval => match progress {
                        Some(token) => tokio::select! {
                            finished = &mut call => finished,
                            () = tell_progress(&out, token, keep_alive) => call.await,
                        },
                        None => call.await,
                    },
                }
            };
            // Its notices before its answer.
            if let Some(telling) = telling {
                let _ = telling.await;
            }
            running.lock().remove(&id);
            if gone.is_cancelled() {
                return;
            }
            Front::answer_to(&out, call_message(Ok(finished), id, true)).await;
        });
    }

    async fn answer(&self, message: Result<String, serde_json::Error>) {
        Front::answer_to(&self.out, message).await;
    }

    async fn answer_to(out: &Out<W>, message: Result<String, serde_json::Error>) {
        match message {
            // A client whose output is gone hears nothing more.
            Ok(message) => drop(out.message(message).await),
            Err(e) => tracing::error!(error = %e, "cannot serialise an MCP answer"),
        }
    }
}

/// Writes a call's notices, each a line, until the call ends.
async fn tell<W: AsyncWrite + Unpin>(
    out: Arc<Out<W>>,
    mut notices: tokio::sync::mpsc::Receiver<rmcp::model::ServerNotification>,
) {
    while let Some(notice) = notices.recv().await {
        if let Some(message) = crate::remote::relay::message(notice)
            && out.message(message).await.is_err()
        {
            return;
        }
    }
}

/// What `line` tells of the handshake: the client's `initialize` says
/// whether it takes form elicitation; its `notifications/initialized` ends
/// the handshake. Only lines naming `initialize` are read.
fn handshake(line: &[u8], takes_form: &mut Option<bool>) -> Option<Stage> {
    memchr::memmem::find(line, b"initialize")?;
    match serde_json::from_slice(line).ok()? {
        ClientJsonRpcMessage::Request(message) => {
            if let ClientRequest::InitializeRequest(initialize) = message.request {
                *takes_form = Some(super::in_session::takes_form(
                    &initialize.params.capabilities,
                ));
            }
            None
        }
        ClientJsonRpcMessage::Notification(message) => match message.notification {
            ClientNotification::InitializedNotification(_) => Some(match takes_form {
                Some(asks) => Stage::Direct { asks: *asks },
                None => Stage::Rmcp,
            }),
            _ => None,
        },
        _ => None,
    }
}

/// Progress every `every` until dropped, for a call waiting for a person
/// (never returns).
async fn tell_progress<W: AsyncWrite + Unpin>(
    out: &Out<W>,
    token: serde_json::Value,
    every: Duration,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut sent = 0u64;
    loop {
        tick.tick().await;
        sent += 1;
        if out.message(waiting_progress(&token, sent)).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Reads the next line into `line`, without its newline; `Ok(false)` at
/// the end of the input (a last line without a newline is dropped, as rmcp
/// drops it). A line longer than [`MAX_LINE`] is skipped whole.
async fn next_line<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<bool> {
    line.clear();
    let mut skipping = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(false);
        }
        let newline = memchr::memchr(b'\n', available);
        let take = newline.map_or(available.len(), |at| at + 1);
        if !skipping && line.len() + take > MAX_LINE {
            tracing::error!(
                max_line_length = MAX_LINE,
                "Incoming message exceeded the maximum line length, discarding it"
            );
            line.clear();
            skipping = true;
        }
        if !skipping {
            line.extend_from_slice(&available[..newline.unwrap_or(available.len())]);
        }
        input.consume(take);
        if newline.is_some() {
            if skipping {
                skipping = false;
                continue;
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(message: serde_json::Value) -> Vec<u8> {
        message.to_string().into_bytes()
    }

    fn initialize(capabilities: serde_json::Value) -> Vec<u8> {
        line(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "t", "version": "0"}}}),
        )
    }

    fn initialized() -> Vec<u8> {
        line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    }

    #[test]
    fn lists_and_calls_are_answered_here_after_the_handshake() {
        let mut takes_form = None;
        assert!(handshake(&initialize(json!({})), &mut takes_form).is_none());
        assert_eq!(takes_form, Some(false));
        let ping = line(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        assert!(handshake(&ping, &mut takes_form).is_none());
        assert!(matches!(
            handshake(&initialized(), &mut takes_form),
            Some(Stage::Direct { asks: false })
        ));
    }

    #[test]
    fn a_client_that_takes_form_elicitation_is_asked() {
        for (capabilities, asks) in [
            (json!({"elicitation": {}}), true),
            (json!({"elicitation": {"form": {}}}), true),
            (json!({"elicitation": {"form": {}, "url": {}}}), true),
            // A client that only opens pages is not asked a form.
            (json!({"elicitation": {"url": {}}}), false),
        ] {
            let mut takes_form = None;
            assert!(handshake(&initialize(capabilities.clone()), &mut takes_form).is_none());
            let stage = handshake(&initialized(), &mut takes_form);
            assert!(
                matches!(stage, Some(Stage::Direct { asks: a }) if a == asks),
                "{capabilities}: {stage:?}"
            );
        }
        // An `initialized` before any `initialize`: rmcp judges the rest.
        let mut unseen = None;
        assert!(matches!(
            handshake(&initialized(), &mut unseen),
            Some(Stage::Rmcp)
        ));
    }

    #[tokio::test]
    async fn lines_are_read_whole_and_an_oversized_one_is_skipped() {
        let mut text = b"{\"a\":1}\r\n\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        text.extend_from_slice(b"\n{\"b\":2}\n{\"c\":3}");
        let mut input = BufReader::with_capacity(4096, &text[..]);
        let mut read = Vec::new();
        let mut got = Vec::new();
        while next_line(&mut input, &mut read).await.unwrap() {
            got.push(String::from_utf8(read.clone()).unwrap());
        }
        // The last line has no newline: the client closed mid-message.
        assert_eq!(got, ["{\"a\":1}", "", "{\"b\":2}"]);
    }
}
