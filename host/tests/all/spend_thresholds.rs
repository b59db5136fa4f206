//! Person chat's spend thresholds (issue 22, item 3; seed 000: DataForSEO
//! and Firecrawl, "every call bills; calls above a threshold ask a
//! person"), through the real `scout-host serve` binary with the Firecrawl
//! and DataForSEO components built from source, a loopback fake speaking
//! both vendors' wire formats (its answers are the connectors' committed
//! fixtures), MCP spoken over plain HTTP and the admin API approving.
//!
//! - A call whose reservation is at or below the threshold runs and nobody
//!   is asked.
//! - A call above it files exactly one approval showing the call's
//!   arguments and the estimate; approved, it runs; denied, the upstream is
//!   never reached.
//! - A call whose settled cost exceeds the estimate a person approved is
//!   charged exactly that estimate. (Firecrawl's `crawl` reserves its
//!   whole `limit` and settles at it, so it cannot exceed; its `search`
//!   settles at the `creditsUsed` Firecrawl reports, so that is the call
//!   whose settlement can.)
//! - Where no one can approve (approvals off), a reservation above the
//!   threshold is refused at once with nothing sent, and a billing
//!   connector with no threshold still asks before every call.

use crate::common;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use scout_tests::ServeProcess;
use scout_tests::mcp_wire::jsonrpc_messages;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ADMIN_TOKEN: &str = "spend-threshold-admin-token-0123456789";
const PROTOCOL: &str = "2025-06-18";
/// Far longer than any test waits: no approval times out under a test.
const APPROVAL_TIMEOUT_MS: &str = "300000";

/// What the fake upstream received: method, path and body.
pub(super) type Seen = Arc<Mutex<Vec<(String, String, Value)>>>;

fn fixture(connector: &str, file: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../connectors")
        .join(connector)
        .join("fixtures")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let fixture: Value = serde_json::from_str(&text).unwrap();
    fixture["exchanges"][0]["response"]["json"].clone()
}

