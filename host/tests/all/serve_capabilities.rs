//! `serve` hands a session's calls a `meter` and `folder`s: through the real
//! [`ServeHost`] (real SQLite file, the `capabilities` test guest built from
//! source, a loopback upstream that records every request).
//!
//! Meter: a grant's allowance spends, an over-allowance reservation is
//! refused with nothing sent, the per-day figure holds across sessions,
//! concurrent reservations never pass the run's figure, and a session with
//! no allowance gets `denied`. Folders: confined reads, lists and writes,
//! read-only folders, escapes, the `{brand}` root and a hostile brand.

use crate::common;
use scout_host::boundary::{CallRequest, Executed};
use scout_host::policy::{Allowance, Grant, Limits, Profile, presets};
use scout_host::serve::{HostError, OpenSession, ServeHost};
use scout_host::store::ProfileKind;
use scout_host::store::prelude::*;
use scout_tests::TempDb;
use scout_tests::upstream::Upstream;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const ADMIN_TOKEN: &str = "admin-token-for-serve-capabilities-0123";
const SECRET: &str = "capabilities-upstream-secret-0123456789";
const CONNECTOR: &str = "capabilities";

fn test_env(name: &str) -> Option<String> {
    match name {
        "SCOUT_ADMIN_TOKEN" => Some(ADMIN_TOKEN.to_string()),
        "SCOUT_STORE_KEY" => Some("7e".repeat(32)),
        _ => None,
    }
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "scout-serve-caps-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir.canonicalize().unwrap())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Fixture {
    host: Arc<ServeHost>,
    upstream: Upstream,
    _db: TempDb,
}

/// `serve` with the `capabilities` guest bound to a loopback upstream;
/// `extra` is appended to its `[connectors.capabilities]` section.
async fn serve(name: &str, extra: &str) -> Fixture {
    serve_with(name, extra, &[]).await
}

/// [`serve`] with operator switches.
async fn serve_with(name: &str, extra: &str, switches: &[(&str, &str)]) -> Fixture {
    let upstream = Upstream::start().await;
    let db = TempDb::new(&format!("serve-caps-{name}"));
    let component = Path::new(scout_tests::components::CAPABILITIES)
        .canonicalize()
        .unwrap();
    let text = format!(
        "listen = \"127.0.0.1:0\"\nrequire_review = false\n\n[connectors.{CONNECTOR}]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\n{extra}\n",
        component.display().to_string(),
        upstream.origin()
    );
    let host = common::start_host(&text, &db, switches, test_env);
    Fixture {
        host,
        upstream,
        _db: db,
    }
}

fn grant(per_run: u64, per_day: u64) -> Grant {
    Grant {
        connectors: vec![CONNECTOR.into()],
        allowances: [(
            CONNECTOR.to_string(),
            Allowance::Credits {
                per_run_credits: per_run,
                per_day_credits: per_day,
            },
        )]
        .into(),
        skills: vec![],
        ..Default::default()
    }
}

fn mcp(tool: &str) -> String {
    format!("mcp__{CONNECTOR}__{CONNECTOR}_{tool}")
}

impl Fixture {
    /// Stores `brand`'s connection, so the connector is served to it.
    fn connect(&self, brand: &str) {
        self.host
            .host()
            .put_connection(brand, CONNECTOR, SECRET)
            .unwrap();
    }

    /// A specialist profile for acme with `grant` and `tools` besides the guest's reads.
    fn specialist(&self, name: &str, grant: Grant, project: &[&str]) {
        let mut tools: Vec<String> = ["spend", "read_text", "list_entries"]
            .iter()
            .map(|t| mcp(t))
            .collect();
        tools.push("Read".into());
        tools.extend(project.iter().map(|t| t.to_string()));
        let profile = Profile {
            name: name.into(),
            tools,
            grant,
            limits: Limits::preset(),
        };
        scout_host::store::block(self.host.host().store().save_profile(
            "acme",
            &profile,
            ProfileKind::Coworker,
            &self.host.host().catalog(),
        ))
        .expect("the profile is valid");
    }

    /// The goal agent's profile for acme with `grant`.
    fn goal_agent(&self, name: &str, grant: Grant) {
        let mut profile = presets::goal_agent(grant);
        profile.name = name.into();
        scout_host::store::block(self.host.host().store().save_profile(
            "acme",
            &profile,
            ProfileKind::GoalAgent,
            &self.host.host().catalog(),
        ))
        .expect("the profile is valid");
    }

    fn open(&self, brand: &str, role: &str, profile: Option<&str>) -> Result<String, HostError> {
        let view = self.host.open_session(&OpenSession {
            brand: brand.into(),
            role: role.into(),
            profile: profile.map(String::from),
            ..Default::default()
        })?;
        Ok(view.id)
    }

