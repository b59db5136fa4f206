//! Opening a session: what an orchestrator asks for, the rules its request
//! is checked against (brand, role, profile, selection, limits), and the
//! rows recorded once it is open (for the admin API of every host, and what
//! the fleet keeps so another host can take it up).

use super::{HostError, Live, Sessions};
use crate::policy::{self, Profile, Role, Route};
use crate::session::Session;
use crate::store::ProfileKind;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What opening a session asks for.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenSession {
    /// The brand the session acts for.
    pub brand: String,
    /// One of [`policy::ROLE_NAMES`], or a role of the operator's own
    /// (`[roles.NAME]`).
    pub role: String,
    /// A profile saved for the brand (coworker, specialist, goal agent, reviewer).
    #[serde(default)]
    pub profile: Option<String>,
    /// Only these MCP servers' tools (connectors and platform servers), of
    /// those the role, grant and brand give: narrows, never widens.
    #[serde(default)]
    pub connectors: Option<Vec<String>>,
    /// Only these tools (allowlist names, `mcp__github__github_read_file`,
    /// `Read`), of those the session could be given.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// When every call of the session is refused from (RFC 3339), before
    /// its own expiry and its grant's.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// The most calls that run in it (at most its grant's, if any).
    #[serde(default)]
    pub max_calls: Option<u32>,
    /// The most writes and billed calls in it (at most its grant's).
    #[serde(default)]
    pub max_effects: Option<u32>,
    /// Components for this session alone, each named by the digest an
    /// operator stored as a session component
    /// (`oci://REGISTRY/REPO@sha256:…`).
    #[serde(default)]
    pub components: Option<Vec<String>>,
    /// The connector names those components were loaded under here (set by
    /// the host once it loaded them, never by a request body).
    #[serde(skip)]
    pub loaded: BTreeSet<String>,
}

impl OpenSession {
    /// Whether the orchestrator narrowed the session to some servers or tools.
    pub fn selects(&self) -> bool {
        self.connectors.is_some() || self.tools.is_some()
    }

    /// The brand and role asked for, each checked.
    pub fn brand_and_role(&self) -> Result<(&str, Role), HostError> {
        let none = policy::operator_roles::OperatorRoles::none();
        let (brand, role, _) = self.brand_and_role_among(&none)?;
        Ok((brand, role))
    }

