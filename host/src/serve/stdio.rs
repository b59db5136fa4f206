//! MCP over stdio, `tools/list` and `tools/call` answered without rmcp's
//! service loop.
//!
//! rmcp's stdio service reads each line into its message type (an untagged
//! enum: the whole message buffered and each shape tried in turn), spawns a
//! task for each request, hands the answer back to its loop over a channel
//! and spawns another task to write it. Here each line of the client is read
//! once. After the handshake, a `tools/list`, or a `tools/call` of a client
//! that declared at `initialize` that it cannot be asked anything, is read as
//! [`super::stateless::request`] reads it and answered by the same handler
//! code (a list in this loop, a call in a task of its own), as one line.
//!
//! rmcp stays the judge of everything else, which is passed to it unchanged:
//! the handshake, notifications, `ping`, answers to its own requests, a
//! request carrying a protocol version of its own, anything malformed, and
//! every line of a client that can be asked (its calls may elicit). rmcp's
//! output and the answers written here share one writer, a whole line at a
//! time. A line longer than rmcp's limit is skipped, as rmcp skips it.

use super::mcp::ConnectorServer;
use super::stateless::{
    PROGRESS_TOKEN, Request, call_message, list_message, request, trace_context, waiting_progress,
};
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ClientRequest, RequestId};
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
    let front = Front {
        server: server.clone(),
        out,
        keep_alive,
        stage: Stage::Handshake { can_elicit: None },
        running: Default::default(),
    };
    let front = tokio::spawn(front.run(input, to_rmcp));
    // rmcp reads the handshake the front passes it before this returns.
    let served = match server.serve(rmcp_end).await {
        Ok(running) => {
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
enum Stage {
    /// Before the client's `notifications/initialized`: every line is
    /// rmcp's; what the client's `initialize` declared, once seen.
    Handshake { can_elicit: Option<bool> },
    /// A client that cannot be asked anything: its lists and calls are
    /// answered here.
    Direct,
    /// A client that can be asked: every line is rmcp's.
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
        match &mut self.stage {
            Stage::Rmcp => false,
            Stage::Handshake { can_elicit } => {
                if let Some(next) = handshake(line, can_elicit) {
                    self.stage = next;
                }
                false
            }
            Stage::Direct => match request(line) {
                // A request with a protocol version of its own is rmcp's to check.
                Some((id, request, meta)) if meta.protocol_version().is_none() => {
                    let meta = trace_context(&meta);
                    match request {
                        Request::List => self.list(id, &meta).await,
                        Request::Call(params) => self.call(id, *params, &meta, alive.clone()),
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
            },
        }
    }

    /// Answers a `tools/list` with the list serialised for this revision.
    async fn list(&self, id: RequestId, meta: &rmcp::model::MetaObject) {
        self.answer(list_message(&self.server, id, meta, None, true))
            .await;
    }

    /// Runs a call in a task of its own. Once allowed, it runs to its end;
    /// its client's cancellation withdraws it while it waits for a person,
    /// and a cancelled call is not answered (as the protocol asks).
    fn call(
        &self,
        id: RequestId,
        params: rmcp::model::CallToolRequestParams,
        meta: &rmcp::model::MetaObject,
        alive: tokio::sync::mpsc::Sender<()>,
    ) {
        let gone = CancellationToken::new();
        self.running.lock().insert(id.clone(), gone.clone());
        let traced = super::mcp::trace_parent(meta, None, &id);
        let progress = meta.0.get(PROGRESS_TOKEN).cloned();
        let (server, out, running) = (self.server.clone(), self.out.clone(), self.running.clone());
        let keep_alive = self.keep_alive;
        tokio::spawn(async move {
            let _alive = alive;
            let (asked, approval) = tokio::sync::oneshot::channel();
            let call = server.call_directly(params, gone.clone(), traced, Some(asked));
            tokio::pin!(call);
            let finished = tokio::select! {
                finished = &mut call => finished,
                Ok(_) = approval => match progress {
                    Some(token) => tokio::select! {
                        finished = &mut call => finished,
                        () = tell_progress(&out, token, keep_alive) => call.await,
                    },
                    None => call.await,
                },
            };
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

/// What `line` tells of the handshake: the client's `initialize` says
/// whether it can be asked; its `notifications/initialized` ends the
/// handshake. Only lines naming `initialize` are read.
fn handshake(line: &[u8], can_elicit: &mut Option<bool>) -> Option<Stage> {
    memchr::memmem::find(line, b"initialize")?;
    match serde_json::from_slice(line).ok()? {
        ClientJsonRpcMessage::Request(message) => {
            if let ClientRequest::InitializeRequest(initialize) = message.request {
                *can_elicit = Some(initialize.params.capabilities.elicitation.is_some());
            }
            None
        }
        ClientJsonRpcMessage::Notification(message) => match message.notification {
            ClientNotification::InitializedNotification(_) => Some(match can_elicit {
                Some(false) => Stage::Direct,
                _ => Stage::Rmcp,
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
    fn a_client_that_cannot_be_asked_is_answered_here_after_the_handshake() {
        let mut can_elicit = None;
        assert!(handshake(&initialize(json!({})), &mut can_elicit).is_none());
        assert_eq!(can_elicit, Some(false));
        let ping = line(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        assert!(handshake(&ping, &mut can_elicit).is_none());
        assert!(matches!(
            handshake(&initialized(), &mut can_elicit),
            Some(Stage::Direct)
        ));
    }

    #[test]
    fn a_client_that_can_be_asked_stays_with_rmcp() {
        let mut can_elicit = None;
        assert!(handshake(&initialize(json!({"elicitation": {}})), &mut can_elicit).is_none());
        assert!(matches!(
            handshake(&initialized(), &mut can_elicit),
            Some(Stage::Rmcp)
        ));
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
