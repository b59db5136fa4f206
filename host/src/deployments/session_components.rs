//! Components an orchestrator loads for one session (issue 39 item 3).
//!
//! An operator stores a template (`PUT /v1/session-components/{name}`):
//! a connector's settings whose `component` is an OCI artifact pinned at
//! the digest the operator chose, pulled, verified and loaded once to
//! prove it can be served. An orchestrator then names that digest when it
//! opens a session (`components: ["oci://REG/REPO@sha256:…"]`); nothing
//! else is ever pulled for a session. The host that serves the session
//! pulls and verifies it (any host of a fleet, when it takes the session
//! up), serves it to the sessions that named it and to no other (it is
//! not registered for them), and drops it once no session here holds it.
//! Which names the open sessions hold is the caller's to say: this module
//! does not know sessions.

use super::*;
use serde_json::json;

/// The session components the open sessions hold now, as the caller
/// reads them from its sessions.
type Held<'d> = Box<dyn Fn() -> BTreeSet<String> + Send + Sync + 'd>;

/// The names of session components loaded for a session being opened or
/// taken up: none of them is dropped until this goes away.
pub(crate) struct Pinned<'d> {
    deployments: &'d Deployments,
    held: Held<'d>,
    pub(crate) names: BTreeSet<String>,
}

impl<'d> Pinned<'d> {
    /// Nothing pinned yet; `held` reads the names the open sessions hold,
    /// for when the pins go.
    pub(super) fn new(
        deployments: &'d Deployments,
        held: impl Fn() -> BTreeSet<String> + Send + Sync + 'd,
    ) -> Pinned<'d> {
        Pinned {
            deployments,
            held: Box::new(held),
            names: BTreeSet::new(),
        }
    }

    /// Pins session component `name` until this goes away.
    pub(super) fn pin(&mut self, name: &str) {
        *self
            .deployments
            .session_pins
            .lock()
            .entry(name.to_string())
            .or_insert(0) += 1;
        self.names.insert(name.to_string());
    }
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        {
            let mut pins = self.deployments.session_pins.lock();
            for name in &self.names {
                if let Some(n) = pins.get_mut(name) {
                    *n -= 1;
                    if *n == 0 {
                        pins.remove(name);
                    }
                }
            }
        }
        self.deployments.drop_unused_session_components(&*self.held);
    }
}

/// `reference` parsed and pinned at a digest, or why not.
fn pinned(reference: &str) -> Result<(ArtifactRef, String), String> {
    let named = ArtifactRef::parse(reference.trim()).map_err(|_| {
        format!(
            "`{}` is not an `oci://REGISTRY/REPO@sha256:…` reference",
            shorten(reference)
        )
    })?;
    let digest = named
        .digest()
        .map(str::to_string)
        .ok_or_else(|| format!("`{}` names no digest: a session component is named by the digest an operator chose (`oci://REGISTRY/REPO@sha256:…`)", shorten(reference)))?;
    Ok((named.pinned(&digest), digest))
}

fn shorten(text: &str) -> String {
    text.chars().take(200).collect()
}

