//! Operators' policies as fleet data (issue 56, DESIGN D21, D22): the
//! configuration file's policy documents and those stored through the
//! admin API, compiled together against this host's deployment schema and
//! put in force in the boundary; a change made through the admin API is
//! validated with every other document before it is stored, and is
//! acknowledged only once every live host applies it.
//!
//! Each host applies what the store holds when it starts, when another
//! host rings it (PostgreSQL's NOTIFY), when its listener reconnects (it
//! may have missed a ring), and when a poll every [`POLL_EVERY`] finds the
//! store's change count moved (the ring lost some other way). Having
//! applied a count, a host records it in its lease row; the admin API
//! waits for every live host's row ([`ACK_WITHIN`]). When the tools this
//! host serves change, the boundary compiles the set in force again
//! (keeping it as compiled where it no longer validates).
//!
//! Fail-closed: stored documents that do not compile here (this host's
//! schema differs from the one they were validated against: a connector
//! or a tool argument it does not serve, or the set was changed by hand)
//! are never skipped, since a skipped `forbid` would allow what an
//! operator refused. Neither does the host refuse to start: then no host
//! of the fleet could start to serve the admin API through which the
//! document is fixed. It starts, and runs with [`UNAPPLIED_POLICY`] in
//! force, which forbids every call (every tool is absent from every
//! surface, and a call is refused naming that policy), says every error
//! with its line in the log and in `GET /v1/policies`, and does not record
//! the count as applied (a change waiting on it names it). The next change
//! that compiles (`PUT` the document fixed, or `DELETE` it) lifts it, as
//! does the schema growing to fit (the poll tries again: a remote MCP
//! server's tools are listed after the start).

use crate::boundary::Boundary;
use crate::deployments::{ChangedBy, Deployments};
use crate::policy::operator::{
    DeploymentSchema, OperatorPolicies, PolicyDoc, PolicyErrors, PolicyRevision, PolicySource,
};
use crate::store::{PolicyChange, Store, StoreError, StoredPolicies, StoredPolicy};
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// How long a change made through the admin API waits for every live host
/// to apply it before answering with those that have not.
pub(crate) const ACK_WITHIN: Duration = Duration::from_secs(10);

/// How often a host compares the store's policy change count with the one
/// it applies (the fallback for a ring it did not hear), and tries again
/// stored documents that did not compile here.
pub(crate) const POLL_EVERY: Duration = Duration::from_secs(2);

/// The id of the policy in force on a host whose stored documents do not
/// compile: it forbids every call (see the module docs).
pub(crate) const UNAPPLIED_POLICY: &str = "stored_policies_unapplied";

/// What this host applies of the fleet's policies, and the one path that
/// changes them.
pub(crate) struct FleetPolicies {
    /// The configuration file's documents, as loaded at start: never
    /// changed through the API, and compiled with every stored set.
    file: Vec<PolicyDoc>,
    store: Arc<dyn Store>,
    /// Where the set in force is put.
    boundary: Arc<Boundary>,
    /// What is served now: the schema's tools.
    deployments: Arc<Deployments>,
    /// One apply at a time on this host, so counts are applied in order.
    applying: tokio::sync::Mutex<()>,
    state: parking_lot::Mutex<Applied>,
}

/// The store's change count this host applies, or why it applies none.
#[derive(Default, Clone)]
struct Applied {
    /// The count of the stored documents in force here.
    change: Option<i64>,
    /// The stored documents at `refused_at` did not compile here: every
    /// call is refused until a change that compiles.
    refused: Option<(i64, PolicyErrors)>,
}

impl FleetPolicies {
    /// With the configuration file's documents, loaded at start; nothing
    /// in force yet ([`FleetPolicies::apply_stored`] puts it).
    pub(crate) fn new(
        file: Vec<PolicyDoc>,
        store: Arc<dyn Store>,
        boundary: Arc<Boundary>,
        deployments: Arc<Deployments>,
    ) -> FleetPolicies {
        FleetPolicies {
            file,
            store,
            boundary,
            deployments,
            applying: Default::default(),
            state: Default::default(),
        }
    }

    /// The file document named `name`, if the file owns that name.
    fn file_doc(&self, name: &str) -> Option<&PolicyDoc> {
        self.file.iter().find(|doc| doc.name == name)
    }
}

