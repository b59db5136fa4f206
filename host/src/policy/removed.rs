//! Why a session lacks each tool it lacks, so the trace can say it per tool.
//!
//! [`super::surface`] decides a surface in one pass and keeps no record of
//! what it left out. Rather than keep a second list of rules that could
//! drift from the first, this asks the same function counterfactual
//! questions: would the tool be there with this operator switch on? with
//! this connector's credential resolving? with this brand fact true? The
//! first "yes" names the rule; a tool no such change brings back was removed
//! by the role's ceiling. An operator switch that is off is therefore always
//! reported as that switch (`switch:AGENTMAIL_ALLOW_SENDS`), never as
//! `outside_role`.

use super::rule::Removal;
use super::{
    BrandFacts, BrowserProvider, Catalog, Egress, Role, SessionInput, Surface, Switch, Switches,
    surface,
};
use serde::Serialize;
use std::collections::BTreeSet;

/// One tool a session is not given, and the rule that removed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Removed {
    /// Bare name for a built-in, `mcp__server__tool` otherwise.
    pub name: String,
    /// Why: `switch:VAR` (an operator switch that is off), `not_registered`
    /// (the session holds no live credential for the connector),
    /// `no_coworkers`, `no_skills`, `goals_engine_off`,
    /// `no_browser_provider` (registration by a brand fact), or
    /// `outside_role` (the role's ceiling, a profile's request or the read
    /// table), as the trace names them.
    pub rule: Removal,
}

/// Every tool a session of this deployment could be given (any role, every
/// switch on, every connector in `served` live, every brand fact true) that
/// `input` is not given, with the rule that explains its absence, in name
/// order. `served`: the connectors this host runs.
///
/// The favourable world is `input`'s role with every switch on, every served
/// connector live and every brand fact true. A tool the role lacks even
/// there is outside its ceiling. Otherwise each condition in which the real
/// session differs from that world is put back alone, and the first one
/// that removes the tool is the rule: switches first, then credentials,
/// then brand facts (so a tool needing two switches names one of them).
/// A tool its base role would have had but an operator role's ceiling
/// leaves out is `operator_role`; one the session would have had but its
/// orchestrator did not select is `not_selected`.
pub fn removed(
    input: &SessionInput,
    catalog: &Catalog,
    switches: &Switches,
    served: &BTreeSet<String>,
) -> Vec<Removed> {
    if input.selection.is_none() && input.operator_ceiling.is_none() {
        return removed_by_policy(input, catalog, switches, served);
    }
    let whole = SessionInput {
        selection: None,
        operator_ceiling: None,
        ..input.clone()
    };
    let ceiled = SessionInput {
        selection: None,
        ..input.clone()
    };
    let mut removed = removed_by_policy(&whole, catalog, switches, served);
    if let (Ok(whole), Ok(ceiled), Ok(selected)) = (
        surface(&whole, catalog, switches),
        surface(&ceiled, catalog, switches),
        surface(input, catalog, switches),
    ) {
        removed.extend(
            whole
                .names()
                .into_iter()
                .filter(|name| !selected.contains(name))
                .map(|name| Removed {
                    name: name.to_string(),
                    rule: if ceiled.contains(name) {
                        Removal::NotSelected
                    } else {
                        Removal::OperatorRole
                    },
                }),
        );
        removed.sort_by(|a, b| a.name.cmp(&b.name));
    }
    removed
}

/// Puts one of the real brand's facts back on the favourable brand.
type CopyFact = fn(&mut BrandFacts, &BrandFacts);

