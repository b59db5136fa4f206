//! `scout-host inspect mcp+https://…`: a security reviewer's view of a
//! remote MCP server, as `inspect` is of a component. It lists what the
//! server offers now, each tool against what an operator reviewed (with
//! `--config`, from `serve`'s store: new, changed, reviewed, and reviewed
//! tools the server no longer lists), with what the server claims of it
//! and what a reviewer should read twice ([`super::flags`]). Its
//! resources, resource templates and prompts are listed the same way
//! ([`super::content`]; a prompt always flagged as text for the model).

use super::{Candidate, RemoteServer, flags};
use crate::capabilities::http::HttpCapability;
use crate::store::{ReviewStore, StoredReview};
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;
use std::time::Duration;

/// The report, in its stable JSON form (`--json`).
#[derive(Debug, Serialize)]
pub struct RemoteReport {
    /// The server's endpoint.
    pub url: String,
    /// The connector it is configured as, when a configuration names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    pub tools: Vec<RemoteToolReport>,
    /// Its resources, resource templates and prompts.
    pub content: Vec<RemoteContentReport>,
    /// Reviewed tools the server no longer lists.
    pub removed: Vec<String>,
    /// Names the server listed that the host would not serve, and why.
    pub left_out: Vec<LeftOut>,
}

#[derive(Debug, Serialize)]
pub struct RemoteToolReport {
    pub name: String,
    /// `new`, `changed`, `reviewed`; `unreviewed` without a store to compare with.
    pub status: &'static str,
    /// The effect it was reviewed with, while its review still holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    pub digest: String,
    pub description: String,
    /// Its annotations: what the server says, never trusted.
    pub server_claims: Value,
    /// What a reviewer should read twice.
    pub flags: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
pub struct RemoteContentReport {
    pub kind: super::content::ContentKind,
    /// Its URI, URI template or prompt name.
    pub item: String,
    /// `new`, `changed`, `reviewed`; `unreviewed` without a store.
    pub status: &'static str,
    pub digest: String,
    /// What the server says of it, as a session would be shown it.
    pub described: Value,
    pub flags: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
pub struct LeftOut {
    pub name: String,
    pub why: String,
}

/// Why a remote server could not be inspected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InspectError {
    /// Its endpoint is refused.
    #[error(transparent)]
    Endpoint(#[from] super::EndpointError),
    /// No handle could be made for its origin.
    #[error(transparent)]
    Http(#[from] crate::ConfigError),
    /// It did not list its tools (the reason as the discovery tells it).
    #[error("{0}")]
    Listing(String),
    /// The store's reviews could not be read.
    #[error("cannot read the reviews: {0}")]
    Reviews(#[source] crate::store::StoreError),
}

/// Lists the server at `url` (`http` or `https`, the `mcp+` prefix taken
/// off; its event stream where `legacy_sse`) with no credential, and
/// compares what it offers with `reviews` (the connector's name, the store,
/// every stored review) when given.
pub async fn inspect(
    url: &str,
    allow_private_network: bool,
    legacy_sse: bool,
    reviews: Option<(&str, &dyn ReviewStore, Vec<StoredReview>)>,
) -> Result<RemoteReport, InspectError> {
    let name = reviews.as_ref().map_or("inspected", |(n, _, _)| n);
    let server = RemoteServer::new(name, url, Duration::from_secs(30))?.over_legacy_sse(legacy_sse);
    let http = HttpCapability::new(
        crate::HttpConfig::new(server.origin()).allow_private_network(allow_private_network),
    )?;
    server.discover(http).await.map_err(InspectError::Listing)?;
    let found = server.discovered();
    let mut report = RemoteReport {
        url: url.to_string(),
        connector: reviews.as_ref().map(|(n, _, _)| n.to_string()),
        tools: Vec::new(),
        content: Vec::new(),
        removed: Vec::new(),
        left_out: found
            .left_out
            .iter()
            .map(|(name, why)| LeftOut {
                name: name.clone(),
                why: why.clone(),
            })
            .collect(),
    };
    for candidate in &found.tools {
        let (status, effect) = match &reviews {
            None => ("unreviewed", None),
            Some((connector, store, _)) => match store.reviewed(connector, &candidate.name).await {
                Ok(None) => ("new", None),
                Ok(Some(r)) if r.digest == candidate.digest => ("reviewed", r.effect),
                Ok(Some(_)) => ("changed", None),
                Err(e) => return Err(InspectError::Reviews(e)),
            },
        };
        report
            .tools
            .push(tool_report(candidate, &found.tools, status, effect));
    }
    for candidate in &found.content {
        let status = match &reviews {
            None => "unreviewed",
            Some((connector, store, _)) => {
                match super::content::status(*store, connector, candidate).await {
                    Ok(super::content::ContentStatus::New) => "new",
                    Ok(super::content::ContentStatus::Changed) => "changed",
                    Ok(super::content::ContentStatus::Reviewed) => "reviewed",
                    Err(e) => return Err(InspectError::Reviews(e)),
                }
            }
        };
        report.content.push(RemoteContentReport {
            kind: candidate.kind,
            item: candidate.item.clone(),
            status,
            digest: candidate.digest.clone(),
            described: candidate.described.clone(),
            flags: candidate.flags(),
        });
    }
    if let Some((connector, _, stored)) = &reviews {
        report.removed = stored
            .iter()
            .filter(|r| r.connector == *connector)
            // A resource's, template's or prompt's review (`kind:item`).
            .filter(|r| !r.tool.contains(':'))
            .filter(|r| !found.tools.iter().any(|c| c.name == r.tool))
            .map(|r| r.tool.clone())
            .collect();
    }
    Ok(report)
}

fn tool_report(
    candidate: &Candidate,
    all: &[Candidate],
    status: &'static str,
    effect: Option<String>,
) -> RemoteToolReport {
    RemoteToolReport {
        name: candidate.name.clone(),
        status,
        effect,
        digest: candidate.digest.clone(),
        description: candidate.description(),
        server_claims: candidate.annotations().cloned().unwrap_or(Value::Null),
        flags: flags(candidate, all),
    }
}

impl RemoteReport {
    /// Whether anything needs a reviewer: a tool new or changed, or flagged.
    pub fn needs_review(&self) -> bool {
        self.tools
            .iter()
            .any(|t| t.status != "reviewed" || !t.flags.is_empty())
            || self
                .content
                .iter()
                .any(|c| c.status != "reviewed" || !c.flags.is_empty())
    }

    /// The readable form, every piece of server text shown so that hidden
    /// characters are visible.
    pub fn to_text(&self) -> String {
        let shown = |s: &str| crate::shown::text(s).text;
        let mut out = String::new();
        let _ = writeln!(out, "remote MCP server {}", self.url);
        if let Some(c) = &self.connector {
            let _ = writeln!(out, "  connector: {c}");
        }
        let _ = writeln!(out, "  tools: {}", self.tools.len());
        for t in &self.tools {
            let effect = t
                .effect
                .as_deref()
                .map(|e| format!(", reviewed as {e}"))
                .unwrap_or_default();
            let _ = writeln!(out, "\n  {} ({}{effect})", shown(&t.name), t.status);
            let _ = writeln!(out, "    digest: {}", t.digest);
            let _ = writeln!(out, "    {}", shown(&t.description));
            if !t.server_claims.is_null() {
                let _ = writeln!(
                    out,
                    "    the server claims (not trusted): {}",
                    crate::shown::json_text(&t.server_claims).text
                );
            }
            if !t.flags.is_empty() {
                let _ = writeln!(out, "    read twice: {}", t.flags.join(", "));
            }
        }
        if !self.content.is_empty() {
            let _ = writeln!(
                out,
                "\n  resources, templates and prompts: {}",
                self.content.len()
            );
        }
        for c in &self.content {
            let _ = writeln!(
                out,
                "\n  {} {} ({})",
                c.kind.as_str(),
                shown(&c.item),
                c.status
            );
            let _ = writeln!(out, "    digest: {}", c.digest);
            let _ = writeln!(out, "    {}", crate::shown::json_text(&c.described).text);
            if !c.flags.is_empty() {
                let _ = writeln!(out, "    read twice: {}", c.flags.join(", "));
            }
        }
        if !self.removed.is_empty() {
            let _ = writeln!(
                out,
                "\n  reviewed, no longer listed: {}",
                self.removed.join(", ")
            );
        }
        for l in &self.left_out {
            let _ = writeln!(out, "\n  left out: {} ({})", shown(&l.name), l.why);
        }
        out
    }
}
