//! `scout-host inspect`: what a security reviewer needs to decide on a component.
//!
//! Read from the compiled binary, not from source: the connector's name and
//! version, every tool with its effect, description and JSON Schema, the
//! WITHHELD list, and every import (each marked allowed or not). The JSON
//! shape is stable and documented in docs/operating.md. A component that is not a
//! loadable connector (no manifest, exports that do not match it) still has
//! its imports shown first, then the problem: a reviewer sees what a
//! foreign component would do before why it is not a connector.
//!
//! Since contract 0.2.0 the report also carries the connector's policy
//! facts (DESIGN D13): each tool's declared routes (a read tool's POST is
//! shown as such, prominently), gate and registration, grantability, the
//! billing unit, the capabilities it imports, and how the host would serve
//! it: as the seed catalogue says, or, for a connector the seed does not
//! describe, with every write asking a person.

use crate::runtime::ComponentInfo;
use serde::Serialize;
use serde_json::Value;

/// The stable JSON report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Who the component says it is.
    pub connector: ConnectorReport,
    /// Every tool, read tools first.
    pub tools: Vec<ToolReport>,
    /// Effects deliberately not built, with reasons.
    pub withheld: Vec<WithheldReport>,
    /// Every import of the component.
    pub imports: Vec<ImportReport>,
}

/// The `connector` object.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectorReport {
    /// e.g. `github`.
    pub name: String,
    /// e.g. `0.1.0`.
    pub version: String,
    /// e.g. `scout:github@0.1.0`.
    pub package: String,
    /// The world's description.
    pub description: String,
    /// SHA-256 of the component file.
    pub sha256: String,
    /// `credits` or `usd` when every call bills; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billing: Option<&'static str>,
    /// The `scout:connector` capabilities it imports (`http`, `meter`,
    /// `folder`, `log`): its authority beyond the shared types.
    pub capabilities: Vec<String>,
    /// How the host serves it: `seed catalogue` (and it agrees), `not in
    /// the seed catalogue` (conservative defaults), or why it is refused.
    pub catalogue: String,
}

/// One entry of `tools`.
#[derive(Debug, Clone, Serialize)]
pub struct ToolReport {
    /// Wire name, e.g. `github_read_file`.
    pub name: String,
    /// `read` or `write`.
    pub effect: &'static str,
    /// From the WIT doc comment.
    pub description: String,
    /// JSON Schema of the arguments, derived from the WIT types.
    pub input_schema: Value,
    /// JSON Schema of a successful result (MCP's `outputSchema`): the
    /// record, or `{"result": T}` for any other type.
    pub output_schema: Value,
    /// The only requests it may make, `{method, path, read_only?}`.
    pub routes: Vec<scout_manifest::Route>,
    /// Read tools: whether a grant may cover it, as the component declares.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grantable: Option<bool>,
    /// Write tools: the gate the component declares (`approval, switch X`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    /// Write tools: when it registers, as declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registers: Option<String>,
    /// Write tools: the gate the host applies (differs from `gate` only for
    /// a connector outside the seed catalogue, whose writes always ask).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub served_gate: Option<String>,
}

/// One entry of `withheld`.
#[derive(Debug, Clone, Serialize)]
pub struct WithheldReport {
    /// What is not built.
    pub effect: String,
    /// Why.
    pub reason: String,
}

/// One entry of `imports`.
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    /// As named in the component, e.g. `scout:connector/http@0.1.0`.
    pub name: String,
    /// Whether the contract allows it; a component with any `false` is refused at load.
    pub allowed: bool,
    /// Whether it is one of the inert WASI interfaces (clocks, randomness,
    /// a filesystem with no preopen: allowed, no authority); absent when not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub inert: bool,
}

impl ImportReport {
    fn new(name: &str, allowed: bool) -> ImportReport {
        ImportReport {
            name: name.to_string(),
            allowed,
            inert: allowed && crate::runtime::import_inert(name),
        }
    }

    /// One line of the text report: `!!` marks a refused import, `(inert)`
    /// one linked with no authority (an allowed read-only POST route is
    /// marked `??`, never `!!`: it loads, a reviewer checks it).
    fn line(&self) -> String {
        format!(
            "  {} {}{}\n",
            if self.allowed { "  " } else { "!!" },
            self.name,
            if self.inert { "  (inert)" } else { "" }
        )
    }
}