impl Deployments {
    /// `PUT /v1/session-components/{name}`: stores a component sessions may
    /// name, after pulling, verifying and loading it once here (a template
    /// that cannot be served is refused, and nothing is stored). It is
    /// served to no session until one names its digest.
    pub(crate) async fn put_session_component(
        &self,
        name: &str,
        settings: Value,
        by: &ChangedBy<'_>,
    ) -> Result<Value, DeployError> {
        check_name(name)?;
        self.refuse_file_owned(name)?;
        let live_connector = self
            .store
            .stored_connectors()
            .await?
            .into_iter()
            .any(|c| c.name == name && !c.retired);
        if live_connector {
            return Err(DeployError::NameTaken(format!(
                "`{name}` is a connector the fleet serves (`/v1/connectors/{name}`): give the session component another name"
            )));
        }
        let text = settings.to_string();
        let mut parsed: ConnectorConfig = serde_json::from_value(settings)
            .map_err(|e| DeployError::Refused(format!("session component `{name}`: {e}")))?;
        parsed
            .check(name, self.file.require_signature)
            .map_err(DeployError::Refused)?;
        let Some(named) = parsed.artifact.clone() else {
            return Err(DeployError::Refused(format!(
                "session component `{name}`: `component` is an OCI artifact pinned at the digest you chose (`oci://REGISTRY/REPO@sha256:…`)"
            )));
        };
        let (named, digest) = pinned(&named.to_string()).map_err(DeployError::Refused)?;
        // Loaded once to prove it can be served; not served.
        let loaded = self
            .load_artifact(name, parsed, &named)
            .await
            .map_err(|e| DeployError::Refused(e.to_string()))?;
        let Some(component) = loaded.deployment.components.get(name).cloned() else {
            return Err(DeployError::Refused(format!(
                "session component `{name}` is a platform server or not offered here: only a connector can be loaded for a session"
            )));
        };
        let tools: Vec<String> = component.tools().iter().map(|t| t.name.clone()).collect();
        let stored = self
            .store
            .put_session_component(name, &text, &named.to_string(), &digest, by.subject)
            .await?;
        // Choosing this digest is the operator's review of its tools as
        // they are in it: a session that names it is offered them.
        crate::review::approve_all(self.store.as_ref(), &component, by.subject)?;
        self.record_change(
            &stored,
            crate::trace::Deploy::SessionComponentStored,
            json!({"by": by.subject, "artifact": stored.artifact, "digest": stored.digest, "revision": stored.revision, "tools": tools}),
            by,
        );
        Ok(json!({
            "name": name,
            "artifact": stored.artifact,
            "digest": stored.digest,
            "tools": tools,
            "revision": stored.revision,
            "changed_by": stored.changed_by,
        }))
    }

    /// `DELETE /v1/session-components/{name}`: no session opened from now
    /// on loads it (those holding it keep it until they end).
    pub(crate) async fn drop_session_component(
        &self,
        name: &str,
        by: &ChangedBy<'_>,
    ) -> Result<Value, DeployError> {
        let Some(stored) = self.store.drop_session_component(name, by.subject).await? else {
            return Err(DeployError::NotFound(format!(
                "no session component `{name}`: `GET /v1/session-components` lists them"
            )));
        };
        self.record_change(
            &stored,
            crate::trace::Deploy::SessionComponentWithdrawn,
            json!({"by": by.subject, "artifact": stored.artifact, "digest": stored.digest, "revision": stored.revision}),
            by,
        );
        Ok(json!({"name": name, "withdrawn": true, "digest": stored.digest}))
    }

