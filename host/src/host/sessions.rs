//! The session flows that span services: the [`crate::sessions`] service
//! decides, records and holds; here a session's surface is decided by the
//! boundary over what is served, its holdings from the roster, and ending
//! one also revokes its authority, ends its remote servers' sessions and
//! drops the components loaded for it alone. The adapter only makes the
//! endpoints ([`Reach`]).

use super::{Host, holdings_config};
use crate::policy::{self, BrandFacts, Profile, Role, SessionInput};
use crate::runtime::LoadedComponent;
use crate::session::Session;
use crate::session::holdings::Holdings;
use crate::sessions::{
    Found, HostError, Live, OpenSession, Refreshed, SessionEnd, SessionView, TakeUp,
    reached_through, view_of,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};
use tokio_util::sync::CancellationToken;

/// What an adapter gives [`Host`] to reach a session it opens or takes up.
pub struct Reach<'a, E> {
    /// The host's own tools `session` is given, served on the endpoint
    /// named [`policy::names::HOST_SERVER`].
    pub host_tools: fn(&Session) -> Vec<&'static str>,
    /// Makes the endpoint of a session for one server.
    pub endpoint: &'a (dyn Fn(Weak<Live<E>>, String, CancellationToken) -> E + Sync),
}

impl<E> Reach<'_, E> {
    /// `live` reached through an endpoint per name.
    fn reached(&self, live: Live<E>, names: Vec<String>) -> Arc<Live<E>> {
        reached_through(live, names, self.endpoint)
    }
}

impl<E> Host<E> {
    /// Opens a session: resolves the role's credentials, decides its
    /// surface, records it in the trace (with `origin`) and has `reach`
    /// make its endpoints; its view names them under `base_url`.
    pub fn open_session(
        &self,
        request: &OpenSession,
        origin: crate::trace::Origin,
        base_url: &str,
        reach: &Reach<'_, E>,
    ) -> Result<SessionView, HostError> {
        if self.boundary.is_shutting_down() {
            return Err(HostError::Unavailable(
                "this host is shutting down and opens no session: open it on another host, or on this one once it is back".into(),
            ));
        }
        let (brand, role, operator) = request.brand_and_role_among(&self.operator_roles)?;
        let profile = self
            .sessions
            .profile(brand, role, request.profile.as_deref())?;
        request.components_loaded()?;
        let mut input = self.session_input(brand, role, profile.clone(), &request.loaded)?;
        // An operator role narrows its base: its ceiling, person and limits.
        if let Some(operator) = operator {
            input = operator.narrow(input);
        }
        if request.selects() {
            let could = self.boundary.surface_for(&input).map_err(|e| {
                HostError::BadRequest(format!("the session's surface cannot be decided: {e}"))
            })?;
            input = input.selecting(request.selection(&could)?);
        }
        input.limits = request.limits(
            profile.as_ref(),
            self.sessions.ttl(),
            crate::dates::now_ms(),
        )?;
        if let Some(operator) = operator {
            input.limits = operator.limits_within(input.limits);
        }
        let facts = input.brand.clone();
        let (session, token) = self.sessions.new_session(brand, input)?;
        let id = session.id.clone();
        // The seed's per-brand limits, counted with every host's opens.
        let admitted = self.sessions.admit(
            &id,
            brand,
            role,
            &request.role,
            crate::sessions::limits_for(&self.config, brand),
        )?;
        let components = self.components();
        let roster = self.roster();
        let platform: Vec<&LoadedComponent> = roster
            .platform
            .iter()
            .filter_map(|c| components.get(c).map(|a| &**a))
            .collect();
        let mut served: Vec<&LoadedComponent> = facts
            .connected
            .iter()
            .filter_map(|c| components.get(c).map(|a| &**a))
            .collect();
        served.extend(platform.iter().copied());
        let offered = self
            .boundary
            .open_session_with(&session, &served, origin)
            .map_err(|e| {
                HostError::BadRequest(format!("the session's surface cannot be decided: {e}"))
            })?;
        // A platform component is served to a session its tools are given
        // to; so is a connector, when the orchestrator narrowed the session.
        let narrowed = request.selects();
        served.retain(|c| {
            !(roster.platform.contains(c.name()) || narrowed)
                || offered
                    .surface
                    .names()
                    .iter()
                    .any(|n| n.starts_with(&format!("mcp__{}__", c.name())))
        });
        // The orchestrator's allowlist leaves out what review holds back.
        let mut allowlist = offered.surface.allowlist();
        for component in &served {
            let prefix = format!("mcp__{}__", component.name());
            let offered: BTreeSet<String> = self
                .boundary
                .offered_tools(&session, component)
                .iter()
                .map(|t| policy::names::mcp(component.name(), &t.name))
                .collect();
            allowlist.retain(|name| !name.starts_with(&prefix) || offered.contains(name));
        }
        let holdings = Holdings::decide(
            &id,
            brand,
            role,
            profile.as_ref(),
            &allowlist,
            &served,
            &|name| roster.settings.get(name).map(|s| holdings_config(s)),
            &self.boundary.catalog(),
        )
        .map_err(HostError::BadRequest)?;
        session.hold(holdings.outliving_this_host(self.sessions.shared_by_fleet()));
        // The host's own tools, on the session's `scout` endpoint.
        let host_tools = (reach.host_tools)(&session);
        allowlist.extend(
            host_tools
                .iter()
                .map(|t| policy::names::mcp(policy::names::HOST_SERVER, t)),
        );
        let connectors: Vec<String> = served.iter().map(|c| c.name().to_string()).collect();
        let mut left_out = self.left_out(brand, role, &connectors);
        if narrowed {
            for name in facts.connected.iter().filter(|c| !connectors.contains(c)) {
                left_out.insert(
                    name.clone(),
                    "not selected: the orchestrator that opened this session left it out".into(),
                );
            }
        }
        let names = endpoint_names(&connectors, &host_tools);
        let live = reach.reached(
            Live::new(crate::sessions::Opened {
                session,
                role_name: request.role.clone(),
                profile: request.profile.clone(),
                token: token.clone(),
                connectors,
                left_out,
                allowlist,
                ttl: self.sessions.ttl(),
            }),
            names,
        );
        let view = view_of(&live, base_url, Some(token));
        // Recorded for the other hosts (an admin API on any of them answers
        // for it), never with its token.
        let shown = SessionView {
            token: None,
            ..view.clone()
        };
        self.sessions
            .hold_opened(live, &shown, request.components.clone().unwrap_or_default())?;
        admitted.keep();
        Ok(view)
    }