/// Why a change of a policy document through the admin API was refused or
/// not acknowledged; the admin API maps each onto a status.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PolicyChangeError {
    /// Not a name a document may have (422).
    #[error("{0}")]
    InvalidName(String),
    /// The configuration file owns the name (409).
    #[error("{0}")]
    FileOwned(String),
    /// The set with this change does not validate (422): nothing stored.
    #[error("{0}")]
    Invalid(PolicyErrors),
    /// No document stored through the API has the name (404).
    #[error("{0}")]
    NotFound(String),
    /// Others changed the documents each time this one was validated (409).
    #[error("{0}")]
    Busy(String),
    /// This host cannot build its deployment's schema (503).
    #[error("{0}")]
    Schema(String),
    /// Stored and applied here, not applied by every live host in time.
    #[error(
        "stored as policy revision {revision} and applied here, but {} not applied it within {} s: they apply it when they can (until then they decide under the revision they have; `GET /v1/policies` on each shows the revision in force)",
        hosts_phrase(.hosts),
        ACK_WITHIN.as_secs()
    )]
    NotApplied {
        revision: String,
        hosts: Vec<String>,
    },
    #[error("the store failed: {0}")]
    Store(#[from] StoreError),
}

fn hosts_phrase(hosts: &[String]) -> String {
    match hosts {
        [one] => format!("host {one} has"),
        many => format!("hosts {} have", many.join(", ")),
    }
}

/// The one name under `/v1/policies/` that is not a document's.
const WHAT_IF_PATH: &str = "test";

/// A document name as the API takes it: what a file's stem may be too.
fn check_name(name: &str) -> Result<(), PolicyChangeError> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    // `POST /v1/policies/test` is the what-if: a document of that name
    // could be neither changed nor retired through its own path.
    if name == WHAT_IF_PATH {
        return Err(PolicyChangeError::InvalidName(format!(
            "`{WHAT_IF_PATH}` is the what-if's path (`POST /v1/policies/{WHAT_IF_PATH}`): name the document otherwise"
        )));
    }
    if fine {
        Ok(())
    } else {
        Err(PolicyChangeError::InvalidName(format!(
            "`{}` is not a policy document name: 1 to 64 of A-Z, a-z, 0-9, `_`, `-` and `.`",
            name.escape_debug()
        )))
    }
}

/// One policy document as `GET /v1/policies` shows it.
#[derive(Debug, Serialize)]
pub(crate) struct PolicyView {
    pub name: String,
    /// `file` (the configuration's) or `api`.
    pub source: &'static str,
    /// For `file`: the file it was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub text: String,
    /// For `api`: this document's change count, whether it was deleted,
    /// who made the last change and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retired: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_at_ms: Option<i64>,
}

/// `GET /v1/policies`: every document and what is in force on this host.
#[derive(Debug, Serialize)]
pub(crate) struct PoliciesView {
    /// The revision every decision here names now.
    pub revision: String,
    /// The store's change count of API documents this host applies.
    pub applied_change: Option<i64>,
    /// The store's change count now.
    pub stored_change: i64,
    /// Live hosts that have not applied `stored_change` (the fleet's).
    pub hosts_behind: Vec<String>,
    /// Why this host refuses every call, if its stored documents do not
    /// compile here: one line per error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<Vec<String>>,
    pub policies: Vec<PolicyView>,
}

/// A change acknowledged: the document as stored and the revision now in
/// force on every live host.
#[derive(Debug, Serialize)]
pub(crate) struct PolicyChanged {
    pub policy: PolicyView,
    pub revision: String,
}

fn api_view(doc: &StoredPolicy) -> PolicyView {
    PolicyView {
        name: doc.name.clone(),
        source: "api",
        path: None,
        text: doc.text.clone(),
        revision: Some(doc.revision),
        retired: Some(doc.retired),
        changed_by: Some(doc.changed_by.clone()),
        changed_at_ms: Some(doc.changed_at_ms),
    }
}

/// The documents in force with `stored`: the file's, then the stored live
/// ones the file does not own.
fn docs_with(file: &[PolicyDoc], stored: &StoredPolicies) -> Vec<PolicyDoc> {
    let mut docs = file.to_vec();
    docs.extend(
        stored
            .live()
            .filter(|doc| !file.iter().any(|f| f.name == doc.name))
            .map(|doc| PolicyDoc {
                name: doc.name.clone(),
                source: PolicySource::Api,
                text: doc.text.clone(),
            }),
    );
    docs
}

/// The set put in force where the stored documents do not compile: it
/// forbids every call (see the module docs).
fn forbid_everything(
    schema: &DeploymentSchema,
    revision: PolicyRevision,
) -> Result<OperatorPolicies, PolicyErrors> {
    let doc = PolicyDoc {
        name: UNAPPLIED_POLICY.to_string(),
        source: PolicySource::Api,
        text: format!("@id(\"{UNAPPLIED_POLICY}\")\nforbid (principal, action, resource);\n"),
    };
    OperatorPolicies::compile(&[doc], schema, revision)
}

