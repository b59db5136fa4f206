//! The permissions page, generated from the code (seed 000's opening: the
//! page is read from the code and a test fails when it drifts).
//!
//! Each section is one role, assembled by the same `policy::surface` that
//! decides real sessions, for a stated brand and switches; "not given" is
//! the difference from everything any role here is given. The WITHHELD
//! lists come from the loaded components' own manifests.
//!
//! The connectors page ([`connectors_page`]) is generated the same way:
//! each connector's tools, gates, WITHHELD list and imports from its
//! component, and each fixture file's provenance from the fixtures
//! directory, read by the replay parser.
//!
//! The configuration reference ([`config_reference`]) is generated from the
//! configuration's types.

pub mod config_reference;

use crate::policy::operator_roles::OperatorRoles;
use crate::policy::{
    self, BrandFacts, Catalog, Environment, Gate, Harness, Preset, Role, Route, SessionInput,
    Switch, Switches,
};
use crate::runtime::ComponentInfo;
use scout_manifest::Manifest;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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

/// The operator's own roles, each as declared and, where its base runs
/// without a profile, what it is given with the base's assumptions above.
fn operator_roles_section(
    page: &mut String,
    catalog: &Catalog,
    roles: &OperatorRoles,
    scenarios: &[Scenario],
) {
    if roles.is_empty() {
        return;
    }
    let _ = writeln!(
        page,
        "## Operator roles\n\nDeclared in this deployment's configuration (`[roles.NAME]`). Each runs under the filters of its base, one of the seed roles above, then only narrows them: its ceiling (a tool it leaves out is removed as `operator_role`), a person asked only where its base has one and it says so, and its limits per session.\n\n| role | declared as |\n|---|---|"
    );
    for role in roles.iter() {
        let _ = writeln!(page, "| `{}` | {} |", role.name, role.summary());
    }
    page.push('\n');
    for role in roles.iter() {
        let _ = writeln!(page, "### `{}`\n", role.name);
        let base = scenarios
            .iter()
            .find(|s| s.input.role.api_name() == role.base.api_name());
        let Some(base) = base.filter(|s| s.input.profile.is_none()) else {
            let _ = writeln!(
                page,
                "Given: what its base `{}` gives a session from its profile, narrowed to the ceiling.\n",
                role.base.api_name()
            );
            continue;
        };
        let switches = Switches::from_vars(base.switches.iter().copied());
        match policy::surface(&role.narrow(base.input.clone()), catalog, &switches) {
            Ok(surface) if surface.is_empty() => {
                let _ = writeln!(page, "Assumes: as {}. Given: none.\n", base.title);
            }
            Ok(surface) => {
                let _ = writeln!(
                    page,
                    "Assumes: as {}. Given ({}):\n",
                    base.title,
                    surface.len()
                );
                for tool in surface.iter() {
                    let _ = writeln!(page, "- `{}`{}", tool.name, gate_note(&tool.gate));
                }
                page.push('\n');
            }
            Err(e) => {
                let _ = writeln!(page, "Refused: {e}\n");
            }
        }
    }
}

fn gate_note(gate: &Gate) -> String {
    match gate {
        Gate::Open => String::new(),
        Gate::AsksPerson => " — asks a person before each call".to_string(),
        Gate::Spend { .. } => {
            " — every call bills; a reservation above the operator's per-call threshold asks a person (with no threshold set, every call asks)".to_string()
        }
        Gate::Allowance { .. } => {
            " — charged against the grant's allowance; beyond it, refused before anything is sent"
                .to_string()
        }
        Gate::ReadsRunMutationsGated { .. } => " — reads run; mutations are gated".to_string(),
        Gate::Refuses(r) => format!(" — {}", r.refusal_reason()),
    }
}

/// The page, as Markdown.
pub fn permissions_page(catalog: &Catalog, components: &[&Manifest]) -> String {
    permissions_page_with_roles(catalog, components, &OperatorRoles::none())
}

