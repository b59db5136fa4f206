//! Crash safety (issue 8, item 9): the real `serve` binary is killed with
//! SIGKILL while 1,000 approval-gated GitHub writes are in flight, some done,
//! some executing, some approved and not yet run, some still waiting for a
//! person; then it is restarted on the same SQLite file.
//!
//! What must hold afterwards:
//! - every write the upstream received has a durable `allowed` event for its
//!   call (the intent was written before the effect), and no branch was asked
//!   for twice;
//! - no record is lost or doubled: every decision the approvals API
//!   acknowledged is in the store, every result a client received is in the
//!   trace, each approval is requested by one call and spent at most once,
//!   and each argument digest is allowed at most once;
//! - every call's events are a prefix of requested → requested
//!   (approval_requested) → decided (approved) → allowed → executed → result, and a call that did
//!   not reach `result` ends with exactly one `interrupted` event, written by
//!   the restarted host (`Store::recover_interrupted`): complete or visibly
//!   incomplete, never out of order;
//! - approvals still pending at the kill are revoked at the restart: they
//!   cannot be approved later, and a new session calling the same arguments
//!   gets a new approval request.
//!
//! The allowance ledger is not wired into `serve` yet (a later issue), so the
//! calls here are approval-gated rather than charged; `host/tests/all/store.rs`
//! kills a process mid-charge for the ledger itself.

use crate::common;
use futures_util::future::join_all;
use reqwest::Method;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use scout_host::store::prelude::*;
use scout_host::store::{
    Approval, ApprovalId, ApprovalState, RESTART_REVOKER, SqliteStore, TraceEvent, TraceFilter,
    TraceState, args_digest,
};
use scout_tests::fake_github::FakeGitHub;
use scout_tests::mcp_wire::jsonrpc_messages;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(super) const GITHUB_TOKEN: &str = "ghp_crashSafetyToken0123456789";
pub(super) const ADMIN_TOKEN: &str = "admin-token-for-crash-safety-0123456789";
const PROTOCOL: &str = "2025-06-18";
pub(super) const TOOL: &str = "github_create_branch";
pub(super) const NAME: &str = "mcp__github__github_create_branch";

/// Calls in flight when `serve` is killed, spread over `SESSIONS` sessions.
const CALLS: usize = 1000;
const SESSIONS: usize = 4;
/// Every tenth call is never approved: still waiting for a person at the kill.
fn approved_index(i: usize) -> bool {
    i % 10 != 9
}
/// `serve` is killed once the upstream has seen this many branch creations
/// (or earlier: see the kill).
const KILL_AT: usize = 300;
/// Approval decisions sent at once.
const APPROVERS: usize = 16;

/// Generous: a loaded 2-core machine.
const PHASE_TIMEOUT: Duration = Duration::from_secs(240);

pub(super) fn args_for(i: usize) -> Value {
    json!({"owner": "octo", "repo": "hello", "branch": format!("crash/{i}"), "from": "main"})
}

// --- the admin API ----------------------------------------------------------

#[derive(Clone)]
pub(super) struct Admin {
    pub(super) http: reqwest::Client,
    pub(super) base: String,
}