/// [`removed`] for a session as the policy alone decides it (no selection).
fn removed_by_policy(
    input: &SessionInput,
    catalog: &Catalog,
    switches: &Switches,
    served: &BTreeSet<String>,
) -> Vec<Removed> {
    let Ok(actual) = surface(input, catalog, switches) else {
        return Vec::new();
    };
    let all_on = all_switches_on(switches);
    let mut favourable_brand = BrandFacts {
        connected: served
            .iter()
            .chain(&input.brand.connected)
            .cloned()
            .collect(),
        has_skills: true,
        has_coworkers: true,
        goals_engine_on: true,
        browser_provider: Some(BrowserProvider::Browserbase),
        is_deployment_owner: input.brand.is_deployment_owner,
    };
    if let Some(provider) = input.brand.browser_provider {
        favourable_brand.browser_provider = Some(provider);
    }
    let favourable = SessionInput {
        brand: favourable_brand.clone(),
        ..input.clone()
    };
    let person = SessionInput {
        role: Role::PersonChat,
        profile: None,
        previous_attempt: None,
        approval_channel: true,
        ..favourable.clone()
    };
    let ask = |input: &SessionInput, switches: &Switches| surface(input, catalog, switches).ok();
    let Some(best) = ask(&favourable, &all_on) else {
        return Vec::new();
    };
    let mut universe: BTreeSet<String> = best.names().into_iter().map(str::to_string).collect();
    if let Some(person) = ask(&person, &all_on) {
        universe.extend(person.names().into_iter().map(str::to_string));
    }
    universe.retain(|name| !actual.contains(name));
    if universe.is_empty() {
        return Vec::new();
    }

    // Each condition put back alone: one surface per condition, asked once
    // for all tools, in the order rules are reported.
    let mut conditions: Vec<(Removal, Surface)> = Vec::new();
    for s in Switch::ALL {
        let mut back = all_on.clone();
        if restore(&mut back, switches, s)
            && let Some(surface) = ask(&favourable, &back)
        {
            conditions.push((Removal::Switch(s), surface));
        }
    }
    if favourable_brand.connected != input.brand.connected {
        let mut brand = favourable_brand.clone();
        brand.connected = input.brand.connected.clone();
        if let Some(surface) = ask(
            &SessionInput {
                brand,
                ..favourable.clone()
            },
            &all_on,
        ) {
            conditions.push((Removal::NotRegistered, surface));
        }
    }
    let facts: [(Removal, CopyFact); 4] = [
        (Removal::NoCoworkers, |b, real| {
            b.has_coworkers = real.has_coworkers
        }),
        (Removal::NoSkills, |b, real| b.has_skills = real.has_skills),
        (Removal::GoalsEngineOff, |b, real| {
            b.goals_engine_on = real.goals_engine_on
        }),
        (Removal::NoBrowserProvider, |b, real| {
            b.browser_provider = real.browser_provider
        }),
    ];
    for (rule, put_back) in facts {
        let mut brand = favourable_brand.clone();
        put_back(&mut brand, &input.brand);
        if brand != favourable_brand
            && let Some(surface) = ask(
                &SessionInput {
                    brand,
                    ..favourable.clone()
                },
                &all_on,
            )
        {
            conditions.push((rule, surface));
        }
    }

    universe
        .into_iter()
        .map(|name| {
            let rule = if !best.contains(&name) {
                Removal::OutsideRole
            } else {
                conditions
                    .iter()
                    .find(|(_, without)| !without.contains(&name))
                    .map_or(Removal::NotRegistered, |(rule, _)| *rule)
            };
            Removed { rule, name }
        })
        .collect()
}

/// The switches with every one that can add a tool in the position that
/// adds it.
fn all_switches_on(switches: &Switches) -> Switches {
    let mut on = switches.clone();
    for s in Switch::ALL {
        flip_on(&mut on, s);
    }
    on
}

/// Puts `s` in `switches` back to its position in `real`; false if it is
/// already there (it removes nothing).
fn restore(switches: &mut Switches, real: &Switches, s: Switch) -> bool {
    let mut probe = real.clone();
    if !flip_on(&mut probe, s) {
        return false;
    }
    match s {
        Switch::SandboxEgress => switches.sandbox_egress = real.sandbox_egress,
        _ => {
            if let Some(field) = flag(switches, s) {
                *field = false;
            }
        }
    }
    true
}

/// Moves `s` to the position that registers tools; false if it was there
/// already or registers none.
fn flip_on(switches: &mut Switches, s: Switch) -> bool {
    if s == Switch::SandboxEgress {
        // `open` removes the allow-host tool; the allowlist registers it.
        let open = switches.sandbox_egress == Egress::Open;
        switches.sandbox_egress = Egress::Allowlist;
        return open;
    }
    match flag(switches, s) {
        Some(field) => {
            let was_off = !*field;
            *field = true;
            was_off
        }
        None => false,
    }
}