/// The page with a deployment's own roles (`[roles.NAME]`) beside the
/// seed's seven, which stay exactly as they are.
pub fn permissions_page_with_roles(
    catalog: &Catalog,
    components: &[&Manifest],
    roles: &OperatorRoles,
) -> String {
    // By connector name, whatever order the components were given in.
    let mut components = components.to_vec();
    components.sort_by(|a, b| a.connector.cmp(&b.connector));
    let components = &components[..];
    let mut page = String::new();
    let _ = writeln!(page, "# Tool permissions\n");
    let _ = writeln!(
        page,
        "Generated by `scout-host docs` from the policy code (`host/src/policy/`) and the loaded components. \
         A test (`host/tests/all/docs_page.rs`) fails when this page differs from what the code generates. \
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

    operator_roles_section(&mut page, catalog, roles, &scenarios);

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
        "## Token sources\n\nWhere each connector's credential comes from. The host resolves it after the policy allowed a call and injects it; \
         the guest never holds it. A connection is stored through `PUT /v1/brands/{{brand}}/connections/{{connection}}` as a `secret`, \
         or as an `oauth`, `client_credentials` or `broker` source from which the host obtains, caches and renews access tokens itself.\n"
    );
    let _ = writeln!(page, "| connector | token source |\n|---|---|");
    for m in components {
        if catalog.admit_platform(m).is_some() {
            continue;
        }
        let _ = writeln!(
            page,
            "| {} | {} |",
            m.connector,
            crate::credentials::token_source_note(&m.connector)
        );
    }
    page.push('\n');

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
    page.push('\n');
    page.push_str(&remote_servers(catalog));
    while page.ends_with("\n\n") {
        page.pop();
    }
    page
}

/// How a component is served, as the seed catalogue decides it.
fn served_as(catalog: &Catalog, m: &Manifest) -> String {
    if let Some(platform) = catalog.admit_platform(m) {
        return match platform {
            Ok(_) => "platform component (served by the policy's own rules)".to_string(),
            Err(e) => format!("refused: {e}"),
        };
    }
    match (catalog.admit(m), catalog.connector(&m.connector)) {
        (Err(e), _) => format!("refused: {e}"),
        (Ok(_), Some(_)) => "seed catalogue (admitted by `Catalog::admit`)".to_string(),
        (Ok(_), None) => {
            "not in the seed catalogue (conservative defaults: every write asks a person)"
                .to_string()
        }
    }
}

/// One fixture file as the page shows it: its name and its provenance.
struct FixtureRow {
    file: String,
    provenance: String,
    detail: String,
}

