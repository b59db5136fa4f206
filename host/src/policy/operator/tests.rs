//! Compile errors and decisions, without a host.

use super::schema::ServedTool;
use super::*;
use serde_json::json;

fn schema() -> DeploymentSchema {
    DeploymentSchema::from_tools([
        ServedTool {
            connector: "github".into(),
            tool: "github_create_branch".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "owner": {"type": "string"},
                    "repo": {"type": "string"},
                    "branch": {"type": "string"},
                    "from": {"type": "string"},
                },
                "required": ["owner", "repo", "branch"],
            }),
        },
        ServedTool {
            connector: "github".into(),
            tool: "github_read_file".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "ratio": {"type": "number"}},
                "required": ["path"],
            }),
        },
        ServedTool {
            connector: "agentmail".into(),
            tool: "agentmail_send_message".into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "to": {"type": "array", "items": {"type": "string"}},
                    "subject": {"type": "string"},
                },
                "required": ["to", "subject"],
            }),
        },
    ])
    .unwrap()
}

fn doc(name: &str, text: &str) -> PolicyDoc {
    PolicyDoc {
        name: name.into(),
        source: PolicySource::Api,
        text: text.into(),
    }
}

fn compile(text: &str) -> Result<OperatorPolicies, PolicyErrors> {
    let docs = [doc("rules.cedar", text)];
    OperatorPolicies::compile(&docs, &schema(), PolicyRevision::of(0, &docs))
}

fn facts(action: &str, connector: &str, args: Value) -> CallFacts {
    CallFacts {
        principal: PrincipalFacts {
            session: "s1".into(),
            brand: "acme".into(),
            role: "person_chat".into(),
            base_role: "person_chat".into(),
            profile: None,
            requester: None,
            person_can_be_asked: true,
        },
        action: action.into(),
        resource: ResourceFacts {
            connector: connector.into(),
            origin: "component".into(),
            effect: "write".into(),
            billing_unit: None,
            routes: vec!["POST /repos/{owner}/{repo}/git/refs".into()],
            destination: None,
        },
        args,
        history: HistoryFacts::default(),
        now_ms: 1_000,
    }
}

const BRANCHES: &str = r#"
@id("branches-under-scout")
forbid (principal, action == Scout::Action::"mcp__github__github_create_branch", resource)
unless { context.args.branch like "scout/*" };
"#;

#[test]
fn a_branch_prefix_rule_refuses_outside_the_prefix_and_allows_inside() {
    let policies = compile(BRANCHES).unwrap();
    let create = "mcp__github__github_create_branch";
    assert_eq!(
        policies.decide(&facts(
            create,
            "github",
            json!({"owner": "o", "repo": "r", "branch": "main2"})
        )),
        PolicyDecision::Forbid {
            policy: "branches-under-scout".into()
        }
    );
    assert_eq!(
        policies.decide(&facts(
            create,
            "github",
            json!({"owner": "o", "repo": "r", "branch": "scout/x"})
        )),
        PolicyDecision::Allow
    );
    // Another tool is not touched.
    assert_eq!(
        policies.decide(&facts(
            "mcp__github__github_read_file",
            "github",
            json!({"path": "a"})
        )),
        PolicyDecision::Allow
    );
    assert!(!policies.uses_history());
    assert_eq!(
        policies.forbids_always(
            &facts(create, "github", json!({})).principal,
            &facts(create, "github", json!({})).resource,
            create
        ),
        None,
        "it reads the arguments: offered, refused per call"
    );
}

#[test]
fn a_forbid_that_cannot_be_evaluated_fails_closed() {
    let policies = compile(BRANCHES).unwrap();
    // No `branch` at all (a remote tool's arguments need not fit): refused.
    assert_eq!(
        policies.decide(&facts(
            "mcp__github__github_create_branch",
            "github",
            json!({})
        )),
        PolicyDecision::Forbid {
            policy: "branches-under-scout".into()
        }
    );
}