    /// Calls `tool` of the guest in session `id`; the guest's answer as JSON.
    async fn call(&self, id: &str, tool: &str, args: Value) -> Value {
        let live = self.host.host().session(id).expect("the session is open");
        match self
            .host
            .host()
            .call(
                &live,
                CONNECTOR,
                CallRequest::new(&format!("{CONNECTOR}_{tool}"), &args),
            )
            .await
        {
            Ok(Executed::Ran(outcome)) => serde_json::to_value(&outcome.output).unwrap(),
            Ok(Executed::Failed(e)) => json!({"host-error": e.to_string()}),
            Err(denied) => json!({"denied": denied.to_string()}),
        }
    }

    /// Approves every approval session `id` asks for, until dropped
    /// (person chat asks a person before each billing call and each write).
    fn approver(&self, id: &str) -> AbortOnDrop {
        self.answering(id, true)
    }

    /// A person answering every approval session `id` asks for with
    /// `approve`, until dropped.
    fn answering(&self, id: &str, approve: bool) -> AbortOnDrop {
        let (store, id) = (self.host.host().store().clone(), id.to_string());
        AbortOnDrop(tokio::spawn(async move {
            loop {
                for a in scout_host::store::block(store.pending(&id)).unwrap_or_default() {
                    let _ = scout_host::store::block(store.decide(a.id, approve, "a person"));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }))
    }

    fn requests(&self) -> usize {
        self.upstream.seen().len()
    }

    /// What the store's ledger recorded for a session's run.
    fn charged(&self, id: &str) -> u64 {
        scout_host::store::block(
            self.host
                .host()
                .store()
                .charges_in_run(&format!("{id}:{CONNECTOR}")),
        )
        .unwrap()
        .iter()
        .map(|c| c.amount)
        .sum()
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A capability's refusal in a tool's error, whatever shape the contract
/// gives it (a `capability` record with `kind` and `amount`, or the
/// capability's own variant): `(kind, amount)`.
fn refusal(output: &Value) -> Option<(String, Option<u64>)> {
    const KINDS: [&str; 8] = [
        "run-exhausted",
        "day-exhausted",
        "denied",
        "invalid",
        "not-found",
        "invalid-path",
        "too-large",
        "io",
    ];
    fn find(v: &Value) -> Option<(String, Option<u64>)> {
        let obj = v.as_object()?;
        if let Some(kind) = obj.get("kind").and_then(Value::as_str) {
            return Some((kind.to_string(), obj.get("amount").and_then(Value::as_u64)));
        }
        for (k, inner) in obj {
            if KINDS.contains(&k.as_str()) {
                return Some((k.clone(), inner.as_u64()));
            }
            if let Some(found) = find(inner) {
                return Some(found);
            }
        }
        None
    }
    find(output.get("err")?)
}

fn kind(output: &Value) -> String {
    refusal(output)
        .unwrap_or_else(|| panic!("a capability's refusal: {output}"))
        .0
}

#[tokio::test(flavor = "multi_thread")]
async fn a_specialist_spends_its_grant_and_an_over_allowance_reservation_sends_nothing() {
    let f = serve("spend", "").await;
    f.connect("acme");
    // The Researcher preset's figures: 25 credits per run, 100 per day.
    f.specialist("researcher", grant(25, 100), &[]);
    let id = f.open("acme", "specialist", Some("researcher")).unwrap();

    let scrape = f
        .call(
            &id,
            "spend",
            json!({"estimate": 5, "actual": 1, "path": "/scrape"}),
        )
        .await;
    assert_eq!(scrape, json!({"ok": 24}), "charged 1 of 25");
    assert_eq!(f.requests(), 1);
    assert_eq!(f.upstream.seen()[0].uri, "/scrape");

    let crawl = f
        .call(
            &id,
            "spend",
            json!({"estimate": 50, "actual": 50, "path": "/crawl"}),
        )
        .await;
    assert_eq!(
        refusal(&crawl),
        Some(("run-exhausted".to_string(), Some(24))),
        "{crawl}"
    );
    assert_eq!(
        f.requests(),
        1,
        "the refused reservation sent nothing upstream"
    );

    // The run is durable: the store holds the charge, and the session's end ends the run.
    assert_eq!(f.charged(&id), 1);
    assert!(f.host.host().end_session(&id));
    let again = f.open("acme", "specialist", Some("researcher")).unwrap();
    let left = f
        .call(&again, "spend", json!({"estimate": 2, "actual": 2}))
        .await;
    assert_eq!(
        left,
        json!({"ok": 23}),
        "a new session is a new run with its whole per-run figure"
    );
    // `/metrics` counts what the ledger charged and what the meter refused.
    let text = f.host.host().metrics_text().await;
    let sample = |line: &str| -> f64 {
        text.lines()
            .find_map(|l| {
                l.strip_prefix(line)
                    .map(|v| v.trim().parse::<f64>().unwrap())
            })
            .unwrap_or_else(|| panic!("no sample {line}:\n{text}"))
    };
    assert_eq!(
        sample(r#"scout_allowance_charged_total{connector="capabilities",unit="credits"}"#),
        3.0,
        "1 then 2 credits"
    );
    assert_eq!(
        sample(
            r#"scout_allowance_refusals_total{connector="capabilities",reason="run_exhausted"}"#
        ),
        1.0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_per_day_figure_holds_across_goal_agent_sessions() {
    let f = serve("day", "").await;
    f.connect("acme");
    f.goal_agent("agent", grant(25, 40));
    let a = f.open("acme", "goal-agent", Some("agent")).unwrap();
    let b = f.open("acme", "goal-agent", Some("agent")).unwrap();

    // A's first call starts its run: 25 of the day's 40 are held.
    assert_eq!(
        f.call(
            &a,
            "spend",
            json!({"estimate": 10, "actual": 10, "path": "/a"})
        )
        .await,
        json!({"ok": 15})
    );
    // B's run cannot start: 25 held + 25 would pass 40. Nothing is sent.
    let refused = f
        .call(
            &b,
            "spend",
            json!({"estimate": 1, "actual": 1, "path": "/b"}),
        )
        .await;
    assert_eq!(
        refusal(&refused),
        Some(("day-exhausted".to_string(), Some(15))),
        "{refused}"
    );
    assert_eq!(f.requests(), 1, "the day-exhausted call sent nothing");

    // A ends having spent 10: the day counts 10, so B's run now fits (10 + 25 <= 40).
    f.host.host().end_session(&a);
    assert_eq!(
        f.call(
            &b,
            "spend",
            json!({"estimate": 4, "actual": 3, "path": "/b"})
        )
        .await,
        json!({"ok": 22})
    );
    assert_eq!(f.requests(), 2);

    // A third session: 10 ended + 25 live + 25 > 40.
    let c = f.open("acme", "goal-agent", Some("agent")).unwrap();
    let refused = f
        .call(&c, "spend", json!({"estimate": 1, "path": "/c"}))
        .await;
    assert_eq!(
        refusal(&refused),
        Some(("day-exhausted".to_string(), Some(5))),
        "{refused}"
    );
    assert_eq!(f.requests(), 2);

    // Another brand's day is its own.
    f.connect("globex");
    let mut profile = presets::goal_agent(grant(25, 40));
    profile.name = "agent".into();
    scout_host::store::block(f.host.host().store().save_profile(
        "globex",
        &profile,
        ProfileKind::GoalAgent,
        &f.host.host().catalog(),
    ))
    .unwrap();
    let g = f.open("globex", "goal-agent", Some("agent")).unwrap();
    assert_eq!(
        f.call(&g, "spend", json!({"estimate": 1, "actual": 1}))
            .await,
        json!({"ok": 24})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_reservations_never_exceed_the_run_allowance() {
    let f = serve("concurrent", "").await;
    f.connect("acme");
    f.specialist("researcher", grant(20, 100), &[]);
    let id = f.open("acme", "specialist", Some("researcher")).unwrap();
    let f = Arc::new(f);
    let mut tasks = Vec::new();
    for _ in 0..40 {
        let (f, id) = (f.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            f.call(&id, "spend", json!({"estimate": 1, "actual": 1}))
                .await
        }));
    }
    let (mut ok, mut refused) = (0, 0);
    for task in tasks {
        let output = task.await.unwrap();
        if output.get("ok").is_some() {
            ok += 1;
        } else {
            assert_eq!(kind(&output), "run-exhausted", "{output}");
            refused += 1;
        }
    }
    assert_eq!((ok, refused), (20, 20));
    // All 40 first calls raced to start the session's run; one started, and
    // the ledger holds exactly the run's figure.
    assert_eq!(f.charged(&id), 20);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_an_allowance_reserve_is_denied_and_nothing_is_sent() {
    // Person chat with no `person_allowance`: no meter.
    let f = serve("no-allowance", "").await;
    f.connect("acme");
    let id = f.open("acme", "person-chat", None).unwrap();
    let _approver = f.approver(&id);
    let output = f
        .call(
            &id,
            "spend",
            json!({"estimate": 1, "actual": 1, "path": "/x"}),
        )
        .await;
    assert_eq!(kind(&output), "denied", "{output}");
    assert_eq!(f.requests(), 0, "nothing sent");
    assert_eq!(f.charged(&id), 0);

    // A plain coworker cannot be granted the connector at all; a goal agent
    // without a grant is not served it.
    let id = f.open("acme", "goal-agent", None).unwrap();
    let output = f
        .call(&id, "spend", json!({"estimate": 1, "path": "/x"}))
        .await;
    assert!(output.get("denied").is_some(), "{output}");
    assert_eq!(f.requests(), 0, "nothing sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn person_chat_spends_the_operators_person_allowance() {
    let f = serve(
        "person",
        "[connectors.capabilities.person_allowance]\nper_run_credits = 3\nper_day_credits = 10\n",
    )
    .await;
    f.connect("acme");
    let id = f.open("acme", "person-chat", None).unwrap();
    let _approver = f.approver(&id);
    assert_eq!(
        f.call(
            &id,
            "spend",
            json!({"estimate": 2, "actual": 2, "path": "/p"})
        )
        .await,
        json!({"ok": 1})
    );
    let over = f
        .call(&id, "spend", json!({"estimate": 2, "path": "/q"}))
        .await;
    assert_eq!(
        refusal(&over),
        Some(("run-exhausted".to_string(), Some(1))),
        "{over}"
    );
    assert_eq!(f.requests(), 1, "the refused reservation sent nothing");
    assert_eq!(f.charged(&id), 2);
}

/// A run starts at the first call the boundary allows, not at a call it
/// refuses: the meter is bound after the decision. A billed call a person
/// denies sends nothing and leaves no run holding the day's figure.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_a_person_denies_builds_no_handle_and_starts_no_run() {
    let f = serve(
        "denied-run",
        "[connectors.capabilities.person_allowance]\nper_run_credits = 3\nper_day_credits = 10\n",
    )
    .await;
    f.connect("acme");
    let id = f.open("acme", "person-chat", None).unwrap();
    let granted = f.host.host().handles_granted();
    let denier = f.answering(&id, false);
    let denied = f
        .call(
            &id,
            "spend",
            json!({"estimate": 2, "actual": 2, "path": "/p"}),
        )
        .await;
    assert!(denied.get("denied").is_some(), "{denied}");
    drop(denier);
    assert_eq!(f.requests(), 0, "the denied call sent nothing");
    assert_eq!(f.charged(&id), 0);
    assert_eq!(
        f.host.host().store().end_live_runs(i64::MAX).await.unwrap(),
        0,
        "no run was started for a call the boundary refused"
    );
    assert_eq!(
        f.host.host().handles_granted(),
        granted,
        "no handle was built and no credential resolved for it"
    );
    // The next call a person approves starts the run and spends from it.
    let _approver = f.approver(&id);
    assert_eq!(
        f.call(
            &id,
            "spend",
            json!({"estimate": 2, "actual": 2, "path": "/q"})
        )
        .await,
        json!({"ok": 1})
    );
    assert_eq!(f.requests(), 1);
    assert_eq!(f.charged(&id), 2);
    assert_eq!(
        f.host.host().handles_granted(),
        granted + 1,
        "granted once allowed"
    );
}

fn folders_config(root: &Path) -> String {
    format!(
        "[connectors.capabilities.folders.project]\nroot = \"{0}/{{brand}}/project\"\nwritable = true\n\n[connectors.capabilities.folders.notes]\nroot = \"{0}/{{brand}}/notes\"\n",
        root.display()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn folders_read_list_and_write_inside_their_root_and_refuse_escapes() {
    let scratch = Scratch::new("folders");
    let f = serve("folders", &folders_config(&scratch.0)).await;
    f.connect("acme");
    let id = f.open("acme", "person-chat", None).unwrap();
    assert_eq!(f.host.host().folder_rights(&id), Some((true, true)));
    let _approver = f.approver(&id);
    let project = scratch.0.join("acme/project");

    // Written, then read back and listed, through the guest.
    let wrote = f
        .call(
            &id,
            "write_text",
            json!({"folder": "project", "path": "briefs/one.md", "text": "hello"}),
        )
        .await;
    assert_eq!(wrote, json!({"ok": true}));
    assert_eq!(
        std::fs::read_to_string(project.join("briefs/one.md")).unwrap(),
        "hello"
    );
    assert_eq!(
        f.call(
            &id,
            "read_text",
            json!({"folder": "project", "path": "briefs/one.md"})
        )
        .await,
        json!({"ok": "hello"})
    );
    assert_eq!(
        f.call(
            &id,
            "list_entries",
            json!({"folder": "project", "path": ""})
        )
        .await,
        json!({"ok": ["briefs"]})
    );
    // The `{brand}` root was created, 0700.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&project).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    // A read-only folder refuses the write and leaves nothing.
    let refused = f
        .call(
            &id,
            "write_text",
            json!({"folder": "notes", "path": "x.md", "text": "no"}),
        )
        .await;
    assert_eq!(kind(&refused), "denied", "{refused}");
    assert!(!scratch.0.join("acme/notes/x.md").exists());

    // Escapes: `..`, absolute paths, and a link leading outside.
    let outside = scratch.0.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&outside, project.join("link")).unwrap();
    for path in [
        "../notes/x.md",
        "briefs/../../outside/secret.txt",
        "/etc/passwd",
        &outside.join("secret.txt").display().to_string(),
        "link/secret.txt",
    ] {
        let read = f
            .call(&id, "read_text", json!({"folder": "project", "path": path}))
            .await;
        assert!(
            matches!(kind(&read).as_str(), "denied" | "invalid-path"),
            "{path}: {read}"
        );
        assert!(!read.to_string().contains("\"ok\""), "{path}: {read}");
    }
    // (The folder capability reports this one as `io`: the link is not a
    // directory it may create into.)
    let through = f
        .call(
            &id,
            "write_text",
            json!({"folder": "project", "path": "link/planted.txt", "text": "x"}),
        )
        .await;
    assert!(
        matches!(kind(&through).as_str(), "denied" | "invalid-path" | "io"),
        "{through}"
    );
    assert!(
        !outside.join("planted.txt").exists(),
        "nothing written outside the root"
    );
    let listed = f
        .call(
            &id,
            "list_entries",
            json!({"folder": "project", "path": "link"}),
        )
        .await;
    assert!(listed.get("err").is_some(), "{listed}");
    // A folder the configuration does not name.
    let unknown = f
        .call(&id, "read_text", json!({"folder": "home", "path": "x"}))
        .await;
    assert_eq!(kind(&unknown), "denied", "{unknown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn who_may_write_a_folder_follows_the_roles_project_folder() {
    let scratch = Scratch::new("rights");
    let f = serve("rights", &folders_config(&scratch.0)).await;
    f.connect("acme");
    // The goal agent's fixed tools are project list, read, write.
    f.goal_agent("agent", grant(25, 100));
    let goal = f.open("acme", "goal-agent", Some("agent")).unwrap();
    assert_eq!(f.host.host().folder_rights(&goal), Some((true, true)));
    // A specialist with project list and read only (the SEO analyst, the
    // Content writer) reads but never writes.
    f.specialist(
        "writer",
        grant(25, 100),
        &["mcp__project__project_list", "mcp__project__project_read"],
    );
    let writer = f.open("acme", "specialist", Some("writer")).unwrap();
    assert_eq!(f.host.host().folder_rights(&writer), Some((true, false)));
    f.specialist(
        "researcher",
        grant(25, 100),
        &[
            "mcp__project__project_list",
            "mcp__project__project_read",
            "mcp__project__project_write",
        ],
    );
    let researcher = f.open("acme", "specialist", Some("researcher")).unwrap();
    assert_eq!(f.host.host().folder_rights(&researcher), Some((true, true)));
    // A read-only route and the goal reviewer hold no folder. (An inbound
    // email turn is handed AgentMail's credentials only, so it cannot open
    // beside this guest; its allowlist has no project tool either.)
    for role in ["read-only", "goal-reviewer"] {
        let id = f.open("acme", role, None).unwrap();
        assert_eq!(
            f.host.host().folder_rights(&id),
            Some((false, false)),
            "{role}"
        );
    }

    // The goal agent reads what a person wrote, inside its root.
    std::fs::create_dir_all(scratch.0.join("acme/project")).unwrap();
    std::fs::write(scratch.0.join("acme/project/plan.md"), "step 1").unwrap();
    assert_eq!(
        f.call(
            &goal,
            "read_text",
            json!({"folder": "project", "path": "plan.md"})
        )
        .await,
        json!({"ok": "step 1"})
    );
    assert_eq!(
        f.call(
            &writer,
            "list_entries",
            json!({"folder": "project", "path": "."})
        )
        .await,
        json!({"ok": ["plan.md"]})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_brand_cannot_name_a_folder() {
    let scratch = Scratch::new("hostile");
    let f = serve("hostile", &folders_config(&scratch.0)).await;
    for brand in ["../escape", "..", ".hidden", "a/b", "x\u{0}y"] {
        f.connect(brand);
        match f.open(brand, "person-chat", None) {
            Err(HostError::BadRequest(message)) => assert!(
                message.contains("cannot name a folder"),
                "{brand:?}: {message}"
            ),
            other => panic!("{brand:?}: {:?}", other.map(|_| ())),
        }
    }
    assert!(
        !scratch.0.parent().unwrap().join("escape").exists(),
        "nothing created outside"
    );
    let entries: Vec<_> = std::fs::read_dir(&scratch.0).unwrap().collect();
    assert!(
        entries.is_empty(),
        "no folder was created for a hostile brand"
    );
    // A brand that is a safe segment gets its own root.
    f.connect("acme-2");
    let id = f.open("acme-2", "person-chat", None).unwrap();
    let _approver = f.approver(&id);
    assert_eq!(
        f.call(&id, "list_entries", json!({"folder": "notes", "path": ""}))
            .await,
        json!({"ok": []})
    );
    assert!(scratch.0.join("acme-2/notes").is_dir());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_that_expires_ends_its_run() {
    // `session_ttl_secs` is top level, so not through the fixture's `extra`.
    let upstream = Upstream::start().await;
    let db = TempDb::new("serve-caps-expiry");
    let component = Path::new(scout_tests::components::CAPABILITIES)
        .canonicalize()
        .unwrap();
    let text = format!(
        "listen = \"127.0.0.1:0\"\nrequire_review = false\nsession_ttl_secs = 1\n\n[connectors.{CONNECTOR}]\ncomponent = {:?}\norigin = {:?}\nallow_private_network = true\n",
        component.display().to_string(),
        upstream.origin()
    );
    let host = common::start_host(&text, &db, &[], test_env);
    let f = Fixture {
        host,
        upstream,
        _db: db,
    };
    f.connect("acme");
    f.goal_agent("agent", grant(25, 40));
    let a = f.open("acme", "goal-agent", Some("agent")).unwrap();
    assert_eq!(
        f.call(&a, "spend", json!({"estimate": 3, "actual": 3}))
            .await,
        json!({"ok": 22})
    );
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert_eq!(f.host.host().end_expired(), 1);
    // Had A's run stayed live it would hold 25 of 40; ended, it counts 3.
    let b = f.open("acme", "goal-agent", Some("agent")).unwrap();
    assert_eq!(
        f.call(&b, "spend", json!({"estimate": 1, "actual": 1}))
            .await,
        json!({"ok": 24})
    );
}

#[test]
fn runs_a_killed_host_left_live_are_ended_at_what_they_recorded() {
    use scout_host::store::{SqliteStore, StartRunError};
    let db = TempDb::new("serve-caps-live-runs");
    let day = "2026-12-01";
    {
        // The first host: two runs live when it is killed (never ended).
        let store = SqliteStore::open(db.path()).unwrap();
        scout_host::store::block(store.start_run(
            "s-1:capabilities",
            "acme",
            CONNECTOR,
            day,
            25,
            60,
        ))
        .unwrap();
        scout_host::store::block(store.start_run(
            "s-2:capabilities",
            "acme",
            CONNECTOR,
            day,
            25,
            60,
        ))
        .unwrap();
        scout_host::store::block(store.charge(
            "s-1:capabilities",
            CONNECTOR,
            "acme",
            day,
            4,
            "s-1:0",
        ))
        .unwrap();
    }
    let store = SqliteStore::open(db.path()).unwrap();
    assert!(matches!(
        scout_host::store::block(store.start_run(
            "s-3:capabilities",
            "acme",
            CONNECTOR,
            day,
            25,
            60
        )),
        Err(StartRunError::DayExhausted { committed: 50, .. })
    ));
    // What `serve` does at start: s-1 counts its 4, s-2 (nothing recorded) its 25.
    assert_eq!(scout_host::store::block(store.end_live_runs(0)).unwrap(), 2);
    assert_eq!(
        scout_host::store::block(store.end_live_runs(0)).unwrap(),
        0,
        "once"
    );
    scout_host::store::block(store.start_run("s-3:capabilities", "acme", CONNECTOR, day, 25, 60))
        .expect("4 + 25 + 25 fits in 60");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegation_ends_after_its_effects_and_at_its_expiry_and_says_who_made_it() {
    let f = serve("delegation", "").await;
    f.connect("acme");
    let listening = crate::common::listen(f.host.clone()).await;
    let http = crate::common::client();
    // Saved through the admin API: at most two billed calls, for 5 s. The
    // body's `grantedBy` is not who made it.
    let expires = (chrono::Utc::now() + chrono::Duration::seconds(5)).to_rfc3339();
    let mut grant = serde_json::to_value(grant(100, 1000)).unwrap();
    grant["maxEffects"] = json!(2);
    grant["expiresAt"] = json!(expires);
    grant["grantedBy"] = json!("someone the body names");
    let profile = json!({"kind": "coworker", "profile": {
        "name": "spender",
        "tools": [mcp("spend"), mcp("read_text"), "Read"],
        "grant": grant,
        "limits": serde_json::to_value(Limits::preset()).unwrap(),
    }});
    let put = |body: Value| {
        http.put(format!(
            "{}/v1/brands/acme/profiles/spender",
            listening.base
        ))
        .bearer_auth(ADMIN_TOKEN)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
    };
    // A malformed expiry or a zero budget is refused when saved.
    for (field, bad) in [("expiresAt", json!("tomorrow")), ("maxEffects", json!(0))] {
        let mut wrong = profile.clone();
        wrong["profile"]["grant"][field] = bad;
        let answer = put(wrong).await.unwrap();
        assert_eq!(answer.status().as_u16(), 422, "{field}");
    }
    let saved = put(profile).await.unwrap();
    assert_eq!(
        saved.status().as_u16(),
        200,
        "{}",
        saved.text().await.unwrap()
    );
    let stored: Value = serde_json::from_str(
        &http
            .get(format!(
                "{}/v1/brands/acme/profiles/spender",
                listening.base
            ))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        stored["profile"]["grant"]["grantedBy"], "admin-token",
        "{stored}"
    );

    // A session its orchestrator limits to one effect, inside the grant's
    // two: the second billed call is refused by the session's own rule,
    // with nothing sent. Limits beyond the grant's are refused at open.
    let spend = json!({"estimate": 1, "actual": 1, "path": "/spent"});
    let open_limited = |max_effects: Option<u32>, expires_at: Option<String>| {
        f.host.open_session(&OpenSession {
            brand: "acme".into(),
            role: "specialist".into(),
            profile: Some("spender".into()),
            max_effects,
            expires_at,
            ..Default::default()
        })
    };
    let limited = open_limited(Some(1), None).unwrap();
    assert_eq!(limited.limits.max_effects, Some(1));
    let out = f.call(&limited.id, "spend", spend.clone()).await;
    assert!(out.get("ok").is_some(), "{out}");
    let sent = f.upstream.seen().len();
    let second = f.call(&limited.id, "spend", spend.clone()).await;
    assert!(
        second["denied"]
            .as_str()
            .unwrap_or("")
            .starts_with("session effects used up"),
        "{second}"
    );
    assert_eq!(
        f.upstream.seen().len(),
        sent,
        "nothing sent past the session's limit"
    );
    let later = (chrono::DateTime::parse_from_rfc3339(&expires).unwrap()
        + chrono::Duration::seconds(60))
    .to_rfc3339();
    for (max_effects, expires_at, why) in [
        (Some(3), None, "more than the grant's 2"),
        (None, Some(later), "after the grant's end"),
        (Some(0), None, "1 or more"),
    ] {
        match open_limited(max_effects, expires_at) {
            Err(HostError::InvalidLimits(message)) => {
                assert!(message.contains(why), "{message}")
            }
            other => panic!("{why}: {:?}", other.map(|v| v.id)),
        }
    }

    let id = f.open("acme", "specialist", Some("spender")).unwrap();
    for _ in 0..2 {
        let out = f.call(&id, "spend", spend.clone()).await;
        assert!(out.get("ok").is_some(), "{out}");
    }
    let sent = f.upstream.seen().len();
    let third = f.call(&id, "spend", spend.clone()).await;
    assert!(
        third["denied"]
            .as_str()
            .unwrap_or("")
            .starts_with("delegation used up"),
        "{third}"
    );
    assert_eq!(
        f.upstream.seen().len(),
        sent,
        "nothing sent past the budget"
    );

    // Past its expiry nothing runs under it, reads included.
    let until = chrono::DateTime::parse_from_rfc3339(&expires).unwrap();
    while chrono::Utc::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let read = f
        .call(
            &id,
            "read_text",
            json!({"folder": "notes", "path": "a.txt"}),
        )
        .await;
    assert!(
        read["denied"]
            .as_str()
            .unwrap_or("")
            .starts_with("delegation expired"),
        "{read}"
    );
    let rules: Vec<String> = scout_host::store::block(f.host.host().store().trace_for_session(&id))
        .unwrap()
        .into_iter()
        .filter(|e| e.state.as_str() == "denied")
        .filter_map(|e| e.rule)
        .collect();
    assert_eq!(
        rules,
        ["delegation_exhausted", "delegation_expired"],
        "{rules:?}"
    );
}

/// One stateless MCP request (protocol 2026-07-28) to `url`; its JSON-RPC answer.
async fn mcp_request(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    method: &str,
    params: Value,
) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}});
    let mut request = http
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = params["name"].as_str() {
        request = request.header("mcp-name", name);
    }
    let response = request
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string())
        .send()
        .await
        .unwrap();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = response.text().await.unwrap();
    scout_tests::mcp_wire::jsonrpc_messages(&content_type, &text)
        .into_iter()
        .find(|m| m["id"] == 1)
        .unwrap_or_else(|| panic!("{method}: {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_sees_its_own_budget_and_nobody_elses() {
    let f = serve("budget", "").await;
    f.connect("acme");
    f.connect("globex");
    let mut limited = grant(100, 1000);
    limited.max_effects = Some(3);
    for brand in ["acme", "globex"] {
        let profile = Profile {
            name: "spender".into(),
            tools: vec![mcp("spend"), "Read".into()],
            grant: limited.clone(),
            limits: Limits::preset(),
        };
        scout_host::store::block(f.host.host().store().save_profile(
            brand,
            &profile,
            ProfileKind::Coworker,
            &f.host.host().catalog(),
        ))
        .unwrap();
    }
    let listening = crate::common::listen(f.host.clone()).await;
    let http = crate::common::client();
    let view = f
        .host
        .open_session(&OpenSession {
            brand: "acme".into(),
            role: "specialist".into(),
            profile: Some("spender".into()),
            ..Default::default()
        })
        .unwrap();
    assert!(
        view.tools.contains(&"mcp__scout__scout_budget".to_string()),
        "{:?}",
        view.tools
    );
    let scout = view.mcp["scout"].replace("127.0.0.1:0", &listening.addr.to_string());
    let token = view.token.clone().unwrap();
    let listed = mcp_request(&http, &scout, &token, "tools/list", json!({})).await;
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["scout_budget", "scout_request_capability"],
        "{listed}"
    );
    let budget = |http: reqwest::Client, url: String, token: String| async move {
        let answer = mcp_request(
            &http,
            &url,
            &token,
            "tools/call",
            json!({"name": "scout_budget", "arguments": {}}),
        )
        .await;
        answer["result"]["structuredContent"].clone()
    };
    let before = budget(http.clone(), scout.clone(), token.clone()).await;
    assert_eq!(before["connectors"][0]["connector"], CONNECTOR, "{before}");
    assert_eq!(before["connectors"][0]["unit"], "credits");
    assert_eq!(
        (
            before["connectors"][0]["run_left"].as_u64(),
            before["connectors"][0]["day_left"].as_u64()
        ),
        (Some(100), Some(1000)),
        "{before}"
    );
    assert_eq!(before["effects_left"], 3);

    let spent = f
        .call(&view.id, "spend", json!({"estimate": 10, "actual": 7}))
        .await;
    assert!(spent.get("ok").is_some(), "{spent}");
    let after = budget(http.clone(), scout.clone(), token.clone()).await;
    assert_eq!(
        (
            after["connectors"][0]["run_left"].as_u64(),
            after["connectors"][0]["day_left"].as_u64()
        ),
        (Some(93), Some(993)),
        "{after}"
    );
    assert_eq!(after["effects_left"], 2);

    // Another brand's run sees only its own figures.
    let other = f
        .host
        .open_session(&OpenSession {
            brand: "globex".into(),
            role: "specialist".into(),
            profile: Some("spender".into()),
            ..Default::default()
        })
        .unwrap();
    let other_scout = other.mcp["scout"].replace("127.0.0.1:0", &listening.addr.to_string());
    let theirs = budget(http.clone(), other_scout, other.token.clone().unwrap()).await;
    assert_eq!(
        (
            theirs["connectors"][0]["run_left"].as_u64(),
            theirs["connectors"][0]["day_left"].as_u64()
        ),
        (Some(100), Some(1000)),
        "{theirs}"
    );
    assert_eq!(theirs["effects_left"], 3);
    // The same figures in the instructions a client reads at `initialize`.
    let init = http
        .post(&scout)
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    let content_type = init.headers()["content-type"].to_str().unwrap().to_string();
    let text = init.text().await.unwrap();
    let init = scout_tests::mcp_wire::jsonrpc_messages(&content_type, &text).remove(0);
    let instructions = init["result"]["instructions"].as_str().unwrap_or("");
    assert!(
        instructions
            .contains("capabilities: 93 of 100 credits left in this run, 993 of 1000 today")
            && instructions.contains("2 of 3 writes or billed calls left"),
        "{instructions}"
    );
    // The trace records the host tool's calls.
    let traced = f
        .host
        .host()
        .store()
        .trace_for_session(&view.id)
        .await
        .unwrap();
    assert!(
        traced
            .iter()
            .any(|e| e.tool.as_deref() == Some("mcp__scout__scout_budget")
                && e.state.as_str() == "result")
    );

    // A session with no allowance and no counted delegation has no budget
    // tool (its host endpoint serves only the capability request).
    let plain = f
        .host
        .open_session(&OpenSession {
            brand: "acme".into(),
            role: "person-chat".into(),
            profile: None,
            ..Default::default()
        })
        .unwrap();
    assert!(
        !plain.tools.iter().any(|t| t == "mcp__scout__scout_budget"),
        "{:?}",
        plain.tools
    );
    assert!(
        plain
            .tools
            .iter()
            .any(|t| t == "mcp__scout__scout_request_capability")
    );
}
