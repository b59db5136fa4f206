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
use std::collections::BTreeMap;

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

/// The heading, in a tool's doc comment, above the list describing its
/// parameters (`- name: what it means`, or `- name (1 to 100, default 20):
/// what it means` for the values the tool accepts): WIT gives parameters no
/// doc comments of their own, and no ranges.
pub const PARAMETERS_HEADING: &str = "Parameters:";

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
    /// What its parameters mean, by name, and within them the doc comments
    /// of the record fields and cases they reach: the `description`s of the
    /// input schema the agent sees.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, TypeDoc>,
    /// The same for its result's `ok` type (the output schema).
    #[serde(default, skip_serializing_if = "TypeDoc::is_empty")]
    pub result: TypeDoc,
}

/// The doc comments one value's type carries, shaped like the type: a
/// record's fields, an enum's, a variant's or flags' cases, a list's items
/// (an option is its inner type's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeDoc {
    /// What the value is: the parameter's or field's doc, else its type's.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// A parameter's values the tool accepts and what it assumes without
    /// one (from `- name (1 to 100, default 20): ...`); the host refuses a
    /// value outside them before the guest runs.
    #[serde(default, flatten, skip_serializing_if = "Bounds::is_empty")]
    pub bounds: Bounds,
    /// A record's fields, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, TypeDoc>,
    /// An enum's, a variant's or flags' cases, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cases: BTreeMap<String, TypeDoc>,
    /// A list's items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Box<TypeDoc>>,
    /// The value is the contract's `json` type (`scout:connector/types`):
    /// the agent passes any JSON value, and the host hands the guest its
    /// canonical text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub json: bool,
}

impl TypeDoc {
    /// Nothing documented, at any depth.
    pub fn is_empty(&self) -> bool {
        self.description.is_empty()
            && self.bounds.is_empty()
            && self.fields.is_empty()
            && self.cases.is_empty()
            && self.items.is_none()
            && !self.json
    }
}

/// What a parameter's entry says about its values beyond prose: the
/// inclusive range a number must fall in and the value the tool assumes
/// when it is left out. Shown in the input schema as `minimum`, `maximum`
/// and `default`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounds {
    /// The smallest value accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<serde_json::Number>,
    /// The largest value accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<serde_json::Number>,
    /// What the tool uses when the parameter is left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
}

impl Bounds {
    /// Nothing said.
    pub fn is_empty(&self) -> bool {
        self.minimum.is_none() && self.maximum.is_none() && self.default.is_none()
    }

    /// The range as numbers, when there is one.
    pub fn range(&self) -> Option<(f64, f64)> {
        Some((
            self.minimum.as_ref()?.as_f64()?,
            self.maximum.as_ref()?.as_f64()?,
        ))
    }

    /// Reads `1 to 100`, `default 20`, or both separated by a comma (a
    /// default is a JSON value: `default true`, `default "markdown"`).
    pub fn parse(spec: &str) -> Result<Bounds, String> {
        let mut bounds = Bounds::default();
        for part in spec.split(',').map(str::trim) {
            if let Some(value) = part.strip_prefix("default ") {
                let value: serde_json::Value = serde_json::from_str(value.trim())
                    .map_err(|_| format!("`{part}`: the default is a JSON value (`default 20`, `default true`, `default \"text\"`)"))?;
                if bounds.default.replace(value).is_some() {
                    return Err(format!("`{spec}` gives two defaults"));
                }
            } else if let Some((min, max)) = part.split_once(" to ") {
                let number = |s: &str| serde_json::from_str::<serde_json::Number>(s.trim()).ok();
                let (Some(min), Some(max)) = (number(min), number(max)) else {
                    return Err(format!("`{part}`: a range is two numbers, `MIN to MAX`"));
                };
                if bounds.minimum.is_some() {
                    return Err(format!("`{spec}` gives two ranges"));
                }
                bounds.minimum = Some(min);
                bounds.maximum = Some(max);
            } else {
                return Err(format!(
                    "`{part}` is neither a range (`1 to 100`) nor a default (`default 20`)"
                ));
            }
        }
        bounds.check().map(|()| bounds)
    }

    /// The range is in order and holds the default.
    pub fn check(&self) -> Result<(), String> {
        if self.minimum.is_some() != self.maximum.is_some() {
            return Err("a range needs both its minimum and its maximum".to_string());
        }
        let Some((min, max)) = self.range() else {
            return Ok(());
        };
        // JSON numbers are finite: no NaN to compare.
        if min > max {
            return Err(format!("the range {min} to {max} is empty"));
        }
        if let Some(default) = &self.default {
            match default.as_f64() {
                Some(d) if min <= d && d <= max => {}
                _ => return Err(format!("the default {default} is outside {min} to {max}")),
            }
        }
        Ok(())
    }
}

/// One entry of a `Parameters:` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterEntry {
    /// The parameter's WIT name.
    pub name: String,
    /// What it means.
    pub text: String,
    /// Its range and default, if the entry gives them.
    pub bounds: Bounds,
}

/// Splits a tool's description into its prose and its `Parameters:` list
/// (`- name: what it means`, or `- name (1 to 100, default 20): what it
/// means`, continued on further lines; a blank line ends it). A bullet that
/// is neither is an error.
pub fn split_parameters(docs: &str) -> Result<(String, Vec<ParameterEntry>), ManifestError> {
    let mut prose = Vec::new();
    let mut params: Vec<ParameterEntry> = Vec::new();
    let mut in_list = false;
    for line in docs.lines() {
        let trimmed = line.trim();
        if !in_list {
            if trimmed == PARAMETERS_HEADING {
                in_list = true;
            } else {
                prose.push(line);
            }
            continue;
        }
        if trimmed.is_empty() {
            in_list = false;
            prose.push(line);
            continue;
        }
        if let Some(bullet) = trimmed.strip_prefix("- ") {
            params.push(parameter_entry(bullet)?);
        } else if let Some(ParameterEntry { text, .. }) = params.last_mut() {
            text.push(' ');
            text.push_str(trimmed);
        } else {
            return Err(ManifestError::Rule(format!(
                "line `{trimmed}` under `{PARAMETERS_HEADING}` is not a `- name: what it means` bullet"
            )));
        }
    }
    Ok((prose.join("\n").trim().to_string(), params))
}