/// A loopback upstream answering Firecrawl's `POST /v2/search` and
/// `POST /v2/crawl` and DataForSEO's live SERP as their fixtures do. A
/// search's `creditsUsed` is the number after `costs ` in its query (else
/// the fixture's); every request is recorded.
pub(super) async fn fake_upstream() -> (String, Seen) {
    use axum::extract::State;
    use axum::response::IntoResponse;
    let seen: Seen = Arc::default();
    let search = fixture("firecrawl", "search.json");
    let crawl = fixture("firecrawl", "crawl-start.json");
    let serp = fixture("dataforseo", "serp-organic.json");
    let answer = move |State(seen): State<Seen>,
                       method: axum::http::Method,
                       uri: axum::http::Uri,
                       body: axum::body::Bytes| {
        let (search, crawl, serp) = (search.clone(), crawl.clone(), serp.clone());
        async move {
            let path = uri.path().to_string();
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            seen.lock()
                .unwrap()
                .push((method.to_string(), path.clone(), body.clone()));
            let reply = match path.as_str() {
                "/v2/search" => {
                    let mut reply = search;
                    if let Some(credits) = body["query"]
                        .as_str()
                        .and_then(|q| q.split("costs ").nth(1))
                        .and_then(|n| n.parse::<u64>().ok())
                    {
                        reply["creditsUsed"] = json!(credits);
                    }
                    reply
                }
                "/v2/crawl" => crawl,
                "/v3/serp/google/organic/live/advanced" => serp,
                _ => return axum::http::StatusCode::NOT_FOUND.into_response(),
            };
            axum::Json(reply).into_response()
        }
    };
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (origin, seen)
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The real `serve` a test drives, with the client that talks to it.
struct Served {
    serve: ServeProcess,
    http: reqwest::Client,
    _dir: Scratch,
}

/// `serve` with Firecrawl and DataForSEO against `origin`, each with
/// person chat's allowance and the `*_threshold` lines given; `env` adds
/// operator switches.
fn start(
    name: &str,
    origin: &str,
    firecrawl: &str,
    dataforseo: &str,
    env: &[(&str, &str)],
) -> Served {
    let component = common::component;
    let config = format!(
        "listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\nrequire_review = false\n\n\
         [connectors.firecrawl]\ncomponent = {:?}\norigin = {origin:?}\nallow_private_network = true\n\
         [connectors.firecrawl.person_allowance]\nper_run_credits = 100\nper_day_credits = 1000\n{firecrawl}\n\
         [connectors.dataforseo]\ncomponent = {:?}\norigin = {origin:?}\nallow_private_network = true\n\
         [connectors.dataforseo.person_allowance]\nper_run_usd = 1.0\nper_day_usd = 3.0\n{dataforseo}\n",
        component(scout_tests::components::FIRECRAWL),
        component(scout_tests::components::DATAFORSEO),
    );
    let (dir, path) = scout_tests::serve::fresh_config(&format!("spend-{name}"), &config);
    let serve = common::serve_as(&path, ADMIN_TOKEN, "3d")
        .env("SCOUT_CACHE_DIR", dir.join("cache"))
        .env("APPROVAL_TIMEOUT_MS", APPROVAL_TIMEOUT_MS)
        .current_dir(&dir)
        .envs(env)
        .start();
    Served {
        serve,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .unwrap(),
        _dir: Scratch(dir),
    }
}

impl Served {
    async fn admin(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.serve.base))
            .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"));
        if let Some(body) = body {
            request = request
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert!(
            status.is_success(),
            "{path}: {status} {text}\n{}",
            self.serve.stderr()
        );
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// Stores acme's connections and opens a person-chat session.
    async fn person_chat(&self) -> Session {
        for connector in ["firecrawl", "dataforseo"] {
            self.admin(
                reqwest::Method::PUT,
                &format!("/v1/brands/acme/connections/{connector}"),
                Some(json!({"secret": format!("tok-{connector}")})),
            )
            .await;
        }
        let opened = self
            .admin(
                reqwest::Method::POST,
                "/v1/sessions",
                Some(json!({"brand": "acme", "role": "person-chat"})),
            )
            .await;
        Session {
            id: opened["id"].as_str().unwrap().to_string(),
            token: opened["token"].as_str().unwrap().to_string(),
            mcp: opened["mcp"].clone(),
            http: self.http.clone(),
        }
    }

    async fn pending(&self, session: &str) -> Vec<Value> {
        let listed = self
            .admin(
                reqwest::Method::GET,
                &format!("/v1/approvals?session={session}"),
                None,
            )
            .await;
        listed["pending"].as_array().cloned().unwrap_or_default()
    }

    /// Waits for the one approval `session` asks for (a call is waiting on
    /// it), and returns it; fails if none comes while the call waits.
    async fn asked(&self, session: &str, call: &tokio::task::JoinHandle<Value>) -> Value {
        for _ in 0..1200 {
            let pending = self.pending(session).await;
            if !pending.is_empty() {
                assert_eq!(pending.len(), 1, "exactly one approval: {pending:?}");
                return pending[0].clone();
            }
            assert!(
                !call.is_finished(),
                "the call ended without asking a person"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no approval was asked for\n{}", self.serve.stderr())
    }

    async fn decide(&self, approval: &Value, approve: bool) {
        self.admin(
            reqwest::Method::POST,
            &format!("/v1/approvals/{}", approval["id"]),
            Some(json!({"approve": approve})),
        )
        .await;
    }

    async fn trace(&self, session: &str) -> Vec<Value> {
        let page = self
            .admin(
                reqwest::Method::GET,
                &format!("/v1/trace?session={session}&limit=5000"),
                None,
            )
            .await;
        page["events"].as_array().cloned().unwrap_or_default()
    }

    /// `scout_allowance_charged_total` for `connector`, from `/metrics`.
    async fn charged_total(&self, connector: &str) -> u64 {
        let text = self
            .http
            .get(format!("{}/metrics", self.serve.base))
            .header(AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .filter(|l| {
                l.starts_with("scout_allowance_charged_total{")
                    && l.contains(&format!("connector=\"{connector}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .map(|v| v as u64)
            .sum()
    }
}

/// One person-chat session, spoken to over MCP by hand.
#[derive(Clone)]
struct Session {
    id: String,
    token: String,
    mcp: Value,
    http: reqwest::Client,
}

impl Session {
    async fn post(
        &self,
        url: &str,
        mcp_session: Option<&str>,
        message: Value,
    ) -> (String, String, Option<String>) {
        let mut request = self
            .http
            .post(url)
            .header(AUTHORIZATION, format!("Bearer {}", self.token))
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(message.to_string());
        if let Some(s) = mcp_session {
            request = request
                .header("mcp-session-id", s)
                .header("mcp-protocol-version", PROTOCOL);
        }
        let response = request.send().await.unwrap();
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        (content_type, response.text().await.unwrap(), id)
    }

    /// Calls `tool` of `connector`; the tool's answer (its JSON text) and
    /// whether MCP marked it an error.
    async fn call(&self, connector: &str, tool: &str, arguments: Value) -> (Value, bool) {
        let url = self.mcp[connector].as_str().unwrap().to_string();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
            "clientInfo": {"name": "spend-thresholds-test", "version": "0"}}});
        let (_, _, mcp_session) = self.post(&url, None, init).await;
        let mcp_session = mcp_session.expect("an MCP session id");
        self.post(
            &url,
            Some(&mcp_session),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        let (content_type, text, _) = self
            .post(
                &url,
                Some(&mcp_session),
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}}),
            )
            .await;
        let reply = jsonrpc_messages(&content_type, &text)
            .into_iter()
            .find(|m| m["id"] == 2)
            .unwrap_or_else(|| panic!("{tool}: no answer in {text}"));
        let result = &reply["result"];
        let text: String = result["content"]
            .as_array()
            .unwrap_or_else(|| panic!("{tool}: a tool result: {reply}"))
            .iter()
            .filter_map(|c| c["text"].as_str())
            .collect();
        (
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
            result["isError"] == true,
        )
    }

    /// [`Session::call`] on a task of its own, so a person can answer meanwhile.
    fn spawn_call(
        &self,
        connector: &str,
        tool: &str,
        arguments: Value,
    ) -> tokio::task::JoinHandle<Value> {
        let (session, connector, tool) = (self.clone(), connector.to_string(), tool.to_string());
        tokio::spawn(async move {
            let (answer, is_error) = session.call(&connector, &tool, arguments).await;
            json!({"answer": answer, "is_error": is_error})
        })
    }
}

/// Requests to `path` the upstream received.
pub(super) fn sent(seen: &Seen, path: &str) -> Vec<Value> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|(_, p, _)| p == path)
        .map(|(_, _, body)| body.clone())
        .collect()
}

/// The approvals a session's trace shows it asked for, with their details.
fn approvals_requested(trace: &[Value]) -> Vec<Value> {
    trace
        .iter()
        .filter(|e| e["state"] == "requested" && e["rule"] == "approval_requested")
        .map(|e| e["detail"].clone())
        .collect()
}

/// The `spend` entries of the trace's `executed` events for `tool`.
fn spend_entries(trace: &[Value], tool: &str) -> Vec<Value> {
    trace
        .iter()
        .filter(|e| e["state"] == "executed" && e["tool"] == tool)
        .filter_map(|e| e["detail"]["spend"].as_array().cloned())
        .flatten()
        .collect()
}

/// The meter's refusal in a tool error: (kind, message).
fn meter_refusal(answer: &Value) -> (String, String) {
    let capability = &answer["tool_error"]["capability"];
    assert_eq!(capability["capability"], "meter", "{answer}");
    (
        capability["kind"].as_str().unwrap_or_default().to_string(),
        capability["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_the_threshold_runs_above_it_asks_once_and_an_approved_estimate_caps_the_charge() {
    let (origin, seen) = fake_upstream().await;
    let served = start(
        "asks",
        &origin,
        "per_call_threshold_credits = 5",
        "per_call_threshold_usd = 0.005",
        &[],
    );
    let s = served.person_chat().await;

    // At or below the threshold: runs, nobody asked.
    let (search, error) = s
        .call(
            "firecrawl",
            "firecrawl_search",
            json!({"query": "firecrawl pricing", "limit": 5}),
        )
        .await;
    assert!(!error, "{search}");
    assert_eq!(search["credits-charged"], 2, "{search}");
    assert_eq!(
        sent(&seen, "/v2/search").len(),
        1,
        "Firecrawl got the search"
    );
    let (serp, error) = s
        .call(
            "dataforseo",
            "dataforseo_serp_organic",
            json!({"keyword": "trail running shoes"}),
        )
        .await;
    assert!(!error, "{serp}");
    let serps = sent(&seen, "/v3/serp/google/organic/live/advanced");
    assert_eq!(serps.len(), 1, "DataForSEO got the task");
    assert_eq!(
        serps[0][0]["depth"], 10,
        "estimated at $0.002, below $0.005"
    );
    assert!(
        approvals_requested(&served.trace(&s.id).await).is_empty(),
        "nobody was asked at or below the threshold"
    );
    assert!(served.pending(&s.id).await.is_empty());
    assert_eq!(served.charged_total("firecrawl").await, 2);
    assert_eq!(served.charged_total("dataforseo").await, 2_000);

    // Above it: one approval showing the arguments and the estimate, and
    // nothing sent until a person approves.
    let args = json!({"url": "https://docs.example.com", "limit": 20});
    let call = s.spawn_call("firecrawl", "firecrawl_crawl", args.clone());
    let approval = served.asked(&s.id, &call).await;
    assert_eq!(approval["tool"], "mcp__firecrawl__firecrawl_crawl");
    assert_eq!(
        approval["arguments"],
        json!({"arguments": args, "estimate": 20, "unit": "credits"}),
        "the person sees the call and its estimate: {approval}"
    );
    let text = approval["arguments_text"].as_str().unwrap();
    assert!(text.contains("\"estimate\":20"), "{text}");
    assert!(
        sent(&seen, "/v2/crawl").is_empty(),
        "nothing sent while a person decides"
    );
    served.decide(&approval, true).await;
    let done = call.await.unwrap();
    assert_eq!(done["is_error"], false, "{done}");
    assert_eq!(done["answer"]["credits-charged"], 20, "{done}");
    let crawls = sent(&seen, "/v2/crawl");
    assert_eq!(crawls.len(), 1, "the approved crawl reached Firecrawl");
    assert_eq!(crawls[0]["limit"], 20);
    assert_eq!(served.charged_total("firecrawl").await, 22);

    // Denied: the upstream is never reached, and nothing is charged.
    let call = s.spawn_call(
        "firecrawl",
        "firecrawl_crawl",
        json!({"url": "https://docs.example.com", "limit": 30}),
    );
    let approval = served.asked(&s.id, &call).await;
    assert_eq!(approval["arguments"]["estimate"], 30);
    served.decide(&approval, false).await;
    let done = call.await.unwrap();
    assert_eq!(done["is_error"], true, "{done}");
    let (kind, message) = meter_refusal(&done["answer"]);
    assert_eq!(kind, "denied");
    assert!(
        message.contains("approval denied") && message.contains("30 credits"),
        "{message}"
    );
    assert_eq!(
        sent(&seen, "/v2/crawl").len(),
        1,
        "the denied crawl sent nothing"
    );
    assert_eq!(
        served.charged_total("firecrawl").await,
        22,
        "and was charged nothing"
    );

    // DataForSEO above its threshold: the estimate in micro-USD.
    let call = s.spawn_call(
        "dataforseo",
        "dataforseo_serp_organic",
        json!({"keyword": "trail running shoes", "depth": 100}),
    );
    let approval = served.asked(&s.id, &call).await;
    assert_eq!(approval["tool"], "mcp__dataforseo__dataforseo_serp_organic");
    assert_eq!(approval["arguments"]["estimate"], 15_500, "{approval}");
    assert_eq!(approval["arguments"]["unit"], "micro-usd");
    assert_eq!(
        sent(&seen, "/v3/serp/google/organic/live/advanced").len(),
        1,
        "nothing sent while a person decides"
    );
    served.decide(&approval, true).await;
    let done = call.await.unwrap();
    assert_eq!(done["is_error"], false, "{done}");
    let serps = sent(&seen, "/v3/serp/google/organic/live/advanced");
    assert_eq!(serps.len(), 2, "the approved task reached DataForSEO");
    assert_eq!(serps[1][0]["depth"], 100);

    // An approved estimate caps the charge: 24 credits approved, Firecrawl
    // reports 60 used; the run had room for more, and is charged 24.
    let call = s.spawn_call(
        "firecrawl",
        "firecrawl_search",
        json!({"query": "trail shoes costs 60", "limit": 20, "scrape-results": true}),
    );
    let approval = served.asked(&s.id, &call).await;
    assert_eq!(approval["arguments"]["estimate"], 24, "{approval}");
    served.decide(&approval, true).await;
    let done = call.await.unwrap();
    assert_eq!(done["is_error"], false, "{done}");
    assert_eq!(
        done["answer"]["credits-charged"], 24,
        "the tool reports what the meter charged: {done}"
    );
    assert_eq!(sent(&seen, "/v2/search").len(), 2);
    assert_eq!(
        served.charged_total("firecrawl").await,
        22 + 24,
        "charged at the approved estimate, not the 60 reported"
    );

    // The trace: each approval asked shows its estimate and was decided;
    // each call's executed event says what was asked and how it ended.
    let trace = served.trace(&s.id).await;
    let asked: Vec<(u64, String)> = approvals_requested(&trace)
        .iter()
        .map(|d| {
            (
                d["estimate"].as_u64().unwrap(),
                d["unit"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        asked,
        [
            (20, "credits".to_string()),
            (30, "credits".to_string()),
            (15_500, "micro-usd".to_string()),
            (24, "credits".to_string()),
        ]
    );
    let decided: Vec<&str> = trace
        .iter()
        .filter(|e| e["state"] == "decided")
        .map(|e| e["rule"].as_str().unwrap())
        .collect();
    assert_eq!(decided, ["approved", "denied", "approved", "approved"]);
    assert!(
        trace.iter().all(|e| e["state"] != "denied"),
        "a refused reservation is not a denied call: the call ran and answered"
    );
    let crawl_outcomes: Vec<Value> = spend_entries(&trace, "mcp__firecrawl__firecrawl_crawl")
        .iter()
        .map(|e| json!([e["estimate"], e["outcome"]]))
        .collect();
    assert_eq!(
        crawl_outcomes,
        [json!([20, "approved"]), json!([30, "approval_denied"])]
    );
    let allowed: Vec<&Value> = trace
        .iter()
        .filter(|e| e["state"] == "allowed" && e["tool"] == "mcp__firecrawl__firecrawl_crawl")
        .collect();
    assert!(
        allowed
            .iter()
            .all(|e| e["rule"] == "spend_threshold" && e["detail"]["threshold"] == 5),
        "{allowed:?}"
    );
    let overrun = trace
        .iter()
        .rfind(|e| e["state"] == "executed" && e["tool"] == "mcp__firecrawl__firecrawl_search")
        .unwrap();
    assert!(
        overrun
            .to_string()
            .contains("above the 24 credits a person approved"),
        "the guest was told its settlement was capped: {overrun}"
    );
    assert!(
        !trace
            .iter()
            .any(|e| e.to_string().contains("tok-firecrawl"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn where_no_one_can_approve_above_the_threshold_refuses_and_no_threshold_still_asks() {
    let (origin, seen) = fake_upstream().await;
    // Approvals off: nobody can approve a reservation above Firecrawl's
    // threshold. DataForSEO has no threshold: it fails closed, as before.
    let served = start(
        "refuses",
        &origin,
        "per_call_threshold_credits = 5",
        "",
        &[("REQUIRE_WRITE_APPROVAL", "false")],
    );
    let s = served.person_chat().await;

    let (search, error) = s
        .call(
            "firecrawl",
            "firecrawl_search",
            json!({"query": "firecrawl pricing", "limit": 5}),
        )
        .await;
    assert!(!error, "below the threshold it runs: {search}");
    assert_eq!(sent(&seen, "/v2/search").len(), 1);

    let (crawl, error) = s
        .call(
            "firecrawl",
            "firecrawl_crawl",
            json!({"url": "https://docs.example.com", "limit": 20}),
        )
        .await;
    assert!(error, "{crawl}");
    let (kind, message) = meter_refusal(&crawl);
    assert_eq!(kind, "denied");
    assert!(
        message.contains("approval required")
            && message.contains("20 credits")
            && message.contains("threshold of 5 credits")
            && message.contains("no one can approve"),
        "{message}"
    );
    assert!(sent(&seen, "/v2/crawl").is_empty(), "nothing sent");
    assert_eq!(
        served.charged_total("firecrawl").await,
        2,
        "nothing charged for it"
    );
    let trace = served.trace(&s.id).await;
    assert!(approvals_requested(&trace).is_empty(), "nobody asked");
    assert_eq!(
        spend_entries(&trace, "mcp__firecrawl__firecrawl_crawl"),
        [
            json!({"estimate": 20, "unit": "credits", "threshold": 5, "outcome": "approval_required"})
        ]
    );

    // No threshold: the call asks before it runs (bound to its arguments
    // alone), and a denial leaves DataForSEO untouched.
    let args = json!({"keyword": "trail running shoes"});
    let call = s.spawn_call("dataforseo", "dataforseo_serp_organic", args.clone());
    let approval = served.asked(&s.id, &call).await;
    assert_eq!(approval["arguments"], args, "asked before the call ran");
    served.decide(&approval, false).await;
    let done = call.await.unwrap();
    assert_eq!(done["is_error"], true, "{done}");
    assert_eq!(done["answer"]["denied"], "approval_denied", "{done}");
    assert!(sent(&seen, "/v3/serp/google/organic/live/advanced").is_empty());
}