    /// Why each configured connector a session of `role` for `brand` is not
    /// served (`served`: the ones it is), in words that say what to do.
    fn left_out(&self, brand: &str, role: Role, served: &[String]) -> BTreeMap<String, String> {
        let mut left_out = BTreeMap::new();
        let roster = self.roster();
        let now = self.resolving();
        for name in roster.settings.keys() {
            // Another session's own component is nothing to this one.
            if served.contains(name) || self.is_session_only(name) {
                continue;
            }
            let why = if let Some(var) = roster.not_offered.get(name) {
                format!(
                    "not offered by this deployment: {var} is not set in the host's environment"
                )
            } else if roster.platform.contains(name) {
                format!(
                    "a platform server, and the policy gives a session of role `{}` none of its tools",
                    role.label()
                )
            } else if matches!(
                self.connections.resolve_cached(&now, brand, name),
                Ok(Some(_))
            ) {
                format!(
                    "a session of role `{}` is not handed this connector's credential: its role, or its profile's grant, does not cover it",
                    role.label()
                )
            } else {
                let connection = crate::credentials::connection_for_server(name);
                let scope = if connection == name {
                    String::new()
                } else {
                    " holding this product's scope".to_string()
                };
                format!(
                    "brand `{brand}` has no `{connection}` connection{scope}: store one with PUT /v1/brands/{brand}/connections/{connection} (a public API takes `credential = \"none\"` in the configuration instead)"
                )
            };
            left_out.insert(name.clone(), why);
        }
        left_out
    }

