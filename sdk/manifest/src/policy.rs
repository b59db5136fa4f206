//! A connector's policy facts, as its WIT doc comments state them.
//!
//! The host enforces these, so they are written where a reviewer reads the
//! tools: one `Key: value` line each, after the prose of a doc comment.
//!
//! On a tool:
//! - `Route: GET /repos/{owner}/{repo}/contents/{*path}`: a request the tool
//!   may make. `{name}` stands for one path segment, `{*name}` (last only)
//!   for the rest of the path. A read tool may declare only `GET` and `HEAD`
//!   routes, and a `POST` route marked `(read-only)` for query endpoints that
//!   take a body (GraphQL queries, POST-based search): `inspect` shows it.
//! - `Grantable: yes` (read tools): a grant may cover it. Default `no`.
//! - `Gate: approval`, `Gate: approval, switch GITHUB_ALLOW_WRITES`,
//!   `Gate: open`, `Gate: mutations-need-approval, switch SHOPIFY_ALLOW_WRITES`
//!   (write tools). Default `approval`.
//! - `Registers: with-connector`, `Registers: when-switch AGENTMAIL_ALLOW_SENDS`,
//!   `Registers: when-approvals-on` (write tools). Default `with-connector`.
//! - `Name: docs`: the tool's wire name when it is not `CONNECTOR_FUNCTION`
//!   (the seed names Cloudflare's tools `docs`, `search`, `execute`).
//! - `Reads-from: searchconsole, shopify` (read tools): a joint tool that also
//!   reads these connectors, through routes that name them (below). The host
//!   offers it only when each of them is live in the session.
//!
//! A route may name its destination before the method: `Route: drive GET
//! /drive/v3/files` goes to the connector's origin the operator names
//! `drive`, or, for a name in `Reads-from`, to that connector's origin with
//! its credential. Without a name it goes to the connector's own origin.
//! A parameter `{site:encoded}` matches one segment that may hold
//! percent-encoded `/` (a URL used as an id); anywhere else the host refuses
//! `%2F`. A POST may carry one qualifier: `(read-only)`, `(graphql-query)`
//! (a read tool's GraphQL request: the host parses the body and sends it only
//! if every operation is a query) or `(graphql)` (a write tool's GraphQL
//! request: the host parses it, and a mutation needs the tool's gate). A
//! GraphQL qualifier names the root fields the body may select,
//! `(graphql: commentCreate)`, `(graphql-query: issues, issue)`: the host
//! then sends one operation selecting only those (through fragments too),
//! and a person approving the call is shown them. Without names any root
//! field goes, for a tool whose argument is the whole document.
//!
//! On the world: `Billing: none`, `Billing: credits` or `Billing: usd`.
//!
//! A line that starts with one of these keys and does not parse is an
//! error, never prose: a typo must not silently widen or drop a rule.

use crate::{Effect, Manifest, ManifestError, ToolDoc};
use serde::{Deserialize, Serialize};

/// Keys of a tool's policy lines.
pub const TOOL_KEYS: [&str; 6] = [
    "Route",
    "Grantable",
    "Gate",
    "Registers",
    "Name",
    "Reads-from",
];
/// Keys of a world's policy lines.
pub const WORLD_KEYS: [&str; 1] = ["Billing"];

/// An HTTP method a route may declare (the `http` interface's methods).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum RouteMethod {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
}

impl RouteMethod {
    /// `GET`, `POST`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            RouteMethod::Get => "GET",
            RouteMethod::Head => "HEAD",
            RouteMethod::Post => "POST",
            RouteMethod::Put => "PUT",
            RouteMethod::Patch => "PATCH",
            RouteMethod::Delete => "DELETE",
        }
    }

    fn parse(text: &str) -> Option<RouteMethod> {
        Some(match text {
            "GET" => RouteMethod::Get,
            "HEAD" => RouteMethod::Head,
            "POST" => RouteMethod::Post,
            "PUT" => RouteMethod::Put,
            "PATCH" => RouteMethod::Patch,
            "DELETE" => RouteMethod::Delete,
            _ => return None,
        })
    }

    /// GET and HEAD change nothing.
    pub fn is_safe(self) -> bool {
        matches!(self, RouteMethod::Get | RouteMethod::Head)
    }
}

/// What the host checks in a route's GraphQL request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GraphqlBody {
    /// `(graphql-query)`: every operation must be a query.
    QueriesOnly,
    /// `(graphql)`: mutations only as far as the tool's gate decided.
    Gated,
}