    /// `GET /v1/session-components`: every template, and how many sessions
    /// here hold each (`holding`, as the caller counts its sessions).
    pub(crate) fn session_component_views(
        &self,
        holding: impl Fn(&str) -> usize,
    ) -> Result<Vec<Value>, StoreError> {
        let stored = crate::store::block(self.store.session_components())?;
        Ok(stored
            .into_iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "artifact": c.artifact,
                    "digest": c.digest,
                    "withdrawn": c.retired,
                    "revision": c.revision,
                    "changed_by": c.changed_by,
                    "changed_at_ms": c.changed_at_ms,
                    "sessions_here": holding(&c.name),
                    "loaded_here": self.session_only.read().get(&c.name) == Some(&c.digest),
                })
            })
            .collect())
    }

    /// Loads, for a session being opened or taken up here, each component
    /// `references` names: only a digest an operator stored as a template
    /// (else refused, with nothing pulled), pulled and verified on this
    /// host unless it is loaded here already. `held` reads the session
    /// components the open sessions hold, for when the pins go.
    pub(crate) async fn load_session_components<'d>(
        &'d self,
        references: &[String],
        held: impl Fn() -> BTreeSet<String> + Send + Sync + 'd,
    ) -> Result<Pinned<'d>, SessionComponentError> {
        let mut pinned_names = Pinned::new(self, held);
        if references.is_empty() {
            return Ok(pinned_names);
        }
        if references.len() > 16 {
            return Err(SessionComponentError::NotSelectable(
                "`components` names at most 16 components: nothing was opened".into(),
            ));
        }
        let templates: Vec<StoredConnector> = self
            .store
            .session_components()
            .await?
            .into_iter()
            .filter(|c| !c.retired)
            .collect();
        for reference in references {
            let refused = |why: String| {
                SessionComponentError::NotSelectable(format!("{why}: nothing was opened"))
            };
            let (named, digest) = pinned(reference).map_err(refused)?;
            let template = templates
                .iter()
                .find(|t| {
                    t.digest == digest
                        && pinned(&t.artifact).is_ok_and(|(stored, _)| stored.to_string() == named.to_string())
                })
                .ok_or_else(|| {
                    refused(format!(
                        "`components` names `{}`, which is not a component an operator stored for sessions at that digest (`PUT /v1/session-components/NAME`)",
                        shorten(reference)
                    ))
                })?;
            let name = template.name.clone();
            pinned_names.pin(&name);
            match self.session_only.read().get(&name) {
                Some(loaded) if *loaded == digest => continue,
                Some(_) => {
                    return Err(refused(format!(
                        "session component `{name}` is loaded on this host at another digest for sessions still open: open this one once they end"
                    )));
                }
                None => {}
            }
            if self.serves(&name) && !self.is_session_only(&name) {
                return Err(refused(format!(
                    "session component `{name}` has the name of a connector this host serves to every session"
                )));
            }
            let settings: ConnectorConfig =
                serde_json::from_str(&template.settings).map_err(|e| {
                    refused(format!("session component `{name}`'s stored settings: {e}"))
                })?;
            let loaded = self
                .load_artifact(&name, settings, &named)
                .await
                .map_err(|e| {
                    refused(format!(
                        "session component `{name}` cannot be served here: {e}"
                    ))
                })?;
            self.serve_for_sessions(&name, loaded);
            if !self.is_session_only(&name) {
                return Err(refused(format!(
                    "session component `{name}` is not offered on this host (a platform server, or a variable its settings need is unset here)"
                )));
            }
        }
        Ok(pinned_names)
    }

    /// Serves `loaded` as connector `name` to the sessions that name it.
    pub(super) fn serve_for_sessions(&self, name: &str, loaded: Loaded) {
        let Loaded {
            settings,
            deployment,
            digest,
        } = loaded;
        let Some(component) = deployment.components.get(name).cloned() else {
            return;
        };
        let spec = deployment.catalog.connector(name).cloned();
        self.session_only
            .write()
            .insert(name.to_string(), digest.clone());
        self.components.write().insert(name.to_string(), component);
        {
            let mut roster = self.roster.write();
            *roster = Arc::new(roster.with_connector(name, settings, &deployment));
        }
        self.resolutions.invalidate();
        // Not hosted: a session that did not name it does not even count it
        // among the tools it could have had.
        self.boundary.serve_connector(name, spec, false);
        tracing::info!(connector = %name, digest = %digest, "session component loaded");
    }

    /// Whether `name` is a component loaded here for the sessions that
    /// named it.
    pub(crate) fn is_session_only(&self, name: &str) -> bool {
        self.session_only.read().contains_key(name)
    }

    /// Drops every session component no open session holds (`held` reads
    /// the names they hold), nor one being opened: its component, settings
    /// and tools leave this host.
    pub(crate) fn drop_unused_session_components(&self, held: &dyn Fn() -> BTreeSet<String>) {
        let loaded: Vec<String> = self.session_only.read().keys().cloned().collect();
        if loaded.is_empty() {
            return;
        }
        let pins = self.session_pins.lock();
        let held = held();
        for name in loaded {
            if pins.contains_key(&name) || held.contains(&name) {
                continue;
            }
            self.session_only.write().remove(&name);
            self.components.write().remove(&name);
            {
                let mut roster = self.roster.write();
                *roster = Arc::new(roster.without_connector(&name, None));
            }
            self.resolutions.invalidate();
            self.boundary.retire_connector(&name);
            tracing::info!(connector = %name, "session component dropped: no session holds it");
        }
    }
}