impl Report {
    /// Builds the report of an inspected component.
    pub fn new(info: &ComponentInfo) -> Report {
        let m = &info.manifest;
        let package = if m.version.is_empty() {
            format!("{}:{}", m.namespace, m.connector)
        } else {
            format!("{}:{}@{}", m.namespace, m.connector, m.version)
        };
        let seed = crate::policy::Catalog::seed();
        let served = seed.admit(m);
        let catalogue = match (&served, seed.connector(&m.connector)) {
            (Err(e), _) => format!("refused: {e}"),
            (Ok(_), Some(_)) => "seed catalogue".to_string(),
            (Ok(_), None) => "not in the seed catalogue: served with conservative defaults (every write asks a person on every call)".to_string(),
        };
        let capabilities = info
            .capabilities()
            .into_iter()
            .map(str::to_string)
            .collect();
        Report {
            connector: ConnectorReport {
                name: m.connector.clone(),
                version: m.version.clone(),
                package,
                description: m.description.clone(),
                sha256: info.sha256.clone(),
                billing: m.billing.map(|b| match b {
                    scout_manifest::Billing::Credits => "credits",
                    scout_manifest::Billing::Usd => "usd",
                }),
                capabilities,
                catalogue,
            },
            tools: info
                .tools
                .iter()
                .map(|t| {
                    let doc = m
                        .tools
                        .iter()
                        .find(|d| d.function == t.function && d.effect == t.effect);
                    let write = t.effect == crate::Effect::Write;
                    ToolReport {
                        name: t.name.clone(),
                        effect: t.effect.as_str(),
                        description: t.description.clone(),
                        input_schema: t.input_schema.clone(),
                        output_schema: t.output_schema.clone(),
                        routes: t.routes.clone(),
                        grantable: (!write).then(|| doc.is_some_and(|d| d.grantable)),
                        gate: doc.and_then(|d| d.gate.as_ref()).map(|g| g.to_string()),
                        registers: doc
                            .and_then(|d| d.registers.as_ref())
                            .map(|r| r.to_string()),
                        served_gate: served.as_ref().ok().and_then(|spec| {
                            spec.writes
                                .iter()
                                .find(|w| w.name == t.name)
                                .map(|w| served_gate_text(&w.gate))
                        }),
                    }
                })
                .collect(),
            withheld: m
                .withheld
                .iter()
                .map(|w| WithheldReport {
                    effect: w.effect.clone(),
                    reason: w.reason.clone(),
                })
                .collect(),
            imports: info
                .imports
                .iter()
                .map(|name| ImportReport::new(name, !info.forbidden_imports.contains(name)))
                .collect(),
        }
    }