/// One request a tool may make: a method and a path template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// Where it goes: `None` is the connector's own origin; otherwise an
    /// origin the operator names for it, or a `Reads-from` connector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    pub method: RouteMethod,
    /// `/repos/{owner}/{repo}`; `{name}` is one segment, `{*name}` the rest,
    /// `{name:encoded}` one segment that may hold `%2F`.
    pub path: String,
    /// A `POST` a read tool declares as changing nothing (a query endpoint;
    /// also set by `(graphql-query)`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
    /// The body is a GraphQL request the host parses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphql: Option<GraphqlBody>,
    /// The root fields its one operation may select (`(graphql: commentCreate)`,
    /// `(graphql-query: issues, issue)`; `__typename` always). Empty: any
    /// root field, which only a tool that takes the whole document as its
    /// argument should declare (a person then approves the document itself).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub graphql_fields: Vec<String>,
}

impl Route {
    /// A route to the connector's own origin, without qualifier.
    pub fn new(method: RouteMethod, path: impl Into<String>) -> Route {
        Route {
            destination: None,
            method,
            path: path.into(),
            read_only: false,
            graphql: None,
            graphql_fields: Vec::new(),
        }
    }

    /// The names of its `{name:encoded}` parameters' segments, by index
    /// (0 is the first segment after the leading `/`).
    pub fn encoded_segments(&self) -> Vec<usize> {
        self.path
            .trim_start_matches('/')
            .split('/')
            .enumerate()
            .filter(|(_, s)| s.starts_with('{') && s.ends_with(":encoded}"))
            .map(|(i, _)| i)
            .collect()
    }

    /// The template in matchit's syntax (`{name:encoded}` and a parameter
    /// with literal text around it, `{id}.json`, become `{name}`; see
    /// [`Route::affixes`]).
    pub fn matchit_path(&self) -> String {
        let segments: Vec<String> = self
            .path
            .split('/')
            .map(|s| match affixed_parameter(s) {
                Some((_, name, _)) => format!("{{{name}}}"),
                None => s.replace(":encoded}", "}"),
            })
            .collect();
        segments.join("/")
    }

    /// Segments (0 = first after `/`) holding a parameter with literal text
    /// around it (`{id}.json`, `v{version}`, Google's custom methods
    /// `{property}:runReport`), with the prefix and suffix each must start
    /// and end with around a non-empty value.
    pub fn affixes(&self) -> Vec<Affix> {
        self.path
            .trim_start_matches('/')
            .split('/')
            .enumerate()
            .filter_map(|(segment, s)| {
                affixed_parameter(s).map(|(prefix, _, suffix)| Affix {
                    segment,
                    prefix: prefix.to_string(),
                    suffix: suffix.to_string(),
                })
            })
            .collect()
    }
}

/// The literal text around a parameter inside one segment of a route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Affix {
    /// The segment (0 = first after `/`).
    pub segment: usize,
    /// What the segment starts with.
    pub prefix: String,
    /// What the segment ends with.
    pub suffix: String,
}

impl Affix {
    /// Whether `segment` is the prefix, a non-empty value, and the suffix.
    pub fn fits(&self, segment: &str) -> bool {
        segment.len() > self.prefix.len() + self.suffix.len()
            && segment.starts_with(self.prefix.as_str())
            && segment.ends_with(self.suffix.as_str())
    }
}

impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(d) = &self.destination {
            write!(f, "{d} ")?;
        }
        write!(f, "{} {}", self.method.as_str(), self.path)?;
        let fields = if self.graphql_fields.is_empty() {
            String::new()
        } else {
            format!(": {}", self.graphql_fields.join(", "))
        };
        match (self.graphql, self.read_only) {
            (Some(GraphqlBody::QueriesOnly), _) => write!(f, " (graphql-query{fields})")?,
            (Some(GraphqlBody::Gated), _) => write!(f, " (graphql{fields})")?,
            (None, true) => f.write_str(" (read-only)")?,
            (None, false) => {}
        }
        Ok(())
    }
}

/// How each call of a write tool is gated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Gate {
    /// No gate (a draft that is not sent).
    Open,
    /// A person approves each call; with a switch, the operator must also
    /// have turned it on, or the tool refuses before any request.
    Approval {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        switch: Option<String>,
    },
    /// The tool is also a read path: reads run, mutations need the switch
    /// and an approval.
    MutationsNeedApproval { switch: String },
}

impl std::fmt::Display for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Gate::Open => f.write_str("open"),
            Gate::Approval { switch: None } => f.write_str("approval"),
            Gate::Approval { switch: Some(s) } => write!(f, "approval, switch {s}"),
            Gate::MutationsNeedApproval { switch } => {
                write!(f, "mutations-need-approval, switch {switch}")
            }
        }
    }
}

/// When a write tool is registered at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "switch")]
pub enum Registers {
    WithConnector,
    WhenSwitch(String),
    WhenApprovalsOn,
}

impl std::fmt::Display for Registers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Registers::WithConnector => f.write_str("with-connector"),
            Registers::WhenSwitch(s) => write!(f, "when-switch {s}"),
            Registers::WhenApprovalsOn => f.write_str("when-approvals-on"),
        }
    }
}

