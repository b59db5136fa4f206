//! Connectors added, upgraded and retired while the fleet runs (issue 33
//! item 4). The configuration file stays the bootstrap; the admin API
//! (`PUT`/`DELETE /v1/connectors/{name}`) stores a change in the fleet's
//! store and applies it on the host that took it, and every other host
//! applies it when the store rings (PostgreSQL's NOTIFY), each pulling and
//! verifying the artifact itself. One path changes what a host serves:
//! the loaded component, the roster and the boundary's catalogue together.
//!
//! A remote MCP server (`mcp = "https://…"`) is stored the same way: every
//! host builds its own client from the stored settings and lists its tools,
//! which stay candidates until reviewed, as from the file. Any change of a
//! connector's settings (the same artifact or URL with new settings
//! included) replaces what every host serves of it, so that nothing a host
//! read of a runtime connector is read once at start: its roster entry, its
//! catalogue entry, its spend threshold and a remote server's client.

use super::*;
use serde::Serialize;

/// One connector as `GET /v1/connectors` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectorView {
    pub name: String,
    /// `file` (the configuration file owns it) or `api`.
    pub source: &'static str,
    /// The OCI artifact it was named by, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// A remote MCP server's URL, for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp: Option<String>,
    /// The manifest digest this host runs (the fleet's, for `api`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// `served`, `not_offered` (a variable it needs is unset), `retired`,
    /// or `pending` (stored, not yet applied on this host).
    pub status: &'static str,
    /// Its tools as this host serves them.
    pub tools: Vec<String>,
    /// For `api`: the change count, who made the last change, and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_at_ms: Option<i64>,
    /// For `api`: the settings as given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings: Option<Value>,
}

impl Deployments {
    /// Every connector this host knows of: the file's, and those the
    /// admin API stored (retired ones included).
    pub(crate) fn connector_views(&self) -> Result<Vec<ConnectorView>, StoreError> {
        let roster = self.roster();
        let stored: BTreeMap<String, StoredConnector> =
            crate::store::block(self.store.stored_connectors())?
                .into_iter()
                .map(|c| (c.name.clone(), c))
                .collect();
        let mut views = Vec::new();
        for (name, settings) in &self.file.connectors {
            views.push(ConnectorView {
                name: name.clone(),
                source: "file",
                artifact: settings.artifact.as_ref().map(ToString::to_string),
                mcp: settings.mcp.clone(),
                digest: settings.artifact_digest.clone(),
                status: self.status_of(&roster, name),
                tools: self.tool_names(name),
                revision: None,
                changed_by: None,
                changed_at_ms: None,
                settings: None,
            });
        }
        for (name, row) in stored {
            if self.file.connectors.contains_key(&name) {
                continue;
            }
            let applied = roster.stored.get(&name).map(|c| c.revision);
            let status = if applied != Some(row.revision) {
                "pending"
            } else {
                self.status_of(&roster, &name)
            };
            let settings: Option<Value> = serde_json::from_str(&row.settings).ok();
            let mcp = settings
                .as_ref()
                .and_then(|s| s["mcp"].as_str())
                .map(str::to_string);
            views.push(ConnectorView {
                tools: self.tool_names(&name),
                source: "api",
                artifact: mcp.is_none().then(|| row.artifact.clone()),
                digest: mcp.is_none().then(|| row.digest.clone()),
                mcp,
                status,
                revision: Some(row.revision),
                changed_by: Some(row.changed_by.clone()),
                changed_at_ms: Some(row.changed_at_ms),
                settings,
                name,
            });
        }
        views.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(views)
    }