    /// The brand and role asked for, each checked, where `roles` are the
    /// operator's own: for one of them, its base and itself.
    pub fn brand_and_role_among<'r>(
        &self,
        roles: &'r policy::operator_roles::OperatorRoles,
    ) -> Result<(&str, Role, Option<&'r policy::operator_roles::OperatorRole>), HostError> {
        let brand = self.brand.trim();
        if brand.is_empty() || brand.len() > 200 {
            return Err(HostError::BadRequest(
                "`brand` must be 1 to 200 characters".into(),
            ));
        }
        if let Some(operator) = roles.get(&self.role) {
            return Ok((brand, operator.base, Some(operator)));
        }
        let role = Role::from_name(&self.role).ok_or_else(|| {
            HostError::BadRequest(format!(
                "unknown role `{}`: {}",
                self.role,
                roles.role_names()
            ))
        })?;
        Ok((brand, role, None))
    }

    /// Refused when it names components but none were loaded for it (only
    /// the admin API's `POST /v1/sessions` loads them).
    pub fn components_loaded(&self) -> Result<(), HostError> {
        let wanted = self.components.as_ref().is_some_and(|c| !c.is_empty());
        if wanted && self.loaded.is_empty() {
            return Err(HostError::NotSelectable(
                "`components` are loaded by the admin API's `POST /v1/sessions`: nothing was opened"
                    .into(),
            ));
        }
        Ok(())
    }

    /// What the orchestrator selected of `surface`, what a session could be
    /// given. Refused when a list is empty or names anything the session
    /// could not be given: the refusal names only what the caller sent,
    /// never what exists.
    pub fn selection(&self, surface: &policy::Surface) -> Result<policy::Selection, HostError> {
        let could: BTreeSet<&str> = surface.names().into_iter().collect();
        let servers: BTreeSet<&str> = could
            .iter()
            .filter_map(|name| policy::names::split_mcp(name).map(|(server, _)| server))
            .collect();
        let listed = |field: &str,
                      names: &Option<Vec<String>>|
         -> Result<Option<BTreeSet<String>>, HostError> {
            let Some(names) = names else { return Ok(None) };
            if names.is_empty() || names.len() > 1000 {
                return Err(HostError::NotSelectable(format!(
                    "`{field}` lists 1 to 1000 names (leave it out to select every one): nothing was opened"
                )));
            }
            Ok(Some(names.iter().map(|n| n.trim().to_string()).collect()))
        };
        let connectors = listed("connectors", &self.connectors)?;
        let tools = listed("tools", &self.tools)?;
        let not_given = |field: &str, name: &str| {
            let name: String = name.chars().take(120).collect();
            HostError::NotSelectable(format!(
                "`{field}` names `{name}`, which a session of role `{}` for this brand could not be given (its role, grant and the brand's connections decide what it could; a selection only narrows that): nothing was opened",
                self.role
            ))
        };
        for name in connectors.iter().flatten() {
            if !servers.contains(name.as_str()) {
                return Err(not_given("connectors", name));
            }
        }
        for name in tools.iter().flatten() {
            if !could.contains(name.as_str()) {
                return Err(not_given("tools", name));
            }
            // Registered on purpose and refusing every call (a write whose
            // operator switch is off, an approval nobody can give): listed to
            // a whole session, as the seed asks, but never what a task can be
            // narrowed to, as a tool a switch removes is not.
            if let Some(policy::Gate::Refuses(rule)) = surface.get(name).map(|t| &t.gate) {
                let name: String = name.chars().take(120).collect();
                return Err(HostError::NotSelectable(format!(
                    "`tools` names `{name}`, which a session of role `{}` could not use: it is {}; select another tool, or have the operator change that first: nothing was opened",
                    self.role,
                    rule.refusal_reason()
                )));
            }
        }
        let selection = policy::Selection { connectors, tools };
        if let Some(tools) = &selection.tools
            && let Some(outside) = tools.iter().find(|t| !selection.keeps(t))
        {
            return Err(HostError::NotSelectable(format!(
                "`tools` names `{outside}`, whose server `connectors` leaves out: select its server too, or leave the tool out; nothing was opened"
            )));
        }
        Ok(selection)
    }

    /// The limits the orchestrator set on the session, at `now_ms`, each
    /// checked against the session's own lifetime (`ttl`) and the grant it
    /// runs under: inside them, or refused (nothing opened).
    pub fn limits(
        &self,
        profile: Option<&Profile>,
        ttl: std::time::Duration,
        now_ms: i64,
    ) -> Result<policy::SessionLimits, HostError> {
        let refused = |why: String| HostError::InvalidLimits(format!("{why}: nothing was opened"));
        let grant = profile.map(|p| &p.grant);
        let now = now_ms;
        let expires_at_ms = match self.expires_at.as_deref() {
            None => None,
            Some(text) => {
                let at = chrono::DateTime::parse_from_rfc3339(text.trim())
                    .map_err(|_| {
                        refused("`expires_at` is an RFC 3339 time (`2026-12-05T18:00:00Z`)".into())
                    })?
                    .timestamp_millis();
                let own_end = now.saturating_add(
                    i64::try_from(ttl.as_secs().saturating_mul(1000)).unwrap_or(i64::MAX),
                );
                if at <= now {
                    return Err(refused("`expires_at` has already passed".into()));
                }
                if at > own_end {
                    return Err(refused(format!(
                        "`expires_at` is after the session's own end ({}, `session_ttl_secs` from now): leave it out, or set it earlier",
                        crate::dates::rfc3339_ms(own_end)
                    )));
                }
                if let Some(grant_end) = grant.and_then(|g| g.expires_at_ms())
                    && at > grant_end
                {
                    return Err(refused(format!(
                        "`expires_at` is after the grant's end ({}): a session stays inside its grant",
                        crate::dates::rfc3339_ms(grant_end)
                    )));
                }
                Some(at)
            }
        };
        for (field, value) in [
            ("max_calls", self.max_calls),
            ("max_effects", self.max_effects),
        ] {
            if value == Some(0) {
                return Err(refused(format!(
                    "`{field}` is 1 or more (leave it out for no limit)"
                )));
            }
        }
        if let (Some(asked), Some(granted)) = (self.max_effects, grant.and_then(|g| g.max_effects))
            && asked > granted
        {
            return Err(refused(format!(
                "`max_effects` is {asked}, more than the grant's {granted}: a session stays inside its grant"
            )));
        }
        Ok(policy::SessionLimits {
            expires_at_ms,
            max_calls: self.max_calls,
            max_effects: self.max_effects,
        })
    }
}

/// An open session as the admin API shows it. The token is shown once, when
/// the session is created.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionView {
    pub id: String,
    pub brand: String,
    pub role: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// MCP endpoint per connector, by server name.
    pub mcp: BTreeMap<String, String>,
    /// Each configured connector the session is not served, and why (what
    /// to do about it, where there is something to do).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub left_out: BTreeMap<String, String>,
    /// The session's whole allowlist (D12): what the orchestrator passes to
    /// its agent runtime, connector tools and the tools it serves itself.
    pub tools: Vec<String>,
    /// When the session ends by itself (milliseconds since the Unix epoch).
    pub expires_at_ms: i64,
    /// Paused after repeated refusals of the same consequence, until a
    /// person resumes it (`POST /v1/sessions/{id}/resume`) or ends it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// The limits its orchestrator set on it (`expires_at_ms`, `max_calls`,
    /// `max_effects`).
    #[serde(default, skip_serializing_if = "policy::SessionLimits::is_none")]
    pub limits: policy::SessionLimits,
    /// Bearer token for the MCP endpoints (only in the answer that created it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// The session as the admin API shows it, under `base`; the token only