    /// The policy input of a session of `role` for `brand`: the role's
    /// credential set, as it resolves now, limited to the connectors this
    /// host runs, and the brand's other facts from their sources (the
    /// table in [`crate::config`]'s documentation). The policy decides which
    /// roles they matter to. `scout-host surface --brand` shows the same.
    /// `own`: the components loaded for this session alone (any other
    /// loaded for another session is not registered for it).
    pub fn session_input(
        &self,
        brand: &str,
        role: Role,
        profile: Option<Profile>,
        own: &BTreeSet<String>,
    ) -> Result<SessionInput, HostError> {
        let grant = profile.as_ref().map(|p| &p.grant);
        let credentials = self
            .resolving()
            .resolver()
            .credential_set_for(role, grant, brand)?;
        let roster = self.roster();
        // A connector is registered only where its credential resolves and
        // this host runs its component.
        let connected: BTreeSet<String> = credentials
            .connected()
            .into_iter()
            .filter(|c| {
                self.deployments.serves(c)
                    && !roster.not_offered.contains_key(c)
                    && !roster.platform.contains(c)
                    && (own.contains(c) || !self.is_session_only(c))
            })
            .collect();
        let stated = self.config.brand(brand);
        let has_coworkers = self.sessions.has_coworkers(brand)?;
        let facts = BrandFacts {
            connected,
            has_skills: !stated.skills.is_empty(),
            has_coworkers,
            goals_engine_on: stated.goals_engine,
            // `serve` opens local sessions; the browser exists only under E2B.
            browser_provider: None,
            is_deployment_owner: self.config.deployment_owner_brand.as_deref() == Some(brand),
        };
        let mut input = SessionInput::new(role).brand(facts);
        if let Some(profile) = profile {
            input = input.profile(profile);
        }
        Ok(input)
    }

    /// The session `id` for a caller holding `token`: held here, or kept by
    /// the fleet and taken up here now (any host serves any session's next
    /// call). `None` for a session that is unknown, ended, or not `token`'s,
    /// alike.
    pub async fn session_for(
        &self,
        id: &str,
        token: &str,
        reach: &Reach<'_, E>,
    ) -> Option<Arc<Live<E>>>
    where
        E: Send + Sync,
    {
        if let Some(live) = self.session(id) {
            if self.sessions.of_this_lease(&live) {
                return live.token_matches(token).then_some(live);
            }
            // Held under an identity this host no longer has (another host
            // recovered it meanwhile): taken up afresh below.
            self.sessions.remove(id);
        }
        let live = self.take_up(id, Some(token), reach).await?;
        Some(live)
    }

    /// Takes up session `id`, kept by the fleet, on this host: its record
    /// and state read from the store (and `token`, when given, checked
    /// against the digest kept), its holdings decided again the same way,
    /// and its endpoints made here. Nothing of its trace is written again.
    pub async fn take_up(
        &self,
        id: &str,
        token: Option<&str>,
        reach: &Reach<'_, E>,
    ) -> Option<Arc<Live<E>>>
    where
        E: Send + Sync,
    {
        if self.boundary.is_shutting_down() {
            return None;
        }
        let taking = match self.sessions.begin_take_up(id, token).await? {
            TakeUp::Held(live) => return Some(live),
            TakeUp::Kept(taking) => *taking,
        };
        // Its own components, pulled and verified on this host before it
        // is taken: a host that cannot serve them leaves it where it is.
        let pinned = match self
            .load_session_components(&taking.record.components)
            .await
        {
            Ok(pinned) => pinned,
            Err(e) => {
                tracing::error!(session = %id, error = %e, "cannot load the session's own components here");
                return None;
            }
        };
        let session = taking.claim().await?;
        let record = &taking.record;
        let components = self.components();
        let served: Vec<&LoadedComponent> = record
            .connectors
            .iter()
            .filter_map(|c| components.get(c).map(|a| &**a))
            .collect();
        let roster = self.roster();
        let holdings = match Holdings::decide(
            id,
            &taking.brand,
            record.input.role,
            record.input.profile.as_ref(),
            &record.allowlist,
            &served,
            &|name| roster.settings.get(name).map(|s| holdings_config(s)),
            &self.boundary.catalog(),
        ) {
            Ok(holdings) => holdings,
            Err(e) => {
                tracing::error!(session = %id, error = %e, "cannot take up the session's holdings");
                return None;
            }
        };
        session.hold(holdings.outliving_this_host(true));
        let names = endpoint_names(&record.connectors, &(reach.host_tools)(&session));
        let live = taking.hold(session, |live| reach.reached(live, names));
        drop(pinned);
        Some(live)
    }

