//! Everything a fleet changes at runtime goes through the admin API
//! (issue 57 item 4), through the real `serve` binaries, two hosts on one
//! real PostgreSQL database:
//! - a remote MCP server `PUT` on host A is listed by host B, reviewed
//!   through the admin API, and a call through B reaches it; its settings
//!   changed on A are applied on B; pointed at another server listing the
//!   same tools, B holds every tool until reviewed again (a review is
//!   bound to the server that listed it); `DELETE` on A revokes a write waiting
//!   for a person on B, and B refuses the next call by `connector_retired`,
//!   with nothing sent upstream;
//! - a spend threshold changed by `PUT` on A (the same artifact, new
//!   settings) applies on B: a call above the new threshold asks a person
//!   on B, one below it does not;
//! - every change is in the trace with the verified caller as its actor
//!   (the admin token, or a person signed in with OIDC);
//! - a connector the file owns is refused (409 `file_owned`), and malformed
//!   settings (a wrong type, `mcp` and `component` together, plain http
//!   without `allow_private_network`) are refused (422) naming the field,
//!   nothing stored.

use super::admin_identity::{Issuer, keys, oidc_table};
use super::artifacts::push;
use super::common::EVENTUALLY;
use super::crash_safety::{ADMIN_TOKEN, Admin, Mcp, ok_text, result_text, wait_for};
use super::remote_mcp::{call, hostile, listed, review, stats, tool};
use super::spend_thresholds::{fake_upstream, sent};
use crate::common;
use reqwest::Method;
use scout_tests::ServeProcess;
use serde_json::{Value, json};
use std::path::Path;

/// Two `serve` hosts on `db`'s PostgreSQL, each with `extra` (TOML) after
/// the store, and the file's own connector `capabilities`.
fn two_hosts(
    dir: &Path,
    db: &scout_tests::pg::PgDatabase,
    extra: &str,
) -> (ServeProcess, ServeProcess) {
    let capabilities = common::component(scout_tests::components::CAPABILITIES);
    let config = dir.join("fleet.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:0\"\nrequire_review = false\n\n\
             [store]\nbackend = \"postgres\"\nurl_env = \"SCOUT_PG_URL\"\nlease_secs = 15\n\n{extra}\n\
             [connectors.capabilities]\ncomponent = {capabilities:?}\norigin = \"http://127.0.0.1:9\"\nallow_private_network = true\n"
        ),
    )
    .unwrap();
    let env = |cache: &str| {
        [
            ("SCOUT_PG_URL", db.url()),
            (
                "SCOUT_ARTIFACT_CACHE",
                dir.join(cache).display().to_string(),
            ),
        ]
    };
    (
        common::serve(&config).envs(&env("cache-a")).start(),
        common::serve(&config).envs(&env("cache-b")).start(),
    )
}

fn admin_of(http: &reqwest::Client, serve: &ServeProcess) -> Admin {
    Admin {
        http: http.clone(),
        base: serve.base.clone(),
    }
}

/// `GET /v1/connectors/{name}` on `admin`'s host: status and body.
async fn shown(admin: &Admin, name: &str) -> (u16, Value) {
    admin
        .request(Method::GET, &format!("/v1/connectors/{name}"), None)
        .await
}

/// Waits until `admin`'s host has applied revision `revision` of `name`
/// with `status` (`served` or `retired`).
async fn applied(admin: &Admin, name: &str, revision: i64, status: &str) -> Value {
    wait_for(
        &format!("{name} revision {revision} {status}"),
        EVENTUALLY,
        async || {
            let (code, body) = shown(admin, name).await;
            (code == 200 && body["revision"] == revision && body["status"] == status)
                .then_some(body)
        },
    )
    .await
}

