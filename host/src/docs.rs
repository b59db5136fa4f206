//! The permissions page, generated from the code (seed 000's opening: the
//! page is read from the code and a test fails when it drifts).
//!
//! Each section is one role, assembled by the same `policy::surface` that
//! decides real sessions, for a stated brand and switches; "not given" is
//! the difference from everything any role here is given. The WITHHELD
//! lists come from the loaded components' own manifests.

use crate::policy::{
    self, BrandFacts, Catalog, Environment, Gate, Harness, Preset, Role, Route, SessionInput,
    Switch, Switches,
};
use scout_manifest::Manifest;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// One role as the page shows it.
pub struct Scenario {
    /// Heading.
    pub title: &'static str,
    /// What is assumed about the brand and switches.
    pub assumes: &'static str,
    /// The policy input.
    pub input: SessionInput,
    /// The switches, as `(variable, value)`.
    pub switches: Vec<(&'static str, &'static str)>,
}

/// Every connector of the catalogue connected, skills and coworkers present,
/// goals engine on: the widest brand.
pub fn full_brand(catalog: &Catalog) -> BrandFacts {
    let mut brand = BrandFacts::with_connectors(catalog.connectors().map(|c| c.name.clone()));
    brand.has_skills = true;
    brand.has_coworkers = true;
    brand.goals_engine_on = true;
    brand
}

/// The roles of seed 000, each with the inputs the page assumes.
pub fn scenarios(catalog: &Catalog) -> Vec<Scenario> {
    let brand = full_brand(catalog);
    let seo = Preset::SeoAnalyst.profile();
    let researcher = Preset::Researcher.profile();
    let writer = Preset::Writer.profile();
    vec![
        Scenario {
            title: "Person chat",
            assumes: "local environment, every connector connected, skills, coworkers and the goals engine present; default switches",
            input: SessionInput::new(Role::PersonChat)
                .brand(brand.clone())
                .approval_channel(true),
            switches: vec![],
        },
        Scenario {
            title: "Inbound email turn",
            assumes: "AGENTMAIL_WEBHOOK_URL_SECRET set, AGENTMAIL_ALLOW_SENDS=true (it changes nothing here)",
            input: SessionInput::new(Role::InboundEmailTurn).brand(brand.clone()),
            switches: vec![
                ("AGENTMAIL_WEBHOOK_URL_SECRET", "set"),
                ("AGENTMAIL_ALLOW_SENDS", "true"),
            ],
        },
        Scenario {
            title: "Coworker run",
            assumes: "the Writer preset on a standard route",
            input: SessionInput::new(Role::CoworkerRun {
                route: Route::Standard,
            })
            .brand(brand.clone())
            .profile(writer),
            switches: vec![],
        },
        Scenario {
            title: "Specialist coworker run (Researcher)",
            assumes: "the Researcher preset: Firecrawl granted, 25 credits per run, 100 per day",
            input: SessionInput::new(Role::SpecialistRun {
                route: Route::Standard,
            })
            .brand(brand.clone())
            .profile(researcher),
            switches: vec![],
        },
        Scenario {
            title: "Specialist coworker run (SEO analyst)",
            assumes: "the SEO analyst preset, every granted connector live",
            input: SessionInput::new(Role::SpecialistRun {
                route: Route::Standard,
            })
            .brand(brand.clone())
            .profile(seo),
            switches: vec![],
        },
        Scenario {
            title: "Goal agent step",
            assumes: "no connector grant",
            input: SessionInput::new(Role::GoalAgentStep)
                .brand(brand.clone())
                .profile(policy::presets::goal_agent(Default::default())),
            switches: vec![],
        },
        Scenario {
            title: "Goal reviewer",
            assumes: "the reviewer profile",
            input: SessionInput::new(Role::GoalReviewer)
                .brand(brand.clone())
                .profile(policy::presets::goal_reviewer()),
            switches: vec![],
        },
        Scenario {
            title: "Read-only route",
            assumes: "default harness",
            input: SessionInput::new(Role::ReadOnlyRoute {
                harness: Harness::Default,
            })
            .brand(brand)
            .environment(Environment::Local),
            switches: vec![],
        },
    ]
}

fn gate_note(gate: &Gate) -> String {
    match gate {
        Gate::Open => String::new(),
        Gate::AsksPerson => " — asks a person before each call".to_string(),
        Gate::Spend { .. } => {
            " — every call bills; above the threshold it asks a person".to_string()
        }
        Gate::Allowance { .. } => {
            " — charged against the grant's allowance; beyond it, refused before anything is sent"
                .to_string()
        }
        Gate::ReadsRunMutationsGated { .. } => " — reads run; mutations are gated".to_string(),
        Gate::Refuses(r) => format!(" — {}", r.reason()),
    }
}

