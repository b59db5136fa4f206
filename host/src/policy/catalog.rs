//! The connector catalogue as data: each connector's read and write tools,
//! which of them the read table lets a grant cover, which connectors bill, and
//! how each write tool registers and is gated. [`Catalog::seed`] holds every
//! connector of seed 000's "Connector tools" and "read table" tables.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::names::{self, BUILTINS, Platform};
use super::switches::Switch;

/// What a billing connector's allowance is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BillingUnit {
    /// Firecrawl credits (`perRunCredits`, `perDayCredits`).
    Credits,
    /// DataForSEO US dollars (`perRunUsd`, `perDayUsd`).
    Usd,
}

/// When a write tool is registered at all, given that its connector's server is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Registers {
    /// With the connector, always.
    WithConnector,
    /// Only when this operator switch is on (AgentMail sends, Railway).
    WhenSwitch(Switch),
    /// Only when the session can ask a person (Cloudflare execute: absent
    /// when approvals are off).
    WhenApprovalsOn,
}

/// How a registered write tool is gated on each call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteGate {
    /// No gate (`agentmail_create_draft`: a draft is not sent).
    Open,
    /// An approval on each call, and the switch when one is named; without
    /// either the tool stays registered and refuses before any request.
    Approval { needs: Option<Switch> },
    /// The tool is also the read path (Shopify Admin GraphQL): reads run;
    /// mutations need the switch and an approval, and refuse otherwise.
    MutationsNeedApproval { needs: Switch },
}

/// A write or spend tool of a connector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteTool {
    /// Local name, e.g. `github_create_branch`.
    pub name: String,
    pub registers: Registers,
    pub gate: WriteGate,
}

impl WriteTool {
    /// A write tool of a connector the seed does not describe: registered
    /// with the connector, and each call asks a person (refusing without an
    /// approval channel).
    pub(crate) fn default_for(name: impl Into<String>) -> WriteTool {
        WriteTool {
            name: name.into(),
            registers: Registers::WithConnector,
            gate: WriteGate::Approval { needs: None },
        }
    }
}

/// One connector: its MCP server name and tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectorSpec {
    /// MCP server name, e.g. `github` (tools are `mcp__github__...`).
    pub name: String,
    /// Human name, e.g. `GitHub`.
    pub title: String,
    /// Read tools, local names (`github_read_file`).
    pub reads: Vec<String>,
    /// Write or spend tools.
    pub writes: Vec<WriteTool>,
    /// The read table's "Grantable" column (local names): the only tools of
    /// this connector a specialist or the goal agent can be granted.
    pub grantable: BTreeSet<String>,
    /// Every call bills in this unit.
    pub billing: Option<BillingUnit>,
}

impl ConnectorSpec {
    /// Whether any tool of this connector can be granted.
    pub fn is_grantable(&self) -> bool {
        !self.grantable.is_empty()
    }

    /// Full MCP name of one of its tools.
    pub fn mcp(&self, tool: &str) -> String {
        names::mcp(&self.name, tool)
    }
}

/// A tool that reads several connectors (`seo_page_opportunities`): present
/// only when every connector it reads is live (and, for a grant, granted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JointTool {
    /// The connector whose server carries it.
    pub connector: String,
    /// Local name.
    pub tool: String,
    /// Every connector it reads, its own included.
    pub reads_from: Vec<String>,
}

/// Opt-in tools beside a connector (the content writer's tools beside
/// Shopify): given only to a specialist granted that connector whose profile
/// asks for them by name; a person's session does not register them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OptInTools {
    pub server: Platform,
    pub beside: String,
    pub tools: Vec<String>,
}

/// What a tool name is, as the catalogue sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind<'a> {
    /// One of the runtime's built-ins (any the seed names, configured or not).
    BuiltIn,
    /// A platform server's tool (writer tools are [`ToolKind::OptIn`]).
    Platform(Platform, &'a str),
    /// A read tool of a connector.
    ConnectorRead {
        connector: &'a ConnectorSpec,
        tool: &'a str,
        grantable: bool,
        joint: Option<&'a JointTool>,
    },
    /// A write or spend tool of a connector (never grantable).
    ConnectorWrite {
        connector: &'a ConnectorSpec,
        tool: &'a WriteTool,
    },
    /// An opt-in tool beside a connector.
    OptIn(&'a OptInTools, &'a str),
    /// A name this catalogue does not know.
    Unknown,
}

/// The connector catalogue and the deployment's built-in list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    /// The deployment's built-ins (agent.config.json `tools`). Removing a
    /// name here removes it from every role.
    pub builtins: Vec<String>,
    connectors: BTreeMap<String, ConnectorSpec>,
    joint: Vec<JointTool>,
    opt_ins: Vec<OptInTools>,
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn approval(name: &str, needs: Option<Switch>) -> WriteTool {
    WriteTool {
        name: name.into(),
        registers: Registers::WithConnector,
        gate: WriteGate::Approval { needs },
    }
}