/// What a billing connector's calls are counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Billing {
    Credits,
    Usd,
}

fn rule(message: String) -> ManifestError {
    ManifestError::Rule(message)
}

/// Splits a doc comment into its prose and its `Key: value` lines for `keys`.
pub fn split_policy_lines<'a>(
    docs: &'a str,
    keys: &[&'static str],
) -> (String, Vec<(&'static str, &'a str)>) {
    let mut prose = Vec::new();
    let mut lines = Vec::new();
    for line in docs.lines() {
        let trimmed = line.trim();
        let key = keys.iter().find(|k| {
            trimmed
                .strip_prefix(**k)
                .is_some_and(|rest| rest.starts_with(':'))
        });
        match key {
            Some(k) => lines.push((*k, trimmed[k.len() + 1..].trim())),
            None => prose.push(line),
        }
    }
    (prose.join("\n").trim().to_string(), lines)
}

/// The policy facts of one tool, parsed from its doc comment's lines.
pub fn parse_tool_lines(
    tool: &str,
    effect: Effect,
    lines: &[(&str, &str)],
) -> Result<ToolDoc, ManifestError> {
    let mut doc = ToolDoc {
        function: tool.to_string(),
        effect,
        description: String::new(),
        routes: Vec::new(),
        grantable: false,
        gate: None,
        registers: None,
        name: None,
        reads_from: Vec::new(),
        params: Default::default(),
        result: Default::default(),
    };
    let (mut seen_grantable, mut seen_gate, mut seen_registers) = (false, false, false);
    let (mut seen_name, mut seen_reads_from) = (false, false);
    let once = |seen: &mut bool, key: &str| -> Result<(), ManifestError> {
        if std::mem::replace(seen, true) {
            return Err(rule(format!("tool `{tool}` has two `{key}:` lines")));
        }
        Ok(())
    };
    for (key, value) in lines {
        match *key {
            "Route" => doc.routes.push(parse_route(tool, value)?),
            "Grantable" => {
                once(&mut seen_grantable, key)?;
                doc.grantable = match *value {
                    "yes" => true,
                    "no" => false,
                    other => {
                        return Err(rule(format!(
                            "tool `{tool}`: `Grantable: {other}` must be `yes` or `no`"
                        )));
                    }
                };
            }
            "Gate" => {
                once(&mut seen_gate, key)?;
                doc.gate = Some(parse_gate(tool, value)?);
            }
            "Registers" => {
                once(&mut seen_registers, key)?;
                doc.registers = Some(parse_registers(tool, value)?);
            }
            "Name" => {
                once(&mut seen_name, key)?;
                let name = value.trim();
                if !is_wire_name(name) {
                    return Err(rule(format!(
                        "tool `{tool}`: `Name: {name}` must be lower-case letters, digits and `_`, starting with a letter"
                    )));
                }
                doc.name = Some(name.to_string());
            }
            "Reads-from" => {
                once(&mut seen_reads_from, key)?;
                for peer in value.split(',').map(str::trim) {
                    if !is_destination(peer) {
                        return Err(rule(format!(
                            "tool `{tool}`: `Reads-from:` names `{peer}`, which is not a connector name"
                        )));
                    }
                    if doc.reads_from.iter().any(|p| p == peer) {
                        return Err(rule(format!(
                            "tool `{tool}`: `Reads-from:` names `{peer}` twice"
                        )));
                    }
                    doc.reads_from.push(peer.to_string());
                }
            }
            other => {
                return Err(rule(format!(
                    "tool `{tool}`: unknown policy line `{other}:`"
                )));
            }
        }
    }
    if effect == Effect::Write {
        doc.gate.get_or_insert(Gate::Approval { switch: None });
        doc.registers.get_or_insert(Registers::WithConnector);
    }
    Ok(doc)
}

/// The billing unit from a world's `Billing:` line, if any.
pub fn parse_world_lines(lines: &[(&str, &str)]) -> Result<Option<Billing>, ManifestError> {
    let mut billing = None;
    let mut seen = false;
    for (key, value) in lines {
        if *key != "Billing" {
            return Err(rule(format!("unknown world policy line `{key}:`")));
        }
        if std::mem::replace(&mut seen, true) {
            return Err(rule("the world has two `Billing:` lines".to_string()));
        }
        billing = match *value {
            "none" => None,
            "credits" => Some(Billing::Credits),
            "usd" => Some(Billing::Usd),
            other => {
                return Err(rule(format!(
                    "`Billing: {other}` must be `none`, `credits` or `usd`"
                )));
            }
        };
    }
    Ok(billing)
}

/// The characters a literal part of a path template may hold.
fn is_literal_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~!$&'()+,=:%".contains(c)
}