/// in the answer that created it.
pub fn view_of<E>(live: &Live<E>, base: &str, token: Option<String>) -> SessionView {
    SessionView {
        id: live.session.id.clone(),
        brand: live.session.brand.clone(),
        role: live.role_name.clone(),
        profile: live.profile.clone(),
        // Every connector's endpoint, and the host's own (`scout`) where
        // the session is given host tools.
        mcp: live
            .endpoints
            .keys()
            .map(|c| (c.clone(), format!("{base}/mcp/{}/{c}", live.session.id)))
            .collect(),
        left_out: (*live.left_out).clone(),
        tools: (*live.allowlist).clone(),
        expires_at_ms: live.expires_at_ms,
        paused: live.session.is_paused(),
        limits: live.session.limits(),
        token,
    }
}

fn random_hex(bytes: usize) -> Result<String, HostError> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| {
        HostError::Unavailable(format!("the operating system's random source failed: {e}"))
    })?;
    Ok(hex::encode(buf))
}

impl<E> Sessions<E> {
    /// The profile a session of `role` for `brand` runs from: the one saved
    /// as `name`, a preset where the role has one, or none where the role
    /// runs without.
    pub fn profile(
        &self,
        brand: &str,
        role: Role,
        name: Option<&str>,
    ) -> Result<Option<Profile>, HostError> {
        let kind_for_role = match role {
            Role::CoworkerRun { .. } | Role::SpecialistRun { .. } => Some(ProfileKind::Coworker),
            Role::GoalAgentStep => Some(ProfileKind::GoalAgent),
            Role::GoalReviewer => Some(ProfileKind::Reviewer),
            _ => None,
        };
        let Some(kind) = kind_for_role else {
            return match name {
                Some(_) => Err(HostError::BadRequest(format!(
                    "a {} runs without a profile",
                    role.label()
                ))),
                None => Ok(None),
            };
        };
        let Some(name) = name else {
            return match role {
                Role::GoalAgentStep => Ok(Some(policy::presets::goal_agent(Default::default()))),
                Role::GoalReviewer => Ok(Some(policy::presets::goal_reviewer())),
                _ => Err(HostError::BadRequest(format!(
                    "a {} runs from a saved profile: give `profile`",
                    role.label()
                ))),
            };
        };
        let saved =
            crate::store::block(self.store.load_profile(brand, name))?.ok_or_else(|| {
                HostError::NotFound(format!("brand `{brand}` has no profile `{name}`"))
            })?;
        if saved.kind != kind {
            return Err(HostError::BadRequest(format!(
                "profile `{name}` was saved as {}, not for a {}",
                saved.kind.as_str(),
                role.label()
            )));
        }
        if let Role::CoworkerRun { .. } | Role::SpecialistRun { .. } = role
            && Role::for_profile(&saved.profile, Route::Standard) != role
        {
            let wanted = if saved.profile.grant.is_empty() {
                "coworker"
            } else {
                "specialist"
            };
            return Err(HostError::BadRequest(format!(
                "profile `{name}` runs as a {wanted}"
            )));
        }
        Ok(Some(saved.profile))
    }

    /// Whether `brand` saved any coworker profile (one of the brand facts a
    /// session's surface is decided with).
    pub fn has_coworkers(&self, brand: &str) -> Result<bool, HostError> {
        Ok(crate::store::block(self.store.list_profiles(brand))?
            .iter()
            .any(|p| p.kind == ProfileKind::Coworker))
    }

    /// A new session of `brand` decided with `input`, held under this
    /// host's lease, and its bearer token (shown once).
    pub fn new_session(
        &self,
        brand: &str,
        input: policy::SessionInput,
    ) -> Result<(Session, String), HostError> {
        let id = format!("s-{}", random_hex(12)?);
        let token = random_hex(32)?;
        Ok((self.held_here(Session::new(id, brand, input)), token))
    }

    /// Records session `live`, just opened (`shown`: its view without its
    /// token, for the admin API of every host; `components`: its own, as
    /// asked for), and holds it here from now on.
    pub fn hold_opened(
        &self,
        live: Arc<Live<E>>,
        shown: &SessionView,
        components: Vec<String>,
    ) -> Result<(), HostError> {
        let id = &live.session.id;
        crate::store::block(self.store.session_opened(
            id,
            &shown.brand,
            &serde_json::to_value(shown).unwrap_or_default(),
            shown.expires_at_ms,
        ))?;
        if self.store.shares_sessions() {
            // What any host of the fleet needs to serve its next call.
            let (opened, removed) = live.session.opened_and_removed();
            crate::store::block(
                self.store.keep_session(
                    id,
                    &crate::store::SessionRecord {
                        token_digest: live.token_digest_hex(),
                        role: live.role_name.clone(),
                        profile: live.profile.clone(),
                        input: live.session.input().clone(),
                        opened,
                        removed: removed
                            .iter()
                            .map(|(name, why)| (name.clone(), why.name().into_owned()))
                            .collect(),
                        connectors: live.connectors.clone(),
                        left_out: (*live.left_out).clone(),
                        allowlist: (*live.allowlist).clone(),
                        expires_at_ms: live.expires_at_ms,
                        components,
                    },
                ),
            )?;
        }
        self.metrics.session_opened(&live.role_name);
        self.registry.insert(live);
        Ok(())
    }
}