fn switched(name: &str, switch: Switch) -> WriteTool {
    WriteTool {
        name: name.into(),
        registers: Registers::WhenSwitch(switch),
        gate: WriteGate::Approval { needs: None },
    }
}

/// A seed connector: `grantable` is `None` for "every read tool", or the list.
fn spec(
    name: &str,
    title: &str,
    reads: &[&str],
    writes: Vec<WriteTool>,
    grantable: Option<&[&str]>,
    billing: Option<BillingUnit>,
) -> ConnectorSpec {
    ConnectorSpec {
        name: name.into(),
        title: title.into(),
        reads: strings(reads),
        writes,
        grantable: grantable
            .unwrap_or(reads)
            .iter()
            .map(|s| s.to_string())
            .collect(),
        billing,
    }
}

/// The connectors of seed 000, with the tools its tables list.
fn seed_connectors() -> Vec<ConnectorSpec> {
    const NONE: Option<&[&str]> = Some(&[]);
    vec![
        spec(
            "shopify",
            "Shopify",
            &[
                "shopify_shop_info",
                "shopify_search_products",
                "shopify_recent_orders",
            ],
            vec![WriteTool {
                name: "shopify_admin_graphql".into(),
                registers: Registers::WithConnector,
                gate: WriteGate::MutationsNeedApproval {
                    needs: Switch::ShopifyAllowWrites,
                },
            }],
            None,
            None,
        ),
        spec(
            "dataforseo",
            "DataForSEO",
            &[
                "dataforseo_account",
                "dataforseo_keyword_ideas",
                "dataforseo_search_volume",
                "dataforseo_keyword_overview",
                "dataforseo_ranked_keywords",
                "dataforseo_serp_organic",
                "dataforseo_competitors",
                "dataforseo_page_audit",
                "dataforseo_keyword_difficulty",
                "dataforseo_search_intent",
                "dataforseo_rank_history",
                "dataforseo_trends",
                "seo_page_opportunities",
            ],
            vec![],
            None,
            Some(BillingUnit::Usd),
        ),
        spec(
            "firecrawl",
            "Firecrawl",
            &[
                "firecrawl_account",
                "firecrawl_scrape",
                "firecrawl_search",
                "firecrawl_map",
                "firecrawl_crawl",
            ],
            vec![],
            None,
            Some(BillingUnit::Credits),
        ),
        spec(
            "googleads",
            "Google Ads",
            &[
                "googleads_accounts",
                "googleads_report",
                "googleads_campaigns",
                "googleads_search_terms",
                "googleads_account_hierarchy",
                "googleads_compare_periods",
                "googleads_summarize",
                "googleads_search_term_audit",
            ],
            vec![],
            None,
            None,
        ),
        spec(
            "searchconsole",
            "Search Console",
            &[
                "searchconsole_properties",
                "searchconsole_totals",
                "searchconsole_queries",
                "searchconsole_pages",
                "searchconsole_breakdown",
                "searchconsole_inspect_url",
            ],
            vec![],
            None,
            None,
        ),
        spec(
            "analytics",
            "Google Analytics",
            &[
                "analytics_properties",
                "analytics_use_property",
                "analytics_overview",
                "analytics_trend",
                "analytics_traffic_sources",
                "analytics_landing_pages",
                "analytics_report",
            ],
            vec![],
            Some(&[
                "analytics_properties",
                "analytics_overview",
                "analytics_trend",
                "analytics_traffic_sources",
                "analytics_landing_pages",
                "analytics_report",
            ]),
            None,
        ),
        spec(
            "sheets",
            "Google Sheets",
            &["sheets_list"],
            vec![
                approval("sheets_export", None),
                approval("sheets_append", None),
            ],
            None,
            None,
        ),
        spec(
            "microsoftads",
            "Microsoft Ads",
            &[
                "microsoftads_accounts",
                "microsoftads_campaigns",
                "microsoftads_performance_report",
                "microsoftads_report_fetch",
            ],
            vec![],
            None,
            None,
        ),
        spec(
            "figma",
            "Figma",
            &[
                "figma_whoami",
                "figma_file_outline",
                "figma_read_nodes",
                "figma_export_images",
                "figma_comments",
                "figma_components_styles",
                "figma_team_projects",
                "figma_project_files",
            ],
            vec![],
            None,
            None,
        ),
        spec(
            "github",
            "GitHub",
            &[
                "github_read_file",
                "github_list_path",
                "github_list_branches",
                "github_list_issues",
                "github_read_issue",
                "github_list_pull_requests",
                "github_read_pull_request",
            ],
            [
                "github_create_branch",
                "github_commit_files",
                "github_open_pull_request",
                "github_comment",
            ]
            .iter()
            .map(|n| approval(n, Some(Switch::GithubAllowWrites)))
            .collect(),
            None,
            None,
        ),
        spec(
            "agentmail",
            "AgentMail",
            &[
                "agentmail_list_threads",
                "agentmail_search_threads",
                "agentmail_get_thread",
                "agentmail_list_messages",
                "agentmail_search_messages",
                "agentmail_get_message",
                "agentmail_get_attachment",
                "agentmail_whoami",
                "agentmail_list_drafts",
                "agentmail_get_draft",
            ],
            std::iter::once(WriteTool {
                name: "agentmail_create_draft".into(),
                registers: Registers::WithConnector,
                gate: WriteGate::Open,
            })
            .chain(
                [
                    "agentmail_send_message",
                    "agentmail_reply_to_message",
                    "agentmail_forward_message",
                    "agentmail_send_draft",
                ]
                .iter()
                .map(|n| switched(n, Switch::AgentmailAllowSends)),
            )
            .collect(),
            None,
            None,
        ),
        spec(
            "cloudflare",
            "Cloudflare",
            &["docs", "search"],
            vec![WriteTool {
                name: "execute".into(),
                registers: Registers::WhenApprovalsOn,
                gate: WriteGate::Approval { needs: None },
            }],
            NONE,
            None,
        ),
        // Every tool the brand's Contentsquare server offers; none is known
        // until that server is asked, so add them with `with_connector`.
        spec("contentsquare", "Contentsquare", &[], vec![], NONE, None),
        spec(
            "railway",
            "Railway",
            &[
                "railway_workspaces",
                "railway_project",
                "railway_deployments",
                "railway_variable_names",
                "railway_logs",
            ],
            vec![
                switched(
                    "railway_reveal_variables",
                    Switch::RailwayAllowVariableValues,
                ),
                switched("railway_redeploy", Switch::RailwayAllowRedeploy),
            ],
            None,
            None,
        ),
        spec(
            "tailscale",
            "Tailscale",
            &[
                "tailscale_devices",
                "tailscale_device",
                "tailscale_users",
                "tailscale_policy",
                "tailscale_dns",
            ],
            vec![],
            None,
            None,
        ),
    ]
}