#[test]
fn mail_only_to_our_domain_reads_every_address_argument() {
    let policies = compile(
        r#"@id("mail-own-domain")
forbid (principal, action == Scout::Action::"mcp__agentmail__agentmail_send_message", resource)
unless { ["scout.test"].containsAll(context.email_domains) };"#,
    )
    .unwrap();
    let send = "mcp__agentmail__agentmail_send_message";
    let decide = |to: Value| {
        policies.decide(&facts(
            send,
            "agentmail",
            json!({"to": to, "subject": "hi"}),
        ))
    };
    assert_eq!(
        decide(json!(["a@scout.test", "B <b@Scout.Test>"])),
        PolicyDecision::Allow
    );
    assert_eq!(
        decide(json!(["a@scout.test", "c@elsewhere.org"])),
        PolicyDecision::Forbid {
            policy: "mail-own-domain".into()
        }
    );
}

#[test]
fn recipients_outside_the_domain_are_refused() {
    let policies = compile(
        r#"forbid (principal, action == Scout::Action::"mcp__agentmail__agentmail_send_message", resource)
           when { context.args.to.containsAll(["a@example.com"]) == false && context.args.subject != "" }
           unless { context.args.to.isEmpty() };"#,
    )
    .unwrap();
    let send = "mcp__agentmail__agentmail_send_message";
    let decide = |to: Value| {
        policies.decide(&facts(
            send,
            "agentmail",
            json!({"to": to, "subject": "hi"}),
        ))
    };
    assert_eq!(decide(json!(["a@example.com"])), PolicyDecision::Allow);
    assert!(
        matches!(decide(json!(["b@elsewhere.org"])), PolicyDecision::Forbid { policy } if policy == "rules.cedar:1")
    );
}

#[test]
fn ask_person_asks_and_forbid_wins_over_it() {
    let policies = compile(
        r#"@id("ask-reads") @ask_person
forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource)
when { context.args.path like "secrets/*" };
@id("no-keys")
forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource)
when { context.args.path like "*.key" };"#,
    )
    .unwrap();
    let read = "mcp__github__github_read_file";
    let decide = |path: &str| policies.decide(&facts(read, "github", json!({"path": path})));
    assert_eq!(decide("README.md"), PolicyDecision::Allow);
    assert_eq!(
        decide("secrets/a"),
        PolicyDecision::AskPerson {
            policy: "ask-reads".into()
        }
    );
    assert_eq!(
        decide("secrets/a.key"),
        PolicyDecision::Forbid {
            policy: "no-keys".into()
        }
    );
    // An @ask_person forbid that reads nothing of the call still asks: never removed.
    let always = compile(r#"@ask_person forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource);"#).unwrap();
    let f = facts(read, "github", json!({"path": "a"}));
    assert_eq!(always.forbids_always(&f.principal, &f.resource, read), None);
}