/// A parameter with literal text around it inside one segment: `{id}.json`,
/// `v{version}`, `{property}:runReport` (a custom method). The prefix, the
/// name and the suffix; at least one of prefix and suffix holds a letter or
/// digit, and neither holds `{` or `}`.
fn affixed_parameter(segment: &str) -> Option<(&str, &str, &str)> {
    let (prefix, rest) = segment.split_once('{')?;
    let (name, suffix) = rest.split_once('}')?;
    let ok_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let ok_affix = |a: &str| a.chars().all(is_literal_char);
    let meaningful = |a: &str| a.chars().any(|c| c.is_ascii_alphanumeric());
    (ok_name && ok_affix(prefix) && ok_affix(suffix) && (meaningful(prefix) || meaningful(suffix)))
        .then_some((prefix, name, suffix))
}

/// A wire name: `[a-z][a-z0-9_]*`, at most 64 bytes.
fn is_wire_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// A destination or connector name: `[a-z][a-z0-9-]*`, at most 40 bytes.
pub fn is_destination(name: &str) -> bool {
    name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// A GraphQL name (`[_A-Za-z][_0-9A-Za-z]*`), as a root field is named.
fn is_graphql_name(name: &str) -> bool {
    name.len() <= 128
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn parse_route(tool: &str, value: &str) -> Result<Route, ManifestError> {
    let mut value = value.trim();
    let (mut read_only, mut graphql, mut graphql_fields) = (false, None, Vec::new());
    if let Some(rest) = value.strip_suffix("(read-only)") {
        value = rest.trim_end();
        read_only = true;
    } else if value.ends_with(')')
        && let Some(open) = value.rfind('(')
    {
        let inner = &value[open + 1..value.len() - 1];
        let (kind, fields) = match inner.split_once(':') {
            Some((kind, fields)) => (kind.trim(), Some(fields)),
            None => (inner.trim(), None),
        };
        let body = match kind {
            "graphql-query" => GraphqlBody::QueriesOnly,
            "graphql" => GraphqlBody::Gated,
            _ => {
                return Err(rule(format!(
                    "tool `{tool}`: `Route: {value}` ends in a qualifier that is not `(read-only)`, `(graphql-query[: FIELDS])` or `(graphql[: FIELDS])`"
                )));
            }
        };
        if let Some(fields) = fields {
            for field in fields.split(',').map(str::trim) {
                if !is_graphql_name(field) {
                    return Err(rule(format!(
                        "tool `{tool}`: `{field}` in `({inner})` is not a GraphQL root field name: list the root fields the body may select, comma-separated (`(graphql: commentCreate)`)"
                    )));
                }
                if !graphql_fields.iter().any(|f| f == field) {
                    graphql_fields.push(field.to_string());
                }
            }
        }
        value = value[..open].trim_end();
        read_only = body == GraphqlBody::QueriesOnly;
        graphql = Some(body);
    }
    if value.ends_with(')') {
        return Err(rule(format!(
            "tool `{tool}`: `Route: {value}` ends in a qualifier that is not `(read-only)`, `(graphql-query[: FIELDS])` or `(graphql[: FIELDS])`"
        )));
    }
    let mut words = value.split_whitespace();
    let mut first = words.next().unwrap_or_default();
    let mut destination = None;
    if first.starts_with(|c: char| c.is_ascii_lowercase()) {
        if !is_destination(first) {
            return Err(rule(format!(
                "tool `{tool}`: route destination `{first}` must be `[a-z][a-z0-9-]*`"
            )));
        }
        destination = Some(first.to_string());
        first = words.next().unwrap_or_default();
    }
    let (Some(path), None) = (words.next(), words.next()) else {
        return Err(rule(format!(
            "tool `{tool}`: `Route: {value}` must be `[DESTINATION] METHOD /path`"
        )));
    };
    let method = RouteMethod::parse(first).ok_or_else(|| {
        rule(format!("tool `{tool}`: route method `{first}` is not one of GET, HEAD, POST, PUT, PATCH, DELETE"))
    })?;
    let route = Route {
        destination,
        method,
        path: path.to_string(),
        read_only,
        graphql,
        graphql_fields,
    };
    check_template(tool, &route.path)?;
    Ok(route)
}

fn parse_switch(tool: &str, text: &str) -> Result<String, ManifestError> {
    let name = text.trim();
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && name.starts_with(|c: char| c.is_ascii_uppercase());
    if !ok {
        return Err(rule(format!(
            "tool `{tool}`: switch `{name}` must be an environment variable name (A-Z, 0-9, _)"
        )));
    }
    Ok(name.to_string())
}

fn parse_gate(tool: &str, value: &str) -> Result<Gate, ManifestError> {
    let (kind, rest) = match value.split_once(',') {
        Some((k, r)) => (k.trim(), Some(r.trim())),
        None => (value.trim(), None),
    };
    let switch = match rest {
        None => None,
        Some(r) => match r.strip_prefix("switch ") {
            Some(name) => Some(parse_switch(tool, name)?),
            None => {
                return Err(rule(format!(
                    "tool `{tool}`: after `Gate: {kind},` write `switch NAME`"
                )));
            }
        },
    };
    match (kind, switch) {
        ("open", None) => Ok(Gate::Open),
        ("approval", switch) => Ok(Gate::Approval { switch }),
        ("mutations-need-approval", Some(switch)) => Ok(Gate::MutationsNeedApproval { switch }),
        ("mutations-need-approval", None) => Err(rule(format!(
            "tool `{tool}`: `mutations-need-approval` names its switch: `Gate: mutations-need-approval, switch NAME`"
        ))),
        ("open", Some(_)) => Err(rule(format!("tool `{tool}`: an open gate has no switch"))),
        (other, _) => Err(rule(format!(
            "tool `{tool}`: `Gate: {other}` must be `open`, `approval` or `mutations-need-approval`"
        ))),
    }
}

fn parse_registers(tool: &str, value: &str) -> Result<Registers, ManifestError> {
    match value.trim() {
        "with-connector" => Ok(Registers::WithConnector),
        "when-approvals-on" => Ok(Registers::WhenApprovalsOn),
        other => match other.strip_prefix("when-switch ") {
            Some(name) => Ok(Registers::WhenSwitch(parse_switch(tool, name)?)),
            None => Err(rule(format!(
                "tool `{tool}`: `Registers: {other}` must be `with-connector`, `when-switch NAME` or `when-approvals-on`"
            ))),
        },
    }
}

/// A path template: `/`-separated, each segment a literal (the characters
/// a request path may hold, no dot segment), `{name}`, `{name:encoded}`, a
/// parameter with literal text around it (`{id}.json`), or a last `{*name}`.
fn check_template(tool: &str, path: &str) -> Result<(), ManifestError> {
    let bad = |why: &str| rule(format!("tool `{tool}`: route path `{path}` {why}"));
    let Some(rest) = path.strip_prefix('/') else {
        return Err(bad("must start with `/`"));
    };
    if rest.is_empty() {
        return Ok(());
    }
    let segments: Vec<&str> = rest.split('/').collect();
    let mut names = std::collections::BTreeSet::new();
    for (i, segment) in segments.iter().enumerate() {
        if segment.is_empty() {
            return Err(bad("has an empty segment"));
        }
        if let Some((_, name, _)) = affixed_parameter(segment) {
            if !names.insert(name) {
                return Err(bad("uses one parameter name twice"));
            }
            continue;
        }
        if let Some(inner) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            let (catch_all, name) = match inner.strip_prefix('*') {
                Some(n) => (true, n),
                None => (false, inner.strip_suffix(":encoded").unwrap_or(inner)),
            };
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Err(bad(
                    "has a parameter that is not `{name}`, `{name:encoded}`, `{name}` with literal text around it (`{id}.json`, `{name}:verb`) or `{*name}`",
                ));
            }
            if catch_all && i + 1 != segments.len() {
                return Err(bad("has `{*name}` before its last segment"));
            }
            if !names.insert(name) {
                return Err(bad("uses one parameter name twice"));
            }
            continue;
        }
        if *segment == "." || *segment == ".." {
            return Err(bad("has a dot segment"));
        }
        let literal_ok = segment.chars().all(is_literal_char);
        if !literal_ok {
            return Err(bad(
                "has a character a literal segment may not hold (`{`, `}`, `;`, `*`, `?`, `#`, space...)",
            ));
        }
    }
    Ok(())
}

