//! Operators' Cedar policies in the boundary (issue 56 items 1-2), through
//! the real `serve` binary with the GitHub and AgentMail components, their
//! loopback upstreams recording every request, and the official Python MCP
//! client (`tests/mcp_client/policy_rules.py`) as the agent and its person:
//! a branch-prefix rule, a recipient-domain rule, an `@ask_person` read, a
//! tool forbidden whatever its arguments, and what the trace records. A
//! refused call sends nothing upstream. A policy naming an argument a tool
//! does not have, or comparing one with the wrong type, stops `serve` with
//! the policy's line.

use crate::common;
use scout_tests::fake_github::FakeGitHub;
use scout_tests::upstream::Upstream;

const GITHUB_TOKEN: &str = "ghp_policyRulesToken0123456789";
const ADMIN_TOKEN: &str = "admin-token-for-policy-rules-0123";

const GITHUB_POLICIES: &str = r#"// GitHub: branches only under scout/, no branch listing, README asks.
@id("branches-under-scout")
forbid (principal, action == Scout::Action::"mcp__github__github_create_branch", resource)
unless { context.args.branch like "scout/*" };

@id("no-branch-listing")
forbid (principal, action == Scout::Action::"mcp__github__github_list_branches", resource);

@id("readme-asks")
@ask_person
forbid (principal, action == Scout::Action::"mcp__github__github_read_file", resource)
when { context.args.path == "README.md" };
"#;

const MAIL_POLICIES: &str = r#"@id("mail-own-domain")
forbid (principal, action == Scout::Action::"mcp__agentmail__agentmail_send_message", resource)
unless { ["scout.test"].containsAll(context.email_domains) };
"#;

/// The configuration serving GitHub at `github` and AgentMail at `mail`,
/// with `[policy] files = ["policies/*.cedar"]`.
fn config(github: &str, mail: &str) -> String {
    format!(
        "{}\n[connectors.agentmail]\ncomponent = {:?}\norigin = {mail:?}\nallow_private_network = true\n\n[policy]\nfiles = [\"policies/*.cedar\"]\n",
        scout_tests::serve_config_for_github(github),
        common::component(scout_tests::components::AGENTMAIL),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_policies_refuse_ask_and_remove_with_nothing_sent_on_a_refusal() {
    let github = FakeGitHub::start(GITHUB_TOKEN).await;
    let mail = Upstream::start().await;
    let (dir, config_path) = scout_tests::serve::fresh_config(
        "policy-rules",
        &format!(
            "require_review = false\n{}",
            config(&github.origin(), &mail.origin())
        ),
    );
    std::fs::create_dir_all(dir.join("policies")).unwrap();
    std::fs::write(dir.join("policies/github.cedar"), GITHUB_POLICIES).unwrap();
    std::fs::write(dir.join("policies/mail.cedar"), MAIL_POLICIES).unwrap();
    let serve = common::serve_as(&config_path, ADMIN_TOKEN, "5e")
        .compile_cache()
        .current_dir(&dir)
        .env("GITHUB_ALLOW_WRITES", "true")
        .env("AGENTMAIL_ALLOW_SENDS", "true")
        .env("APPROVAL_TIMEOUT_MS", "60000")
        .start();
    let summary = common::client_story(
        "policy_rules.py",
        vec![
            "--base".into(),
            serve.base.clone(),
            "--admin-token".into(),
            ADMIN_TOKEN.into(),
            "--github-token".into(),
            GITHUB_TOKEN.into(),
        ],
    )
    .await;
    // The refused branch was never asked for upstream; the allowed one was.
    let refs = github.ref_creations();
    assert_eq!(refs, ["refs/heads/scout/x"], "{summary}");
    let requests = github.requests();
    assert!(
        !requests.iter().any(|r| r.path.ends_with("/branches")),
        "the removed tool sent nothing: {requests:?}"
    );
    // One send reached AgentMail: the one inside our domain.
    let sent = mail.seen();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].method, "POST", "{sent:?}");
    assert!(
        summary["revision"].as_str().unwrap().starts_with("r0-"),
        "{summary}"
    );
    drop(serve);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_policy_naming_an_unknown_argument_or_the_wrong_type_stops_serve_with_its_line() {
    for (name, condition, says) in [
        (
            "unknown-argument",
            "context.args.brnch like \"scout/*\"",
            "brnch",
        ),
        ("wrong-type", "context.args.branch > 3", "Long"),
    ] {
        let (dir, config_path) = scout_tests::serve::fresh_config(
            &format!("policy-rules-{name}"),
            &config("http://127.0.0.1:9", "http://127.0.0.1:9"),
        );
        std::fs::create_dir_all(dir.join("policies")).unwrap();
        std::fs::write(
            dir.join("policies/bad.cedar"),
            format!(
                "// {name}\nforbid (principal, action == Scout::Action::\"mcp__github__github_create_branch\", resource)\nwhen {{ {condition} }};\n"
            ),
        )
        .unwrap();
        let stderr = common::serve_as(&config_path, ADMIN_TOKEN, "5f")
            .compile_cache()
            .current_dir(&dir)
            .refused();
        assert!(
            stderr.contains("policies/bad.cedar:3:") && stderr.contains(says),
            "{name}: the refusal names the policy's line and {says}:\n{stderr}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