impl Admin {
    pub(super) async fn try_request(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), reqwest::Error> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"));
        if let Some(body) = body {
            request = request
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let text = response.text().await?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    pub(super) async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        self.try_request(method.clone(), path, body)
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// Stores acme's GitHub connection and approves every tool as described now.
    pub(super) async fn set_up(&self) {
        let (status, body) = self
            .request(
                Method::PUT,
                "/v1/brands/acme/connections/github",
                Some(json!({"secret": GITHUB_TOKEN})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let (status, reviews) = self.request(Method::GET, "/v1/reviews", None).await;
        assert_eq!(status, 200, "{reviews}");
        for tool in reviews["connectors"]["github"]
            .as_array()
            .unwrap_or_else(|| panic!("reviews: {reviews}"))
        {
            let review = json!({"connector": "github", "tool": tool["tool"], "digest": tool["digest"], "by": "crash-test"});
            let (status, body) = self
                .request(Method::POST, "/v1/reviews", Some(review))
                .await;
            assert_eq!(status, 200, "{body}");
        }
    }

    /// Opens a person-chat session for acme.
    /// Stores acme's connection for the billed test connector
    /// (`capabilities`).
    pub(super) async fn connect_billed(&self) {
        let (status, body) = self
            .request(
                Method::PUT,
                "/v1/brands/acme/connections/capabilities",
                Some(json!({"secret": "billed-connector-secret-0123"})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }

    pub(super) async fn session(&self) -> Value {
        let (status, view) = self
            .request(
                Method::POST,
                "/v1/sessions",
                Some(json!({"brand": "acme", "role": "person-chat"})),
            )
            .await;
        assert_eq!(status, 201, "{view}");
        view
    }

    /// `arguments` for `github_create_branch` sent in `view`'s session, and
    /// the approval it waits on: the call (answered once a person decides)
    /// and the pending approval as the approvals API lists it.
    pub(super) async fn write_waiting(
        &self,
        view: &Value,
        arguments: Value,
    ) -> (tokio::task::JoinHandle<Result<Value, String>>, Value) {
        let session = view["id"].as_str().unwrap().to_string();
        let mcp = Mcp::new(&self.http, view).connect().await;
        let waiting = tokio::spawn(async move {
            mcp.request("tools/call", json!({"name": TOOL, "arguments": arguments}))
                .await
        });
        let pending = wait_for("the approval", crate::common::EVENTUALLY, async || {
            self.pending(&session).await.into_iter().next()
        })
        .await;
        (waiting, pending)
    }

    pub(super) async fn pending(&self, session: &str) -> Vec<Value> {
        let (status, body) = self
            .request(
                Method::GET,
                &format!("/v1/approvals?session={session}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["pending"].as_array().unwrap().clone()
    }

    /// The brand's whole trace, page by page.
    pub(super) async fn trace(&self, brand: &str) -> Vec<TraceEvent> {
        let mut events = Vec::new();
        let mut after = 0i64;
        loop {
            let (status, body) = self
                .request(
                    Method::GET,
                    &format!("/v1/trace?brand={brand}&after={after}&limit=5000"),
                    None,
                )
                .await;
            assert_eq!(status, 200, "{body}");
            for event in body["events"].as_array().unwrap() {
                events.push(
                    serde_json::from_value(event.clone())
                        .unwrap_or_else(|e| panic!("a trace event: {e}: {event}")),
                );
            }
            match body["next_after"].as_i64() {
                Some(next) => after = next,
                None => return events,
            }
        }
    }
}

// --- MCP over streamable HTTP, spoken by hand --------------------------------

#[derive(Clone)]
pub(super) struct Mcp {
    http: reqwest::Client,
    url: String,
    token: String,
    session: Option<String>,
    next_id: Arc<AtomicU64>,
}

impl Mcp {
    pub(super) fn new(http: &reqwest::Client, view: &Value) -> Mcp {
        Mcp::for_connector(http, view, "github")
    }

    /// The session's MCP endpoint for `connector`.
    pub(super) fn for_connector(http: &reqwest::Client, view: &Value, connector: &str) -> Mcp {
        Mcp {
            http: http.clone(),
            url: view["mcp"][connector]
                .as_str()
                .unwrap_or_else(|| panic!("an MCP endpoint: {view}"))
                .to_string(),
            token: view["token"].as_str().unwrap().to_string(),
            session: None,
            next_id: Arc::new(AtomicU64::new(1)),
        }
    }

    async fn post(&self, message: &Value) -> Result<reqwest::Response, reqwest::Error> {
        let mut request = self
            .http
            .post(&self.url)
            .header(AUTHORIZATION, format!("Bearer {}", self.token))
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(message.to_string());
        if let Some(session) = &self.session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", PROTOCOL);
        }
        request.send().await
    }

    /// Sends one request; the JSON-RPC response to it, or why there was none
    /// (the connection was cut: the server died).
    pub(super) async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let response = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let text = response.text().await.map_err(|e| e.to_string())?;
        if status != 200 {
            return Err(format!("HTTP {status}: {text}"));
        }
        jsonrpc_messages(&content_type, &text)
            .into_iter()
            .find(|m| m["id"] == id)
            .ok_or_else(|| format!("no response with id {id}: {text:?}"))
    }

    /// The same Scout session and MCP transport session, sent to `to`
    /// instead of `from` (another host of the fleet).
    pub(super) fn moved(&self, from: &str, to: &str) -> Mcp {
        Mcp {
            url: self.url.replacen(from, to, 1),
            ..self.clone()
        }
    }

    /// [`Mcp::connect`], or `None` when no host answers it as it should
    /// (one that is going away, a connection cut).
    pub(super) async fn try_connect(mut self) -> Option<Mcp> {
        self.session = None;
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "crash-safety", "version": "0"}}});
        let response = self.post(&init).await.ok()?;
        if response.status().as_u16() != 200 {
            return None;
        }
        self.session = Some(
            response
                .headers()
                .get("mcp-session-id")?
                .to_str()
                .ok()?
                .to_string(),
        );
        let _ = response.text().await;
        let response = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
            .ok()?;
        (response.status().as_u16() == 202).then_some(self)
    }

    /// `initialize` (a new MCP transport session, whatever one was held),
    /// keeps the MCP session id, then `notifications/initialized`.
    pub(super) async fn connect(mut self) -> Mcp {
        self.session = None;
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "crash-safety", "version": "0"}}});
        let response = self.post(&init).await.expect("initialize");
        assert_eq!(response.status().as_u16(), 200);
        self.session = Some(
            response
                .headers()
                .get("mcp-session-id")
                .expect("an MCP session id")
                .to_str()
                .unwrap()
                .to_string(),
        );
        let _ = response.text().await;
        let response = self
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
            .expect("initialized");
        assert_eq!(response.status().as_u16(), 202);
        self
    }

    pub(super) async fn call(&self, args: Value) -> Result<Value, String> {
        self.request("tools/call", json!({"name": TOOL, "arguments": args}))
            .await
    }
}