impl FleetPolicies {
    /// This host's deployment schema now: every tool it serves.
    fn policy_schema(&self) -> Result<DeploymentSchema, PolicyChangeError> {
        let components = self.deployments.components();
        let served: Vec<&crate::runtime::LoadedComponent> =
            components.values().map(|c| c.as_ref()).collect();
        DeploymentSchema::of(&served).map_err(|e| {
            PolicyChangeError::Schema(format!(
                "this host cannot build its deployment's policy schema: {e}"
            ))
        })
    }

    /// At start: the configuration file's documents must validate alone
    /// against this host's schema ([`PolicyChangeError::Invalid`] stops
    /// `serve` with every error and its line: the file is the operator's
    /// to fix before anything is served); then the stored ones are applied
    /// with them (fail-closed where they do not compile: see the module
    /// docs).
    pub(crate) async fn apply_at_start(&self) -> Result<PolicyRevision, PolicyChangeError> {
        if !self.file.is_empty() {
            let schema = self.policy_schema()?;
            OperatorPolicies::compile(&self.file, &schema, PolicyRevision::of(0, &self.file))
                .map_err(PolicyChangeError::Invalid)?;
        }
        self.apply_stored().await
    }

    /// Applies the policy documents the store holds now, unless this host
    /// applies their change count already; records the count applied in
    /// this host's lease row either way (a host that rejoined under a new
    /// identity records it anew). The revision in force after.
    pub(crate) async fn apply_stored(&self) -> Result<PolicyRevision, PolicyChangeError> {
        let _one = self.applying.lock().await;
        let stored = self.store.stored_policies().await?;
        let applied = self.state.lock().change;
        if applied != Some(stored.change) {
            self.put_in_force(&stored)?;
        }
        if self.state.lock().change == Some(stored.change) {
            self.store.policy_applied(stored.change).await?;
        }
        Ok(self.boundary.policies().revision().clone())
    }

    /// Compiles the file's documents with `stored` and puts them in force;
    /// where they do not compile here, forbids every call (fail-closed).
    fn put_in_force(&self, stored: &StoredPolicies) -> Result<(), PolicyChangeError> {
        // The schema read and the set put in force under one hold: a
        // deployment change meanwhile recompiles after this, not before.
        let _one = self.boundary.policy_change();
        let schema = self.policy_schema()?;
        let docs = docs_with(&self.file, stored);
        let revision = PolicyRevision::of(stored.change, &docs);
        match OperatorPolicies::compile(&docs, &schema, revision.clone()) {
            Ok(compiled) => {
                self.boundary.set_policies(Arc::new(compiled));
                let mut state = self.state.lock();
                if state.refused.take().is_some() {
                    tracing::warn!(revision = %revision, "the stored policies compile again: calls are decided under them");
                }
                state.change = Some(stored.change);
                tracing::info!(revision = %revision, "operator policies in force");
            }
            Err(errors) => {
                let again = self
                    .state
                    .lock()
                    .refused
                    .as_ref()
                    .is_some_and(|(at, before)| *at == stored.change && *before == errors);
                if again {
                    return Ok(());
                }
                tracing::error!(
                    change = stored.change,
                    errors = %errors,
                    "the stored operator policies do not compile against this host's schema: every call is refused (policy {UNAPPLIED_POLICY}) until a change that compiles (`PUT /v1/policies/NAME` fixed, or `DELETE` it)"
                );
                match forbid_everything(&schema, revision) {
                    Ok(compiled) => self.boundary.set_policies(Arc::new(compiled)),
                    Err(e) => {
                        tracing::error!(error = %e, "cannot compile the policy that forbids every call; keeping the policies in force")
                    }
                }
                let mut state = self.state.lock();
                state.change = None;
                state.refused = Some((stored.change, errors));
            }
        }
        Ok(())
    }

    /// Applies the stored policies in the background (another host's
    /// change, or a ring possibly missed).
    pub(crate) fn apply_stored_soon(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let policies = self.clone();
        runtime.spawn(async move {
            if let Err(e) = policies.apply_stored().await {
                tracing::error!(error = %e, "cannot apply the stored operator policies");
            }
        });
    }