/// The on/off field of a switch that registers tools.
fn flag(switches: &mut Switches, s: Switch) -> Option<&mut bool> {
    Some(match s {
        Switch::RequireWriteApproval => &mut switches.require_write_approval,
        Switch::ShopifyAllowWrites => &mut switches.shopify_allow_writes,
        Switch::GithubAllowWrites => &mut switches.github_allow_writes,
        Switch::AgentmailAllowSends => &mut switches.agentmail_allow_sends,
        Switch::RailwayAllowVariableValues => &mut switches.railway_allow_variable_values,
        Switch::RailwayAllowRedeploy => &mut switches.railway_allow_redeploy,
        Switch::SandboxAllowBrowser => &mut switches.sandbox_allow_browser,
        Switch::BrowserbasePersistentLogins => &mut switches.browserbase_persistent_logins,
        Switch::HarnessLoopEnabled => &mut switches.harness_loop_enabled,
        Switch::HarnessHermesEnabled => &mut switches.harness_hermes_enabled,
        Switch::HarnessMcpBridgeEnabled => &mut switches.harness_mcp_bridge_enabled,
        Switch::AgentmailWebhookUrlSecret => &mut switches.agentmail_webhook_secret_set,
        // Neither registers a tool.
        Switch::ApprovalTimeoutMs | Switch::SandboxEgress | Switch::SandboxEgressAllowlist => {
            return None;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Environment, presets};

    fn rule_of(removed: &[Removed], name: &str) -> Option<String> {
        removed
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.rule.name().into_owned())
    }

    fn served(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_selection_only_narrows_and_what_it_leaves_out_is_not_selected() {
        let catalog = Catalog::seed();
        let switches = Switches::default();
        let input = SessionInput::new(Role::PersonChat)
            .brand(BrandFacts::with_connectors(["github", "agentmail"]));
        let whole = surface(&input, &catalog, &switches).unwrap();
        let read = "mcp__github__github_read_file";
        let sends = "mcp__agentmail__agentmail_send_message";
        assert!(whole.contains(read) && !whole.contains(sends));
        // Selecting a tool the session could not have adds nothing.
        let selected = input.clone().selecting(crate::policy::Selection {
            connectors: None,
            tools: Some([read.to_string(), sends.to_string()].into()),
        });
        let narrowed = surface(&selected, &catalog, &switches).unwrap();
        assert_eq!(narrowed.names(), [read]);
        let removed = removed(
            &selected,
            &catalog,
            &switches,
            &served(&["github", "agentmail"]),
        );
        assert_eq!(rule_of(&removed, read), None);
        // Left out by the orchestrator: its own rule; removed by the policy:
        // the policy's rule, as without a selection.
        assert_eq!(
            rule_of(&removed, "mcp__github__github_list_issues").as_deref(),
            Some("not_selected")
        );
        assert_eq!(
            rule_of(&removed, sends).as_deref(),
            Some("switch:AGENTMAIL_ALLOW_SENDS")
        );
        // By server: only GitHub's tools of the MCP servers; built-ins stay.
        let github_only = input.selecting(crate::policy::Selection {
            connectors: Some(["github".to_string()].into()),
            tools: None,
        });
        let narrowed = surface(&github_only, &catalog, &switches).unwrap();
        assert!(narrowed.contains(read));
        assert!(
            narrowed
                .names()
                .iter()
                .all(|n| !n.starts_with("mcp__") || n.starts_with("mcp__github__"))
        );
        assert!(
            whole
                .names()
                .iter()
                .filter(|n| !n.starts_with("mcp__"))
                .all(|n| narrowed.contains(n))
        );
    }

    #[test]
    fn a_switch_that_is_off_is_named_as_that_switch() {
        let catalog = Catalog::seed();
        let input = SessionInput::new(Role::PersonChat)
            .brand(BrandFacts::with_connectors(["agentmail", "railway"]));
        let removed = removed(
            &input,
            &catalog,
            &Switches::default(),
            &served(&["agentmail", "railway"]),
        );
        assert_eq!(
            rule_of(&removed, "mcp__agentmail__agentmail_send_message").as_deref(),
            Some("switch:AGENTMAIL_ALLOW_SENDS")
        );
        assert_eq!(
            rule_of(&removed, "mcp__railway__railway_redeploy").as_deref(),
            Some("switch:RAILWAY_ALLOW_REDEPLOY")
        );
        assert_eq!(
            rule_of(&removed, "mcp__railway__railway_reveal_variables").as_deref(),
            Some("switch:RAILWAY_ALLOW_VARIABLE_VALUES")
        );
        // With the switch on, the tool is offered and not reported.
        let on = Switches::from_vars([("AGENTMAIL_ALLOW_SENDS", "true")]);
        let removed = super::removed(&input, &catalog, &on, &served(&["agentmail", "railway"]));
        assert_eq!(
            rule_of(&removed, "mcp__agentmail__agentmail_send_message").as_deref(),
            None
        );
    }

    #[test]
    fn approvals_off_removes_cloudflare_execute_by_its_switch() {
        let catalog = Catalog::seed();
        let input =
            SessionInput::new(Role::PersonChat).brand(BrandFacts::with_connectors(["cloudflare"]));
        let off = Switches::from_vars([("REQUIRE_WRITE_APPROVAL", "false")]);
        let removed = removed(&input, &catalog, &off, &served(&["cloudflare"]));
        assert_eq!(
            rule_of(&removed, "mcp__cloudflare__execute").as_deref(),
            Some("switch:REQUIRE_WRITE_APPROVAL")
        );
    }

    #[test]
    fn the_ceiling_registration_and_brand_facts_are_told_apart() {
        let catalog = Catalog::seed();
        let input = SessionInput::new(Role::CoworkerRun {
            route: crate::policy::Route::Standard,
        })
        .profile(presets::Preset::Writer.profile())
        .brand(BrandFacts::with_connectors(Vec::<String>::new()));
        let removed = removed(&input, &catalog, &Switches::default(), &served(&["github"]));
        // A plain coworker's ceiling holds no connector tool, whatever is live.
        assert_eq!(
            rule_of(&removed, "mcp__github__github_read_file").as_deref(),
            Some("outside_role")
        );
        // Transcripts are never a coworker's, whatever the brand.
        assert_eq!(
            rule_of(&removed, "mcp__transcripts__transcript_search").as_deref(),
            Some("outside_role")
        );
        assert_eq!(rule_of(&removed, "Bash").as_deref(), Some("outside_role"));

        let person = SessionInput::new(Role::PersonChat);
        let removed = super::removed(
            &person,
            &catalog,
            &Switches::default(),
            &served(&["github"]),
        );
        // Served here, but no credential of the brand's resolves for it.
        assert_eq!(
            rule_of(&removed, "mcp__github__github_read_file").as_deref(),
            Some("not_registered")
        );
        assert_eq!(
            rule_of(&removed, "mcp__team__team_roster").as_deref(),
            Some("no_coworkers")
        );
        assert_eq!(
            rule_of(&removed, "mcp__skills__load_skill").as_deref(),
            Some("no_skills")
        );
        assert_eq!(
            rule_of(&removed, "mcp__goals__goals_status").as_deref(),
            Some("goals_engine_off")
        );
        // Nothing offered is reported removed.
        let offered = surface(&person, &catalog, &Switches::default()).unwrap();
        assert!(removed.iter().all(|r| !offered.contains(&r.name)));
    }

    #[test]
    fn e2b_browser_tools_need_their_switch_and_a_provider() {
        let catalog = Catalog::seed();
        let input = SessionInput::new(Role::PersonChat).environment(Environment::E2b);
        let removed = removed(&input, &catalog, &Switches::default(), &served(&[]));
        assert_eq!(
            rule_of(&removed, "mcp__browser__browse_text").as_deref(),
            Some("switch:SANDBOX_ALLOW_BROWSER")
        );
        let on = Switches::from_vars([("SANDBOX_ALLOW_BROWSER", "true")]);
        let removed = super::removed(&input, &catalog, &on, &served(&[]));
        assert_eq!(
            rule_of(&removed, "mcp__browser__browse_text").as_deref(),
            Some("no_browser_provider")
        );
    }
}