/// The text of a `tools/call` result, error or not.
pub(super) fn result_text(reply: &Value) -> String {
    reply["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

/// The text of a successful `tools/call` result, or `None` for an error result.
pub(super) fn ok_text(reply: &Value) -> Option<String> {
    let result = reply.get("result")?;
    if result["isError"] == true {
        return None;
    }
    Some(
        result["content"]
            .as_array()?
            .iter()
            .filter_map(|c| c["text"].as_str())
            .collect(),
    )
}

// --- waiting without sleeping blindly ---------------------------------------

pub(super) async fn wait_for<T>(
    what: &str,
    timeout: Duration,
    mut poll: impl AsyncFnMut() -> Option<T>,
) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = poll().await {
            return value;
        }
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// --- the store as the dead process left it ----------------------------------

/// One call's events, in the order recorded.
#[derive(Default, Debug)]
struct Call {
    digest: Option<String>,
    approval: Option<ApprovalId>,
    events: Vec<TraceEvent>,
}

impl Call {
    fn states(&self) -> Vec<(TraceState, Option<&str>)> {
        self.events
            .iter()
            .map(|e| (e.state, e.rule.as_deref()))
            .collect()
    }
    fn has(&self, state: TraceState) -> bool {
        self.events.iter().any(|e| e.state == state)
    }
    fn last(&self) -> TraceState {
        self.events.last().map(|e| e.state).unwrap()
    }
}

/// The calls (not the session-level events) of `sessions`, by call id.
/// `event` as both sides of a comparison read it: a decision's arguments
/// are sealed in the store and opened by the admin API for the admin token,
/// so only their digest is compared.
fn comparable(event: &TraceEvent) -> TraceEvent {
    let mut event = event.clone();
    if let Some(detail) = event.detail.as_object_mut() {
        if let Some(sealed) = detail.remove("sealed_arguments") {
            detail.insert("args_digest".into(), sealed["args_digest"].clone());
        }
        detail.remove("arguments");
        detail.remove("arguments_unreadable");
    }
    event
}

fn calls_of(events: &[TraceEvent], sessions: &BTreeSet<String>) -> BTreeMap<String, Call> {
    let mut calls: BTreeMap<String, Call> = BTreeMap::new();
    for event in events {
        let Some(call_id) = &event.call_id else {
            continue;
        };
        if call_id == "session" || !sessions.contains(&event.session) {
            continue;
        }
        let call = calls.entry(call_id.clone()).or_default();
        if event.state == TraceState::Requested && event.rule.is_none() {
            assert!(call.digest.is_none(), "{call_id}: requested twice");
            call.digest = event.detail["args_digest"].as_str().map(str::to_string);
        }
        if event.rule.as_deref() == Some("approval_requested") {
            assert!(
                call.approval.is_none(),
                "{call_id}: asked for two approvals"
            );
            call.approval = Some(ApprovalId(
                event.detail["approval"]
                    .as_i64()
                    .unwrap_or_else(|| panic!("{call_id}: {event:?}")),
            ));
        }
        call.events.push(comparable(event));
    }
    calls
}

/// The one order a gated call's events may come in.
const EXPECTED: [(TraceState, Option<&str>); 6] = [
    (TraceState::Requested, None),
    (TraceState::Requested, Some("approval_requested")),
    (TraceState::Decided, Some("approved")),
    (TraceState::Allowed, Some("approved_by_person")),
    (TraceState::Executed, None),
    (TraceState::Result, None),
];

fn is_prefix(states: &[(TraceState, Option<&str>)]) -> bool {
    !states.is_empty()
        && states.len() <= EXPECTED.len()
        && states.iter().zip(EXPECTED.iter()).all(|(a, b)| a == b)
}

fn all_trace(store: &SqliteStore, brand: &str) -> Vec<TraceEvent> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let page =
            scout_host::store::block(store.trace_page(TraceFilter::Brand(brand), after, 5000))
                .unwrap();
        let Some((last, _)) = page.last() else {
            return out;
        };
        after = *last;
        out.extend(page.into_iter().map(|(_, e)| e));
    }
}

