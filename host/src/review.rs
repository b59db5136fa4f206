//! Discovery produces no authority (seed 003, issue 4): the host records a
//! digest of each tool an operator approved (name, description, schema,
//! and what it may do: effect, routes, gate, grantability, the component's
//! imports), with those facts and the component's digest (issue 33);
//! a tool that a new version adds or changes is held as unreviewed and not
//! offered until an operator approves it, the trace says why, and the
//! reviews say what changed.

use crate::runtime::{LoadedComponent, Tool};
use crate::store::{ReviewStore, Reviewed, StoreError, args_digest};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

/// Where a tool stands with the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewStatus {
    /// Approved as it is now.
    Reviewed,
    /// Never approved.
    New,
    /// Approved once, but its name, description or schema changed since.
    Changed,
}

/// One tool's review.
#[derive(Debug, Clone, Serialize)]
pub struct ToolReview {
    /// Wire name.
    pub tool: String,
    /// Digest of what the tool says about itself now and of what it may
    /// do: its effect, routes, gate, grantability and the component's
    /// capability imports.
    pub digest: String,
    /// Reviewed, new or changed.
    pub status: ReviewStatus,
    /// The effect a remote MCP server's tool was reviewed with, while that
    /// review holds (`None` for a component's tool, whose WIT says).
    pub effect: Option<String>,
    /// What the last review covered (a component's tool), where recorded.
    pub reviewed: Option<ReviewedFacts>,
    /// What changed since that review, in words (`routes added: POST …`).
    pub changes: Vec<String>,
}

/// What an operator's review of a component's tool covers beyond the
/// digest, recorded with it: the component's bytes, the tool's effect,
/// routes, gate and grantability, and the component's capability imports.
/// A new version of the component is compared with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewedFacts {
    /// `sha256:` of the component's bytes (an artifact's layer digest).
    pub component: String,
    /// Digest of what the tool tells the model: name, description, schema.
    pub said: String,
    pub effect: String,
    pub routes: Vec<String>,
    pub gate: Option<String>,
    pub grantable: bool,
    /// The `scout:connector` interfaces the component imports.
    pub imports: Vec<String>,
}

