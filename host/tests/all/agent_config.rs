//! `GET /v1/sessions/{id}/agent-config` and the brand facts behind a
//! session's allowlist, against a real `ServeHost` over loopback HTTP.
//!
//! The oracle for the formats is the session itself as `POST /v1/sessions`
//! answered it (`tools`, `mcp`, `token`) and seed 000/004's rules: the
//! exclusive `tools` list, never `allowedTools`; Claude Code's
//! `permissions.deny` naming every built-in and MCP server the session is
//! not given and nothing it is; MCP entries whose header refers to the
//! token by environment variable and never carries it. The oracle for the
//! brand facts is seed 000's "When present" column: team tools when the
//! brand has at least one coworker, skills when it has at least one skill,
//! goals when the goals engine is on.

use crate::common;

use reqwest::Method;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};
use scout_tests::TempDb;
use serde_json::{Value, json};
use std::collections::BTreeSet;

const ADMIN_TOKEN: &str = "admin-token-for-agent-config-0123456789";
const PLACEHOLDER: &str = "Bearer ${SCOUT_SESSION_TOKEN}";
const FORMATS: [&str; 3] = ["claude-agent-sdk", "claude-code", "mcp-json"];
const DEPLOYMENT_BUILTINS: [&str; 8] = [
    "Bash",
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "WebSearch",
    "WebFetch",
];
const TEAM: [&str; 5] = [
    "mcp__team__team_roster",
    "mcp__team__team_assign",
    "mcp__team__team_status",
    "mcp__team__team_result",
    "mcp__team__team_cancel",
];
const SKILLS: [&str; 2] = ["mcp__skills__load_skill", "mcp__skills__read_skill_file"];
const GOALS: [&str; 4] = [
    "mcp__goals__goals_status",
    "mcp__goals__goals_ask",
    "mcp__goals__goals_propose",
    "mcp__goals__goals_note",
];
const LIMITS: &str =
    r#"{"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 0}"#;

fn test_env(name: &str) -> Option<String> {
    match name {
        "SCOUT_ADMIN_TOKEN" => Some(ADMIN_TOKEN.to_string()),
        "SCOUT_STORE_KEY" => Some("3a".repeat(32)),
        _ => None,
    }
}

/// One host serving GitHub and AgentMail (neither is ever called here) on 127.0.0.1.
struct Served {
    base: String,
    http: reqwest::Client,
    _listening: common::Listening,
    _db: TempDb,
}

/// `top`: top-level keys; `tables`: further tables (`[brands.NAME]`).
async fn serve(name: &str, top: &str, tables: &str, switches: &[(&str, &str)]) -> Served {
    let db = TempDb::new(&format!("agent-config-{name}"));
    let unused = "http://127.0.0.1:9";
    let text = format!(
        "listen = \"127.0.0.1:0\"\n{top}\n\n[connectors.github]\ncomponent = {:?}\norigin = {unused:?}\nallow_private_network = true\n\n[connectors.agentmail]\ncomponent = {:?}\norigin = {unused:?}\nallow_private_network = true\n\n{tables}\n",
        common::component(scout_tests::components::GITHUB),
        common::component(scout_tests::components::AGENTMAIL),
    );
    let listening = common::listen(common::start_host(&text, &db, switches, test_env)).await;
    Served {
        base: listening.base.clone(),
        http: common::client(),
        _listening: listening,
        _db: db,
    }
}

/// A response: status, the `scout-token-env` header, the body as text and as JSON.
struct Reply {
    status: u16,
    token_env: Option<String>,
    text: String,
    json: Value,
}

impl Served {
    async fn request(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        if let Some(body) = body {
            request = request
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let token_env = response
            .headers()
            .get("scout-token-env")
            .map(|v| v.to_str().unwrap().to_string());
        let text = response.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            token_env,
            text,
            json,
        }
    }