#[test]
fn a_permit_never_widens_and_cannot_ask() {
    let policies = compile(r#"permit (principal, action, resource);"#).unwrap();
    let f = facts(
        "mcp__github__github_read_file",
        "github",
        json!({"path": "a"}),
    );
    assert_eq!(policies.decide(&f), PolicyDecision::Allow);
    let err = compile(r#"@ask_person permit (principal, action, resource);"#).unwrap_err();
    assert!(
        err.to_string().contains("allowed on a forbid only"),
        "{err}"
    );
}

#[test]
fn a_tool_forbidden_whatever_its_arguments_is_found_from_principal_and_resource() {
    let policies = compile(
        r#"@id("no-coworker-branches")
forbid (principal, action == Scout::Action::"mcp__github__github_create_branch", resource)
when { principal.base_role == "coworker" };"#,
    )
    .unwrap();
    let create = "mcp__github__github_create_branch";
    let mut f = facts(create, "github", json!({}));
    assert_eq!(
        policies.forbids_always(&f.principal, &f.resource, create),
        None
    );
    f.principal.base_role = "coworker".into();
    assert_eq!(
        policies
            .forbids_always(&f.principal, &f.resource, create)
            .as_deref(),
        Some("no-coworker-branches")
    );
    assert_eq!(
        policies.forbids_always(&f.principal, &f.resource, "mcp__github__github_read_file"),
        None
    );
    // Connector groups name every tool of a connector.
    let group =
        compile(r#"forbid (principal, action in Scout::Action::"connector:github", resource);"#)
            .unwrap();
    assert!(
        group
            .forbids_always(&f.principal, &f.resource, "mcp__github__github_read_file")
            .is_some()
    );
}

#[test]
fn history_is_read_only_when_a_policy_reads_it() {
    let policies = compile(
        r#"forbid (principal, action == Scout::Action::"mcp__agentmail__agentmail_send_message", resource)
           when { context.history.tool.in_session_last_hour >= 5 };"#,
    )
    .unwrap();
    assert!(policies.uses_history());
    let send = "mcp__agentmail__agentmail_send_message";
    let mut f = facts(send, "agentmail", json!({"to": [], "subject": "s"}));
    f.history.tool.in_session_last_hour = 4;
    assert_eq!(policies.decide(&f), PolicyDecision::Allow);
    f.history.tool.in_session_last_hour = 5;
    assert!(matches!(policies.decide(&f), PolicyDecision::Forbid { .. }));
}

#[test]
fn every_error_is_reported_at_once_with_its_line() {
    let err = compile(
        r#"// two mistakes
forbid (principal, action == Scout::Action::"mcp__github__github_create_branch", resource)
when { context.args.brnch like "scout/*" };

forbid (principal, action == Scout::Action::"mcp__github__github_create_branch", resource)
when { context.args.branch > 3 };
"#,
    )
    .unwrap_err();
    assert_eq!(err.0.len(), 2, "{err}");
    assert_eq!(err.0[0].line, 3, "{err}");
    assert_eq!(err.0[0].policy.as_deref(), Some("rules.cedar:2"), "{err}");
    assert!(err.0[0].message.contains("brnch"), "{err}");
    assert_eq!(err.0[1].line, 6, "{err}");
    let shown = err.to_string();
    assert!(shown.starts_with("rules.cedar:3:"), "{shown}");
    assert_eq!(shown.lines().count(), 2, "{shown}");
}

#[test]
fn an_argument_cedar_cannot_hold_is_refused_saying_why() {
    let err = compile(
        r#"forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource)
when { context.args.ratio > 1 };"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("Cedar holds no floats"), "{err}");
}

#[test]
fn parse_errors_and_duplicate_ids_are_located() {
    let err = compile("forbid (principal, action, resource)\nwhen { ;").unwrap_err();
    assert_eq!(err.0[0].line, 2, "{err}");
    assert_eq!(err.0[0].policy, None);
    let docs = [
        doc(
            "a.cedar",
            r#"@id("x") forbid (principal, action, resource) when { principal.brand == "a" };"#,
        ),
        doc(
            "b.cedar",
            "\n@id(\"x\") forbid (principal, action, resource) when { principal.brand == \"b\" };",
        ),
    ];
    let err =
        OperatorPolicies::compile(&docs, &schema(), PolicyRevision::of(0, &docs)).unwrap_err();
    assert_eq!(err.0.len(), 1, "{err}");
    assert!(
        err.to_string()
            .starts_with("b.cedar:2:1: policy x: policy id `x` is already used at a.cedar:1"),
        "{err}"
    );
}

#[test]
fn the_revision_names_the_api_count_and_the_digest() {
    let docs = [doc("a", "forbid (principal, action, resource);")];
    let revision = PolicyRevision::of(3, &docs);
    let shown = revision.to_string();
    assert!(shown.starts_with("r3-"), "{shown}");
    assert_eq!(shown.len(), 3 + 12);
    assert_ne!(revision, PolicyRevision::of(3, &[doc("a", "")]));
    assert!(OperatorPolicies::none().is_empty());
}

/// The issue's budget: 20 µs of server CPU per call with 100 policies.
/// Dependencies are optimised in the dev profile, so Cedar runs here as it
/// does in release; the bound asserted is loose (a shared, busy machine),
/// the figure is printed.
#[test]
fn a_call_under_100_policies_is_decided_by_the_one_that_matches() {
    let mut text = String::new();
    for i in 0..97 {
        text.push_str(&format!(
            "@id(\"p{i}\") forbid (principal, action == Scout::Action::\"mcp__github__github_create_branch\", resource) when {{ context.args.branch == \"blocked-{i}\" && principal.brand == \"acme\" }};\n"
        ));
    }
    text.push_str(BRANCHES);
    text.push_str("@id(\"ask\") @ask_person forbid (principal, action == Scout::Action::\"mcp__github__github_read_file\", resource) when { context.args.path like \"secrets/*\" };\n");
    text.push_str("@id(\"roles\") forbid (principal, action, resource) when { principal.role == \"nobody\" };\n");
    let policies = compile(&text).unwrap();
    assert_eq!(policies.ids().len(), 100);
    let facts = facts(
        "mcp__github__github_create_branch",
        "github",
        json!({"owner": "o", "repo": "r", "branch": "scout/x"}),
    );
    assert_eq!(policies.decide(&facts), PolicyDecision::Allow);
    assert_eq!(policies.decide_whole(&facts), PolicyDecision::Allow);
    // The 97 equality rules wait behind their guards (the speed is the
    // bench's to measure: `serve_process`, SCOUT_BENCH_ONLY=policies).
    assert_eq!(policies.guarded("mcp__github__github_create_branch"), 97);
    let blocked = facts_with(
        &facts,
        json!({"owner": "o", "repo": "r", "branch": "blocked-42"}),
    );
    // Refused by its guarded rule and by the branch rule (`blocked-42` is
    // not under `scout/`): the same decision either way.
    assert!(matches!(
        policies.decide(&blocked),
        PolicyDecision::Forbid { .. }
    ));
    assert_eq!(policies.decide(&blocked), policies.decide_whole(&blocked));
    let under = facts_with(
        &facts,
        json!({"owner": "o", "repo": "r", "branch": "scout/blocked-42"}),
    );
    assert_eq!(policies.decide(&under), PolicyDecision::Allow);
}

fn facts_with(facts: &CallFacts, args: Value) -> CallFacts {
    CallFacts {
        args,
        ..facts.clone()
    }
}

/// 100 policies over 100 tools, one each (how a deployment's rules spread):
/// a call evaluates only those whose action scope can match it.
#[test]
fn a_call_under_100_policies_spread_over_tools_is_decided_by_its_own() {
    let tools: Vec<ServedTool> = (0..100)
        .map(|i| ServedTool {
            connector: "github".into(),
            tool: format!("tool_{i}"),
            input_schema: json!({
                "type": "object",
                "properties": {"branch": {"type": "string"}},
                "required": ["branch"],
            }),
        })
        .collect();
    let schema = DeploymentSchema::from_tools(tools).unwrap();
    let text: String = (0..100)
        .map(|i| {
            format!(
                "forbid (principal, action == Scout::Action::\"mcp__github__tool_{i}\", resource) unless {{ context.args.branch like \"scout/*\" }};\n"
            )
        })
        .collect();
    let docs = [doc("spread.cedar", &text)];
    let policies = OperatorPolicies::compile(&docs, &schema, PolicyRevision::of(0, &docs)).unwrap();
    let facts = facts(
        "mcp__github__tool_7",
        "github",
        json!({"branch": "scout/x"}),
    );
    assert_eq!(policies.decide(&facts), PolicyDecision::Allow);
    let outside = facts_with(&facts, json!({"branch": "main"}));
    // Only tool_7's own rule decides its call.
    assert_eq!(
        policies.decide(&outside),
        PolicyDecision::Forbid {
            policy: "spread.cedar:8".into()
        }
    );
    assert_eq!(policies.decide_whole(&outside), policies.decide(&outside));
}

#[test]
fn a_forbid_reading_no_context_is_decided_once_and_again_when_the_facts_change() {
    let policies = compile(
        r#"@id("no-coworkers") forbid (principal, action, resource) when { principal.role == "coworker" };"#,
    )
    .unwrap();
    let read = "mcp__github__github_read_file";
    let mut f = facts(read, "github", json!({"path": "a"}));
    assert_eq!(policies.decide(&f), PolicyDecision::Allow);
    assert_eq!(policies.decide(&f), PolicyDecision::Allow);
    f.principal.role = "coworker".into();
    assert_eq!(
        policies.decide(&f),
        PolicyDecision::Forbid {
            policy: "no-coworkers".into()
        }
    );
    // An action the schema does not declare is decided with the whole set.
    f.action = "mcp__other__tool".into();
    assert!(matches!(policies.decide(&f), PolicyDecision::Forbid { .. }));
}

/// A guard only spares Cedar a policy that cannot match: over rules with a
/// guard of each kind (and rules whose equality is no guard), calls that
/// match, miss, lack the argument or carry another type are decided
/// exactly as with every policy evaluated.
#[test]
fn a_guard_skips_a_policy_only_where_it_cannot_match() {
    let schema = DeploymentSchema::from_tools([ServedTool {
        connector: "github".into(),
        tool: "github_list_issues".into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "repo": {"type": "string"},
                "state": {"type": "string"},
                "limit": {"type": "integer"},
                "draft": {"type": "boolean"},
            },
            "required": ["repo"],
        }),
    }])
    .unwrap();
    let action = r#"Scout::Action::"mcp__github__github_list_issues""#;
    let text = format!(
        r#"
@id("repo") forbid (principal, action == {action}, resource) when {{ context.args.repo == "vault" }};
@id("reversed") forbid (principal, action == {action}, resource) when {{ "private" == context.args.repo && principal.brand == "acme" }};
@id("has-state") @ask_person forbid (principal, action == {action}, resource) when {{ context.args has state && context.args.state == "closed" }};
@id("limit") forbid (principal, action == {action}, resource) when {{ context.args has limit && context.args.limit == 500 }};
@id("draft") forbid (principal, action == {action}, resource) when {{ context.args has draft && context.args.draft == true }};
@id("brand") forbid (principal, action == {action}, resource) when {{ principal.brand == "other" && context.args.repo like "a*" }};
@id("role") forbid (principal, action == {action}, resource) when {{ principal.role == "coworker" && context.args.repo == "x" }};
@id("after-like") forbid (principal, action == {action}, resource) when {{ context.args.repo like "z*" && context.args.repo == "zed" }};
@id("unless-first") forbid (principal, action == {action}, resource) unless {{ context.args.repo == "public" || context.args.repo != "secret" }};
@id("two-whens") forbid (principal, action == {action}, resource) when {{ context.args.repo == "two" }} when {{ context.args has limit && context.args.limit > 3 }};
"#
    );
    let docs = [doc("guards.cedar", &text)];
    let policies = OperatorPolicies::compile(&docs, &schema, PolicyRevision::of(0, &docs)).unwrap();
    // repo, reversed, has-state, limit, draft, brand, role and two-whens
    // have guards; after-like and unless-first do not.
    assert_eq!(policies.guarded("mcp__github__github_list_issues"), 8);
    let calls = [
        json!({"repo": "vault"}),
        json!({"repo": "private"}),
        json!({"repo": "public", "state": "closed"}),
        json!({"repo": "public", "state": "open"}),
        json!({"repo": "public", "limit": 500}),
        json!({"repo": "public", "limit": 499}),
        json!({"repo": "public", "limit": "500"}),
        json!({"repo": "public", "draft": true}),
        json!({"repo": "public", "draft": false}),
        json!({"repo": "abc"}),
        json!({"repo": "x"}),
        json!({"repo": "zed"}),
        json!({"repo": "secret"}),
        json!({"repo": "two", "limit": 4}),
        json!({"repo": "two", "limit": 2}),
        json!({"repo": 7}),
        json!({}),
    ];
    let mut decided = BTreeSet::new();
    for role in ["person_chat", "coworker"] {
        for brand in ["acme", "other"] {
            for args in &calls {
                let mut facts = facts("mcp__github__github_list_issues", "github", args.clone());
                facts.principal.role = role.into();
                facts.principal.brand = brand.into();
                let whole = policies.decide_whole(&facts);
                assert_eq!(
                    policies.decide(&facts),
                    whole,
                    "{role} of {brand} with {args}"
                );
                decided.insert(format!("{whole:?}"));
            }
        }
    }
    // The calls reach allow, forbid and ask: the comparison is not vacuous.
    assert!(
        decided.iter().any(|d| d.starts_with("Allow")),
        "{decided:?}"
    );
    assert!(
        decided.iter().any(|d| d.starts_with("Forbid")),
        "{decided:?}"
    );
    assert!(
        decided.iter().any(|d| d.starts_with("AskPerson")),
        "{decided:?}"
    );
}