/// Seed 000's connectors "the deployment offers" only when it is set up for
/// them: Figma when Nango is configured, Microsoft Ads when the deployment
/// holds Microsoft's developer token. `serve` never registers such a
/// connector without its variable, whatever its configuration says.
pub(crate) fn offered_only_with(connector: &str) -> Option<&'static str> {
    match connector {
        "figma" => Some("NANGO_SECRET_KEY"),
        "microsoftads" => Some("MICROSOFT_ADS_DEVELOPER_TOKEN"),
        _ => None,
    }
}

impl Default for Catalog {
    /// The seed catalogue.
    fn default() -> Self {
        Catalog::seed()
    }
}

impl Catalog {
    /// The deployment's built-ins and no connector.
    pub fn empty() -> Catalog {
        Catalog {
            builtins: strings(&BUILTINS),
            connectors: BTreeMap::new(),
            joint: vec![JointTool {
                connector: "dataforseo".into(),
                tool: "seo_page_opportunities".into(),
                reads_from: strings(&["dataforseo", "searchconsole", "shopify"]),
            }],
            opt_ins: vec![OptInTools {
                server: Platform::Writer,
                beside: "shopify".into(),
                tools: strings(&names::WRITER_TOOLS),
            }],
        }
    }

    /// Every connector of seed 000 with the tool names its tables give.
    pub fn seed() -> Catalog {
        let mut c = Catalog::empty();
        for s in seed_connectors() {
            c.connectors.insert(s.name.clone(), s);
        }
        c
    }

