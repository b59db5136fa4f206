//! Sessions as this host holds them: opened for a brand and role (the
//! policy decides the surface once per revision), listed, shown, ended here
//! or because another host of the fleet ended them, and swept at expiry.

use super::*;

impl ServeHost {
    /// Opens a session: resolves the role's credentials, decides its
    /// surface, records it in the trace and creates its MCP endpoints.
    pub fn open_session(self: &Arc<Self>, request: &OpenSession) -> Result<SessionView, HostError> {
        if self.boundary.is_shutting_down() {
            return Err(HostError::Unavailable(
                "this host is shutting down and opens no session: open it on another host, or on this one once it is back".into(),
            ));
        }
        let brand = request.brand.trim();
        if brand.is_empty() || brand.len() > 200 {
            return Err(HostError::BadRequest(
                "`brand` must be 1 to 200 characters".into(),
            ));
        }
        let role = Role::from_name(&request.role).ok_or_else(|| {
            HostError::BadRequest(format!(
                "unknown role `{}`: {}",
                request.role,
                policy::ROLE_NAMES
            ))
        })?;
        let profile = self.session_profile(brand, role, request.profile.as_deref())?;
        let wanted = request.components.as_ref().is_some_and(|c| !c.is_empty());
        if wanted && request.loaded.is_empty() {
            return Err(HostError::NotSelectable(
                "`components` are loaded by the admin API's `POST /v1/sessions`: nothing was opened"
                    .into(),
            ));
        }
        let mut input = self.session_input(brand, role, profile.clone(), &request.loaded)?;
        if let Some(selection) = self.selection(request, &input)? {
            input = input.selecting(selection);
        }
        input.limits = self.session_limits(request, profile.as_ref())?;
        let facts = input.brand.clone();
        let id = format!("s-{}", random_hex(12)?);
        let token = random_hex(32)?;
        let session = self.shared(
            Session::new(id.clone(), brand, input).held_under(self.store.lease_generation()),
        );
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
            .open_session_with(
                &session,
                &served,
                super::identity::Acting::now()
                    .map(|acting| acting.origin)
                    .unwrap_or_default(),
            )
            .map_err(|e| {
                HostError::BadRequest(format!("the session's surface cannot be decided: {e}"))
            })?;
        // A platform component is served to a session its tools are given
        // to; so is a connector, when the orchestrator narrowed the session.
        let narrowed = request.connectors.is_some() || request.tools.is_some();
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
        session.hold(holdings.outliving_this_host(self.store.shares_sessions()));
        // The host's own tools, on the session's `scout` endpoint.
        let host_tools = host_tools::given(&session);
        allowlist.extend(
            host_tools
                .iter()
                .map(|t| policy::names::mcp(host_tools::SCOUT_SERVER, t)),
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
        let mut live = LiveSession::new(crate::session::registry::Opened {
            session,
            role_name: request.role.clone(),
            profile: request.profile.clone(),
            token: token.clone(),
            connectors: connectors.clone(),
            left_out,
            allowlist,
            ttl: std::time::Duration::from_secs(self.config.session_ttl_secs),
        });
        let cancel = live.cancel.clone();
        let live = Arc::new_cyclic(|weak| {
            let scout = (!host_tools.is_empty()).then(|| host_tools::SCOUT_SERVER.to_string());
            for connector in connectors.iter().chain(scout.iter()) {
                live.endpoints.insert(
                    connector.clone(),
                    super::endpoint::Endpoint::new(
                        self.clone(),
                        weak.clone(),
                        connector.clone(),
                        cancel.clone(),
                    ),
                );
            }
            live
        });
        let view = view_of(&live, &self.base_url(), Some(token));
        // Recorded for the other hosts (an admin API on any of them answers
        // for it), never with its token.
        let shown = SessionView {
            token: None,
            ..view.clone()
        };
        crate::store::block(self.store.session_opened(
            &id,
            &shown.brand,
            &serde_json::to_value(&shown).unwrap_or_default(),
            shown.expires_at_ms,
        ))?;
        if self.store.shares_sessions() {
            // What any host of the fleet needs to serve its next call.
            let (opened, removed) = live.session.opened_and_removed();
            crate::store::block(
                self.store.keep_session(
                    &id,
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
                        left_out: live.left_out.clone(),
                        allowlist: live.allowlist.clone(),
                        expires_at_ms: live.expires_at_ms,
                        components: request.components.clone().unwrap_or_default(),
                    },
                ),
            )?;
        }
        self.metrics.session_opened(&live.role_name);
        self.sessions.insert(live);
        Ok(view)
    }