    /// The report as readable text.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let c = &self.connector;
        out.push_str(&format!("{} {} ({})\n", c.name, c.version, c.package));
        out.push_str(&format!("sha256 {}\n\n{}\n", c.sha256, c.description));
        out.push_str(&format!(
            "\ncapabilities: {}\nbilling: {}\ncatalogue: {}\n",
            if c.capabilities.is_empty() {
                "none".to_string()
            } else {
                c.capabilities.join(", ")
            },
            c.billing.unwrap_or("none"),
            c.catalogue
        ));
        for effect in ["read", "write"] {
            let tools: Vec<&ToolReport> =
                self.tools.iter().filter(|t| t.effect == effect).collect();
            out.push_str(&format!("\n{} tools ({}):\n", effect, tools.len()));
            for t in tools {
                out.push_str(&format!(
                    "  {}\n    {}\n",
                    t.name,
                    t.description.replace('\n', "\n    ")
                ));
                if let Some(props) = t.input_schema.get("properties").and_then(|p| p.as_object()) {
                    let required: Vec<&str> = t.input_schema["required"]
                        .as_array()
                        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
                        .unwrap_or_default();
                    let args: Vec<String> = props
                        .iter()
                        .map(|(k, schema)| {
                            let mut arg = if required.contains(&k.as_str()) {
                                k.clone()
                            } else {
                                format!("{k}?")
                            };
                            if let (Some(min), Some(max)) =
                                (schema.get("minimum"), schema.get("maximum"))
                            {
                                arg.push_str(&format!(" ({min} to {max})"));
                            }
                            arg
                        })
                        .collect();
                    out.push_str(&format!("    args: {}\n", args.join(", ")));
                }
                if let Some(g) = t.grantable {
                    out.push_str(&format!(
                        "    grantable: {}\n",
                        if g { "yes" } else { "no" }
                    ));
                }
                if let Some(g) = &t.gate {
                    out.push_str(&format!("    gate: {g}"));
                    match &t.served_gate {
                        Some(s) if s != g => out.push_str(&format!(" (served as: {s})\n")),
                        _ => out.push('\n'),
                    }
                }
                if let Some(r) = &t.registers {
                    out.push_str(&format!("    registers: {r}\n"));
                }
                if t.routes.is_empty() {
                    out.push_str("    routes: none (every HTTP request refused)\n");
                }
                for r in &t.routes {
                    if r.read_only {
                        out.push_str(&format!(
                            "    ?? route {r}: a POST this read tool declares as changing nothing\n"
                        ));
                    } else {
                        out.push_str(&format!("    route {r}\n"));
                    }
                }
            }
        }
        out.push_str(&format!("\nwithheld ({}):\n", self.withheld.len()));
        for w in &self.withheld {
            out.push_str(&format!("  - {}: {}\n", w.effect, w.reason));
        }
        out.push_str(&format!("\nimports ({}):\n", self.imports.len()));
        for i in &self.imports {
            out.push_str(&i.line());
        }
        if self
            .tools
            .iter()
            .any(|t| t.routes.iter().any(|r| r.read_only))
        {
            out.push_str("\nREVIEW: routes marked ?? are allowed: POSTs a read tool declares read-only; check that each changes nothing upstream.\n");
        }
        if self.imports.iter().any(|i| !i.allowed) {
            out.push_str("\nREFUSED: imports marked !! are outside the contract; the host will not load this component.\n");
        }
        out
    }
}

fn served_gate_text(gate: &crate::policy::catalog::WriteGate) -> String {
    use crate::policy::catalog::WriteGate;
    match gate {
        WriteGate::Open => "open".to_string(),
        WriteGate::Approval { needs: None } => "approval".to_string(),
        WriteGate::Approval { needs: Some(s) } => format!("approval, switch {}", s.var()),
        WriteGate::MutationsNeedApproval { needs } => {
            format!("mutations-need-approval, switch {}", needs.var())
        }
    }
}

/// What `inspect` shows of a component that cannot be read as a connector.
#[derive(Debug, Clone, Serialize)]
pub struct RefusedReport {
    /// Every import of the component.
    pub imports: Vec<ImportReport>,
    /// Why it is not a loadable connector, imports first.
    pub refused: Vec<String>,
}

impl RefusedReport {
    /// The report of a component whose imports are `imports` (name,
    /// allowed) and which could not be read as a connector because of `problem`.
    pub fn new(imports: &[(String, bool)], problem: &crate::LoadError) -> RefusedReport {
        let imports: Vec<ImportReport> = imports
            .iter()
            .map(|(name, allowed)| ImportReport::new(name, *allowed))
            .collect();
        let mut refused = Vec::new();
        let forbidden: Vec<&str> = imports
            .iter()
            .filter(|i| !i.allowed)
            .map(|i| i.name.as_str())
            .collect();
        if !forbidden.is_empty() {
            refused.push(format!(
                "imports outside the contract: {}",
                forbidden.join(", ")
            ));
        }
        match problem {
            crate::LoadError::ForbiddenImports {
                also: Some(also), ..
            } => refused.push(also.clone()),
            crate::LoadError::ForbiddenImports { also: None, .. } => {}
            other => refused.push(other.to_string()),
        }
        RefusedReport { imports, refused }
    }

    /// The report as readable text.
    pub fn to_text(&self) -> String {
        let mut out = format!("imports ({}):\n", self.imports.len());
        for i in &self.imports {
            out.push_str(&i.line());
        }
        out.push_str("\nREFUSED: the host will not load this component:\n");
        for r in &self.refused {
            out.push_str(&format!("  - {r}\n"));
        }
        out
    }
}
