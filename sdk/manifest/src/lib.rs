//! The connector manifest.
//!
//! A connector's tool descriptions and its WITHHELD list are written once, as
//! doc comments in its `.wit` file. The component model drops doc comments
//! when a component is built, so `scout-sdk` reads them at compile time (with
//! [`Manifest::from_wit_dir`]) and stores them as JSON in a custom section of
//! the component, named [`SECTION`]. The host reads the section back and
//! refuses a component whose manifest and exports disagree: the binary cannot
//! describe a tool it does not export, or export one it does not describe.
//!
//! Format 2 (contract `scout:connector@0.2.0`) adds the connector's policy
//! facts, written as `Key: value` lines at the end of the doc comments (see
//! [`policy`]): per tool its declared routes, for a read tool whether a grant
//! may cover it, for a write tool its gate and when it registers, and for
//! the connector its billing unit. [`Manifest::validate`] holds the rules
//! both the SDK (at the connector's compile time) and the host (at load)
//! apply, so a hand-made manifest cannot slip past the host.

use serde::{Deserialize, Serialize};

/// Name of the custom section that carries the manifest inside a component.
pub const SECTION: &str = "scout-connector-manifest";

/// Version of the manifest's JSON shape.
pub const FORMAT: u32 = 2;

/// The exported interface that holds a connector's read tools.
pub const READ_INTERFACE: &str = "read-tools";
/// The exported interface that holds a connector's write tools.
pub const WRITE_INTERFACE: &str = "write-tools";

/// The heading, in a world's doc comment, above its WITHHELD list.
pub const WITHHELD_HEADING: &str = "Withheld:";

/// What a tool does to the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Looks, changes nothing upstream.
    Read,
    /// Creates, changes, sends or spends something upstream.
    Write,
}

impl Effect {
    /// The effect of a tool exported from the interface named `interface`.
    pub fn of_interface(interface: &str) -> Option<Effect> {
        match interface {
            READ_INTERFACE => Some(Effect::Read),
            WRITE_INTERFACE => Some(Effect::Write),
            _ => None,
        }
    }

    /// `read` or `write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Write => "write",
        }
    }
}

/// One tool as its WIT describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDoc {
    /// The WIT function name, e.g. `read-file`.
    pub function: String,
    /// Read or write, from the interface the function is exported in.
    pub effect: Effect,
    /// The function's doc comment, without its policy lines.
    pub description: String,
    /// The requests this tool may make through its `http` handle; any other
    /// request is refused by the host with nothing sent.
    #[serde(default)]
    pub routes: Vec<Route>,
    /// Read tools: whether a grant (specialist, goal agent) may cover it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub grantable: bool,
    /// Write tools: how each call is gated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
    /// Write tools: when the tool is registered at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers: Option<Registers>,
    /// Its wire name, when it is not `CONNECTOR_FUNCTION` (a `Name:` line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Read tools: the other connectors it reads (a joint tool).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads_from: Vec<String>,
}

/// One effect the connector deliberately does not build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Withheld {
    /// What is not built, e.g. `merging`.
    pub effect: String,
    /// Why.
    pub reason: String,
}

/// Everything a component says about itself beyond its types.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Shape version, [`FORMAT`].
    pub format: u32,
    /// The connector's name: its WIT package name, e.g. `github`.
    pub connector: String,
    /// The WIT package version, e.g. `0.1.0`.
    pub version: String,
    /// The WIT namespace, e.g. `scout`.
    pub namespace: String,
    /// The world's doc comment above the WITHHELD list.
    pub description: String,
    /// Every tool, read tools first, in WIT order.
    pub tools: Vec<ToolDoc>,
    /// The WITHHELD list.
    pub withheld: Vec<Withheld>,
    /// What every call of this connector bills in, if it bills.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billing: Option<Billing>,
}

/// Why a manifest could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The WIT could not be parsed.
    #[error("cannot parse WIT: {0}")]
    Wit(String),
    /// The WIT is well formed but breaks a connector rule.
    #[error("{0}")]
    Rule(String),
    /// The JSON in the section is not a manifest.
    #[error("manifest section is not valid: {0}")]
    Json(#[from] serde_json::Error),
}

impl Manifest {
    /// Parses the JSON stored in the [`SECTION`] custom section.
    pub fn from_json(bytes: &[u8]) -> Result<Manifest, ManifestError> {
        #[derive(Deserialize)]
        struct Head {
            format: u32,
        }
        let head: Head = serde_json::from_slice(bytes)?;
        if head.format != FORMAT {
            return Err(ManifestError::Rule(format!(
                "manifest format {} is not supported (expected {FORMAT}): rebuild the connector against scout-sdk for contract scout:connector@0.2.0",
                head.format
            )));
        }
        let manifest: Manifest = serde_json::from_slice(bytes)?;
        manifest.validate()?;
        Ok(manifest)
    }

    /// The JSON stored in the custom section.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a manifest always serialises")
    }

    /// The wire name of a tool: `github` + `read-file` = `github_read_file`.
    pub fn wire_name(&self, function: &str) -> String {
        match self
            .tools
            .iter()
            .find(|t| t.function == function)
            .and_then(|t| t.name.as_ref())
        {
            Some(name) => name.clone(),
            None => wire_name(&self.connector, function),
        }
    }
}

/// The wire name of a connector's tool, as the seed names it:
/// connector `github`, function `read-file` -> `github_read_file`.
pub fn wire_name(connector: &str, function: &str) -> String {
    format!(
        "{}_{}",
        connector.replace('-', "_"),
        function.replace('-', "_")
    )
}

/// Splits a world's doc comment into its description and WITHHELD list.
///
/// The list follows a line that reads `Withheld:`, one `- effect: reason`
/// bullet per line; a bullet may continue on indented lines.
pub fn parse_world_docs(docs: &str) -> Result<(String, Vec<Withheld>), ManifestError> {
    let mut description = Vec::new();
    let mut withheld: Vec<Withheld> = Vec::new();
    let mut in_list = false;
    for line in docs.lines() {
        let trimmed = line.trim();
        if !in_list {
            if trimmed == WITHHELD_HEADING {
                in_list = true;
            } else {
                description.push(line);
            }
            continue;
        }
        if trimmed.is_empty() {
            continue;
        }
        if let Some(bullet) = trimmed.strip_prefix("- ") {
            let (effect, reason) = bullet.split_once(':').ok_or_else(|| {
                ManifestError::Rule(format!(
                    "withheld entry `{bullet}` is not `- effect: reason`"
                ))
            })?;
            let (effect, reason) = (effect.trim(), reason.trim());
            if effect.is_empty() || reason.is_empty() {
                return Err(ManifestError::Rule(format!(
                    "withheld entry `{bullet}` needs both an effect and a reason"
                )));
            }
            withheld.push(Withheld {
                effect: effect.to_string(),
                reason: reason.to_string(),
            });
        } else if let Some(last) = withheld.last_mut() {
            last.reason.push(' ');
            last.reason.push_str(trimmed);
        } else {
            return Err(ManifestError::Rule(format!(
                "line `{trimmed}` under `{WITHHELD_HEADING}` is not a `- effect: reason` bullet"
            )));
        }
    }
    Ok((description.join("\n").trim().to_string(), withheld))
}

#[cfg(feature = "from-wit")]
mod from_wit;
pub mod policy;
pub use policy::{Affix, Billing, Gate, GraphqlBody, Registers, Route, RouteMethod};