    /// Replaces the deployment's built-in list.
    pub fn with_builtins<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        builtins: I,
    ) -> Catalog {
        self.builtins = builtins.into_iter().map(Into::into).collect();
        self
    }

    /// Adds or replaces a connector from its tool lists, e.g. those of a
    /// loaded component (`github_read_file`, ...; a full `mcp__name__tool`
    /// name is accepted too). A connector the seed (or this catalogue)
    /// already describes keeps its policy: the read table covers only the
    /// reads it already listed, a known write tool keeps its registration
    /// and gate, and billing stays. A new write tool, or any write tool of a
    /// new connector, asks a person on each call; a new connector's tools
    /// are not grantable until the read table lists them.
    pub fn with_connector<R, W, S1, S2>(mut self, name: &str, reads: R, writes: W) -> Catalog
    where
        R: IntoIterator<Item = S1>,
        W: IntoIterator<Item = S2>,
        S1: AsRef<str>,
        S2: AsRef<str>,
    {
        let local = |t: &str| -> String {
            match names::split_mcp(t) {
                Some((server, tool)) if server == name => tool.to_string(),
                _ => t.to_string(),
            }
        };
        let template = self
            .connectors
            .get(name)
            .cloned()
            .or_else(|| seed_connectors().into_iter().find(|s| s.name == name));
        let reads: Vec<String> = reads.into_iter().map(|t| local(t.as_ref())).collect();
        let writes: Vec<WriteTool> = writes
            .into_iter()
            .map(|t| {
                let t = local(t.as_ref());
                template
                    .as_ref()
                    .and_then(|tpl| tpl.writes.iter().find(|w| w.name == t).cloned())
                    .unwrap_or_else(|| WriteTool::default_for(t))
            })
            .collect();
        let spec = match template {
            Some(tpl) => ConnectorSpec {
                name: name.into(),
                title: tpl.title,
                grantable: reads
                    .iter()
                    .filter(|r| tpl.grantable.contains(*r))
                    .cloned()
                    .collect(),
                reads,
                writes,
                billing: tpl.billing,
            },
            None => ConnectorSpec {
                name: name.into(),
                title: name.into(),
                reads,
                writes,
                grantable: BTreeSet::new(),
                billing: None,
            },
        };
        self.connectors.insert(name.into(), spec);
        self
    }

    /// Adds or replaces a connector described in full.
    pub(crate) fn with_spec(mut self, spec: ConnectorSpec) -> Catalog {
        self.connectors.insert(spec.name.clone(), spec);
        self
    }

    /// This catalogue with connector `name` as the seed describes it (or
    /// absent, for one the seed does not name): what a new version of it
    /// is admitted against, never the version served before it.
    pub(crate) fn with_seed_entry(mut self, name: &str) -> Catalog {
        match Catalog::seed().connectors.remove(name) {
            Some(seed) => {
                self.connectors.insert(name.to_string(), seed);
            }
            None => {
                self.connectors.remove(name);
            }
        }
        self
    }

    /// One connector.
    pub fn connector(&self, name: &str) -> Option<&ConnectorSpec> {
        self.connectors.get(name)
    }

    /// Every connector, by name.
    pub fn connectors(&self) -> impl Iterator<Item = &ConnectorSpec> {
        self.connectors.values()
    }

    /// The joint tool with this connector and local name, if it is one.
    pub fn joint(&self, connector: &str, tool: &str) -> Option<&JointTool> {
        self.joint
            .iter()
            .find(|j| j.connector == connector && j.tool == tool)
    }

    /// Opt-in tool groups.
    pub(crate) fn opt_ins(&self) -> &[OptInTools] {
        &self.opt_ins
    }

    /// What `name` (a bare built-in or a full `mcp__server__tool` name) is.
    pub fn classify<'a>(&'a self, name: &'a str) -> ToolKind<'a> {
        let Some((server, tool)) = names::split_mcp(name) else {
            return if BUILTINS.contains(&name) || self.builtins.iter().any(|b| b == name) {
                ToolKind::BuiltIn
            } else {
                ToolKind::Unknown
            };
        };
        if let Some(c) = self.connectors.get(server) {
            if c.reads.iter().any(|r| r == tool) {
                return ToolKind::ConnectorRead {
                    connector: c,
                    tool,
                    grantable: c.grantable.contains(tool),
                    joint: self.joint(server, tool),
                };
            }
            if let Some(w) = c.writes.iter().find(|w| w.name == tool) {
                return ToolKind::ConnectorWrite {
                    connector: c,
                    tool: w,
                };
            }
            return ToolKind::Unknown;
        }
        if let Some(p) = Platform::from_server_name(server) {
            if let Some(o) = self.opt_ins.iter().find(|o| o.server == p) {
                return match o.tools.iter().find(|t| *t == tool) {
                    Some(t) => ToolKind::OptIn(o, t),
                    None => ToolKind::Unknown,
                };
            }
            if p.tools().contains(&tool) {
                return ToolKind::Platform(p, tool);
            }
        }
        ToolKind::Unknown
    }
}

/// Why a component's policy facts cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdmitError {
    /// A connector of the seed catalogue whose component says otherwise.
    #[error(
        "connector `{connector}` disagrees with the seed catalogue, which the host keeps as data for the seed's connectors: {differences}. Rebuild the component with the seed's policy facts, or serve it under another name"
    )]
    Disagrees {
        connector: String,
        differences: String,
    },
    /// A tool reads other connectors (`Reads-from:`) where the catalogue
    /// has no such joint tool: a connector may not borrow another's credential.
    #[error(
        "connector `{connector}`, tool `{tool}`: `Reads-from: {peers}` is not a joint tool of the catalogue (only {known} read other connectors); a connector never reaches another connector's origin or credential otherwise"
    )]
    UndeclaredJoint {
        connector: String,
        tool: String,
        peers: String,
        known: String,
    },
    /// A gate or registration names a switch the host does not read.
    #[error(
        "connector `{connector}`, tool `{tool}`: `{switch}` is not an operator switch this host reads (it reads {known})"
    )]
    UnknownSwitch {
        connector: String,
        tool: String,
        switch: String,
        known: String,
    },
    /// Operator configuration names a tool the component does not have.
    #[error(
        "connector `{connector}`: the configuration names tool `{tool}`, which the component does not have"
    )]
    UnknownTool { connector: String, tool: String },
}

