//! Operators' rules as Cedar policies (issue 56, DESIGN D21), evaluated in
//! the boundary's `authorize` after the seed's three filters.
//!
//! Operator rules only narrow, or ask: a `forbid` refuses a call the seed
//! allows, `@ask_person` on a `forbid` turns the refusal into a person's
//! approval, and a `permit` is accepted but never widens (the seed's
//! filters decide what exists; a call they allow and no forbid matches is
//! allowed).

pub mod facts;
pub mod history;
pub mod schema;

pub use facts::{CallFacts, PrincipalFacts, ResourceFacts};
pub use history::{HistoryFacts, WindowCounts};
pub use schema::DeploymentSchema;

use std::path::PathBuf;

/// Where a policy document came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicySource {
    /// A file named in the configuration's `[policy] files`.
    File(PathBuf),
    /// Stored through the admin API.
    Api,
}

/// One document of policies, as an operator wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyDoc {
    pub name: String,
    pub source: PolicySource,
    pub text: String,
}

/// Which policies are in force: the store's change count of API-owned
/// documents and a digest of every document's text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyRevision {
    pub api: i64,
    pub digest: String,
}

impl std::fmt::Display for PolicyRevision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = self.digest.get(..12).unwrap_or(&self.digest);
        write!(f, "r{}-{short}", self.api)
    }
}

/// What the policies decided about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyDecision {
    Allow,
    Forbid { policy: String },
    AskPerson { policy: String },
}

/// One error of a policy set, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    pub doc: String,
    pub policy: Option<String>,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Every error of a policy set, at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct PolicyErrors(pub Vec<PolicyError>);

impl std::fmt::Display for PolicyErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}:{}:{}", e.doc, e.line, e.column)?;
            if let Some(policy) = &e.policy {
                write!(f, ": policy {policy}")?;
            }
            write!(f, ": {}", e.message)?;
        }
        Ok(())
    }
}

/// The compiled set of operator policies in force.
#[derive(Debug)]
pub struct OperatorPolicies {
    revision: PolicyRevision,
}

impl OperatorPolicies {
    /// No policies: what every host runs without any.
    pub fn none() -> OperatorPolicies {
        OperatorPolicies {
            revision: PolicyRevision::default(),
        }
    }

    /// Compiles `docs` against `schema`.
    pub fn compile(
        docs: &[PolicyDoc],
        schema: &DeploymentSchema,
        revision: PolicyRevision,
    ) -> Result<OperatorPolicies, PolicyErrors> {
        let _ = (docs, schema);
        Ok(OperatorPolicies { revision })
    }

    /// The revision in force.
    pub fn revision(&self) -> &PolicyRevision {
        &self.revision
    }

    /// Whether there are no policies.
    pub fn is_empty(&self) -> bool {
        true
    }

    /// Decides one call.
    pub fn decide(&self, facts: &CallFacts) -> PolicyDecision {
        let _ = facts;
        PolicyDecision::Allow
    }

    /// Whether any policy reads `context.history`.
    pub fn uses_history(&self) -> bool {
        false
    }

    /// A policy forbidding the tool whatever the arguments, history and time.
    pub fn forbids_always(
        &self,
        principal: &PrincipalFacts,
        resource: &ResourceFacts,
        action: &str,
    ) -> Option<String> {
        let _ = (principal, resource, action);
        None
    }
}