/// Reads one bullet: `name: text` or `name (SPEC): text`.
fn parameter_entry(bullet: &str) -> Result<ParameterEntry, ManifestError> {
    let not_an_entry = || {
        ManifestError::Rule(format!(
            "parameter entry `{bullet}` is not `- name: what it means` (or `- name (1 to 100, default 20): what it means`)"
        ))
    };
    let (head, text) = bullet.split_once(':').ok_or_else(not_an_entry)?;
    let (name, bounds) = match head.split_once('(') {
        None => (head, Bounds::default()),
        Some((name, spec)) => {
            let spec = spec.trim_end().strip_suffix(')').ok_or_else(not_an_entry)?;
            let bounds = Bounds::parse(spec)
                .map_err(|why| ManifestError::Rule(format!("parameter entry `{bullet}`: {why}")))?;
            (name, bounds)
        }
    };
    let (name, text) = (name.trim().trim_matches('`'), text.trim());
    if name.is_empty() || text.is_empty() || name.contains(char::is_whitespace) {
        return Err(not_an_entry());
    }
    Ok(ParameterEntry {
        name: name.to_string(),
        text: text.to_string(),
        bounds,
    })
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
    /// A line under a world's `Withheld:` heading (`line`, trimmed) is not a
    /// `- effect: reason` bullet.
    #[error("{message}")]
    Withheld { line: String, message: String },
    /// An error at a place in the WIT source, `file.wit:LINE`.
    #[error("{location}: {source}")]
    At {
        location: String,
        #[source]
        source: Box<ManifestError>,
    },
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
            let bad = |message: String| ManifestError::Withheld {
                line: trimmed.to_string(),
                message,
            };
            let (effect, reason) = bullet.split_once(':').ok_or_else(|| {
                bad(format!(
                    "withheld entry `{bullet}` is not `- effect: reason`"
                ))
            })?;
            let (effect, reason) = (effect.trim(), reason.trim());
            if effect.is_empty() || reason.is_empty() {
                return Err(bad(format!(
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
            return Err(ManifestError::Withheld {
                line: trimmed.to_string(),
                message: format!(
                    "line `{trimmed}` under `{WITHHELD_HEADING}` is not a `- effect: reason` bullet"
                ),
            });
        }
    }
    Ok((description.join("\n").trim().to_string(), withheld))
}

#[cfg(feature = "from-wit")]
mod from_wit;
pub mod policy;
pub use policy::{Affix, Billing, Gate, GraphqlBody, Registers, Route, RouteMethod};

#[cfg(test)]
mod tests {
    use super::{Bounds, ParameterEntry, split_parameters};

    #[test]
    fn a_parameters_list_leaves_the_description_and_names_each_parameter() {
        let (prose, params) = split_parameters(
            "Search threads.\n\nParameters:\n- query: a word or phrase,\n  case-insensitive.\n- `limit`: at most this many (default 20).\n\nLooks at the newest 500.",
        )
        .unwrap();
        assert_eq!(prose, "Search threads.\n\n\nLooks at the newest 500.");
        let entry = |name: &str, text: &str| ParameterEntry {
            name: name.to_string(),
            text: text.to_string(),
            bounds: Bounds::default(),
        };
        assert_eq!(
            params,
            [
                entry("query", "a word or phrase, case-insensitive."),
                entry("limit", "at most this many (default 20)."),
            ]
        );
        for bad in [
            "Parameters:\n- query",
            "Parameters:\n- : x",
            "Parameters:\nloose text",
            "Parameters:\n- two words: x",
            "Parameters:\n- limit (1 to: x",
        ] {
            assert!(split_parameters(bad).is_err(), "{bad:?}");
        }
        assert_eq!(split_parameters("No list.").unwrap().1, []);
    }

    #[test]
    fn an_entry_may_give_the_range_and_default_the_tool_holds_to() {
        let (_, params) = split_parameters(
            "Lists.\n\nParameters:\n- limit (1 to 100, default 20): at most this many.\n- scale (0.01 to 4): a zoom.\n- main (default true): only the main content.",
        )
        .unwrap();
        let number = |s: &str| Some(serde_json::from_str(s).unwrap());
        assert_eq!(params[0].name, "limit");
        assert_eq!(params[0].text, "at most this many.");
        assert_eq!(
            params[0].bounds,
            Bounds {
                minimum: number("1"),
                maximum: number("100"),
                default: Some(serde_json::json!(20)),
            }
        );
        assert_eq!(params[1].bounds.range(), Some((0.01, 4.0)));
        assert_eq!(params[2].bounds.default, Some(serde_json::json!(true)));
        for (bad, why) in [
            ("- limit (100 to 1): x", "is empty"),
            ("- limit (1 to 10, default 20): x", "outside"),
            ("- limit (one to ten): x", "two numbers"),
            ("- limit (default twenty): x", "JSON value"),
            ("- limit (at most 3): x", "neither a range"),
            ("- limit (1 to 2, 3 to 4): x", "two ranges"),
        ] {
            let err = split_parameters(&format!("Parameters:\n{bad}"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