    /// Takes in what another host changed of session `id`, if this host
    /// holds it: ended, it ends here; otherwise its pause, withdrawals and
    /// delegation as the store has them.
    pub(crate) fn refresh_session(&self, id: &str) {
        match self.sessions.refresh(id) {
            Refreshed::Ended => {
                self.end_session(id);
            }
            Refreshed::NotKept => self.end_if_ended_elsewhere(id),
            Refreshed::NotHeld | Refreshed::Applied | Refreshed::Unread => {}
        }
    }

    /// The session `id`, if it is open. A session past its time is ended here.
    pub fn session(&self, id: &str) -> Option<Arc<Live<E>>> {
        match self.sessions.find(id, std::time::Instant::now()) {
            Found::Open(live) => Some(live),
            Found::Expired => {
                self.end_session(id);
                None
            }
            Found::Unknown => None,
        }
    }

    /// Ends every session past its time (a call waiting for a person in one
    /// is refused); `serve` runs this every few seconds.
    pub fn end_expired(&self) -> usize {
        let expired = self.sessions.expired(std::time::Instant::now());
        let ended = expired.iter().filter(|id| self.end_session(id)).count();
        // Sessions let go otherwise (taken up by another host) too.
        self.drop_unused_session_components();
        ended
    }

    /// Every open session this host serves, its endpoints under `base_url`.
    pub fn session_views(&self, base_url: &str) -> Vec<SessionView> {
        self.end_expired();
        self.sessions.views(base_url)
    }

    /// Every open session of every live host, as the admin API shows it:
    /// this host's own, then those the store records for the others.
    pub(crate) fn all_sessions(&self, base_url: &str) -> Result<Vec<Value>, HostError> {
        self.sessions.with_the_fleets(self.session_views(base_url))
    }

    /// One open session as the admin API shows it, whichever host serves it.
    pub(crate) fn session_view(
        &self,
        id: &str,
        base_url: &str,
    ) -> Result<Option<Value>, HostError> {
        if let Some(live) = self.session(id) {
            return Ok(serde_json::to_value(view_of(&live, base_url, None)).ok());
        }
        self.sessions.view_elsewhere(id)
    }

    /// Ends a session whichever host serves it. Another host's session is
    /// asked to end through the store, and this answers once that host
    /// has ended it (its next call is then denied), or says it is ending
    /// if that host did not answer in time.
    pub(crate) async fn end_any_session(&self, id: &str) -> Result<SessionEnd, HostError> {
        if self.end_session(id) {
            return Ok(SessionEnd::Ended);
        }
        Ok(self.sessions.end_elsewhere(id).await?)
    }

    pub(crate) fn end_if_ended_elsewhere(&self, id: &str) {
        if self.session(id).is_none() {
            return;
        }
        if self.sessions.ended_elsewhere(id) {
            self.end_session(id);
        }
    }

    /// Ends a session: its authority ends at once (later calls are denied,
    /// unused approvals revoked) and its MCP endpoints close.
    pub fn end_session(&self, id: &str) -> bool {
        let Some(live) = self.sessions.remove(id) else {
            return false;
        };
        self.boundary.revoke_session(&live.session);
        self.deployments.end_remote_sessions(id);
        self.sessions.close(&live);
        // A component loaded for it alone goes with the last session holding it.
        self.drop_unused_session_components();
        true
    }
}

/// The MCP endpoints a session is reached through: one per connector it is
/// served, and the host's own where it is given host tools.
fn endpoint_names(connectors: &[String], host_tools: &[&str]) -> Vec<String> {
    let host = (!host_tools.is_empty()).then(|| policy::names::HOST_SERVER.to_string());
    connectors.iter().cloned().chain(host).collect()
}