    /// Compares the store's change count with the one applied here every
    /// [`POLL_EVERY`], and applies what it missed, until the host is dropped.
    pub(crate) fn follow_stored(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let policies = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(POLL_EVERY).await;
                let Some(policies) = policies.upgrade() else {
                    return;
                };
                let count = match policies.store.policy_change_count().await {
                    Ok(count) => count,
                    Err(e) => {
                        tracing::debug!(error = %e, "cannot read the policy change count");
                        continue;
                    }
                };
                let state = policies.state.lock().clone();
                // Refused stored documents are tried again each turn: this
                // host's schema may have grown since (a remote MCP server's
                // tools listed after the start).
                if state.change == Some(count) {
                    continue;
                }
                if state.refused.is_none() {
                    tracing::info!(count, "a policy change was not heard of; applying it now");
                }
                let applied = policies.apply_stored().await;
                if let Err(e) = applied {
                    tracing::error!(error = %e, "cannot apply the stored operator policies");
                }
            }
        })
    }

    /// `GET /v1/policies`.
    pub(crate) async fn views(&self) -> Result<PoliciesView, PolicyChangeError> {
        let stored = self.store.stored_policies().await?;
        let hosts_behind = self.store.hosts_behind_policy(stored.change).await?;
        let state = self.state.lock().clone();
        let mut policies: Vec<PolicyView> = self
            .file
            .iter()
            .map(|doc| PolicyView {
                name: doc.name.clone(),
                source: "file",
                path: match &doc.source {
                    PolicySource::File(path) => Some(path.display().to_string()),
                    PolicySource::Api => None,
                },
                text: doc.text.clone(),
                revision: None,
                retired: None,
                changed_by: None,
                changed_at_ms: None,
            })
            .collect();
        policies.extend(
            stored
                .docs
                .iter()
                .filter(|doc| self.file_doc(&doc.name).is_none())
                .map(api_view),
        );
        Ok(PoliciesView {
            revision: self.boundary.policies().revision().to_string(),
            applied_change: state.change,
            stored_change: stored.change,
            hosts_behind,
            refused: state
                .refused
                .map(|(_, errors)| errors.to_string().lines().map(String::from).collect()),
            policies,
        })
    }

    fn refuse_file_owned(&self, name: &str) -> Result<(), PolicyChangeError> {
        if let Some(doc) = self.file_doc(name) {
            let file = match &doc.source {
                PolicySource::File(path) => path.display().to_string(),
                PolicySource::Api => "the configuration".to_string(),
            };
            return Err(PolicyChangeError::FileOwned(format!(
                "policy document `{name}` is read from {file}, which owns it: change it there (and restart), or give a document stored through the API another name"
            )));
        }
        Ok(())
    }

    /// `PUT /v1/policies/{name}`: stores `text` as document `name` once the
    /// file's documents and every other stored one validate with it against
    /// this host's schema (nothing is stored otherwise, and every error is
    /// answered with its line); then applies it here, records the change
    /// with its actor and revision, and waits for every live host.
    pub(crate) async fn put(
        &self,
        name: &str,
        text: &str,
        by: &ChangedBy<'_>,
    ) -> Result<PolicyChanged, PolicyChangeError> {
        check_name(name)?;
        self.refuse_file_owned(name)?;
        let schema = self.policy_schema()?;
        // Validated against the count it is stored at: another change
        // landing meanwhile means validating again with it.
        let mut stored_doc = None;
        for _ in 0..5 {
            let mut stored = self.store.stored_policies().await?;
            let validated_at = stored.change;
            stored.docs.retain(|doc| doc.name != name);
            let mut docs = docs_with(&self.file, &stored);
            docs.push(PolicyDoc {
                name: name.to_string(),
                source: PolicySource::Api,
                text: text.to_string(),
            });
            OperatorPolicies::compile(&docs, &schema, PolicyRevision::of(validated_at + 1, &docs))
                .map_err(PolicyChangeError::Invalid)?;
            match self
                .store
                .put_policy(name, text, by.subject, validated_at)
                .await?
            {
                PolicyChange::Made(doc) => {
                    stored_doc = Some(doc);
                    break;
                }
                PolicyChange::Stale { .. } | PolicyChange::NotFound => continue,
            }
        }
        let Some(doc) = stored_doc else {
            return Err(PolicyChangeError::Busy(format!(
                "the policy documents kept changing while `{name}` was validated against them: try again"
            )));
        };
        self.policy_changed(doc, crate::trace::Deploy::PolicyStored, by)
            .await
    }

    /// `DELETE /v1/policies/{name}`: deletes a document stored through the
    /// API (kept, retired, for the record), applies the set without it
    /// here, and waits for every live host.
    pub(crate) async fn retire(
        &self,
        name: &str,
        by: &ChangedBy<'_>,
    ) -> Result<PolicyChanged, PolicyChangeError> {
        self.refuse_file_owned(name)?;
        match self.store.retire_policy(name, by.subject).await? {
            PolicyChange::Made(doc) => {
                self.policy_changed(doc, crate::trace::Deploy::PolicyRetired, by)
                    .await
            }
            PolicyChange::Stale { .. } | PolicyChange::NotFound => {
                Err(PolicyChangeError::NotFound(format!(
                    "no policy document `{name}` stored through the API is in force: `GET /v1/policies` lists them"
                )))
            }
        }
    }

    /// After `doc` was changed in the store: applied here, recorded with
    /// who made it and the revision, and acknowledged once every live host
    /// records applying it (or refused, naming those that have not).
    async fn policy_changed(
        &self,
        doc: StoredPolicy,
        rule: crate::trace::Deploy,
        by: &ChangedBy<'_>,
    ) -> Result<PolicyChanged, PolicyChangeError> {
        let revision = self.apply_stored().await?;
        let event = crate::trace::deployed(
            &doc.name,
            rule,
            serde_json::json!({
                "by": by.subject,
                "policy": doc.name,
                "policy_doc_revision": doc.revision,
                "policy_revision": revision.to_string(),
                "api": doc.change,
            }),
            by.actor.clone(),
            by.origin.clone(),
        );
        if let Err(e) = self.store.record(&event).await {
            tracing::error!(policy = %doc.name, error = %e, "cannot record a change of the operator policies");
        }
        tracing::info!(policy = %doc.name, revision = %revision, by = %by.subject, "{rule}");
        let deadline = tokio::time::Instant::now() + ACK_WITHIN;
        loop {
            let behind = self.store.hosts_behind_policy(doc.change).await?;
            if behind.is_empty() {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(PolicyChangeError::NotApplied {
                    revision: revision.to_string(),
                    hosts: behind,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Ok(PolicyChanged {
            policy: api_view(&doc),
            revision: revision.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(name: &str, text: &str, retired: bool) -> StoredPolicy {
        StoredPolicy {
            name: name.into(),
            text: text.into(),
            revision: 1,
            retired,
            changed_by: "alice".into(),
            changed_at_ms: 0,
            change: 1,
        }
    }

    /// The file's documents first, then the stored live ones the file does
    /// not own: a deleted one, or one under a file's name, is not in force.
    #[test]
    fn the_set_in_force_is_the_files_then_the_stored_live_ones() {
        let file = vec![PolicyDoc {
            name: "base.cedar".into(),
            source: PolicySource::File("/etc/scout/base.cedar".into()),
            text: "// file".into(),
        }];
        let stored = StoredPolicies {
            change: 4,
            docs: vec![
                stored("base.cedar", "// shadowed", false),
                stored("gone", "// deleted", true),
                stored("mail", "// mail", false),
            ],
        };
        let docs = docs_with(&file, &stored);
        let named: Vec<(&str, &str)> = docs
            .iter()
            .map(|d| (d.name.as_str(), d.text.as_str()))
            .collect();
        assert_eq!(named, [("base.cedar", "// file"), ("mail", "// mail")]);
        assert_eq!(docs[1].source, PolicySource::Api);
    }

    #[test]
    fn a_document_name_is_short_plain_text() {
        for fine in ["mail", "mail-v2.cedar", "No_Readme", &"a".repeat(64)] {
            assert!(check_name(fine).is_ok(), "{fine}");
        }
        for bad in ["", "test", "a/b", "a b", "..\u{0}", &"a".repeat(65), "é"] {
            assert!(
                matches!(check_name(bad), Err(PolicyChangeError::InvalidName(_))),
                "{bad:?}"
            );
        }
    }

    /// A change not applied in time names every host behind, and says the
    /// change stays stored.
    #[test]
    fn a_change_not_applied_everywhere_names_the_hosts_behind() {
        let one = PolicyChangeError::NotApplied {
            revision: "r3-abcdefabcdef".into(),
            hosts: vec!["h-1".into()],
        }
        .to_string();
        assert!(
            one.contains("stored as policy revision r3-abcdefabcdef"),
            "{one}"
        );
        assert!(
            one.contains("host h-1 has not applied it within 10 s"),
            "{one}"
        );
        let two = PolicyChangeError::NotApplied {
            revision: "r3-abcdefabcdef".into(),
            hosts: vec!["h-1".into(), "h-2".into()],
        }
        .to_string();
        assert!(two.contains("hosts h-1, h-2 have not applied it"), "{two}");
    }
}