/// The fixture files of `dir` (every `*.json` but `cases.json`, by name),
/// read with the replay parser, and the number of cases in `cases.json`.
fn fixture_rows(dir: &Path, shown_as: &str) -> (Option<usize>, Vec<FixtureRow>) {
    use crate::capabilities::replay::{FixtureFile, Provenance};
    let cases = std::fs::read_to_string(dir.join("cases.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Vec<serde_json::Value>>(&text).ok())
        .map(|cases| cases.len());
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension().is_some_and(|x| x == "json")
                        && p.file_name().is_some_and(|n| n != "cases.json")
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let rows = files
        .iter()
        .map(|path| {
            let file = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let (provenance, detail) = match FixtureFile::load(path) {
                Ok(f) => match f.provenance {
                    Provenance::Captured { captured_at } => {
                        ("CAPTURED".to_string(), format!("captured {captured_at}"))
                    }
                    Provenance::Unverified { source } => ("UNVERIFIED".to_string(), source),
                },
                // Named as the page names the directory, wherever it was read from.
                Err(e) => (
                    "refused".to_string(),
                    e.to_string()
                        .replace(&path.display().to_string(), &format!("{shown_as}/{file}")),
                ),
            };
            FixtureRow {
                file,
                provenance,
                detail,
            }
        })
        .collect();
    (cases, rows)
}

/// A cell of a Markdown table: one line, no bare `|`.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// The connectors page, as Markdown: per connector (by name) its tools with
/// each read's grantability and each write's gate as its manifest declares
/// them, its WITHHELD list, its imports, and the provenance every fixture
/// file under `connectors_dir/NAME/fixtures/` declares.
///
/// Sizes and digests are left out: they change with the toolchain and with
/// whether `wasm-opt` ran, and the page must be the same wherever the tests
/// build it.
pub fn connectors_page(
    catalog: &Catalog,
    infos: &[&ComponentInfo],
    connectors_dir: &Path,
) -> String {
    let mut infos = infos.to_vec();
    infos.sort_by(|a, b| a.manifest.connector.cmp(&b.manifest.connector));
    let mut page = String::new();
    let _ = writeln!(page, "# Connectors\n");
    let _ = writeln!(
        page,
        "Generated by `scout-host docs` from the connector components the workspace builds (their embedded \
         manifests and their imports, as `scout-host inspect` reads them) and from the fixture files under \
         `connectors/NAME/fixtures/`, read by the replay parser (`host/src/capabilities/replay.rs`). \
         A test (`host/tests/all/docs_page.rs`) fails when this page differs from what the code generates. \
         Component sizes and digests are deliberately not shown: they change with the toolchain and with \
         whether `wasm-opt` ran; `scout-host inspect COMPONENT` prints a component's SHA-256. \
         What each role is given of these tools is on [the permissions page](permissions.md).\n"
    );
    let mut facts = Vec::new();
    for info in &infos {
        let name = &info.manifest.connector;
        let dir = connectors_dir.join(name).join("fixtures");
        facts.push(fixture_rows(&dir, &format!("connectors/{name}/fixtures")));
    }

    let _ = writeln!(
        page,
        "## At a glance\n\n| connector | reads | writes | capabilities | billing | replay cases | fixtures | UNVERIFIED | CAPTURED |\n|---|---|---|---|---|---|---|---|---|"
    );
    for (info, (cases, rows)) in infos.iter().zip(&facts) {
        let m = &info.manifest;
        let reads = info
            .tools
            .iter()
            .filter(|t| t.effect == crate::Effect::Read)
            .count();
        let writes = info.tools.len() - reads;
        let caps = info.capabilities();
        let count = |p: &str| rows.iter().filter(|r| r.provenance == p).count();
        let _ = writeln!(
            page,
            "| [{name}](#{name}) | {reads} | {writes} | {} | {} | {} | {} | {} | {} |",
            if caps.is_empty() {
                "none".to_string()
            } else {
                caps.join(", ")
            },
            billing_text(m),
            cases
                .map(|c| c.to_string())
                .unwrap_or_else(|| "none".to_string()),
            rows.len(),
            count("UNVERIFIED"),
            count("CAPTURED"),
            name = m.connector,
        );
    }
    page.push('\n');

    for (info, (cases, rows)) in infos.iter().zip(&facts) {
        let m = &info.manifest;
        let package = if m.version.is_empty() {
            format!("{}:{}", m.namespace, m.connector)
        } else {
            format!("{}:{}@{}", m.namespace, m.connector, m.version)
        };
        let _ = writeln!(page, "## {}\n", m.connector);
        let _ = writeln!(page, "`{package}`: {}\n", cell(&m.description));
        let _ = writeln!(page, "- Served as: {}", served_as(catalog, m));
        let _ = writeln!(page, "- Billing: {}", billing_text(m));
        let caps = info.capabilities();
        let _ = writeln!(
            page,
            "- Capabilities: {}\n",
            if caps.is_empty() {
                "none".to_string()
            } else {
                caps.join(", ")
            }
        );

        let _ = writeln!(
            page,
            "### Tools\n\n| tool | effect | declared |\n|---|---|---|"
        );
        for t in &info.tools {
            let doc = m
                .tools
                .iter()
                .find(|d| d.function == t.function && d.effect == t.effect);
            let mut declared = Vec::new();
            match t.effect {
                crate::Effect::Read => {
                    let grantable = doc.is_some_and(|d| d.grantable);
                    declared.push(
                        if grantable {
                            "grantable"
                        } else {
                            "not grantable"
                        }
                        .to_string(),
                    );
                    if let Some(d) = doc
                        && !d.reads_from.is_empty()
                    {
                        declared.push(format!("joint: reads from {}", d.reads_from.join(", ")));
                    }
                }
                crate::Effect::Write => {
                    match doc.and_then(|d| d.gate.as_ref()) {
                        Some(g) => declared.push(format!("gate: {g}")),
                        None => declared.push("gate: none declared".to_string()),
                    }
                    if let Some(r) = doc.and_then(|d| d.registers.as_ref()) {
                        declared.push(format!("registers: {r}"));
                    }
                }
            }
            // What each GraphQL route may carry: its root fields, or any.
            for route in doc.into_iter().flat_map(|d| &d.routes) {
                if route.graphql.is_none() {
                    continue;
                }
                let kind = match route.graphql {
                    Some(scout_manifest::GraphqlBody::QueriesOnly) => "GraphQL queries",
                    _ => "GraphQL",
                };
                if route.graphql_fields.is_empty() {
                    declared.push(format!(
                        "{kind}: any root field (the document is the argument)"
                    ));
                } else {
                    declared.push(format!(
                        "{kind}: root fields {}",
                        route.graphql_fields.join(", ")
                    ));
                }
            }
            let _ = writeln!(
                page,
                "| `{}` | {} | {} |",
                t.name,
                t.effect.as_str(),
                cell(&declared.join("; "))
            );
        }
        page.push('\n');

        let _ = writeln!(page, "### Withheld\n");
        if m.withheld.is_empty() {
            let _ = writeln!(page, "None declared.\n");
        } else {
            for w in &m.withheld {
                let _ = writeln!(page, "- {}: {}", w.effect, cell(&w.reason));
            }
            page.push('\n');
        }

        let mut imports = info.imports.clone();
        imports.sort();
        let _ = writeln!(page, "### Imports ({})\n", imports.len());
        let group = |keep: &dyn Fn(&str) -> bool| -> Vec<String> {
            imports
                .iter()
                .filter(|i| keep(i))
                .map(|i| format!("`{i}`"))
                .collect()
        };
        let forbidden = |i: &str| info.forbidden_imports.iter().any(|f| f == i);
        for (label, names) in [
            (
                "contract",
                group(&|i| !forbidden(i) && i.starts_with("scout:connector/")),
            ),
            (
                "WASI",
                group(&|i| !forbidden(i) && !i.starts_with("scout:connector/")),
            ),
            (
                "**outside the contract: refused at load**",
                group(&forbidden),
            ),
        ] {
            if !names.is_empty() {
                let _ = writeln!(page, "- {label}: {}", names.join(", "));
            }
        }
        page.push('\n');

        let _ = writeln!(
            page,
            "### Fixtures\n\n`connectors/{}/fixtures/`: {} replay cases in `cases.json`, {} fixture files.\n",
            m.connector,
            cases
                .map(|c| c.to_string())
                .unwrap_or_else(|| "no".to_string()),
            rows.len()
        );
        if !rows.is_empty() {
            let _ = writeln!(
                page,
                "| file | provenance | source or capture date |\n|---|---|---|"
            );
            for r in rows {
                let _ = writeln!(
                    page,
                    "| `{}` | {} | {} |",
                    r.file,
                    r.provenance,
                    cell(&r.detail)
                );
            }
            page.push('\n');
        }
    }
    page.push_str(&remote_servers(catalog));
    // One trailing newline, whatever the last section wrote.
    while page.ends_with("\n\n") {
        page.pop();
    }
    page
}

fn billing_text(m: &Manifest) -> &'static str {
    match m.billing {
        Some(scout_manifest::Billing::Credits) => "credits",
        Some(scout_manifest::Billing::Usd) => "USD",
        None => "none",
    }
}

/// The seed's connectors that are served as remote MCP servers.
const REMOTE_SEED: [&str; 2] = ["cloudflare", "contentsquare"];

/// What both pages say of remote MCP servers: their tools are known only
/// to a running host, so the pages give the rules and the seed's two.
fn remote_servers(catalog: &Catalog) -> String {
    let mut page = String::new();
    let _ = writeln!(
        page,
        "## Remote MCP servers\n\n\
         A connector can be a remote MCP server (`mcp = \"https://…\"`, see \
         [operating](operating.md#remote-mcp-servers)). Its tools are what the server lists and an operator \
         reviewed, with the effect the operator gave each (`read`; `write` and `billed` ask a person on \
         every call): known only to a running host, so they are not on this page. `GET /v1/reviews` lists \
         each with its status, effect and the server's own claims; `GET /v1/audit` the route and credential \
         it reaches; `scout-host inspect mcp+https://…` what the server offers now against the reviews. \
         No remote tool is grantable to a specialist or the goal agent. The seed's remote servers keep the \
         seed's policy when served this way:\n"
    );
    let _ = writeln!(
        page,
        "| connector | reads (reviewed `read`) | writes (reviewed `write`) | grantable |\n|---|---|---|---|"
    );
    for name in REMOTE_SEED {
        let Some(spec) = catalog.connector(name) else {
            continue;
        };
        let every = "every tool its server lists, as reviewed";
        let reads = if spec.reads.is_empty() && spec.writes.is_empty() {
            every.to_string()
        } else {
            spec.reads
                .iter()
                .map(|r| format!("`{r}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let writes = if spec.reads.is_empty() && spec.writes.is_empty() {
            every.to_string()
        } else {
            spec.writes
                .iter()
                .map(|w| {
                    let registered = match &w.registers {
                        policy::catalog::Registers::WithConnector => String::new(),
                        policy::catalog::Registers::WhenSwitch(sw) => {
                            format!("; registered only with `{}` on", sw.var())
                        }
                        policy::catalog::Registers::WhenApprovalsOn => {
                            "; absent where no one can be asked".to_string()
                        }
                    };
                    let gate = match &w.gate {
                        policy::catalog::WriteGate::Open => "no gate".to_string(),
                        policy::catalog::WriteGate::Approval { needs: None } => {
                            "asks a person on every call".to_string()
                        }
                        policy::catalog::WriteGate::Approval { needs: Some(sw) } => {
                            format!("needs `{}` and asks a person on every call", sw.var())
                        }
                        policy::catalog::WriteGate::MutationsNeedApproval { needs } => {
                            format!("mutations need `{}` and a person", needs.var())
                        }
                    };
                    format!("`{}` ({gate}{registered})", w.name)
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(page, "| {} | {reads} | {writes} | none |", spec.name);
    }
    page.push('\n');
    page
}