/// The facts of `tool` of `component` as it is now; `None` for a remote
/// MCP server's tool (its review is of what the server lists).
pub fn facts_of(component: &LoadedComponent, tool: &Tool) -> Option<ReviewedFacts> {
    if component.is_remote() {
        return None;
    }
    let info = component.info();
    let doc = info
        .manifest
        .tools
        .iter()
        .find(|d| d.function == tool.function);
    let mut imports: Vec<String> = info
        .capabilities()
        .into_iter()
        .map(str::to_string)
        .collect();
    imports.sort();
    imports.dedup();
    let sha = info.sha256.trim_start_matches("sha256:");
    Some(ReviewedFacts {
        component: format!("sha256:{sha}"),
        said: args_digest(
            &json!({"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}),
        ),
        effect: tool.effect.as_str().to_string(),
        routes: tool.routes.iter().map(|r| r.to_string()).collect(),
        gate: doc.and_then(|d| d.gate.as_ref()).map(|g| g.to_string()),
        grantable: doc.is_some_and(|d| d.grantable),
        imports,
    })
}

/// The digest an operator's review approves: what the tool tells the model
/// and what it may do (its [`ReviewedFacts`] but the component's own
/// digest, so a new version whose tool is the same keeps its review and one
/// whose tool changed in any of these does not).
pub fn tool_digest(component: &LoadedComponent, tool: &Tool) -> String {
    tool.review_digest
        .get_or_init(|| match facts_of(component, tool) {
            Some(facts) => args_digest(&json!({
                "said": facts.said,
                "effect": facts.effect,
                "routes": facts.routes,
                "gate": facts.gate,
                "grantable": facts.grantable,
                "imports": facts.imports,
            })),
            None => args_digest(
                &json!({"name": tool.name, "description": tool.description, "input_schema": tool.input_schema}),
            ),
        })
        .clone()
}

/// What differs between a tool as reviewed and as it is now, in words.
pub fn changes(reviewed: &ReviewedFacts, now: &ReviewedFacts) -> Vec<String> {
    let mut said = Vec::new();
    if reviewed.said != now.said {
        said.push("description or arguments changed".to_string());
    }
    if reviewed.effect != now.effect {
        said.push(format!("effect: {} → {}", reviewed.effect, now.effect));
    }
    said.extend(only_in("routes added", &now.routes, &reviewed.routes, "; "));
    said.extend(only_in(
        "routes removed",
        &reviewed.routes,
        &now.routes,
        "; ",
    ));
    if reviewed.gate != now.gate {
        let shown = |g: &Option<String>| g.clone().unwrap_or_else(|| "none".into());
        said.push(format!(
            "gate: {} → {}",
            shown(&reviewed.gate),
            shown(&now.gate)
        ));
    }
    if reviewed.grantable != now.grantable {
        said.push(format!(
            "grantable: {} → {}",
            reviewed.grantable, now.grantable
        ));
    }
    said.extend(only_in(
        "imports widened",
        &now.imports,
        &reviewed.imports,
        ", ",
    ));
    said.extend(only_in(
        "imports dropped",
        &reviewed.imports,
        &now.imports,
        ", ",
    ));
    said
}

/// `LABEL: a; b` for what `these` has and `those` does not, if anything.
fn only_in(label: &str, these: &[String], those: &[String], separator: &str) -> Option<String> {
    let only: Vec<&str> = these
        .iter()
        .filter(|t| !those.contains(t))
        .map(String::as_str)
        .collect();
    (!only.is_empty()).then(|| format!("{label}: {}", only.join(separator)))
}

/// The review status of one tool of `component`.
pub(crate) async fn status_of(
    store: &dyn ReviewStore,
    component: &LoadedComponent,
    tool: &Tool,
) -> Result<ToolReview, StoreError> {
    let digest = tool_digest(component, tool);
    let approved = store.reviewed(component.name(), &tool.name).await?;
    let reviewed: Option<ReviewedFacts> = approved
        .as_ref()
        .and_then(|a| a.facts.as_deref())
        .and_then(|f| serde_json::from_str(f).ok());
    let (status, effect) = match &approved {
        None => (ReviewStatus::New, None),
        Some(approved) if approved.digest == digest => {
            (ReviewStatus::Reviewed, approved.effect.clone())
        }
        Some(_) => (ReviewStatus::Changed, None),
    };
    // What changed is worked out only for a changed tool (the boundary asks
    // for every tool's status).
    let changes = match &reviewed {
        Some(then) if status == ReviewStatus::Changed => facts_of(component, tool)
            .map(|now| changes(then, &now))
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    Ok(ToolReview {
        tool: tool.name.clone(),
        digest,
        status,
        effect,
        reviewed,
        changes,
    })
}

/// Every tool of a component with its status (the CLI's and the tests'
/// question, asked where nothing awaits: the store is waited for here).
pub fn review(
    store: &dyn ReviewStore,
    component: &LoadedComponent,
) -> Result<Vec<ToolReview>, StoreError> {
    crate::store::block(async {
        let mut reviews = Vec::with_capacity(component.tools().len());
        for tool in component.tools() {
            reviews.push(status_of(store, component, tool).await?);
        }
        Ok(reviews)
    })
}

/// Tools an operator reviewed that `component` no longer has (a new
/// version removed them).
pub fn removed(
    store: &dyn ReviewStore,
    component: &LoadedComponent,
) -> Result<Vec<String>, StoreError> {
    Ok(crate::store::block(store.reviewed_tools(component.name()))?
        .into_iter()
        .filter(|t| component.tool(t).is_none())
        .collect())
}

/// Records an operator's approval of `tool` as it is now, with what the
/// review covered.
pub fn approve(
    store: &dyn ReviewStore,
    component: &LoadedComponent,
    tool: &Tool,
    effect: Option<&str>,
    by: &str,
) -> Result<(), StoreError> {
    let facts =
        facts_of(component, tool).map(|f| serde_json::to_string(&f).expect("facts serialise"));
    crate::store::block(store.approve_tool(
        component.name(),
        &tool.name,
        &tool_digest(component, tool),
        effect,
        facts.as_deref(),
        by,
    ))
}

/// Approves every tool of a component as it is now (an operator's decision).
pub fn approve_all(
    store: &dyn ReviewStore,
    component: &LoadedComponent,
    by: &str,
) -> Result<usize, StoreError> {
    let mut approved = 0;
    for tool in component.tools() {
        approve(store, component, tool, None, by)?;
        approved += 1;
    }
    Ok(approved)
}

/// The operator's reviews as the admin API reads and records them: each
/// connector's tools with their status, the tools reviewed once and since
/// removed, one tool's last review, an approval.
#[derive(Clone)]
pub struct Reviews {
    store: Arc<dyn ReviewStore>,
}

impl Reviews {
    /// The reviews `store` keeps.
    pub fn new(store: Arc<dyn ReviewStore>) -> Reviews {
        Reviews { store }
    }

    /// Every tool of `component` with its status ([`review`]).
    pub fn of(&self, component: &LoadedComponent) -> Result<Vec<ToolReview>, StoreError> {
        review(self.store.as_ref(), component)
    }

    /// Tools reviewed once that `component` no longer has ([`removed`]).
    pub fn removed(&self, component: &LoadedComponent) -> Result<Vec<String>, StoreError> {
        removed(self.store.as_ref(), component)
    }

    /// The last review of `connector`'s `tool`, if it was ever reviewed.
    pub async fn last(&self, connector: &str, tool: &str) -> Result<Option<Reviewed>, StoreError> {
        self.store.reviewed(connector, tool).await
    }

    /// Records an operator's approval of `tool` as it is now ([`approve`]).
    pub fn approve(
        &self,
        component: &LoadedComponent,
        tool: &Tool,
        effect: Option<&str>,
        by: &str,
    ) -> Result<(), StoreError> {
        approve(self.store.as_ref(), component, tool, effect, by)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> ReviewedFacts {
        ReviewedFacts {
            component: "sha256:aa".into(),
            said: "s1".into(),
            effect: "write".into(),
            routes: vec!["GET /a".into(), "POST /b".into()],
            gate: Some("approval".into()),
            grantable: false,
            imports: vec!["http".into(), "log".into()],
        }
    }

    #[test]
    fn what_changed_between_two_versions_is_said_in_words() {
        let then = facts();
        let mut now = facts();
        now.component = "sha256:bb".into();
        assert_eq!(changes(&then, &now), Vec::<String>::new(), "bytes alone");
        now.said = "s2".into();
        now.effect = "read".into();
        now.routes = vec!["GET /a".into(), "PUT /c".into()];
        now.gate = None;
        now.grantable = true;
        now.imports = vec!["folder".into(), "http".into()];
        assert_eq!(
            changes(&then, &now),
            [
                "description or arguments changed",
                "effect: write → read",
                "routes added: PUT /c",
                "routes removed: POST /b",
                "gate: approval → none",
                "grantable: false → true",
                "imports widened: folder",
                "imports dropped: log",
            ]
        );
    }
}