    async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let reply = self
            .request(method.clone(), path, Some(ADMIN_TOKEN), body)
            .await;
        assert!(
            (200..300).contains(&reply.status),
            "{method} {path}: {} {}",
            reply.status,
            reply.text
        );
        reply.json
    }

    async fn connect(&self, brand: &str, connector: &str) {
        self.admin(
            Method::PUT,
            &format!("/v1/brands/{brand}/connections/{connector}"),
            Some(json!({"secret": format!("{connector}-secret-{brand}")})),
        )
        .await;
    }

    async fn save_profile(&self, brand: &str, kind: &str, profile: Value) {
        let name = profile["name"].as_str().unwrap().to_string();
        self.admin(
            Method::PUT,
            &format!("/v1/brands/{brand}/profiles/{name}"),
            Some(json!({"kind": kind, "profile": profile})),
        )
        .await;
    }

    async fn open(&self, brand: &str, role: &str, profile: Option<&str>) -> Value {
        let mut body = json!({"brand": brand, "role": role});
        if let Some(p) = profile {
            body["profile"] = json!(p);
        }
        let reply = self
            .request(Method::POST, "/v1/sessions", Some(ADMIN_TOKEN), Some(body))
            .await;
        assert_eq!(reply.status, 201, "{}", reply.text);
        assert!(reply.json["token"].is_string(), "{}", reply.text);
        reply.json
    }

    async fn agent_config(&self, session: &str, format: &str) -> Reply {
        self.request(
            Method::GET,
            &format!("/v1/sessions/{session}/agent-config?format={format}"),
            Some(ADMIN_TOKEN),
            None,
        )
        .await
    }

    /// The names of the tools the trace's `offered` events list for `session`.
    async fn offered_in_trace(&self, session: &str) -> BTreeSet<String> {
        let body = self
            .admin(Method::GET, &format!("/v1/trace?session={session}"), None)
            .await;
        let mut out = BTreeSet::new();
        for e in body["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["state"] == "offered")
        {
            if let Some(list) = e["detail"]["tools"].as_array() {
                out.extend(list.iter().map(|t| t.as_str().unwrap().to_string()));
            }
            if let Some(t) = e["tool"].as_str().filter(|t| !t.is_empty()) {
                out.insert(t.to_string());
            }
        }
        out
    }

    /// The trace's `removed` events for `session`: tool and deciding rule.
    async fn removed_in_trace(&self, session: &str) -> std::collections::BTreeMap<String, String> {
        let body = self
            .admin(Method::GET, &format!("/v1/trace?session={session}"), None)
            .await;
        body["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["state"] == "removed")
            .map(|e| {
                (
                    e["tool"].as_str().unwrap_or_default().to_string(),
                    e["rule"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("an array: {value}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn tools_of(view: &Value) -> Vec<String> {
    strings(&view["tools"])
}

fn has_all(tools: &[String], names: &[&str]) -> bool {
    names.iter().all(|n| tools.iter().any(|t| t == n))
}

fn has_none(tools: &[String], names: &[&str]) -> bool {
    names.iter().all(|n| !tools.iter().any(|t| t == n))
}

/// Whether `key` is an object key anywhere in `value`.
fn has_key(value: &Value, key: &str) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(k, v)| k == key || has_key(v, key)),
        Value::Array(items) => items.iter().any(|v| has_key(v, key)),
        _ => false,
    }
}

/// Checks the three formats of `view`'s session against it; returns the
/// Claude Code deny list.
async fn check_formats(s: &Served, view: &Value) -> Vec<String> {
    let id = view["id"].as_str().unwrap();
    let token = view["token"].as_str().unwrap();
    let tools = tools_of(view);
    let mcp = view["mcp"].as_object().unwrap();
    let mut deny = Vec::new();
    for format in FORMATS {
        let reply = s.agent_config(id, format).await;
        assert_eq!(reply.status, 200, "{format}: {}", reply.text);
        assert!(
            !reply.text.contains(token),
            "{format}: the session's token must never be in a configuration"
        );
        assert!(
            !has_key(&reply.json, "allowedTools") && !reply.text.contains("allowedTools"),
            "{format}: {}",
            reply.text
        );
        assert_eq!(
            reply.token_env.as_deref(),
            Some("SCOUT_SESSION_TOKEN"),
            "{format}"
        );
        let body = reply.json.as_object().unwrap();
        let keys: Vec<&str> = body.keys().map(String::as_str).collect();
        match format {
            "claude-agent-sdk" => assert_eq!(keys, ["tools", "mcpServers", "token_env"]),
            "claude-code" => assert_eq!(keys, ["tools", "permissions", "mcpServers", "token_env"]),
            _ => assert_eq!(keys, ["mcpServers"], "the .mcp.json shape and nothing else"),
        }
        if format != "mcp-json" {
            assert_eq!(
                strings(&reply.json["tools"]),
                tools,
                "{format}: `tools` is the session's exclusive allowlist"
            );
            assert_eq!(reply.json["token_env"], "SCOUT_SESSION_TOKEN");
        }
        let servers = reply.json["mcpServers"].as_object().unwrap();
        assert_eq!(
            servers.keys().collect::<Vec<_>>(),
            mcp.keys().collect::<Vec<_>>(),
            "{format}: one entry per endpoint"
        );
        for (server, entry) in servers {
            assert_eq!(
                entry,
                &json!({"type": "http", "url": mcp[server], "headers": {"Authorization": PLACEHOLDER}}),
                "{format}"
            );
        }
        if format == "claude-code" {
            assert_eq!(
                reply.json["permissions"].as_object().unwrap().len(),
                1,
                "only `deny`"
            );
            deny = strings(&reply.json["permissions"]["deny"]);
        }
    }
    for t in &tools {
        assert!(
            !deny.contains(t),
            "{t} is in the session's tools and in deny"
        );
        if let Some(server) = t.strip_prefix("mcp__").and_then(|r| r.split("__").next()) {
            assert!(
                !deny.contains(&format!("mcp__{server}")),
                "the server of {t} is denied whole"
            );
        }
    }
    let unique: BTreeSet<&String> = deny.iter().collect();
    assert_eq!(unique.len(), deny.len(), "no rule twice: {deny:?}");
    for builtin in ["Agent", "NotebookEdit", "TodoWrite"] {
        assert!(
            deny.iter().any(|d| d == builtin),
            "seed 000: no role is offered {builtin}: {deny:?}"
        );
    }
    deny
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn person_chat_config_is_the_session_s_allowlist_and_endpoints_in_every_format() {
    let s = serve("person", "require_review = false", "", &[]).await;
    s.connect("acme", "github").await;
    s.connect("acme", "agentmail").await;
    let view = s.open("acme", "person-chat", None).await;
    let tools = tools_of(&view);
    assert!(has_all(&tools, &DEPLOYMENT_BUILTINS), "{tools:?}");
    assert!(
        tools.iter().any(|t| t == "mcp__github__github_read_file")
            && tools.iter().any(|t| t == "mcp__memory__soul_update")
    );
    // The connectors', and the host's own (`scout`: capability requests).
    assert_eq!(
        view["mcp"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["agentmail", "github", "scout"]
    );

    let deny = check_formats(&s, &view).await;
    for b in DEPLOYMENT_BUILTINS {
        assert!(
            !deny.iter().any(|d| d == b),
            "person chat holds {b}: {deny:?}"
        );
    }
    // No coworker, skill or goals engine: those servers are denied whole.
    for server in [
        "mcp__team",
        "mcp__skills",
        "mcp__goals",
        "mcp__sandbox",
        "mcp__writer",
    ] {
        assert!(deny.iter().any(|d| d == server), "{server}: {deny:?}");
    }
    // AgentMail's sends are not registered without AGENTMAIL_ALLOW_SENDS: denied by name.
    assert!(
        deny.iter()
            .any(|d| d == "mcp__agentmail__agentmail_send_message"),
        "{deny:?}"
    );
    assert!(
        !deny
            .iter()
            .any(|d| d == "mcp__agentmail" || d == "mcp__github" || d == "mcp__memory"),
        "{deny:?}"
    );

    // The view shown later is the same session: same tools, no token.
    let later = s
        .admin(
            Method::GET,
            &format!("/v1/sessions/{}", view["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(tools_of(&later), tools);
    assert!(later.get("token").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn narrow_roles_deny_every_built_in_and_server_they_are_not_given() {
    let s = serve(
        "narrow",
        "require_review = false",
        "",
        &[("AGENTMAIL_WEBHOOK_URL_SECRET", "hook-secret")],
    )
    .await;
    s.connect("acme", "github").await;
    s.connect("acme", "agentmail").await;

    // An inbound email turn: AgentMail's read and draft tools, nothing else.
    let inbound = s.open("acme", "inbound-email", None).await;
    let tools = tools_of(&inbound);
    assert_eq!(tools.len(), 11, "{tools:?}");
    assert!(
        tools.iter().all(|t| t.starts_with("mcp__agentmail__")),
        "{tools:?}"
    );
    assert_eq!(
        inbound["mcp"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["agentmail"]
    );
    let deny = check_formats(&s, &inbound).await;
    for b in DEPLOYMENT_BUILTINS {
        assert!(
            deny.iter().any(|d| d == b),
            "an inbound turn has no built-in; {b} is not denied: {deny:?}"
        );
    }
    for server in [
        "mcp__github",
        "mcp__memory",
        "mcp__project",
        "mcp__transcripts",
        "mcp__team",
        "mcp__skills",
        "mcp__goals",
    ] {
        assert!(deny.iter().any(|d| d == server), "{server}: {deny:?}");
    }
    for send in [
        "agentmail_send_message",
        "agentmail_reply_to_message",
        "agentmail_forward_message",
        "agentmail_send_draft",
    ] {
        assert!(
            deny.contains(&format!("mcp__agentmail__{send}")),
            "{send}: {deny:?}"
        );
    }

    // A coworker asking for Read and one project tool: no connector at all,
    // only the host's own endpoint, to ask its run owner for a capability.
    let profile = json!({"name": "helper", "tools": ["Read", "mcp__project__project_read"], "limits": serde_json::from_str::<Value>(LIMITS).unwrap()});
    s.save_profile("acme", "coworker", profile).await;
    let coworker = s.open("acme", "coworker", Some("helper")).await;
    assert_eq!(
        tools_of(&coworker),
        [
            "Read",
            "mcp__project__project_read",
            "mcp__scout__scout_request_capability"
        ]
    );
    assert_eq!(
        coworker["mcp"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["scout"]
    );
    let deny = check_formats(&s, &coworker).await;
    for b in [
        "Bash",
        "Write",
        "Edit",
        "Glob",
        "Grep",
        "WebSearch",
        "WebFetch",
    ] {
        assert!(deny.iter().any(|d| d == b), "{b}: {deny:?}");
    }
    assert!(!deny.iter().any(|d| d == "Read"));
    for rule in [
        "mcp__github",
        "mcp__agentmail",
        "mcp__memory",
        "mcp__team",
        "mcp__project__project_delete",
        "mcp__project__project_write",
    ] {
        assert!(deny.iter().any(|d| d == rule), "{rule}: {deny:?}");
    }
    assert!(
        !deny.iter().any(|d| d == "mcp__project"),
        "the session holds a project tool"
    );
    let sdk = s
        .agent_config(coworker["id"].as_str().unwrap(), "claude-agent-sdk")
        .await;
    assert_eq!(
        sdk.json["mcpServers"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["scout"],
        "the host's own server only"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_held_for_review_is_left_out_of_tools_and_denied() {
    // Review on (the default): GitHub's and AgentMail's tools are held.
    let s = serve("review", "", "", &[]).await;
    s.connect("acme", "github").await;
    let view = s.open("acme", "person-chat", None).await;
    let tools = tools_of(&view);
    assert!(
        !tools.iter().any(|t| t.starts_with("mcp__github__")),
        "{tools:?}"
    );
    assert!(
        view["mcp"]["github"].is_string(),
        "the endpoint exists; its tools are held"
    );
    let deny = check_formats(&s, &view).await;
    assert!(deny.iter().any(|d| d == "mcp__github"), "{deny:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_format_unknown_session_and_wrong_token_are_refused() {
    let s = serve("errors", "require_review = false", "", &[]).await;
    s.connect("acme", "github").await;
    let view = s.open("acme", "person-chat", None).await;
    let id = view["id"].as_str().unwrap();
    let token = view["token"].as_str().unwrap();
    let error = |reply: &Reply| -> (u16, String, String) {
        let e = &reply.json["error"];
        assert_eq!(
            reply.json.as_object().map(|o| o.len()),
            Some(1),
            "{}",
            reply.text
        );
        (
            reply.status,
            e["code"].as_str().unwrap_or_default().to_string(),
            e["message"].as_str().unwrap_or_default().to_string(),
        )
    };
    for query in [
        "",
        "?format=",
        "?format=xml",
        "?format=Claude-Code",
        "?format=allowedTools",
        "?format=claude-code&format=yaml",
    ] {
        let reply = s
            .request(
                Method::GET,
                &format!("/v1/sessions/{id}/agent-config{query}"),
                Some(ADMIN_TOKEN),
                None,
            )
            .await;
        let (status, code, message) = error(&reply);
        assert_eq!(
            (status, code.as_str()),
            (400, "invalid_query"),
            "{query:?}: {}",
            reply.text
        );
        for f in FORMATS {
            assert!(
                message.contains(f),
                "{query:?}: the message names {f}: {message}"
            );
        }
    }
    let reply = s
        .request(
            Method::GET,
            &format!("/v1/sessions/{id}/agent-config?format=mcp-json&verbose=1"),
            Some(ADMIN_TOKEN),
            None,
        )
        .await;
    assert_eq!(error(&reply).0, 400, "an unknown parameter is refused");
    assert_eq!(error(&reply).1, "invalid_query");
    let reply = s
        .agent_config("s-000000000000000000000000", "claude-code")
        .await;
    assert_eq!(error(&reply).0, 404);
    assert_eq!(error(&reply).1, "not_found");
    for bearer in [None, Some(token), Some("not-the-admin-token-0123456789")] {
        let reply = s
            .request(
                Method::GET,
                &format!("/v1/sessions/{id}/agent-config?format=claude-code"),
                bearer,
                None,
            )
            .await;
        assert_eq!(
            error(&reply).0,
            401,
            "{bearer:?}: the admin token, not the session's"
        );
        assert!(
            !reply.text.contains("mcp__"),
            "nothing of the session leaks: {}",
            reply.text
        );
    }
    // An ended session has no configuration.
    s.admin(Method::DELETE, &format!("/v1/sessions/{id}"), None)
        .await;
    assert_eq!(s.agent_config(id, "mcp-json").await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn team_tools_appear_where_the_brand_has_a_saved_coworker() {
    let s = serve("team", "require_review = false", "", &[]).await;
    let limits: Value = serde_json::from_str(LIMITS).unwrap();

    // No profile yet: no team tool, anywhere.
    let before = s.open("acme", "person-chat", None).await;
    assert!(
        has_none(&tools_of(&before), &TEAM),
        "{:?}",
        tools_of(&before)
    );
    let removed = s.removed_in_trace(before["id"].as_str().unwrap()).await;
    for t in TEAM {
        assert_eq!(
            removed.get(t).map(String::as_str),
            Some("no_coworkers"),
            "the trace says why {t} is missing: {removed:?}"
        );
    }

    // A saved coworker gives acme's person chat the five team tools, in
    // the session's tools, the trace's `offered` event and every format.
    s.save_profile(
        "acme",
        "coworker",
        json!({"name": "researcher", "tools": ["Read"], "limits": limits}),
    )
    .await;
    let person = s.open("acme", "person-chat", None).await;
    let tools = tools_of(&person);
    assert!(has_all(&tools, &TEAM), "{tools:?}");
    let offered = s.offered_in_trace(person["id"].as_str().unwrap()).await;
    assert!(
        TEAM.iter().all(|t| offered.contains(*t)),
        "the trace's offered event lists the team tools: {offered:?}"
    );
    let removed = s.removed_in_trace(person["id"].as_str().unwrap()).await;
    assert!(
        TEAM.iter().all(|t| !removed.contains_key(*t)),
        "{removed:?}"
    );
    let deny = check_formats(&s, &person).await;
    assert!(!deny.iter().any(|d| d.starts_with("mcp__team")), "{deny:?}");
    // The session opened before the coworker was saved keeps what it had.
    assert!(has_none(
        &tools_of(
            &s.admin(
                Method::GET,
                &format!("/v1/sessions/{}", before["id"].as_str().unwrap()),
                None
            )
            .await
        ),
        &TEAM
    ));

    // Where seed 000 puts them: a read-only route on the default harness
    // too; never a coworker run.
    assert!(has_all(
        &tools_of(&s.open("acme", "read-only", None).await),
        &TEAM
    ));
    let run = s.open("acme", "coworker", Some("researcher")).await;
    assert!(has_none(&tools_of(&run), &TEAM));
    assert!(
        check_formats(&s, &run)
            .await
            .iter()
            .any(|d| d == "mcp__team")
    );

    // Another brand's coworker is not acme's; a goal agent profile is not a coworker.
    assert!(has_none(
        &tools_of(&s.open("beta", "person-chat", None).await),
        &TEAM
    ));
    let goal_tools = [
        "Read",
        "Glob",
        "Grep",
        "WebSearch",
        "WebFetch",
        "mcp__project__project_list",
        "mcp__project__project_read",
        "mcp__project__project_write",
    ];
    s.save_profile(
        "gamma",
        "goal_agent",
        json!({"name": "goal-agent", "tools": goal_tools, "limits": {"runBudgetUsd": 0.5, "maxTurns": 10, "maxConcurrentRuns": 1, "maxDelegationDepth": 0, "maxAttempts": 2}}),
    )
    .await;
    assert!(has_none(
        &tools_of(&s.open("gamma", "person-chat", None).await),
        &TEAM
    ));

    // Deleting the last coworker removes them from the next session.
    s.admin(Method::DELETE, "/v1/brands/acme/profiles/researcher", None)
        .await;
    assert!(has_none(
        &tools_of(&s.open("acme", "person-chat", None).await),
        &TEAM
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skills_and_goals_tools_follow_the_brand_s_table_in_the_configuration() {
    let tables = "[brands.acme]\nskills = [\"seo-method\", \"voice-guide\"]\ngoals_engine = true\n\n[brands.beta]\nskills = []\ngoals_engine = false\n\n[brands.delta]\nskills = [\"humanizer\"]\n";
    let s = serve("skills-goals", "require_review = false", tables, &[]).await;

    let acme = s.open("acme", "person-chat", None).await;
    let tools = tools_of(&acme);
    assert!(
        has_all(&tools, &SKILLS) && has_all(&tools, &GOALS),
        "{tools:?}"
    );
    let offered = s.offered_in_trace(acme["id"].as_str().unwrap()).await;
    assert!(
        SKILLS
            .iter()
            .chain(GOALS.iter())
            .all(|t| offered.contains(*t)),
        "{offered:?}"
    );
    let deny = check_formats(&s, &acme).await;
    assert!(
        !deny
            .iter()
            .any(|d| d.starts_with("mcp__skills") || d.starts_with("mcp__goals")),
        "{deny:?}"
    );

    // A table that states nothing, and no table at all: neither.
    for brand in ["beta", "gamma"] {
        let view = s.open(brand, "person-chat", None).await;
        assert!(
            has_none(&tools_of(&view), &SKILLS) && has_none(&tools_of(&view), &GOALS),
            "{brand}"
        );
        let deny = check_formats(&s, &view).await;
        assert!(
            deny.iter().any(|d| d == "mcp__skills") && deny.iter().any(|d| d == "mcp__goals"),
            "{brand}: {deny:?}"
        );
        let removed = s.removed_in_trace(view["id"].as_str().unwrap()).await;
        assert_eq!(
            removed.get(SKILLS[0]).map(String::as_str),
            Some("no_skills"),
            "{brand}: {removed:?}"
        );
        assert_eq!(
            removed.get(GOALS[0]).map(String::as_str),
            Some("goals_engine_off"),
            "{brand}: {removed:?}"
        );
    }

    // Skills without the goals engine.
    let delta = tools_of(&s.open("delta", "person-chat", None).await);
    assert!(
        has_all(&delta, &SKILLS) && has_none(&delta, &GOALS),
        "{delta:?}"
    );

    // The policy decides per role: a read-only route keeps skills, never goals.
    let read_only = tools_of(&s.open("acme", "read-only", None).await);
    assert!(
        has_all(&read_only, &SKILLS) && has_none(&read_only, &GOALS),
        "{read_only:?}"
    );
}