fn switch_named(connector: &str, tool: &str, name: &str) -> Result<Switch, AdmitError> {
    Switch::from_var(name).ok_or_else(|| AdmitError::UnknownSwitch {
        connector: connector.into(),
        tool: tool.into(),
        switch: name.into(),
        known: Switch::ALL
            .iter()
            .map(|s| s.var())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// The spec a component declares, taken literally.
fn declared_spec(manifest: &scout_manifest::Manifest) -> Result<ConnectorSpec, AdmitError> {
    use scout_manifest::{Effect, Gate, Registers as Reg};
    let name = manifest.connector.as_str();
    let mut spec = ConnectorSpec {
        name: name.into(),
        title: name.into(),
        reads: Vec::new(),
        writes: Vec::new(),
        grantable: BTreeSet::new(),
        billing: manifest.billing.map(|b| match b {
            scout_manifest::Billing::Credits => BillingUnit::Credits,
            scout_manifest::Billing::Usd => BillingUnit::Usd,
        }),
    };
    for tool in &manifest.tools {
        let local = manifest.wire_name(&tool.function);
        match tool.effect {
            Effect::Read => {
                if tool.grantable {
                    spec.grantable.insert(local.clone());
                }
                spec.reads.push(local);
            }
            Effect::Write => {
                let gate = match tool
                    .gate
                    .as_ref()
                    .unwrap_or(&Gate::Approval { switch: None })
                {
                    Gate::Open => WriteGate::Open,
                    Gate::Approval { switch } => WriteGate::Approval {
                        needs: switch
                            .as_deref()
                            .map(|s| switch_named(name, &local, s))
                            .transpose()?,
                    },
                    Gate::MutationsNeedApproval { switch } => WriteGate::MutationsNeedApproval {
                        needs: switch_named(name, &local, switch)?,
                    },
                };
                let registers = match tool.registers.as_ref().unwrap_or(&Reg::WithConnector) {
                    Reg::WithConnector => Registers::WithConnector,
                    Reg::WhenSwitch(s) => Registers::WhenSwitch(switch_named(name, &local, s)?),
                    Reg::WhenApprovalsOn => Registers::WhenApprovalsOn,
                };
                spec.writes.push(WriteTool {
                    name: local,
                    registers,
                    gate,
                });
            }
        }
    }
    Ok(spec)
}

fn differences(seed: &ConnectorSpec, declared: &ConnectorSpec) -> Vec<String> {
    let mut out = Vec::new();
    let set = |v: &[String]| v.iter().cloned().collect::<BTreeSet<String>>();
    let (seed_reads, reads) = (set(&seed.reads), set(&declared.reads));
    for t in seed_reads.difference(&reads) {
        out.push(format!("read tool `{t}` is missing"));
    }
    for t in reads.difference(&seed_reads) {
        out.push(format!("read tool `{t}` is not in the catalogue"));
    }
    for w in &seed.writes {
        match declared.writes.iter().find(|d| d.name == w.name) {
            None => out.push(format!("write tool `{}` is missing", w.name)),
            Some(d) => {
                if d.gate != w.gate {
                    out.push(format!(
                        "`{}` is gated {:?}, the catalogue says {:?}",
                        w.name, d.gate, w.gate
                    ));
                }
                if d.registers != w.registers {
                    out.push(format!(
                        "`{}` registers {:?}, the catalogue says {:?}",
                        w.name, d.registers, w.registers
                    ));
                }
            }
        }
    }
    for d in declared
        .writes
        .iter()
        .filter(|d| !seed.writes.iter().any(|w| w.name == d.name))
    {
        out.push(format!("write tool `{}` is not in the catalogue", d.name));
    }
    if seed.grantable != declared.grantable {
        let fmt = |s: &BTreeSet<String>| {
            if s.is_empty() {
                "none".to_string()
            } else {
                s.iter().cloned().collect::<Vec<_>>().join(", ")
            }
        };
        out.push(format!(
            "grantable reads are {}, the catalogue says {}",
            fmt(&declared.grantable),
            fmt(&seed.grantable)
        ));
    }
    if seed.billing != declared.billing {
        out.push(format!(
            "billing is {:?}, the catalogue says {:?}",
            declared.billing, seed.billing
        ));
    }
    out
}

impl ConnectorSpec {
    /// Operator narrowing: keeps only `tools` (local names) when given, and
    /// no grantable read when `grants` is false. It never adds anything.
    pub fn narrowed(
        mut self,
        tools: Option<&[String]>,
        grants: bool,
    ) -> Result<ConnectorSpec, AdmitError> {
        if let Some(keep) = tools {
            for t in keep {
                if !self.reads.contains(t) && !self.writes.iter().any(|w| &w.name == t) {
                    return Err(AdmitError::UnknownTool {
                        connector: self.name.clone(),
                        tool: t.clone(),
                    });
                }
            }
            self.reads.retain(|t| keep.contains(t));
            self.writes.retain(|w| keep.contains(&w.name));
            self.grantable.retain(|t| keep.contains(t));
        }
        if !grants {
            self.grantable.clear();
        }
        Ok(self)
    }
}

impl Catalog {
    /// The policy a loaded component is served under (DESIGN D13).
    ///
    /// A connector this catalogue describes (the seed's) must declare
    /// exactly the catalogue's tools, gates, registrations, grantable reads
    /// and billing, or it is refused: the catalogue is the seed's data,
    /// checked against the component. Any other connector is served on what
    /// it declares, made conservative: every write tool asks a person on
    /// every call (a declared `open` or mutations-only gate is served as an
    /// approval on each call; a declared switch is kept, since it only
    /// narrows), and only reads it declares grantable can be granted.
    pub fn admit(&self, manifest: &scout_manifest::Manifest) -> Result<ConnectorSpec, AdmitError> {
        self.check_reads_from(manifest)?;
        let declared = declared_spec(manifest)?;
        match self.connectors.get(&manifest.connector) {
            // Contentsquare: the seed lists no tool (every tool the brand's
            // server offers); the component's are served conservatively,
            // with nothing grantable, as the read table says.
            Some(seed) if seed.reads.is_empty() && seed.writes.is_empty() => {
                let mut spec = conservative(declared);
                spec.title = seed.title.clone();
                spec.grantable.clear();
                spec.billing = seed.billing;
                Ok(spec)
            }
            Some(seed) => {
                let found = differences(seed, &declared);
                if found.is_empty() {
                    Ok(seed.clone())
                } else {
                    Err(AdmitError::Disagrees {
                        connector: seed.name.clone(),
                        differences: found.join("; "),
                    })
                }
            }
            None => Ok(conservative(declared)),
        }
    }
}

impl Catalog {
    /// Refuses a `Reads-from:` line the catalogue does not describe: the
    /// seed's joint tool (DataForSEO's `seo_page_opportunities`, reading
    /// Search Console and Shopify) and the opt-in tools beside a connector
    /// (the content writer's, beside Shopify) are the only tools that read
    /// another connector, and only the connectors they are described with.
    fn check_reads_from(&self, manifest: &scout_manifest::Manifest) -> Result<(), AdmitError> {
        for tool in manifest.tools.iter().filter(|t| !t.reads_from.is_empty()) {
            let wire = manifest.wire_name(&tool.function);
            let peers: BTreeSet<&str> = tool.reads_from.iter().map(String::as_str).collect();
            let joint = self.joint(&manifest.connector, &wire).is_some_and(|j| {
                peers
                    == j.reads_from
                        .iter()
                        .map(String::as_str)
                        .filter(|c| *c != manifest.connector)
                        .collect()
            });
            let beside = self.opt_ins.iter().any(|o| {
                o.server.server_name() == manifest.connector
                    && o.tools.contains(&wire)
                    && peers == BTreeSet::from([o.beside.as_str()])
            });
            if !joint && !beside {
                let mut known: Vec<String> = self
                    .joint
                    .iter()
                    .map(|j| format!("{}'s `{}`", j.connector, j.tool))
                    .collect();
                known.extend(self.opt_ins.iter().map(|o| {
                    format!("the `{}` tools beside {}", o.server.server_name(), o.beside)
                }));
                return Err(AdmitError::UndeclaredJoint {
                    connector: manifest.connector.clone(),
                    tool: wire,
                    peers: tool.reads_from.join(", "),
                    known: known.join(" and "),
                });
            }
        }
        Ok(())
    }

    /// The platform server a folder-backed component serves (the content
    /// writer's tools, the SEO brief tools), when its manifest is exactly
    /// that server's: every tool the seed names for it, each a read tool
    /// (the read table lists them; they write only drafts into the project
    /// folder), no billing. The policy gives these tools by its own rules
    /// (opt-in beside Shopify, riding on a skill), not as a connector's.
    pub fn admit_platform(
        &self,
        manifest: &scout_manifest::Manifest,
    ) -> Option<Result<Platform, AdmitError>> {
        let platform = Platform::from_server_name(&manifest.connector)
            .filter(|p| matches!(p, Platform::Writer | Platform::Seo))?;
        if let Err(e) = self.check_reads_from(manifest) {
            return Some(Err(e));
        }
        let declared: BTreeSet<String> = manifest
            .tools
            .iter()
            .map(|t| manifest.wire_name(&t.function))
            .collect();
        let wanted: BTreeSet<String> = platform.tools().iter().map(|t| t.to_string()).collect();
        let mut found = Vec::new();
        for t in wanted.difference(&declared) {
            found.push(format!("tool `{t}` is missing"));
        }
        for t in declared.difference(&wanted) {
            found.push(format!(
                "tool `{t}` is not one of the seed's `{}` tools",
                platform.server_name()
            ));
        }
        for t in manifest
            .tools
            .iter()
            .filter(|t| t.effect != scout_manifest::Effect::Read)
        {
            found.push(format!(
                "`{}` is a write tool; the seed's read table lists every `{}` tool",
                manifest.wire_name(&t.function),
                platform.server_name()
            ));
        }
        if manifest.billing.is_some() {
            found.push("it bills; the seed's platform tools do not".to_string());
        }
        Some(if found.is_empty() {
            Ok(platform)
        } else {
            Err(AdmitError::Disagrees {
                connector: manifest.connector.clone(),
                differences: found.join("; "),
            })
        })
    }
}

/// Writes of a connector the seed does not describe ask a person each call.
fn conservative(mut spec: ConnectorSpec) -> ConnectorSpec {
    for w in &mut spec.writes {
        w.gate = match w.gate {
            WriteGate::Open => WriteGate::Approval { needs: None },
            WriteGate::Approval { needs } => WriteGate::Approval { needs },
            WriteGate::MutationsNeedApproval { needs } => {
                WriteGate::Approval { needs: Some(needs) }
            }
        };
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_counts_match_the_tables() {
        let c = Catalog::seed();
        let count = |n: &str| {
            let s = c.connector(n).unwrap();
            (s.reads.len(), s.writes.len(), s.grantable.len())
        };
        assert_eq!(count("shopify"), (3, 1, 3));
        assert_eq!(count("dataforseo"), (13, 0, 13));
        assert_eq!(count("firecrawl"), (5, 0, 5));
        assert_eq!(count("googleads"), (8, 0, 8));
        assert_eq!(count("searchconsole"), (6, 0, 6));
        assert_eq!(count("analytics"), (7, 0, 6));
        assert_eq!(count("sheets"), (1, 2, 1));
        assert_eq!(count("microsoftads"), (4, 0, 4));
        assert_eq!(count("figma"), (8, 0, 8));
        assert_eq!(count("github"), (7, 4, 7));
        assert_eq!(count("agentmail"), (10, 5, 10));
        assert_eq!(count("cloudflare"), (2, 1, 0));
        assert_eq!(count("contentsquare"), (0, 0, 0));
        assert_eq!(count("railway"), (5, 2, 5));
        assert_eq!(count("tailscale"), (5, 0, 5));
    }

    #[test]
    fn with_connector_keeps_seed_policy() {
        let c = Catalog::empty().with_connector(
            "github",
            [
                "github_read_file",
                "mcp__github__github_list_path",
                "github_new_read",
            ],
            ["github_comment", "github_new_write"],
        );
        let g = c.connector("github").unwrap();
        assert_eq!(
            g.reads,
            ["github_read_file", "github_list_path", "github_new_read"]
        );
        assert_eq!(
            g.grantable.iter().collect::<Vec<_>>(),
            ["github_list_path", "github_read_file"]
        );
        assert_eq!(
            g.writes[0].gate,
            WriteGate::Approval {
                needs: Some(Switch::GithubAllowWrites)
            }
        );
        assert_eq!(g.writes[1].gate, WriteGate::Approval { needs: None });
        let n = Catalog::empty().with_connector("acme", ["acme_read"], ["acme_write"]);
        assert!(!n.connector("acme").unwrap().is_grantable());
    }

    #[test]
    fn classify() {
        let c = Catalog::seed();
        assert_eq!(c.classify("Read"), ToolKind::BuiltIn);
        assert_eq!(c.classify("NotebookEdit"), ToolKind::Unknown);
        assert!(matches!(
            c.classify("mcp__memory__soul_update"),
            ToolKind::Platform(Platform::Memory, "soul_update")
        ));
        assert!(matches!(
            c.classify("mcp__writer__writer_save_draft"),
            ToolKind::OptIn(..)
        ));
        assert!(matches!(
            c.classify("mcp__dataforseo__seo_page_opportunities"),
            ToolKind::ConnectorRead {
                joint: Some(_),
                grantable: true,
                ..
            }
        ));
        assert!(matches!(
            c.classify("mcp__github__github_comment"),
            ToolKind::ConnectorWrite { .. }
        ));
        assert_eq!(c.classify("mcp__github__github_merge"), ToolKind::Unknown);
        assert_eq!(c.classify("mcp__nope__x"), ToolKind::Unknown);
    }

    fn manifest(
        name: &str,
        tools: Vec<scout_manifest::ToolDoc>,
        billing: Option<scout_manifest::Billing>,
    ) -> scout_manifest::Manifest {
        scout_manifest::Manifest {
            format: scout_manifest::FORMAT,
            connector: name.into(),
            version: "0.1.0".into(),
            namespace: "acme".into(),
            description: "d".into(),
            tools,
            withheld: vec![],
            billing,
        }
    }

    fn doc(
        function: &str,
        effect: scout_manifest::Effect,
        lines: &[(&str, &str)],
    ) -> scout_manifest::ToolDoc {
        let mut d = scout_manifest::policy::parse_tool_lines(function, effect, lines).unwrap();
        d.description = "d".into();
        d
    }

    fn github_as_declared(gate: &str) -> scout_manifest::Manifest {
        use scout_manifest::Effect::{Read, Write};
        let reads = [
            "read-file",
            "list-path",
            "list-branches",
            "list-issues",
            "read-issue",
            "list-pull-requests",
            "read-pull-request",
        ];
        let writes = [
            "create-branch",
            "commit-files",
            "open-pull-request",
            "comment",
        ];
        let mut tools: Vec<_> = reads
            .iter()
            .map(|f| doc(f, Read, &[("Grantable", "yes")]))
            .collect();
        tools.extend(writes.iter().map(|f| doc(f, Write, &[("Gate", gate)])));
        manifest("github", tools, None)
    }

    #[test]
    fn a_seed_connector_is_admitted_only_when_it_agrees_with_the_catalogue() {
        let seed = Catalog::seed();
        let spec = seed
            .admit(&github_as_declared("approval, switch GITHUB_ALLOW_WRITES"))
            .unwrap();
        assert_eq!(&spec, seed.connector("github").unwrap());
        // A component that drops the switch would loosen the seed's gate.
        let err = seed.admit(&github_as_declared("approval")).unwrap_err();
        assert!(
            matches!(&err, AdmitError::Disagrees { differences, .. } if differences.contains("github_comment")),
            "{err}"
        );
        // Claiming a bill, or making a read ungrantable, disagrees too.
        let mut billed = github_as_declared("approval, switch GITHUB_ALLOW_WRITES");
        billed.billing = Some(scout_manifest::Billing::Credits);
        assert!(seed.admit(&billed).is_err());
        let mut narrow = github_as_declared("approval, switch GITHUB_ALLOW_WRITES");
        narrow.tools[0].grantable = false;
        assert!(
            seed.admit(&narrow)
                .unwrap_err()
                .to_string()
                .contains("grantable")
        );
    }

    #[test]
    fn any_other_connector_is_served_conservatively() {
        use scout_manifest::Effect::{Read, Write};
        let m = manifest(
            "acme",
            vec![
                doc("look", Read, &[("Grantable", "yes")]),
                doc("peek", Read, &[]),
                doc("draft", Write, &[("Gate", "open")]),
                doc(
                    "send",
                    Write,
                    &[
                        ("Gate", "approval, switch AGENTMAIL_ALLOW_SENDS"),
                        ("Registers", "when-approvals-on"),
                    ],
                ),
            ],
            Some(scout_manifest::Billing::Usd),
        );
        let spec = Catalog::seed().admit(&m).unwrap();
        assert_eq!(spec.reads, ["acme_look", "acme_peek"]);
        assert_eq!(
            spec.grantable.iter().collect::<Vec<_>>(),
            ["acme_look"],
            "only what the component declares grantable"
        );
        assert_eq!(
            spec.writes[0].gate,
            WriteGate::Approval { needs: None },
            "a declared open write still asks a person"
        );
        assert_eq!(
            spec.writes[1].gate,
            WriteGate::Approval {
                needs: Some(Switch::AgentmailAllowSends)
            }
        );
        assert_eq!(spec.writes[1].registers, Registers::WhenApprovalsOn);
        assert_eq!(spec.billing, Some(BillingUnit::Usd));
        let unknown = manifest(
            "acme",
            vec![doc(
                "send",
                Write,
                &[("Gate", "approval, switch ACME_ALLOW")],
            )],
            None,
        );
        assert!(matches!(
            Catalog::seed().admit(&unknown),
            Err(AdmitError::UnknownSwitch { .. })
        ));
    }

    #[test]
    fn only_the_catalogues_joint_tools_read_other_connectors() {
        use scout_manifest::Effect::Read;
        let mut borrow = manifest(
            "acme",
            vec![doc(
                "peek",
                Read,
                &[("Reads-from", "github"), ("Route", "github GET /user")],
            )],
            None,
        );
        let err = Catalog::seed().admit(&borrow).unwrap_err();
        assert!(matches!(err, AdmitError::UndeclaredJoint { .. }), "{err}");
        // The seed's joint tool, but reading one connector too many.
        borrow.connector = "dataforseo".into();
        borrow.tools = vec![doc(
            "seo-page-opportunities",
            Read,
            &[
                ("Name", "seo_page_opportunities"),
                ("Reads-from", "searchconsole, shopify, github"),
            ],
        )];
        assert!(matches!(
            Catalog::seed().check_reads_from(&borrow),
            Err(AdmitError::UndeclaredJoint { .. })
        ));
        borrow.tools = vec![doc(
            "seo-page-opportunities",
            Read,
            &[
                ("Name", "seo_page_opportunities"),
                ("Reads-from", "searchconsole, shopify"),
            ],
        )];
        assert!(Catalog::seed().check_reads_from(&borrow).is_ok());
        let writer = manifest(
            "writer",
            vec![doc("page-content", Read, &[("Reads-from", "shopify")])],
            None,
        );
        assert!(Catalog::seed().check_reads_from(&writer).is_ok());
        let writer = manifest(
            "writer",
            vec![doc("page-content", Read, &[("Reads-from", "github")])],
            None,
        );
        assert!(Catalog::seed().check_reads_from(&writer).is_err());
    }

    #[test]
    fn operator_configuration_only_narrows() {
        let spec = Catalog::seed().connector("github").unwrap().clone();
        let only = spec
            .clone()
            .narrowed(Some(&["github_read_file".to_string()]), false)
            .unwrap();
        assert_eq!(only.reads, ["github_read_file"]);
        assert!(only.writes.is_empty() && only.grantable.is_empty());
        assert!(matches!(
            spec.narrowed(Some(&["github_merge".to_string()]), true),
            Err(AdmitError::UnknownTool { .. })
        ));
    }
}