    fn status_of(&self, roster: &Roster, name: &str) -> &'static str {
        if self.boundary.is_retired(name) || roster.retired.contains_key(name) {
            "retired"
        } else if roster.not_offered.contains_key(name) {
            "not_offered"
        } else if self.serves(name) {
            "served"
        } else {
            "pending"
        }
    }

    /// Connector `name`'s tools as this host serves them: the component's,
    /// as the catalogue admitted (and the operator narrowed) them.
    fn tool_names(&self, name: &str) -> Vec<String> {
        let Some(component) = self.component(name) else {
            return Vec::new();
        };
        let catalog = self.boundary.catalog();
        let spec = catalog.connector(name);
        component
            .tools()
            .iter()
            .map(|t| t.name.clone())
            .filter(|t| {
                spec.is_none_or(|s| s.reads.contains(t) || s.writes.iter().any(|w| &w.name == t))
            })
            .collect()
    }

    /// `PUT /v1/connectors/{name}`: adds connector `name`, or changes it,
    /// as `settings` (a TOML connector table's fields, `component` an OCI
    /// artifact or `mcp` a remote MCP server's URL) say. The artifact is
    /// pulled and verified, and the component loaded and admitted (a remote
    /// server's client built), before anything is stored: a change that
    /// cannot be served is refused and changes nothing. Then the change is
    /// stored (the fleet hears of it), served here, and the pending
    /// approvals of every tool it changed are revoked. The same artifact or
    /// URL with other settings is a change like any other
    /// (`connector_upgraded`, naming the settings that changed).
    pub(crate) async fn put_connector(
        &self,
        name: &str,
        settings: Value,
        by: &ChangedBy<'_>,
    ) -> Result<ConnectorView, DeployError> {
        check_name(name)?;
        self.refuse_file_owned(name)?;
        // A name sessions load their own component under is not every
        // session's connector as well.
        let a_session_component = self
            .store
            .session_components()
            .await?
            .into_iter()
            .any(|c| c.name == name && !c.retired);
        if a_session_component || self.is_session_only(name) {
            return Err(DeployError::NameTaken(format!(
                "`{name}` is a session component (`/v1/session-components/{name}`): withdraw it and let its sessions end first, or give the connector another name"
            )));
        }
        let text = settings.to_string();
        let mut parsed = parse_settings(name, settings.clone())?;
        parsed
            .check(name, self.file.require_signature)
            .map_err(DeployError::Refused)?;
        let _one_change = self.deploying.lock().await;
        let (named, loaded) = match (parsed.mcp.clone(), parsed.artifact.clone()) {
            (Some(url), _) => {
                self.check_remote(name, &url, &parsed)?;
                let loaded = self
                    .load_remote(name, parsed)
                    .await
                    .map_err(|e| DeployError::Refused(e.to_string()))?;
                (url, loaded)
            }
            (None, Some(named)) => {
                let loaded = self
                    .load_artifact(name, parsed, &named)
                    .await
                    .map_err(|e| DeployError::Refused(e.to_string()))?;
                (named.to_string(), loaded)
            }
            (None, None) => {
                return Err(DeployError::Refused(format!(
                    "connectors.{name}.component: a connector added at runtime is an OCI artifact every host pulls and verifies itself (`component = \"oci://REGISTRY/REPO:TAG\"`, published with `scout-host push`), or a remote MCP server (`mcp = \"https://…\"`); a file path goes in the configuration file"
                )));
            }
        };
        let before = self
            .store
            .stored_connectors()
            .await?
            .into_iter()
            .find(|c| c.name == name && !c.retired);
        let stored = self
            .store
            .put_connector(name, &text, &named, &loaded.digest, by.subject)
            .await?;
        let previous = self.component(name);
        let changed = self.serve_loaded(name, loaded, stored.clone());
        let revoked = self.revoke_approvals_of(name, &changed, by.subject);
        let rule = if previous.is_some() {
            crate::trace::Deploy::ConnectorUpgraded
        } else {
            crate::trace::Deploy::ConnectorAdded
        };
        let before_settings = before
            .as_ref()
            .and_then(|b| serde_json::from_str::<Value>(&b.settings).ok());
        self.record_change(
            &stored,
            rule,
            serde_json::json!({
                "by": by.subject,
                "artifact": stored.artifact,
                "digest": stored.digest,
                "previous_component": previous.as_ref().map(|c| c.info().sha256.clone()),
                "component_changed": before.as_ref().is_none_or(|b| b.artifact != stored.artifact || b.digest != stored.digest),
                "settings_changed": settings_changed(before_settings.as_ref(), &settings),
                "revision": stored.revision,
                "tools_changed": changed,
                "approvals_revoked": revoked,
            }),
            by,
        );
        tracing::info!(connector = %name, digest = %stored.digest, revision = stored.revision, by = %by.subject, "{rule}");
        self.connector_view(name)
    }

    /// `DELETE /v1/connectors/{name}`: retires a connector the admin API
    /// added. Every host refuses its next call (`connector_retired`), and
    /// its pending approvals are revoked.
    pub(crate) async fn retire_connector(
        &self,
        name: &str,
        by: &ChangedBy<'_>,
    ) -> Result<ConnectorView, DeployError> {
        self.refuse_file_owned(name)?;
        let _one_change = self.deploying.lock().await;
        let Some(stored) = self.store.retire_connector(name, by.subject).await? else {
            return Err(DeployError::NotFound(format!(
                "no connector `{name}` added through the API is served: `GET /v1/connectors` lists them"
            )));
        };
        let tools: Vec<String> = self.tool_names(name);
        self.retire_here(&stored);
        let revoked = self.revoke_approvals_of(name, &tools, by.subject);
        self.record_change(
            &stored,
            crate::trace::Deploy::ConnectorRetired,
            serde_json::json!({
                "by": by.subject,
                "artifact": stored.artifact,
                "digest": stored.digest,
                "revision": stored.revision,
                "approvals_revoked": revoked,
            }),
            by,
        );
        tracing::info!(connector = %name, by = %by.subject, "connector retired");
        self.connector_view(name)
    }

    fn connector_view(&self, name: &str) -> Result<ConnectorView, DeployError> {
        self.connector_views()?
            .into_iter()
            .find(|v| v.name == name)
            .ok_or_else(|| DeployError::NotFound(format!("no connector `{name}`")))
    }

    /// Serves `loaded` as connector `name` from now on; the names of the
    /// tools that changed (or went away) since the version served before.
    pub(super) fn serve_loaded(
        &self,
        name: &str,
        loaded: Loaded,
        stored: StoredConnector,
    ) -> Vec<String> {
        let Loaded {
            settings,
            deployment,
            ..
        } = loaded;
        let Some(component) = deployment.components.get(name).cloned() else {
            return Vec::new();
        };
        let threshold = settings.spend_threshold();
        let changed = match self.component(name) {
            Some(previous) => previous
                .tools()
                .iter()
                .filter(|old| {
                    component.tool(&old.name).is_none_or(|new| {
                        crate::review::tool_digest(&previous, old)
                            != crate::review::tool_digest(&component, new)
                    })
                })
                .map(|t| t.name.clone())
                .collect(),
            None => Vec::new(),
        };
        let platform = deployment.platform.contains(name);
        let hosted = !platform && !deployment.not_offered.contains_key(name);
        let spec = deployment
            .catalog
            .connector(name)
            .cloned()
            .filter(|_| !platform);
        // A remote server's client is replaced whole (its URL, transport or
        // timeout may have changed): the old one's upstream sessions close,
        // and its tools are served as the new one lists them.
        let server = deployment.remote.get(name).cloned();
        if server.is_some() {
            self.boundary.remote_listed(component.clone());
        }
        let replaced = match &server {
            Some(server) => self.remote.write().insert(name.to_string(), server.clone()),
            None => self.remote.write().remove(name),
        };
        if let Some(old) = replaced {
            old.end_all();
            // Its discovery wakes, finds it replaced, and stops.
            old.list_changed().notify_one();
        }
        self.boundary.set_spend_threshold(name, threshold);
        // The component first, then the roster and the policy: a session
        // deciding in between finds a tool it may not offer yet, never one
        // it offers with nothing behind it.
        self.components.write().insert(name.to_string(), component);
        {
            let mut roster = self.roster.write();
            let mut next = roster.with_connector(name, settings, &deployment);
            next.stored.insert(name.to_string(), stored);
            *roster = Arc::new(next);
        }
        self.resolutions.invalidate();
        self.boundary.serve_connector(name, spec, hosted);
        self.policies_follow();
        if server.is_some() {
            self.remote_added.notify_one();
        }
        changed
    }

    /// Stops serving `stored`'s connector on this host.
    pub(super) fn retire_here(&self, stored: &StoredConnector) {
        let last = self.components.write().remove(&stored.name);
        {
            let mut roster = self.roster.write();
            let mut next = roster.without_connector(&stored.name, last);
            next.stored.insert(stored.name.clone(), stored.clone());
            *roster = Arc::new(next);
        }
        self.boundary.retire_connector(&stored.name);
        self.boundary.set_spend_threshold(&stored.name, None);
        if let Some(server) = self.remote.write().remove(&stored.name) {
            server.end_all();
            server.list_changed().notify_one();
        }
        self.policies_follow();
    }

    /// Compiles the operator policies in force against what is served now.
    pub(super) fn policies_follow(&self) {
        let _one = self.boundary.policy_change();
        let components = self.components();
        let served: Vec<&LoadedComponent> = components.values().map(|c| c.as_ref()).collect();
        self.boundary.deployment_changed(&served);
    }

    /// Revokes every pending approval of `tools` of `connector` (a call
    /// waiting on one is refused at its next look); their ids.
    fn revoke_approvals_of(&self, connector: &str, tools: &[String], by: &str) -> Vec<i64> {
        let revoker = format!("{by} (connector {connector} changed)");
        self.boundary
            .approvals()
            .revoke_tools(connector, tools, &revoker)
    }

    /// Applies, in the background, whatever the store holds that this host
    /// does not serve yet (another host's change).
    pub(crate) fn deploy_stored_soon(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let deployments = self.clone();
        runtime.spawn(async move { deployments.deploy_stored().await });
    }

    /// Applies every stored change this host has not: a connector added or
    /// upgraded is pulled (by its recorded digest), verified and served; a
    /// retired one is no longer served. A change that cannot be applied
    /// here is logged, and the host keeps serving what it served.
    pub(crate) async fn deploy_stored(&self) {
        let _one_change = self.deploying.lock().await;
        let stored = match self.store.stored_connectors().await {
            Ok(stored) => stored,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the connectors changed through the API");
                return;
            }
        };
        for row in stored {
            if self.file.connectors.contains_key(&row.name) {
                tracing::warn!(connector = %row.name, "the configuration file owns this connector; the stored one is not served");
                continue;
            }
            let applied = self.roster().stored.get(&row.name).map(|c| c.revision);
            if applied.is_some_and(|r| r >= row.revision) {
                continue;
            }
            if row.retired {
                if applied.is_some() {
                    self.retire_here(&row);
                } else {
                    // Never served here: remembered as retired, refused by name.
                    let mut roster = self.roster.write();
                    let mut next = (**roster).clone();
                    next.stored.insert(row.name.clone(), row.clone());
                    *roster = Arc::new(next);
                }
                continue;
            }
            match self.load_stored(&row).await {
                Ok(loaded) => {
                    self.serve_loaded(&row.name, loaded, row.clone());
                    tracing::info!(connector = %row.name, digest = %row.digest, revision = row.revision, "serving the connector as changed through the API");
                }
                Err(e) => {
                    tracing::error!(connector = %row.name, digest = %row.digest, error = %e, "cannot serve the connector as changed through the API; serving what was served");
                }
            }
        }
    }

    async fn load_stored(&self, row: &StoredConnector) -> Result<Loaded, LoadError> {
        let mut settings: ConnectorConfig =
            serde_json::from_str(&row.settings).map_err(LoadError::StoredSettings)?;
        settings
            .check(&row.name, self.file.require_signature)
            .map_err(LoadError::Settings)?;
        if settings.mcp.is_some() {
            return self.load_remote(&row.name, settings).await;
        }
        let named = ArtifactRef::parse(&row.artifact)?.pinned(&row.digest);
        self.load_artifact(&row.name, settings, &named).await
    }
}