/// The soft limit on open files (`/proc/self/limits`), if it can be read.
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

// --- the test ----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_killed_mid_stream_loses_and_doubles_nothing() {
    let began = Instant::now();
    // This process holds a socket per call in flight (and the fake GitHub's
    // side of serve's upstream connections); serve holds as many.
    if let Some(limit) = open_files_limit() {
        assert!(
            limit >= 2 * CALLS as u64,
            "this test keeps {CALLS} calls in flight: raise the open-file limit (ulimit -n {}; it is {limit})",
            4 * CALLS
        );
    }
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let (dir, _cleanup) = scratch_dir("scout-crash-safety");
    let config = dir.join("serve.toml");
    let db = dir.join("scout.db");
    std::fs::write(
        &config,
        scout_tests::serve_config_for_github(&github.origin()),
    )
    .unwrap();
    // One connection per call in flight: no pool limit, long waits allowed.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .connect_timeout(Duration::from_secs(60))
        .build()
        .unwrap();

    // --- first life: 1,000 gated writes in flight ---
    let mut serve = common::serve(&config).start();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    admin.set_up().await;
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        let view = admin.session().await;
        let mcp = Mcp::new(&http, &view).connect().await;
        sessions.push((view["id"].as_str().unwrap().to_string(), mcp));
    }
    let old_sessions: BTreeSet<String> = sessions.iter().map(|(id, _)| id.clone()).collect();
    let digests: HashMap<String, usize> =
        (0..CALLS).map(|i| (args_digest(&args_for(i)), i)).collect();

    // Each call's answer, if one came before the kill.
    let answers: Arc<Mutex<BTreeMap<usize, Result<Value, String>>>> =
        Arc::new(Mutex::new(BTreeMap::new()));
    let mut calls = Vec::new();
    for i in 0..CALLS {
        let mcp = sessions[i % SESSIONS].1.clone();
        let answers = answers.clone();
        calls.push(tokio::spawn(async move {
            let answer = mcp.call(args_for(i)).await;
            answers.lock().unwrap().insert(i, answer);
        }));
    }
    let fired = Instant::now();

    // Every call is waiting for a person.
    let mut approval_of: BTreeMap<usize, i64> = BTreeMap::new();
    for (id, _) in &sessions {
        let expected = CALLS / SESSIONS;
        let pending = wait_for("every call's approval request", PHASE_TIMEOUT, async || {
            let pending = admin.pending(id).await;
            (pending.len() >= expected).then_some(pending)
        })
        .await;
        assert_eq!(pending.len(), expected, "one approval per call");
        for approval in pending {
            let branch = approval["arguments"]["branch"]
                .as_str()
                .unwrap_or_else(|| panic!("the approvals API shows the arguments: {approval}"));
            let i: usize = branch.strip_prefix("crash/").unwrap().parse().unwrap();
            assert_eq!(approval["tool"], NAME);
            assert_eq!(approval["args_digest"], args_digest(&args_for(i)));
            assert!(
                approval_of
                    .insert(i, approval["id"].as_i64().unwrap())
                    .is_none(),
                "{branch} asked twice"
            );
        }
    }
    assert_eq!(approval_of.len(), CALLS);
    let all_pending = fired.elapsed();
    assert!(
        github.ref_creations().is_empty(),
        "nothing reached GitHub before a person approved"
    );

    // Approve nine in ten, APPROVERS at a time, while watching the upstream.
    // Only the first two thirds are ever sent: however late this test's
    // watcher wakes on a loaded machine, approved calls are left that never
    // ran, so the kill cannot come after the end of the stream.
    let to_approve: Vec<i64> = approval_of
        .iter()
        .filter(|(i, _)| approved_index(**i))
        .map(|(_, id)| *id)
        .collect();
    let most_approved = to_approve.len() * 2 / 3;
    let sent: BTreeSet<i64> = to_approve[..most_approved].iter().copied().collect();
    let sent_index = |i: usize| sent.contains(&approval_of[&i]);
    // In the order approval_of gives them, as before.
    let queued: Vec<i64> = to_approve[..most_approved].to_vec();
    let queue = Arc::new(Mutex::new(queued.into_iter()));
    let acknowledged: Arc<Mutex<BTreeSet<i64>>> = Arc::new(Mutex::new(BTreeSet::new()));
    let approver_errors = Arc::new(AtomicUsize::new(0));
    let mut approvers = Vec::new();
    for _ in 0..APPROVERS {
        let (admin, queue, acknowledged, approver_errors) = (
            admin.clone(),
            queue.clone(),
            acknowledged.clone(),
            approver_errors.clone(),
        );
        approvers.push(tokio::spawn(async move {
            loop {
                let Some(id) = queue.lock().unwrap().next() else {
                    return;
                };
                match admin
                    .try_request(
                        Method::POST,
                        &format!("/v1/approvals/{id}"),
                        Some(json!({"approve": true, "by": "test"})),
                    )
                    .await
                {
                    Ok((200, _)) => {
                        acknowledged.lock().unwrap().insert(id);
                    }
                    Ok((status, body)) => panic!("approving {id}: {status} {body}"),
                    // The server died under the request.
                    Err(_) => {
                        approver_errors.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                }
            }
        }));
    }
    let approving = Instant::now();
    // Killed once the upstream has seen KILL_AT branches, or earlier once
    // every approval sent is acknowledged (and some branches are seen), and
    // only once a client has its answer, so some call had finished.
    wait_for(
        "the upstream to see the first branches and a client its answer",
        PHASE_TIMEOUT,
        async || {
            let seen = github.ref_creations().len();
            let acknowledged = acknowledged.lock().unwrap().len();
            let answered = answers.lock().unwrap().values().any(Result::is_ok);
            (answered
                && (seen >= KILL_AT || (seen >= KILL_AT / 6 && acknowledged >= most_approved)))
                .then_some(())
        },
    )
    .await;
    let upstream_seen_at_kill = github.ref_creations().len();
    let acknowledged_at_kill = acknowledged.lock().unwrap().len();
    serve.kill();
    let killed_after = approving.elapsed();

    // Requests the dead process had already written to a socket may still
    // land; wait until the upstream is quiet.
    let mut last = github.requests().len();
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = github.requests().len();
        if now == last {
            break;
        }
        last = now;
    }
    for approver in approvers {
        approver.await.expect("an approver panicked");
    }
    tokio::time::timeout(PHASE_TIMEOUT, join_all(calls))
        .await
        .expect("every call's connection ends with the server");
    let answers = std::mem::take(&mut *answers.lock().unwrap());
    let acknowledged = std::mem::take(&mut *acknowledged.lock().unwrap());
    let upstream = github.ref_creations();

    // --- what the dead process left on disk ---
    let (at_kill, approvals_at_kill) = {
        let store = SqliteStore::open(&db).unwrap();
        store.integrity_check().unwrap();
        let events = all_trace(&store, "acme");
        let approvals: BTreeMap<i64, scout_host::store::Approval> = approval_of
            .values()
            .map(|id| {
                (
                    *id,
                    scout_host::store::block(store.approval(ApprovalId(*id)))
                        .unwrap()
                        .expect("every approval asked for is stored"),
                )
            })
            .collect();
        (calls_of(&events, &old_sessions), approvals)
    };
    assert_eq!(at_kill.len(), CALLS, "one traced call per call sent");

    // Upstream: each branch asked for once, and only after its call's
    // `allowed` was durable.
    let mut created: BTreeMap<usize, usize> = BTreeMap::new();
    for name in &upstream {
        let i: usize = name
            .strip_prefix("refs/heads/crash/")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("an unexpected ref {name:?}"));
        *created.entry(i).or_default() += 1;
    }
    let doubled: Vec<_> = created.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        doubled.is_empty(),
        "branches created more than once upstream: {doubled:?}"
    );
    let by_index: BTreeMap<usize, &Call> = at_kill
        .values()
        .map(|c| {
            (
                digests[c
                    .digest
                    .as_ref()
                    .expect("every call records its digest with its request")],
                c,
            )
        })
        .collect();
    assert_eq!(by_index.len(), CALLS, "one call per arguments");
    for i in created.keys() {
        assert!(
            sent_index(*i),
            "crash/{i} was never approved, yet reached GitHub"
        );
        let call = by_index[i];
        assert!(
            call.has(TraceState::Allowed),
            "crash/{i} reached GitHub without a durable `allowed`: {:?}",
            call.states()
        );
    }

    // Order: each call's events are a prefix of the one sequence.
    for (id, call) in &at_kill {
        assert!(
            is_prefix(&call.states()),
            "{id}: events out of order: {:?}",
            call.states()
        );
    }

    // Approvals: each requested by one call, spent at most once, nothing
    // acknowledged lost, nothing allowed without one.
    let mut requested_by: BTreeMap<i64, usize> = BTreeMap::new();
    for call in at_kill.values() {
        if let Some(a) = call.approval {
            *requested_by.entry(a.0).or_default() += 1;
        }
    }
    assert!(
        requested_by.values().all(|n| *n == 1),
        "an approval requested by two calls"
    );
    for (i, call) in &by_index {
        let approval = &approvals_at_kill[&approval_of[i]];
        assert_eq!(
            call.approval,
            Some(approval.id),
            "crash/{i}: the approval its trace names"
        );
        assert_eq!(approval.args_digest, *call.digest.as_ref().unwrap());
        if call.has(TraceState::Allowed) {
            assert!(
                approval.used && approval.state == ApprovalState::Approved,
                "crash/{i} allowed without spending its approval: {approval:?}"
            );
        }
        if !sent_index(*i) {
            assert_eq!(
                approval.state,
                ApprovalState::Pending,
                "crash/{i} was never decided: {approval:?}"
            );
        }
    }
    for id in &acknowledged {
        let approval = &approvals_at_kill[id];
        assert_eq!(
            approval.state,
            ApprovalState::Approved,
            "approval {id} was acknowledged, then lost: {approval:?}"
        );
    }
    for (id, approval) in &approvals_at_kill {
        if approval.state == ApprovalState::Approved {
            assert!(
                sent.contains(id),
                "approval {id} approved by no one: {approval:?}"
            );
        }
    }

    // Every answer a client received is in the trace; host errors are bugs.
    let mut answered_ok = 0;
    let mut host_errors = Vec::new();
    for (i, answer) in &answers {
        let Ok(reply) = answer else { continue };
        let call = by_index[i];
        assert_eq!(
            call.last(),
            TraceState::Result,
            "crash/{i} was answered but its result is not in the trace: {reply}"
        );
        let result = &call.events.last().unwrap().detail;
        if result["ok"] == true {
            assert!(
                ok_text(reply).is_some_and(|t| t.contains(&format!("crash/{i}"))),
                "crash/{i}: {reply}"
            );
            assert_eq!(
                created.get(i),
                Some(&1),
                "crash/{i} succeeded, so GitHub has it"
            );
            answered_ok += 1;
        } else {
            host_errors.push(format!("crash/{i}: {result}"));
        }
    }
    let results_in_trace: Vec<&Call> = at_kill
        .values()
        .filter(|c| c.last() == TraceState::Result)
        .collect();
    for call in &results_in_trace {
        let detail = &call.events.last().unwrap().detail;
        if detail["ok"] != true {
            let i = digests[call.digest.as_ref().unwrap()];
            let line = format!("crash/{i}: {detail}");
            if !host_errors.contains(&line) {
                host_errors.push(line);
            }
        }
    }
    assert!(
        host_errors.is_empty(),
        "calls failed in the host rather than upstream ({}): {:?}",
        host_errors.len(),
        &host_errors[..host_errors.len().min(5)]
    );

    // The kill happened mid-stream.
    let done = results_in_trace.len();
    let executing = at_kill
        .values()
        .filter(|c| matches!(c.last(), TraceState::Allowed | TraceState::Executed))
        .count();
    let executing_reached_upstream = at_kill
        .values()
        .filter(|c| {
            c.last() == TraceState::Allowed
                && created.contains_key(&digests[c.digest.as_ref().unwrap()])
        })
        .count();
    let approved_not_run = approvals_at_kill
        .values()
        .filter(|a| a.state == ApprovalState::Approved)
        .count()
        .saturating_sub(done + executing);
    let spent_not_allowed = at_kill
        .values()
        .filter(|c| {
            !c.has(TraceState::Allowed) && c.approval.is_some_and(|a| approvals_at_kill[&a.0].used)
        })
        .count();
    let pending_at_kill = approvals_at_kill
        .values()
        .filter(|a| a.state == ApprovalState::Pending)
        .count();
    // What the restart ends by `host_lost`: every approval that could still
    // be decided or spent (its call died with the process).
    let usable = |a: &Approval| {
        a.state == ApprovalState::Pending || (a.state == ApprovalState::Approved && !a.used)
    };
    let usable_at_kill = approvals_at_kill.values().filter(|a| usable(a)).count();
    assert!(done > 0, "some calls had finished");
    assert!(
        done + executing <= most_approved,
        "no more calls ran than approvals were sent"
    );
    assert!(
        created.len() <= most_approved,
        "no more writes reached GitHub than approvals were sent"
    );
    assert!(
        pending_at_kill >= CALLS - most_approved,
        "the calls no approval was sent for were still waiting"
    );
    // A result is durable before its answer is sent: some finished calls
    // may have died with their answer unsent, never the other way round.
    assert!(answered_ok <= done);
    let open_at_kill = at_kill
        .values()
        .filter(|c| c.last() != TraceState::Result)
        .count();

    // --- second life: the same database ---
    let restarted = Instant::now();
    let serve2 = common::serve(&config).start();
    let admin = Admin {
        http: http.clone(),
        base: serve2.base.clone(),
    };
    let recovered_line = wait_for(
        "serve to say what it recovered",
        Duration::from_secs(30),
        async || {
            serve2
                .stderr()
                .lines()
                .find(|l| l.contains("marked interrupted"))
                .map(str::to_string)
        },
    )
    .await;
    let numbers: Vec<usize> = recovered_line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    assert_eq!(
        numbers,
        [usable_at_kill, open_at_kill, executing],
        "{recovered_line}"
    );

    let trace = admin.trace("acme").await;
    let after = calls_of(&trace, &old_sessions);
    assert_eq!(after.len(), CALLS);
    let mut interrupted = 0;
    for (id, call) in &after {
        let before = &at_kill[id];
        assert_eq!(
            &call.events[..before.events.len()],
            &before.events[..],
            "{id}: recovery rewrote history"
        );
        let states = call.states();
        if before.last() == TraceState::Result {
            assert_eq!(
                states.len(),
                before.events.len(),
                "{id}: a finished call gained events: {states:?}"
            );
            continue;
        }
        // Its approval, if it could still be used, ended by `host_lost`
        // on its record first.
        let ended = before
            .approval
            .is_some_and(|a| usable(&approvals_at_kill[&a.0]));
        assert_eq!(
            states.len(),
            before.events.len() + 1 + usize::from(ended),
            "{id}: one `interrupted` event: {states:?}"
        );
        if ended {
            let decided = &call.events[call.events.len() - 2];
            assert_eq!(
                (decided.state, decided.rule.as_deref()),
                (TraceState::Decided, Some("revoked")),
                "{id}: {states:?}"
            );
            assert_eq!(decided.detail["by"], "host_lost", "{id}");
        }
        let last = call.events.last().unwrap();
        assert_eq!(last.state, TraceState::Interrupted, "{id}: {states:?}");
        assert_eq!(last.tool.as_deref(), Some(NAME));
        let may_have_run = matches!(before.last(), TraceState::Allowed | TraceState::Executed);
        assert_eq!(
            last.detail["may_have_run"], may_have_run,
            "{id}: {:?}",
            last.detail
        );
        assert_eq!(last.detail["last_state"], before.last().to_string());
        interrupted += 1;
    }
    assert_eq!(interrupted, open_at_kill);

    // Pending approvals are gone, and cannot be approved now.
    for session in &old_sessions {
        assert!(
            admin.pending(session).await.is_empty(),
            "{session} still has pending approvals after the restart"
        );
    }
    let never_approved: Vec<usize> = (0..CALLS).filter(|i| !approved_index(*i)).collect();
    let old_pending = approval_of[&never_approved[0]];
    let (status, body) = admin
        .request(
            Method::POST,
            &format!("/v1/approvals/{old_pending}"),
            Some(json!({"approve": true, "by": "late"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("not_pending")),
        "{body}"
    );
    {
        let store = SqliteStore::open(&db).unwrap();
        for (id, before) in &approvals_at_kill {
            let now = store.approval(ApprovalId(*id)).await.unwrap().unwrap();
            if usable(before) {
                assert_eq!(
                    (now.state, now.used, now.decided_by.as_deref()),
                    (ApprovalState::Revoked, false, Some(RESTART_REVOKER)),
                    "approval {id}"
                );
            } else {
                assert_eq!(&now, before, "approval {id} changed at the restart");
            }
        }
    }

    // A new session calling what was pending, and what was approved but not
    // run, gets a new approval request, and runs once approved.
    let again_pending = never_approved[0];
    let again_approved = (0..CALLS).find(|i| {
        let approval = &approvals_at_kill[&approval_of[i]];
        approval.state == ApprovalState::Approved && !approval.used && !created.contains_key(i)
    });
    let view = admin.session().await;
    let new_session = view["id"].as_str().unwrap().to_string();
    let mcp = Mcp::new(&http, &view).connect().await;
    let again: Vec<usize> = std::iter::once(again_pending)
        .chain(again_approved)
        .collect();
    let waiting: Vec<_> = again
        .iter()
        .map(|i| {
            (
                *i,
                tokio::spawn({
                    let mcp = mcp.clone();
                    let args = args_for(*i);
                    async move { mcp.call(args).await }
                }),
            )
        })
        .collect();
    let newest_old = *approval_of.values().max().unwrap();
    let fresh = wait_for("the new approval requests", PHASE_TIMEOUT, async || {
        let pending = admin.pending(&new_session).await;
        (pending.len() == again.len()).then_some(pending)
    })
    .await;
    for approval in &fresh {
        let id = approval["id"].as_i64().unwrap();
        assert!(
            id > newest_old,
            "a new approval, not an old one: {approval}"
        );
        let (status, body) = admin
            .request(
                Method::POST,
                &format!("/v1/approvals/{id}"),
                Some(json!({"approve": true, "by": "test"})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    for (i, handle) in waiting {
        let reply = tokio::time::timeout(PHASE_TIMEOUT, handle)
            .await
            .expect("the call ends")
            .unwrap()
            .expect("an answer");
        assert!(
            ok_text(&reply).is_some_and(|t| t.contains(&format!("crash/{i}"))),
            "crash/{i} after the restart: {reply}"
        );
        assert!(
            github
                .branch_sha("octo", "hello", &format!("crash/{i}"))
                .is_some()
        );
    }
    let upstream_after = github.ref_creations();
    for i in &again {
        let name = format!("refs/heads/crash/{i}");
        assert_eq!(
            upstream_after.iter().filter(|r| **r == name).count(),
            1,
            "{name} created exactly once in both lives"
        );
    }
    assert_eq!(
        upstream_after.len(),
        upstream.len() + again.len(),
        "no other write after the restart"
    );
    drop(serve2);

    eprintln!(
        "crash safety: {CALLS} calls over {SESSIONS} sessions, all pending after {all_pending:.1?}; {} approvals sent, {acknowledged_at_kill} acknowledged when the kill was decided ({} in all), \
         killed {killed_after:.1?} after approving began with {upstream_seen_at_kill} branches seen upstream ({} in the end); at the kill: {done} done, \
         {executing} executing ({executing_reached_upstream} of them had reached GitHub), {approved_not_run} approved not run ({spent_not_allowed} had spent their approval), \
         {pending_at_kill} pending; the restart ended {usable_at_kill} approvals and marked {open_at_kill} calls interrupted; restart and checks {:.1?}; total {:.1?}; \
         {answered_ok} answers received; {} approval requests cut by the kill",
        most_approved,
        acknowledged.len(),
        upstream.len(),
        restarted.elapsed(),
        began.elapsed(),
        approver_errors.load(Ordering::SeqCst),
    );
}

/// Removes the test's directory (database, WAL, configuration) on drop.
struct RemoveDir(PathBuf);

/// A fresh directory `label-PID` in the temp directory, removed when the
/// second value is dropped.
fn scratch_dir(label: &str) -> (PathBuf, RemoveDir) {
    let dir = std::env::temp_dir().join(format!("{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    (dir.clone(), RemoveDir(dir))
}

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `[store] trace_durable_against = "process_crash"` keeps its name's
/// promise: `serve` killed with SIGKILL right after answering loses no
/// trace row of any call it answered (reads, and reads its guest
/// refuses), and the file is whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_rows_durable_against_a_process_crash_survive_sigkill() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let (dir, _cleanup) = scratch_dir("scout-process-crash");
    let config = dir.join("serve.toml");
    let db = dir.join("scout.db");
    std::fs::write(
        &config,
        format!(
            "{}\n[store]\ntrace_durable_against = \"process_crash\"\n",
            scout_tests::serve_config_for_github(&github.origin())
        ),
    )
    .unwrap();
    let http = reqwest::Client::new();
    let mut serve = common::serve(&config).start();
    let admin = Admin {
        http: http.clone(),
        base: serve.base.clone(),
    };
    admin.set_up().await;
    let view = admin.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let mcp = Mcp::new(&http, &view).connect().await;
    let mut answered = 0;
    for i in 0..20 {
        // Reads, and reads the guest refuses (a path outside the repo).
        let owner = if i % 4 == 3 { ".." } else { "octo" };
        let reply = mcp
            .request(
                "tools/call",
                json!({"name": "github_read_file", "arguments": {"owner": owner, "repo": "hello", "path": "README.md"}}),
            )
            .await
            .expect("answered");
        assert!(reply["result"].is_object(), "{reply}");
        answered += 1;
    }
    serve.kill();

    let store = SqliteStore::open(&db).unwrap();
    store.integrity_check().unwrap();
    let events = all_trace(&store, "acme");
    let finished = events
        .iter()
        .filter(|e| {
            e.session == session
                && e.tool.as_deref() == Some("mcp__github__github_read_file")
                && e.state == TraceState::Result
        })
        .count();
    assert_eq!(
        finished, answered,
        "every answered call's result row survived the kill"
    );
}