/// The `deployed` rows of the trace export from `base`: (rule, detail).
async fn deployed_rows(http: &reqwest::Client, base: &str) -> Vec<(String, Value)> {
    let text = http
        .get(format!("{base}/v1/trace/export?since=0&limit=10000"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["state"] == "deployed")
        .map(|r| {
            (
                r["rule"].as_str().unwrap_or_default().to_string(),
                r["detail"].clone(),
            )
        })
        .collect()
}

/// The `tools/call` requests for `tool` that reached the hostile server.
fn requested(stats: &Value, tool: &str) -> u64 {
    stats["requested"][tool].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_server_put_on_one_host_is_served_by_another_and_retired_everywhere() {
    let Some(db) = scout_tests::pg::database_or_skip("runtime_settings_remote") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let upstream = hostile(dir.path()).await;
    let url = format!("http://127.0.0.1:{}/mcp", upstream.port);
    let (a, b) = two_hosts(dir.path(), &db, "");
    let http = reqwest::Client::new();
    let (admin_a, admin_b) = (admin_of(&http, &a), admin_of(&http, &b));

    // The file's connector stays the file's: neither replaced by a remote
    // server nor retired, and shown as it was.
    let (_, file_before) = shown(&admin_b, "capabilities").await;
    let (status, body) = admin_a
        .request(
            Method::PUT,
            "/v1/connectors/capabilities",
            Some(json!({"mcp": url, "allow_private_network": true, "credential": "none"})),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "file_owned", "{body}");
    let (status, body) = admin_a
        .request(Method::DELETE, "/v1/connectors/capabilities", None)
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "file_owned", "{body}");
    let (_, file_after) = shown(&admin_b, "capabilities").await;
    assert_eq!(file_after, file_before);
    assert_eq!(file_after["source"], "file", "{file_after}");

    // Malformed settings: 422 naming the field, nothing stored.
    for (settings, field) in [
        (
            json!({"mcp": url, "allow_private_network": true, "credential": "none", "call_timeout_secs": "soon"}),
            "connectors.hostile.call_timeout_secs",
        ),
        (
            json!({"mcp": url, "allow_private_network": "yes", "credential": "none"}),
            "connectors.hostile.allow_private_network",
        ),
        (
            json!({"mcp": url, "component": "oci://127.0.0.1:9/connectors/x:1", "allow_private_network": true, "credential": "none"}),
            "`component` or `mcp`",
        ),
        (
            json!({"mcp": url, "credential": "none"}),
            "connectors.hostile.mcp",
        ),
        (
            json!({"mcp": url, "allow_private_network": true, "credential": "none", "call_timeout_secs": 0}),
            "call_timeout_secs",
        ),
    ] {
        let (status, body) = admin_a
            .request(
                Method::PUT,
                "/v1/connectors/hostile",
                Some(settings.clone()),
            )
            .await;
        assert_eq!(status, 422, "{settings}: {body}");
        assert_eq!(body["error"]["code"], "invalid_connector", "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(field), "{settings}: {message}");
        for admin in [&admin_a, &admin_b] {
            assert_eq!(shown(admin, "hostile").await.0, 404, "{settings}");
        }
    }

    // Added on A: B lists it itself, its tools candidates until reviewed.
    let settings = json!({"mcp": url, "allow_private_network": true, "credential": "none"});
    let (status, body) = admin_a
        .request(Method::PUT, "/v1/connectors/hostile", Some(settings))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["source"], "api", "{body}");
    assert_eq!(body["mcp"], url.as_str(), "{body}");
    applied(&admin_b, "hostile", 1, "served").await;
    let reviews = listed(&admin_b, "hostile").await;
    assert!(
        reviews.iter().all(|t| t["status"] == "new"),
        "nothing is reviewed by being added: {reviews:?}"
    );
    let view = admin_b.session().await;
    let mcp_b = Mcp::for_connector(&http, &view, "hostile").connect().await;
    let unreviewed = call(&mcp_b, "lookup", json!({"query": "too soon"}))
        .await
        .unwrap();
    assert_eq!(ok_text(&unreviewed), None, "{unreviewed}");
    assert_eq!(requested(&stats(&upstream).await, "lookup"), 0);

    // Reviewed through the admin API (on A): a call through B reaches it.
    review(&admin_a, "hostile", tool(&reviews, "lookup"), "read").await;
    review(&admin_a, "hostile", tool(&reviews, "whoami"), "read").await;
    let whoami = call(&mcp_b, "whoami", json!({})).await.unwrap();
    assert!(ok_text(&whoami).is_some(), "{whoami}");
    assert_eq!(requested(&stats(&upstream).await, "whoami"), 1);
    let found = call(&mcp_b, "lookup", json!({"query": "through b"}))
        .await
        .unwrap();
    assert_eq!(
        ok_text(&found).as_deref(),
        Some("found: through b"),
        "{found}"
    );
    assert_eq!(requested(&stats(&upstream).await, "lookup"), 1);

    // Its settings changed on A (narrowed to two tools, other timings): B
    // replaces its client and lists it again; the listing is the same, so
    // the review still holds, and the tool narrowed out is not served.
    let changed = json!({"mcp": url, "allow_private_network": true, "credential": "none", "call_timeout_secs": 20, "discover_every_secs": 60, "tools": ["lookup", "publish"]});
    let (status, body) = admin_a
        .request(Method::PUT, "/v1/connectors/hostile", Some(changed.clone()))
        .await;
    assert_eq!(status, 200, "{body}");
    let on_b = applied(&admin_b, "hostile", 2, "served").await;
    assert_eq!(on_b["settings"], changed, "{on_b}");
    listed(&admin_b, "hostile").await;
    let found = wait_for("B to serve the relisted tool", EVENTUALLY, async || {
        let answer = call(&mcp_b, "lookup", json!({"query": "after the change"}))
            .await
            .unwrap();
        ok_text(&answer).map(|_| answer)
    })
    .await;
    assert_eq!(ok_text(&found).as_deref(), Some("found: after the change"));
    let narrowed = call(&mcp_b, "whoami", json!({})).await.unwrap();
    assert_eq!(ok_text(&narrowed), None, "{narrowed}");
    assert_eq!(
        requested(&stats(&upstream).await, "whoami"),
        1,
        "the narrowed-out tool reached nothing"
    );

    // Pointed at another server that lists exactly the same tools: a person
    // reviewed what the first server said it does, so on B every tool is
    // held until reviewed again, and nothing reaches the other server.
    let twin_dir = dir.path().join("twin");
    std::fs::create_dir_all(&twin_dir).unwrap();
    let twin = hostile(&twin_dir).await;
    let mut elsewhere = changed.clone();
    elsewhere["mcp"] = json!(format!("http://127.0.0.1:{}/mcp", twin.port));
    let (status, body) = admin_a
        .request(Method::PUT, "/v1/connectors/hostile", Some(elsewhere))
        .await;
    assert_eq!(status, 200, "{body}");
    applied(&admin_b, "hostile", 3, "served").await;
    wait_for(
        "B to list the other server's lookup as changed",
        EVENTUALLY,
        async || {
            let tools = listed(&admin_b, "hostile").await;
            (tool(&tools, "lookup")["status"] == "changed").then_some(())
        },
    )
    .await;
    // (In a session of its own: refusals of the same consequence would
    // pause the first one, denial lineage.)
    let twin_view = admin_b.session().await;
    let mcp_twin = Mcp::for_connector(&http, &twin_view, "hostile")
        .connect()
        .await;
    let held = call(&mcp_twin, "lookup", json!({"query": "to the twin"}))
        .await
        .unwrap();
    assert_eq!(ok_text(&held), None, "{held}");
    assert_eq!(
        requested(&stats(&twin).await, "lookup"),
        0,
        "a tool reviewed on one server reached nothing on another"
    );
    // Back to the server reviewed: its reviews hold again.
    let (status, body) = admin_a
        .request(Method::PUT, "/v1/connectors/hostile", Some(changed.clone()))
        .await;
    assert_eq!(status, 200, "{body}");
    applied(&admin_b, "hostile", 4, "served").await;
    wait_for(
        "B to list the reviewed server's lookup as reviewed",
        EVENTUALLY,
        async || {
            let tools = listed(&admin_b, "hostile").await;
            (tool(&tools, "lookup")["status"] == "reviewed").then_some(())
        },
    )
    .await;
    // The first session lost the tool for good when it was held
    // (`revoked`: a session's surface never widens back); a new one is
    // offered it.
    let view = admin_b.session().await;
    let mcp_b = Mcp::for_connector(&http, &view, "hostile").connect().await;
    wait_for(
        "B to serve the reviewed server again",
        EVENTUALLY,
        async || {
            let answer = call(&mcp_b, "lookup", json!({"query": "back"}))
                .await
                .unwrap();
            ok_text(&answer).map(|_| answer)
        },
    )
    .await;
    let reached = requested(&stats(&upstream).await, "lookup");

    // A write waiting for a person on B when the server is retired on A:
    // its approval is revoked, and the call ends with nothing sent.
    let reviews = listed(&admin_b, "hostile").await;
    review(&admin_a, "hostile", tool(&reviews, "publish"), "write").await;
    let session = view["id"].as_str().unwrap().to_string();
    let waiting = tokio::spawn({
        let mcp = mcp_b.clone();
        async move { call(&mcp, "publish", json!({"text": "never sent"})).await }
    });
    let approval = wait_for("the write to ask a person", EVENTUALLY, async || {
        admin_b.pending(&session).await.into_iter().next()
    })
    .await;

    // Retired on A: B refuses the next call by its rule, nothing sent.
    let (status, body) = admin_a
        .request(Method::DELETE, "/v1/connectors/hostile", None)
        .await;
    assert_eq!(status, 200, "{body}");
    applied(&admin_b, "hostile", 5, "retired").await;
    let (status, body) = admin_b
        .request(
            Method::POST,
            &format!("/v1/approvals/{}", approval["id"]),
            Some(json!({"approve": true})),
        )
        .await;
    assert_eq!(status, 409, "the retirement revoked it: {body}");
    let ended = tokio::time::timeout(EVENTUALLY, waiting)
        .await
        .expect("the waiting write ended")
        .unwrap()
        .expect("an answer");
    assert_eq!(ok_text(&ended), None, "{ended}");
    assert_eq!(
        requested(&stats(&upstream).await, "publish"),
        0,
        "the revoked write reached nothing"
    );
    let refused = call(&mcp_b, "lookup", json!({"query": "after retirement"}))
        .await
        .unwrap();
    assert_eq!(ok_text(&refused), None, "{refused}");
    assert!(result_text(&refused).contains("retired"), "{refused}");
    assert_eq!(
        requested(&stats(&upstream).await, "lookup"),
        reached,
        "nothing reached the retired server"
    );
    let refusals = db.psql(
        "SELECT count(*) FROM trace WHERE rule = 'connector_retired' AND state IN ('denied', 'permission_denied')",
    );
    assert_eq!(refusals.parse::<u32>(), Ok(1), "B traced its refusal");

    // Each change is in the trace with who made it.
    let rows = deployed_rows(&http, &b.base).await;
    let rules: Vec<&str> = rows.iter().map(|(rule, _)| rule.as_str()).collect();
    assert_eq!(
        rules,
        [
            "connector_added",
            "connector_upgraded",
            "connector_upgraded",
            "connector_upgraded",
            "connector_retired"
        ],
        "{rows:?}"
    );
    for (rule, detail) in &rows {
        assert_eq!(detail["by"], "admin-token", "{rule}: {detail}");
        assert_eq!(detail["actor"]["kind"], "admin_token", "{rule}: {detail}");
    }
    let upgrade = &rows[1].1;
    assert_eq!(
        upgrade["settings_changed"],
        json!(["call_timeout_secs", "discover_every_secs", "tools"]),
        "{upgrade}"
    );
    assert_eq!(upgrade["component_changed"], false, "{upgrade}");
    drop((a, b));
}

/// Firecrawl's settings as the admin API takes them: its artifact,
/// reaching `origin`, with person chat's allowance and `threshold`.
fn firecrawl(artifact: &str, origin: &str, threshold: u64) -> Value {
    json!({
        "component": artifact,
        "origin": origin,
        "allow_private_network": true,
        "person_allowance": {
            "per_run_credits": 1000,
            "per_day_credits": 10000,
            "per_call_threshold_credits": threshold,
        },
    })
}

/// Starts `firecrawl_crawl` with `limit` (its estimate, in credits) on
/// `mcp`; whether it asked a person on `admin`'s host (then the approval
/// is denied and the call's answer awaited) or ran unasked.
async fn crawl_asks(mcp: &Mcp, admin: &Admin, session: &str, limit: u64) -> bool {
    let running = tokio::spawn({
        let mcp = mcp.clone();
        async move {
            call(
                &mcp,
                "firecrawl_crawl",
                json!({"url": "https://docs.example.com", "limit": limit}),
            )
            .await
        }
    });
    let asked = wait_for("the crawl to run or ask", EVENTUALLY, async || {
        if let Some(approval) = admin.pending(session).await.into_iter().next() {
            return Some(Some(approval));
        }
        running.is_finished().then_some(None)
    })
    .await;
    let Some(approval) = asked else {
        let answer = running.await.unwrap().expect("an answer");
        assert!(ok_text(&answer).is_some(), "ran unasked: {answer}");
        return false;
    };
    assert_eq!(approval["arguments"]["estimate"], limit, "{approval}");
    let (status, body) = admin
        .request(
            Method::POST,
            &format!("/v1/approvals/{}", approval["id"]),
            Some(json!({"approve": false})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let answer = running.await.unwrap().expect("an answer");
    assert_eq!(ok_text(&answer), None, "denied: {answer}");
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spend_threshold_changed_on_one_host_applies_on_another() {
    let Some(db) = scout_tests::pg::database_or_skip("runtime_settings_spend") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let registry = scout_tests::Registry::start(dir.path());
    let addr = registry.address.clone();
    let artifact = format!("oci://{addr}/connectors/firecrawl:1");
    let digest = push(
        &dir.path().join("publisher-cache"),
        scout_tests::components::FIRECRAWL,
        &artifact,
    )["digest"]
        .as_str()
        .unwrap()
        .to_string();
    let (origin, seen) = fake_upstream().await;
    // A person signs in to the admin API too (OIDC), besides the token.
    let issuer = Issuer::start(vec![keys().issuer.jwk.clone()]).await;
    let (a, b) = two_hosts(
        dir.path(),
        &db,
        &format!(
            "[registries.\"{addr}\"]\nplain_http = true\nallow_private_network = true\n{}",
            oidc_table(&issuer)
        ),
    );
    let http = reqwest::Client::new();
    let (admin_a, admin_b) = (admin_of(&http, &a), admin_of(&http, &b));

    // Added on A with a threshold of 5 credits; served on B.
    let (status, body) = admin_a
        .request(
            Method::PUT,
            "/v1/connectors/firecrawl",
            Some(firecrawl(&artifact, &origin, 5)),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let on_b = applied(&admin_b, "firecrawl", 1, "served").await;
    assert_eq!(on_b["digest"], digest.as_str(), "{on_b}");
    let (status, body) = admin_b
        .request(
            Method::PUT,
            "/v1/brands/acme/connections/firecrawl",
            Some(json!({"secret": "tok-firecrawl"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let view = admin_b.session().await;
    let session = view["id"].as_str().unwrap().to_string();
    let mcp_b = Mcp::for_connector(&http, &view, "firecrawl")
        .connect()
        .await;

    // Under 5: a 20-credit crawl asks a person on B; denied, nothing sent.
    assert!(crawl_asks(&mcp_b, &admin_b, &session, 20).await);
    assert!(sent(&seen, "/v2/crawl").is_empty(), "nothing sent");

    // Raised to 50 on A (the same artifact) by a person signed in with
    // OIDC: on B the same crawl runs unasked, and one above 50 asks.
    let person = keys()
        .issuer
        .sign(&issuer.claims("root@example.com", json!("admin"), json!({})));
    let raised = http
        .put(format!("{}/v1/connectors/firecrawl", a.base))
        .bearer_auth(&person)
        .json(&firecrawl(&artifact, &origin, 50))
        .send()
        .await
        .unwrap();
    assert_eq!(raised.status(), 200, "{}", raised.text().await.unwrap());
    let on_b = applied(&admin_b, "firecrawl", 2, "served").await;
    assert_eq!(
        on_b["settings"]["person_allowance"]["per_call_threshold_credits"], 50,
        "{on_b}"
    );
    assert!(!crawl_asks(&mcp_b, &admin_b, &session, 20).await);
    assert_eq!(sent(&seen, "/v2/crawl").len(), 1, "the crawl below 50 ran");
    assert!(crawl_asks(&mcp_b, &admin_b, &session, 60).await);
    assert_eq!(
        sent(&seen, "/v2/crawl").len(),
        1,
        "the denied one sent nothing"
    );

    // Lowered back to 5 on A: on B the 20-credit crawl asks again.
    let (status, body) = admin_a
        .request(
            Method::PUT,
            "/v1/connectors/firecrawl",
            Some(firecrawl(&artifact, &origin, 5)),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    applied(&admin_b, "firecrawl", 3, "served").await;
    assert!(crawl_asks(&mcp_b, &admin_b, &session, 20).await);
    assert_eq!(sent(&seen, "/v2/crawl").len(), 1);

    // Each change names who made it and what it changed.
    let rows = deployed_rows(&http, &b.base).await;
    let rules: Vec<&str> = rows.iter().map(|(rule, _)| rule.as_str()).collect();
    assert_eq!(
        rules,
        [
            "connector_added",
            "connector_upgraded",
            "connector_upgraded"
        ],
        "{rows:?}"
    );
    for (rule, detail) in &rows {
        assert_eq!(detail["digest"], digest.as_str(), "{rule}: {detail}");
    }
    let actors: Vec<(&Value, &Value)> = rows
        .iter()
        .map(|(_, d)| (&d["actor"]["kind"], &d["actor"]["subject"]))
        .collect();
    assert_eq!(
        actors,
        [
            (&json!("admin_token"), &json!("admin-token")),
            (&json!("person"), &json!("root@example.com")),
            (&json!("admin_token"), &json!("admin-token")),
        ],
        "{rows:?}"
    );
    assert_eq!(rows[1].1["by"], "root@example.com", "{rows:?}");
    for (_, upgrade) in &rows[1..] {
        assert_eq!(upgrade["settings_changed"], json!(["person_allowance"]));
        assert_eq!(upgrade["component_changed"], false, "{upgrade}");
    }
    drop((a, b));
}