impl Deployments {
    /// What a remote server added through the API must say besides what
    /// a file's must: plain http only to a server the operator said is on
    /// loopback or a private network, and a server taking a credential
    /// only where a deployment owner lists its tools.
    fn check_remote(
        &self,
        name: &str,
        url: &str,
        settings: &ConnectorConfig,
    ) -> Result<(), DeployError> {
        let plain = url::Url::parse(url).is_ok_and(|u| u.scheme() == "http");
        if plain && !settings.allow_private_network {
            return Err(DeployError::Refused(format!(
                "connectors.{name}.mcp: `{url}` is plain http: a server on the network is reached over https; plain http only for a server on loopback or a private network, with `allow_private_network = true`"
            )));
        }
        if self.file.deployment_owner_brand.is_none() && !settings.is_public() {
            return Err(DeployError::Refused(format!(
                "connectors.{name}.credential: a remote MCP server that takes a credential lists its tools with the deployment owner's connection, and the hosts' file names no `deployment_owner_brand`: set `credential = \"none\"` if the server takes none, or name the owner in the file"
            )));
        }
        Ok(())
    }

    /// A remote MCP server's client built from `settings` and admitted
    /// under the catalogue in use, serving no tool until it lists them and
    /// an operator reviews each (as from the file).
    async fn load_remote(
        &self,
        name: &str,
        settings: ConnectorConfig,
    ) -> Result<Loaded, LoadError> {
        let runtime = self.runtime.clone();
        let store = self.store.clone();
        let catalog = (*self.boundary.catalog()).clone().with_seed_entry(name);
        let name = name.to_string();
        tokio::task::spawn_blocking(move || {
            let mut deployment = Deployment {
                catalog,
                ..Default::default()
            };
            deployment.add(&runtime, &name, &settings, &process_env, store.as_ref())?;
            Ok(Loaded {
                settings,
                deployment,
                digest: String::new(),
            })
        })
        .await
        .map_err(LoadError::Stopped)?
    }
}

/// `settings` read as connector `name`'s: where they do not parse, the
/// error names the field that does not (serde's own error names a wrong
/// type without its field).
fn parse_settings(name: &str, settings: Value) -> Result<ConnectorConfig, DeployError> {
    let whole = match serde_json::from_value::<ConnectorConfig>(settings.clone()) {
        Ok(parsed) => return Ok(parsed),
        Err(e) => e,
    };
    // Every field has a default, so a field alone parses unless it is the
    // one at fault.
    let faulty = settings
        .as_object()
        .into_iter()
        .flatten()
        .find_map(|(key, value)| {
            let alone = serde_json::json!({ key: value });
            serde_json::from_value::<ConnectorConfig>(alone)
                .err()
                .map(|e| (key.clone(), e))
        });
    Err(DeployError::Refused(match faulty {
        Some((key, e)) => format!("connectors.{name}.{key}: {e}"),
        None => format!("connectors.{name}: {whole}"),
    }))
}

/// The top-level settings whose value differs between `before` (the
/// stored settings a change replaces, if any) and `after`.
fn settings_changed(before: Option<&Value>, after: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let before = before.and_then(Value::as_object).unwrap_or(&empty);
    let after = after.as_object().unwrap_or(&empty);
    let keys: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect()
}