/// The page, as Markdown.
pub fn permissions_page(catalog: &Catalog, components: &[&Manifest]) -> String {
    // By connector name, whatever order the components were given in.
    let mut components = components.to_vec();
    components.sort_by(|a, b| a.connector.cmp(&b.connector));
    let components = &components[..];
    let mut page = String::new();
    let _ = writeln!(page, "# Tool permissions\n");
    let _ = writeln!(
        page,
        "Generated by `scout-host docs` from the policy code (`host/src/policy/`) and the loaded components. \
         A test (`host/tests/docs_page.rs`) fails when this page differs from what the code generates. \
         Each role below is assembled by `policy::surface`, the function that decides real sessions; a tool \
         not listed for a role is not described to that model at all.\n"
    );
    let scenarios = scenarios(catalog);
    let mut surfaces = Vec::new();
    for s in &scenarios {
        let switches = Switches::from_vars(s.switches.iter().copied());
        surfaces.push(policy::surface(&s.input, catalog, &switches));
    }
    let everything: BTreeSet<String> = surfaces
        .iter()
        .filter_map(|s| s.as_ref().ok())
        .flat_map(|s| s.names().into_iter().map(str::to_string))
        .collect();

    let _ = writeln!(
        page,
        "## Roles at a glance\n\n| role | tools given |\n|---|---|"
    );
    for (s, surface) in scenarios.iter().zip(&surfaces) {
        let count = surface
            .as_ref()
            .map(|s| s.len().to_string())
            .unwrap_or_else(|e| format!("refused: {e}"));
        let _ = writeln!(page, "| {} | {count} |", s.title);
    }
    page.push('\n');

    for (s, surface) in scenarios.iter().zip(&surfaces) {
        let _ = writeln!(page, "## {}\n\nAssumes: {}.\n", s.title, s.assumes);
        let surface = match surface {
            Ok(surface) => surface,
            Err(e) => {
                let _ = writeln!(page, "Refused: {e}\n");
                continue;
            }
        };
        if surface.is_empty() {
            let _ = writeln!(page, "Given: none.\n");
        } else {
            let _ = writeln!(page, "Given ({}):\n", surface.len());
            for tool in surface.iter() {
                let server = match tool.server {
                    policy::Server::Host => "host",
                    policy::Server::Orchestrator => "orchestrator",
                };
                let _ = writeln!(
                    page,
                    "- `{}` ({server}){}",
                    tool.name,
                    gate_note(&tool.gate)
                );
            }
            page.push('\n');
        }
        let given: BTreeSet<&str> = surface.names().into_iter().collect();
        let missing: Vec<&String> = everything
            .iter()
            .filter(|n| !given.contains(n.as_str()))
            .collect();
        if !missing.is_empty() {
            let names: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
            let _ = writeln!(
                page,
                "Not given ({}): {}\n",
                missing.len(),
                names.join(", ")
            );
        }
    }

    let _ = writeln!(
        page,
        "## What is never given\n\nEach connector component carries its WITHHELD list in its own binary (`scout-host inspect`).\n"
    );
    for m in components {
        let _ = writeln!(page, "### {}\n", m.connector);
        for w in &m.withheld {
            let _ = writeln!(page, "- {}: {}", w.effect, w.reason);
        }
        page.push('\n');
    }

    let _ = writeln!(
        page,
        "## Declared routes\n\nThe only requests each tool's `http` handle sends (DESIGN D13); anything else is denied with nothing sent. \
         A read tool may use GET and HEAD; a POST it declares as changing nothing is marked **read-only POST**.\n"
    );
    for m in components {
        let _ = writeln!(page, "### {}\n", m.connector);
        let posts: Vec<String> = m
            .tools
            .iter()
            .flat_map(|t| {
                t.routes
                    .iter()
                    .filter(|r| r.read_only)
                    .map(move |r| format!("`{}` {r}", m.wire_name(&t.function)))
            })
            .collect();
        let _ = writeln!(
            page,
            "Read-only POSTs: {}\n",
            if posts.is_empty() {
                "none".to_string()
            } else {
                posts.join("; ")
            }
        );
        for t in &m.tools {
            let routes: Vec<String> = t
                .routes
                .iter()
                .map(|r| {
                    if r.read_only {
                        format!("**read-only POST** `{} {}`", r.method.as_str(), r.path)
                    } else {
                        format!("`{} {}`", r.method.as_str(), r.path)
                    }
                })
                .collect();
            let routes = if routes.is_empty() {
                "none".to_string()
            } else {
                routes.join(", ")
            };
            let _ = writeln!(
                page,
                "- `{}` ({}): {routes}",
                m.wire_name(&t.function),
                t.effect.as_str()
            );
        }
        page.push('\n');
    }

    let _ = writeln!(
        page,
        "## Operator switches\n\nRead once at start from the host environment; `scout-host switches` prints their values.\n"
    );
    let _ = writeln!(page, "| variable | effect | counts as on |\n|---|---|---|");
    for sw in Switch::ALL {
        let _ = writeln!(
            page,
            "| `{}` | {} | {} |",
            sw.var(),
            sw.effect(),
            sw.counts_as_on()
        );
    }
    page
}