    /// What the orchestrator selected of what a session with `input` could
    /// be given (`None`: it selected nothing, so everything). Refused when
    /// a list is empty or names anything the session could not be given:
    /// the refusal names only what the caller sent, never what exists.
    fn selection(
        &self,
        request: &OpenSession,
        input: &SessionInput,
    ) -> Result<Option<policy::Selection>, HostError> {
        if request.connectors.is_none() && request.tools.is_none() {
            return Ok(None);
        }
        let could = self.boundary.surface_for(input).map_err(|e| {
            HostError::BadRequest(format!("the session's surface cannot be decided: {e}"))
        })?;
        let surface = could;
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
        let connectors = listed("connectors", &request.connectors)?;
        let tools = listed("tools", &request.tools)?;
        let not_given = |field: &str, name: &str| {
            let name: String = name.chars().take(120).collect();
            HostError::NotSelectable(format!(
                "`{field}` names `{name}`, which a session of role `{}` for this brand could not be given (its role, grant and the brand's connections decide what it could; a selection only narrows that): nothing was opened",
                request.role
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
                    request.role,
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
        Ok(Some(selection))
    }

    /// The limits the orchestrator set on the session, each checked against
    /// the session's own lifetime and the grant it runs under: inside
    /// them, or refused (nothing opened).
    fn session_limits(
        &self,
        request: &OpenSession,
        profile: Option<&Profile>,
    ) -> Result<policy::SessionLimits, HostError> {
        let refused = |why: String| HostError::InvalidLimits(format!("{why}: nothing was opened"));
        let grant = profile.map(|p| &p.grant);
        let now = crate::store::now_ms();
        let expires_at_ms = match request.expires_at.as_deref() {
            None => None,
            Some(text) => {
                let at = chrono::DateTime::parse_from_rfc3339(text.trim())
                    .map_err(|_| {
                        refused("`expires_at` is an RFC 3339 time (`2026-12-05T18:00:00Z`)".into())
                    })?
                    .timestamp_millis();
                let own_end = now.saturating_add(
                    i64::try_from(self.config.session_ttl_secs.saturating_mul(1000))
                        .unwrap_or(i64::MAX),
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
            ("max_calls", request.max_calls),
            ("max_effects", request.max_effects),
        ] {
            if value == Some(0) {
                return Err(refused(format!(
                    "`{field}` is 1 or more (leave it out for no limit)"
                )));
            }
        }
        if let (Some(asked), Some(granted)) =
            (request.max_effects, grant.and_then(|g| g.max_effects))
            && asked > granted
        {
            return Err(refused(format!(
                "`max_effects` is {asked}, more than the grant's {granted}: a session stays inside its grant"
            )));
        }
        Ok(policy::SessionLimits {
            expires_at_ms,
            max_calls: request.max_calls,
            max_effects: request.max_effects,
        })
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
    /// table in [`config`]'s documentation). The policy decides which
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
                self.components.read().contains_key(c)
                    && !roster.not_offered.contains_key(c)
                    && !roster.platform.contains(c)
                    && (own.contains(c) || !self.is_session_only(c))
            })
            .collect();
        let stated = self.config.brand(brand);
        let has_coworkers = crate::store::block(self.store.list_profiles(brand))?
            .iter()
            .any(|p| p.kind == ProfileKind::Coworker);
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

    pub(super) fn session_profile(
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

    /// `session` with its changing state kept in the fleet's store, when
    /// the store shares sessions.
    fn shared(&self, session: Session) -> Session {
        if self.store.shares_sessions() {
            session.shared_in(Arc::new(crate::session::FleetSessions(self.store.clone())))
        } else {
            session
        }
    }

    /// The session `id` for a caller holding `token`: held here, or kept by
    /// the fleet and taken up here now (any host serves any session's next
    /// call). `None` for a session that is unknown, ended, or not `token`'s,
    /// alike.
    pub async fn session_for(self: &Arc<Self>, id: &str, token: &str) -> Option<Arc<LiveSession>> {
        if let Some(live) = self.session(id) {
            if live.session.generation() == self.store.lease_generation() {
                return live.token_matches(token).then_some(live);
            }
            // Held under an identity this host no longer has (another host
            // recovered it meanwhile): taken up afresh below.
            self.sessions.remove(id);
        }
        let live = self.take_up(id, Some(token)).await?;
        Some(live)
    }

    /// Takes up session `id`, kept by the fleet, on this host: its record
    /// and state read from the store (and `token`, when given, checked
    /// against the digest kept), its holdings decided again the same way,
    /// and its endpoints made here. Nothing of its trace is written again.
    pub(crate) async fn take_up(
        self: &Arc<Self>,
        id: &str,
        token: Option<&str>,
    ) -> Option<Arc<LiveSession>> {
        if !self.store.shares_sessions() || self.boundary.is_shutting_down() {
            return None;
        }
        let _one_at_a_time = self.taking_up.lock().await;
        if let Some(live) = self.sessions.get(id) {
            return token.is_none_or(|t| live.token_matches(t)).then_some(live);
        }
        let kept = match self.store.kept_session(id).await {
            Ok(Some(kept)) if !kept.ended => kept,
            Ok(_) => return None,
            Err(e) => {
                tracing::error!(session = %id, error = %e, "cannot read the session the fleet keeps");
                return None;
            }
        };
        let record = kept.record;
        let digest: [u8; 32] = hex::decode(&record.token_digest).ok()?.try_into().ok()?;
        if let Some(token) = token
            && crate::session::registry::token_digest(token) != digest
        {
            return None;
        }
        // Its own components, pulled and verified on this host before it
        // is taken: a host that cannot serve them leaves it where it is.
        let pinned = match self.load_session_components(&record.components).await {
            Ok(pinned) => pinned,
            Err(e) => {
                tracing::error!(session = %id, error = %e, "cannot load the session's own components here");
                return None;
            }
        };
        match self.store.take_up_session(id).await {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => {
                tracing::error!(session = %id, error = %e, "cannot take up the session");
                return None;
            }
        }
        let removed = record
            .removed
            .iter()
            .filter_map(|(name, why)| Some((name.clone(), policy::Removal::parse(why)?)))
            .collect();
        let session = self
            .shared(
                Session::new(id, &kept.brand, record.input.clone())
                    .held_under(self.store.lease_generation()),
            )
            .taken_up(record.opened.clone(), removed, &kept.state);
        let components = self.components();
        let served: Vec<&LoadedComponent> = record
            .connectors
            .iter()
            .filter_map(|c| components.get(c).map(|a| &**a))
            .collect();
        let roster = self.roster();
        let holdings = match Holdings::decide(
            id,
            &kept.brand,
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
        let host_tools = host_tools::given(&session);
        let mut live = LiveSession::kept(crate::session::registry::Kept {
            session,
            role_name: record.role,
            profile: record.profile,
            token_digest: digest,
            connectors: record.connectors,
            left_out: record.left_out,
            allowlist: record.allowlist,
            expires_at_ms: record.expires_at_ms,
        });
        let cancel = live.cancel.clone();
        let live = Arc::new_cyclic(|weak| {
            let scout = (!host_tools.is_empty()).then(|| host_tools::SCOUT_SERVER.to_string());
            for connector in live.connectors.clone().iter().chain(scout.iter()) {
                live.endpoints.insert(
                    connector.clone(),
                    super::endpoint::Endpoint::new(
                        self.clone(),
                        weak.clone(),
                        connector.clone(),
                        cancel.clone(),
                    ),
                );
            }
            live
        });
        tracing::info!(session = %id, brand = %kept.brand, "took up a session the fleet keeps");
        self.sessions.insert(live.clone());
        drop(pinned);
        Some(live)
    }

    /// Takes in what another host changed of session `id`, if this host
    /// holds it: ended, it ends here; otherwise its pause, withdrawals and
    /// delegation as the store has them.
    pub(super) fn refresh_session(&self, id: &str) {
        let Some(live) = self.sessions.get(id) else {
            return;
        };
        match crate::store::block(self.store.kept_session(id)) {
            Ok(Some(kept)) if kept.ended => {
                self.end_session(id);
            }
            Ok(Some(kept)) => live.session.apply(&kept.state),
            Ok(None) => self.end_if_ended_elsewhere(id),
            Err(e) => tracing::error!(session = %id, error = %e, "cannot read the session's state"),
        }
    }

    /// The session `id`, if it is open. A session past its time is ended here.
    pub fn session(&self, id: &str) -> Option<Arc<LiveSession>> {
        let live = self.sessions.get(id)?;
        if live.expired_at(std::time::Instant::now()) {
            self.end_session(id);
            return None;
        }
        Some(live)
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

    /// Every open session this host serves.
    pub fn sessions(&self) -> Vec<SessionView> {
        self.end_expired();
        let base = self.base_url();
        let mut views: Vec<SessionView> = self
            .sessions
            .all()
            .iter()
            .map(|s| view_of(s, &base, None))
            .collect();
        views.sort_by(|a, b| a.id.cmp(&b.id));
        views
    }

    /// Every open session of every live host, as the admin API shows it:
    /// this host's own, then those the store records for the others.
    pub(crate) fn all_sessions(&self) -> Result<Vec<Value>, HostError> {
        let mut views: Vec<Value> = self
            .sessions()
            .into_iter()
            .map(|v| serde_json::to_value(v).unwrap_or_default())
            .collect();
        for shared in crate::store::block(self.store.shared_sessions())? {
            if self.sessions.get(&shared.id).is_none() {
                views.push(shared.view);
            }
        }
        Ok(views)
    }

    /// One open session as the admin API shows it, whichever host serves it.
    pub(crate) fn session_view(&self, id: &str) -> Result<Option<Value>, HostError> {
        if let Some(live) = self.session(id) {
            return Ok(serde_json::to_value(view_of(&live, &self.base_url(), None)).ok());
        }
        Ok(crate::store::block(self.store.shared_session(id))?
            .filter(|s| !s.closed && !s.ended)
            .map(|s| s.view))
    }

    /// Ends a session whichever host serves it. Another host's session is
    /// asked to end through the store, and this answers once that host
    /// has ended it (its next call is then denied), or says it is ending
    /// if that host did not answer in time.
    pub(crate) async fn end_any_session(&self, id: &str) -> Result<SessionEnd, HostError> {
        if self.end_session(id) {
            return Ok(SessionEnd::Ended);
        }
        let Some(row) = self.store.request_session_end(id).await? else {
            return Ok(SessionEnd::Unknown);
        };
        if row.closed {
            return Ok(SessionEnd::Unknown);
        }
        let deadline = tokio::time::Instant::now() + REMOTE_END_WAIT;
        while tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            if self
                .store
                .shared_session(id)
                .await?
                .is_none_or(|s| s.closed)
            {
                return Ok(SessionEnd::Ended);
            }
        }
        // No host ended it (the one serving it is gone): the fleet's
        // session is ended here, and any host still holding it hears so.
        if self.store.shares_sessions() {
            self.store.session_closed(id).await?;
            return Ok(SessionEnd::Ended);
        }
        Ok(SessionEnd::Ending { host: row.host_id })
    }

    pub(super) fn end_if_ended_elsewhere(&self, id: &str) {
        if self.session(id).is_none() {
            return;
        }
        match crate::store::block(self.store.shared_session(id)) {
            Ok(Some(row)) if row.ended => {
                self.end_session(id);
            }
            Ok(_) => {}
            Err(e) => tracing::error!(session = %id, error = %e, "cannot read the session's state"),
        }
    }
}