impl Manifest {
    /// The rules every manifest obeys, checked by the SDK when it builds one
    /// and by the host when it reads one from a component.
    pub fn validate(&self) -> Result<(), ManifestError> {
        if self.tools.is_empty() {
            return Err(rule("the manifest describes no tools".to_string()));
        }
        let mut wire_names = std::collections::BTreeSet::new();
        for tool in &self.tools {
            let name = &tool.function;
            if let Some(wire) = &tool.name
                && !is_wire_name(wire)
            {
                return Err(rule(format!(
                    "tool `{name}`: wire name `{wire}` must be lower-case letters, digits and `_`"
                )));
            }
            if !wire_names.insert(self.wire_name(name)) {
                return Err(rule(format!(
                    "two tools have the wire name `{}`",
                    self.wire_name(name)
                )));
            }
            if !tool.reads_from.is_empty() && tool.effect != Effect::Read {
                return Err(rule(format!(
                    "write tool `{name}` has `Reads-from:`: only a read tool reads other connectors"
                )));
            }
            for (param, doc) in &tool.params {
                doc.bounds
                    .check()
                    .map_err(|why| rule(format!("tool `{name}`, parameter `{param}`: {why}")))?;
            }
            for peer in &tool.reads_from {
                if !is_destination(peer) || *peer == self.connector {
                    return Err(rule(format!(
                        "tool `{name}`: `Reads-from: {peer}` must name another connector"
                    )));
                }
            }
            for route in &tool.routes {
                check_template(name, &route.path)?;
                if let Some(d) = &route.destination
                    && !is_destination(d)
                {
                    return Err(rule(format!(
                        "tool `{name}`: route destination `{d}` must be `[a-z][a-z0-9-]*`"
                    )));
                }
                if route.graphql.is_none() && !route.graphql_fields.is_empty() {
                    return Err(rule(format!(
                        "tool `{name}`: only a GraphQL route names root fields (`{route}`)"
                    )));
                }
                if let Some(field) = route.graphql_fields.iter().find(|f| !is_graphql_name(f)) {
                    return Err(rule(format!(
                        "tool `{name}`: `{field}` is not a GraphQL root field name (`{route}`)"
                    )));
                }
                match (route.graphql, tool.effect) {
                    (Some(_), _) if route.method != RouteMethod::Post => {
                        return Err(rule(format!(
                            "tool `{name}`: only a POST route carries a GraphQL body (`{route}`)"
                        )));
                    }
                    (Some(GraphqlBody::QueriesOnly), Effect::Write)
                    | (Some(GraphqlBody::Gated), Effect::Read) => {
                        return Err(rule(format!(
                            "tool `{name}`: `(graphql-query)` is for read tools and `(graphql)` for write tools (`{route}`)"
                        )));
                    }
                    (Some(GraphqlBody::QueriesOnly), Effect::Read) if !route.read_only => {
                        return Err(rule(format!(
                            "read tool `{name}`: a `(graphql-query)` route is read-only"
                        )));
                    }
                    _ => {}
                }
                match tool.effect {
                    Effect::Read if route.method.is_safe() && !route.read_only => {}
                    Effect::Read if route.method == RouteMethod::Post && route.read_only => {}
                    Effect::Read if route.read_only => {
                        return Err(rule(format!(
                            "read tool `{name}`: only a POST route can be declared `(read-only)`"
                        )));
                    }
                    Effect::Read => {
                        return Err(rule(format!(
                            "read tool `{name}` declares `{route}`: a read tool may use GET and HEAD, or a POST it declares `(read-only)`"
                        )));
                    }
                    Effect::Write if route.read_only => {
                        return Err(rule(format!(
                            "write tool `{name}`: `(read-only)` is for read tools' POST routes"
                        )));
                    }
                    Effect::Write => {}
                }
            }
            let mut seen = std::collections::BTreeSet::new();
            for route in &tool.routes {
                if !seen.insert((
                    route.destination.as_deref(),
                    route.method,
                    route.path.as_str(),
                )) {
                    return Err(rule(format!("tool `{name}` declares `{route}` twice")));
                }
            }
            match tool.effect {
                Effect::Read => {
                    if tool.gate.is_some() || tool.registers.is_some() {
                        return Err(rule(format!(
                            "read tool `{name}` has a `Gate:` or `Registers:` line: only write tools are gated"
                        )));
                    }
                }
                Effect::Write => {
                    if tool.grantable {
                        return Err(rule(format!(
                            "write tool `{name}` says `Grantable: yes`: no grant ever covers a write tool"
                        )));
                    }
                    if tool.gate.is_none() || tool.registers.is_none() {
                        return Err(rule(format!(
                            "write tool `{name}` has no gate or registration in the manifest"
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(effect: Effect, lines: &[(&str, &str)]) -> Result<ToolDoc, ManifestError> {
        parse_tool_lines("t", effect, lines)
    }

    #[test]
    fn splits_prose_from_policy_lines() {
        let (prose, lines) = split_policy_lines(
            "Reads a file.\n\nRoute: GET /repos/{owner}/{repo}\nGrantable: yes\nNote: kept as prose",
            &TOOL_KEYS,
        );
        assert_eq!(prose, "Reads a file.\n\nNote: kept as prose");
        assert_eq!(
            lines,
            [("Route", "GET /repos/{owner}/{repo}"), ("Grantable", "yes")]
        );
    }

    #[test]
    fn parses_every_kind_of_line() {
        let t = tool(
            Effect::Write,
            &[
                ("Route", "POST /repos/{o}/{r}/git/refs"),
                ("Gate", "approval, switch GITHUB_ALLOW_WRITES"),
                ("Registers", "when-switch X_Y"),
            ],
        )
        .unwrap();
        assert_eq!(
            t.gate,
            Some(Gate::Approval {
                switch: Some("GITHUB_ALLOW_WRITES".into())
            })
        );
        assert_eq!(t.registers, Some(Registers::WhenSwitch("X_Y".into())));
        assert_eq!(t.routes[0].to_string(), "POST /repos/{o}/{r}/git/refs");
        let d = tool(Effect::Write, &[]).unwrap();
        assert_eq!(
            d.gate,
            Some(Gate::Approval { switch: None }),
            "a write asks a person unless it says otherwise"
        );
        let r = tool(
            Effect::Read,
            &[("Route", "POST /graphql (read-only)"), ("Grantable", "yes")],
        )
        .unwrap();
        assert!(r.routes[0].read_only && r.grantable);
        assert_eq!(
            parse_world_lines(&[("Billing", "usd")]).unwrap(),
            Some(Billing::Usd)
        );
    }

    #[test]
    fn a_graphql_route_names_the_root_fields_it_may_carry() {
        let w = tool(
            Effect::Write,
            &[("Route", "POST /graphql (graphql: commentCreate)")],
        )
        .unwrap();
        assert_eq!(w.routes[0].graphql, Some(GraphqlBody::Gated));
        assert_eq!(w.routes[0].graphql_fields, ["commentCreate"]);
        assert_eq!(
            w.routes[0].to_string(),
            "POST /graphql (graphql: commentCreate)"
        );
        let r = tool(
            Effect::Read,
            &[(
                "Route",
                "POST /graphql (graphql-query: issues, issue, issues)",
            )],
        )
        .unwrap();
        assert!(r.routes[0].read_only);
        assert_eq!(r.routes[0].graphql_fields, ["issues", "issue"], "once each");
        assert_eq!(
            r.routes[0].to_string(),
            "POST /graphql (graphql-query: issues, issue)"
        );
        let any = tool(Effect::Write, &[("Route", "POST /graphql (graphql)")]).unwrap();
        assert!(any.routes[0].graphql_fields.is_empty());
        for bad in [
            "POST /graphql (graphql: )",
            "POST /graphql (graphql: comment-create)",
            "POST /graphql (graphql: a b)",
            "POST /graphql (graphqlx: a)",
        ] {
            assert!(tool(Effect::Write, &[("Route", bad)]).is_err(), "{bad}");
        }
    }

    #[test]
    fn refuses_what_does_not_parse() {
        for lines in [
            vec![("Route", "FETCH /x")],
            vec![("Route", "/x")],
            vec![("Route", "GET x")],
            vec![("Route", "GET /a//b")],
            vec![("Route", "GET /a/../b")],
            vec![("Route", "GET /{*rest}/b")],
            vec![("Route", "GET /{a}/{a}")],
            vec![("Route", "GET /a;b")],
            vec![("Route", "GET /{}")],
            vec![("Grantable", "maybe")],
            vec![("Grantable", "yes"), ("Grantable", "no")],
            vec![("Gate", "sometimes")],
            vec![("Gate", "mutations-need-approval")],
            vec![("Gate", "approval, switch lower_case")],
            vec![("Gate", "open, switch X")],
            vec![("Registers", "later")],
        ] {
            assert!(
                tool(Effect::Write, &lines).is_err(),
                "{lines:?} should be refused"
            );
        }
        assert!(parse_world_lines(&[("Billing", "euros")]).is_err());
    }

    #[test]
    fn destinations_qualifiers_names_and_peers() {
        let r = tool(
            Effect::Read,
            &[
                ("Route", "drive GET /drive/v3/files"),
                ("Route", "searchconsole POST /webmasters/v3/sites/{site:encoded}/searchAnalytics/query (read-only)"),
                ("Route", "POST /admin/api/2025-10/graphql.json (graphql-query)"),
                ("Name", "docs"),
                ("Reads-from", "searchconsole, shopify"),
            ],
        )
        .unwrap();
        assert_eq!(r.routes[0].destination.as_deref(), Some("drive"));
        assert_eq!(r.routes[0].to_string(), "drive GET /drive/v3/files");
        assert_eq!(r.routes[1].encoded_segments(), [3]);
        assert_eq!(
            r.routes[1].matchit_path(),
            "/webmasters/v3/sites/{site}/searchAnalytics/query"
        );
        assert!(r.routes[2].read_only && r.routes[2].graphql == Some(GraphqlBody::QueriesOnly));
        assert_eq!(r.name.as_deref(), Some("docs"));
        let verb = tool(
            Effect::Read,
            &[(
                "Route",
                "POST /v1beta/properties/{property}:runReport (read-only)",
            )],
        )
        .unwrap();
        assert_eq!(
            verb.routes[0].matchit_path(),
            "/v1beta/properties/{property}"
        );
        assert_eq!(
            verb.routes[0].affixes(),
            [Affix {
                segment: 2,
                prefix: String::new(),
                suffix: ":runReport".to_string()
            }]
        );
        let suffixed = tool(Effect::Read, &[("Route", "GET /v0/item/{id}.json")]).unwrap();
        assert_eq!(suffixed.routes[0].matchit_path(), "/v0/item/{id}");
        let affix = &suffixed.routes[0].affixes()[0];
        assert!(affix.fits("8863.json") && !affix.fits(".json") && !affix.fits("8863"));
        let prefixed = tool(Effect::Read, &[("Route", "GET /api/v{version}/x")]).unwrap();
        assert_eq!(prefixed.routes[0].affixes()[0].prefix, "v");
        for bad in [
            "GET /a/{p}:",
            "GET /a/{p}.",
            "GET /a/{*p}:verb",
            "GET /a/{*p}.json",
            "GET /a/{p}{q}",
            "GET /a/x{p}y{q}",
            "GET /a/{p}.js}on",
            "GET /a/{p}?x",
        ] {
            assert!(
                tool(Effect::Read, &[("Route", bad)]).is_err(),
                "{bad} should be refused"
            );
        }
        assert_eq!(r.reads_from, ["searchconsole", "shopify"]);
        let w = tool(Effect::Write, &[("Route", "POST /graphql.json (graphql)")]).unwrap();
        assert_eq!(w.routes[0].graphql, Some(GraphqlBody::Gated));
        for bad in [
            vec![("Route", "Drive GET /x")],
            vec![("Route", "drive extra GET /x")],
            vec![("Route", "GET /x (sometimes)")],
            vec![("Route", "GET /{a:raw}")],
            vec![("Name", "Docs")],
            vec![("Name", "a b")],
            vec![("Reads-from", "Search Console")],
            vec![("Reads-from", "shopify, shopify")],
        ] {
            assert!(
                tool(Effect::Read, &bad).is_err(),
                "{bad:?} should be refused"
            );
        }
        let valid = |t: ToolDoc| {
            let mut t = t;
            t.description = "d".into();
            manifest(vec![t]).validate()
        };
        assert!(valid(r).is_ok());
        assert!(
            valid(tool(Effect::Read, &[("Route", "POST /graphql.json (graphql)")]).unwrap())
                .is_err(),
            "a read's GraphQL is queries only"
        );
        assert!(
            valid(
                tool(
                    Effect::Write,
                    &[("Route", "POST /graphql.json (graphql-query)")]
                )
                .unwrap()
            )
            .is_err()
        );
        let mut peer_write = tool(Effect::Write, &[]).unwrap();
        peer_write.reads_from = vec!["shopify".into()];
        assert!(
            valid(peer_write).is_err(),
            "only reads read other connectors"
        );
        let own = tool(Effect::Read, &[("Reads-from", "acme")]).unwrap();
        assert!(valid(own).is_err(), "a joint tool reads other connectors");
        let mut a = tool(Effect::Read, &[("Name", "acme_b")]).unwrap();
        a.description = "d".into();
        let mut b = parse_tool_lines("b", Effect::Read, &[]).unwrap();
        b.description = "d".into();
        assert!(
            manifest(vec![a, b]).validate().is_err(),
            "two tools cannot share a wire name"
        );
    }

    fn manifest(tools: Vec<ToolDoc>) -> Manifest {
        Manifest {
            format: crate::FORMAT,
            connector: "acme".into(),
            version: "0.1.0".into(),
            namespace: "acme".into(),
            description: "d".into(),
            tools,
            withheld: vec![],
            billing: None,
        }
    }

    #[test]
    fn validation_holds_the_read_rules() {
        let read = |route: &str| {
            let mut t = tool(Effect::Read, &[("Route", route)]).unwrap();
            t.description = "d".into();
            manifest(vec![t]).validate()
        };
        assert!(read("GET /a/{b}").is_ok());
        assert!(read("HEAD /a").is_ok());
        assert!(read("POST /graphql (read-only)").is_ok());
        for bad in [
            "POST /search",
            "DELETE /a",
            "PUT /a",
            "PATCH /a",
            "GET /a (read-only)",
        ] {
            assert!(
                read(bad).is_err(),
                "a read tool declaring `{bad}` must be refused"
            );
        }
        let mut w = tool(Effect::Write, &[("Route", "DELETE /a")]).unwrap();
        w.grantable = true;
        assert!(
            manifest(vec![w.clone()]).validate().is_err(),
            "a write is never grantable"
        );
        w.grantable = false;
        assert!(manifest(vec![w.clone()]).validate().is_ok());
        w.gate = None;
        assert!(
            manifest(vec![w]).validate().is_err(),
            "a hand-made manifest must state a write's gate"
        );
        let mut r = tool(Effect::Read, &[]).unwrap();
        r.gate = Some(Gate::Open);
        assert!(manifest(vec![r]).validate().is_err());
    }
}
