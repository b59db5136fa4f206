//! Operators' rules as Cedar policies (issue 56, DESIGN D21), evaluated in
//! the boundary's `authorize` after the seed's three filters.
//!
//! Why Cedar: operators need rules over a call's consequence (its
//! arguments, the session's history, the time) that the seed's switches
//! and tool lists cannot say, and such rules must be checked when they are
//! loaded, not discovered wrong at the first call. Cedar is a small
//! analysable language with a schema and a strict validator, and it
//! evaluates in microseconds.
//!
//! **Operator rules only narrow, or ask.** A `forbid` refuses a call the
//! seed allows (`operator_policy`, naming the policy's id); a `forbid`
//! annotated `@ask_person` asks a person instead of refusing (and refuses,
//! "nobody to ask", in a role with nobody to ask); forbid wins over ask.
//! A `permit` is accepted but can never widen: the seed's filters decide
//! what exists, and a call they allow that no forbid matches is allowed
//! (Cedar's own default deny is not used). A forbid whose evaluation
//! errors (an argument absent that it reads unguarded) counts as matched:
//! it fails closed. A tool forbidden by a policy that reads nothing of the
//! call (no `context`) is forbidden for every argument value: it is not
//! offered at all ([`OperatorPolicies::forbids_always`]).
//!
//! **The call as Cedar sees it** (the schema is [`DeploymentSchema`],
//! `scout-host policy schema` prints it), in namespace `Scout`:
//! - principal `Scout::Session::"<session id>"` with attributes `session`,
//!   `brand`, `role` (an operator role's name, else the seed role's API
//!   name), `base_role` (the seed role), `profile?`, `requester?` (the
//!   requester's identity as verified), `person_can_be_asked` (Bool);
//! - action `Scout::Action::"<tool's MCP name>"`, e.g.
//!   `Scout::Action::"mcp__github__github_create_branch"`, each in its
//!   connector's group `Scout::Action::"connector:github"`;
//! - resource `Scout::Connector::"<server name>"` with `name`, `origin`
//!   (`"component"` or `"remote"`), `effect` (`"read"` or `"write"` of the
//!   called tool), `billing_unit?`, `routes` (Set of `"GET /path"`),
//!   `destination?`;
//! - `context.args`: the arguments, typed per tool from its WIT parameter
//!   types (see [`schema`] for what is left out and why);
//!   `context.history`: [`HistoryFacts`] (calls the policies allowed
//!   before this one: `session_calls`, `session_effects`,
//!   `session_spent_units`, `session_approvals`, and `tool` / `connector`
//!   each with `in_session`, `in_session_last_hour`, `in_brand_last_hour`,
//!   `in_brand_last_day`); `context.now`: milliseconds since the epoch;
//!   `context.email_domains`: the domain (lowercased, after the last `@`)
//!   of every argument string that is an e-mail address, anywhere in the
//!   arguments, since Cedar cannot test each member of a set against a
//!   pattern: "mail only to our domain" is
//!   `unless { ["example.com"].containsAll(context.email_domains) }`.
//!
//! A policy's id is its `@id("...")` annotation, else `<document>:<line>`;
//! ids are unique across documents.

pub mod facts;
mod guard;
pub mod history;
pub mod replay;
pub mod schema;

pub use facts::{CallFacts, PrincipalFacts, ResourceFacts};
pub use history::{HistoryFacts, WindowCounts};
pub use schema::DeploymentSchema;

use cedar_policy::{
    Authorizer, Context, Decision, Entities, Entity, EntityId, EntityTypeName, EntityUid, Policy,
    PolicyId, PolicySet, Request, RestrictedExpression, ValidationMode, Validator,
};
use schema::{ArgShape, Field};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

/// The annotation that turns a `forbid` into a person's approval.
pub const ASK_PERSON: &str = "ask_person";

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
    /// How errors and default policy ids name it (a file's name, the API's
    /// document name).
    pub name: String,
    pub source: PolicySource,
    pub text: String,
}

/// Which policies are in force: the store's change count of API-owned
/// documents and a digest of every document's text. Shown `r{api}-{12 hex}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyRevision {
    pub api: i64,
    pub digest: String,
}

impl PolicyRevision {
    /// The revision of `docs` at API change count `api`: the digest covers
    /// every document's name and text, in the order given.
    pub fn of(api: i64, docs: &[PolicyDoc]) -> PolicyRevision {
        let mut hash = Sha256::new();
        for doc in docs {
            hash.update((doc.name.len() as u64).to_le_bytes());
            hash.update(doc.name.as_bytes());
            hash.update((doc.text.len() as u64).to_le_bytes());
            hash.update(doc.text.as_bytes());
        }
        PolicyRevision {
            api,
            digest: hex::encode(hash.finalize()),
        }
    }
}

impl std::fmt::Display for PolicyRevision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = self.digest.get(..12).unwrap_or(&self.digest);
        write!(f, "r{}-{short}", self.api)
    }
}

/// What the policies decided about one call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum PolicyDecision {
    /// No forbid matched.
    Allow,
    /// A `forbid` matched: refused.
    Forbid { policy: String },
    /// Only `@ask_person` forbids matched: a person is asked.
    AskPerson { policy: String },
}

impl PolicyDecision {
    /// As the trace names it: `allow`, `forbid`, `ask_person`.
    pub fn name(&self) -> &'static str {
        match self {
            PolicyDecision::Allow => "allow",
            PolicyDecision::Forbid { .. } => "forbid",
            PolicyDecision::AskPerson { .. } => "ask_person",
        }
    }

    /// The policy that decided, if one did.
    pub fn policy(&self) -> Option<&str> {
        match self {
            PolicyDecision::Allow => None,
            PolicyDecision::Forbid { policy } | PolicyDecision::AskPerson { policy } => {
                Some(policy)
            }
        }
    }
}

/// One error of a policy set, located in its document.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PolicyError {
    /// The document's name.
    pub doc: String,
    /// The policy's id, once it is known (a parse error has none).
    pub policy: Option<String>,
    /// 1-based line and column in the document.
    pub line: usize,
    pub column: usize,
    /// Cedar's message, with its help and why an argument is not in the
    /// schema where that is the cause.
    pub message: String,
}

/// Every error of a policy set, at once: one per line when shown.
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

/// The compiled set of operator policies in force: immutable, replaced
/// whole ([`crate::boundary::Boundary::set_policies`]).
pub struct OperatorPolicies {
    revision: PolicyRevision,
    /// The documents it was compiled from, to compile again against a
    /// changed deployment.
    docs: Vec<PolicyDoc>,
    /// Every policy, by its id.
    set: PolicySet,
    /// Forbids annotated `@ask_person`.
    asks: BTreeSet<String>,
    /// Every forbid.
    forbids: BTreeSet<String>,
    /// The forbids (not `@ask_person`) that read nothing of the call's
    /// context: they decide a tool whatever its arguments.
    context_free: PolicySet,
    uses_history: bool,
    /// Which parts of `context` any policy reads: only those are built
    /// per call (what no policy reads cannot change a decision).
    reads: ContextReads,
    /// By action id: the forbids whose action scope can match it (the
    /// rest cannot apply, and a permit never decides, so they are not
    /// evaluated). An action the schema does not declare is decided with
    /// the whole set.
    by_action: HashMap<String, ActionSets>,
    /// Each call's principal, resource and action entities, kept by
    /// session and action while their facts are the same.
    entities_kept: parking_lot::Mutex<HashMap<(String, String), Arc<KeptEntities>>>,
    schema: Arc<DeploymentSchema>,
    authorizer: Authorizer,
    types: Types,
}

/// The forbids that may apply to one action, split by whether they read
/// the call's context.
struct ActionSets {
    /// Reading no context: decided once per session and action (their
    /// answer depends on principal and resource only), kept with its
    /// entities.
    fixed: PolicySet,
    /// Reading the context and with no guard: evaluated per call.
    reading: PolicySet,
    /// Reading the context, each behind its guard: evaluated per call
    /// unless the call's facts rule the guard out ([`guard`]).
    guarded: Vec<(guard::Guard, Policy)>,
}

/// Entities built for a session and an action, with the facts they hold
/// and the forbids of the action's `fixed` set that match them.
struct KeptEntities {
    principal: PrincipalFacts,
    resource: ResourceFacts,
    entities: Entities,
    fixed_matched: Vec<String>,
}

/// The most (session, action) entity sets kept before they are dropped.
const ENTITIES_KEPT: usize = 4096;

/// Which of `context`'s attributes any policy reads.
#[derive(Debug, Clone, Copy, Default)]
struct ContextReads {
    args: bool,
    history: bool,
    now: bool,
    email_domains: bool,
}

impl std::fmt::Debug for OperatorPolicies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorPolicies")
            .field("revision", &self.revision.to_string())
            .field("policies", &self.set.policies().count())
            .finish()
    }
}

/// The entity type names, parsed once.
struct Types {
    session: EntityTypeName,
    connector: EntityTypeName,
    action: EntityTypeName,
}

impl Types {
    fn new() -> Types {
        let name = |n: &str| match EntityTypeName::from_str(n) {
            Ok(name) => name,
            // Constant names, parsed by every unit test.
            Err(e) => unreachable_name(n, e),
        };
        Types {
            session: name("Scout::Session"),
            connector: name("Scout::Connector"),
            action: name("Scout::Action"),
        }
    }

    fn uid(&self, ty: &EntityTypeName, id: &str) -> EntityUid {
        EntityUid::from_type_name_and_id(ty.clone(), EntityId::new(id))
    }
}

#[allow(clippy::panic)]
fn unreachable_name(name: &str, e: impl std::fmt::Display) -> EntityTypeName {
    panic!("constant Cedar type name {name} does not parse: {e}")
}

impl OperatorPolicies {
    /// No policies: what every host runs without any.
    pub fn none() -> OperatorPolicies {
        OperatorPolicies {
            revision: PolicyRevision::default(),
            docs: Vec::new(),
            set: PolicySet::new(),
            asks: BTreeSet::new(),
            forbids: BTreeSet::new(),
            context_free: PolicySet::new(),
            uses_history: false,
            reads: ContextReads::default(),
            by_action: HashMap::new(),
            entities_kept: Default::default(),
            schema: Arc::new(DeploymentSchema::empty()),
            authorizer: Authorizer::new(),
            types: Types::new(),
        }
    }

    /// Compiles `docs` against `schema`, with Cedar's validator in strict
    /// mode: every error of every document at once, or the set.
    pub fn compile(
        docs: &[PolicyDoc],
        schema: &DeploymentSchema,
        revision: PolicyRevision,
    ) -> Result<OperatorPolicies, PolicyErrors> {
        let mut errors = Vec::new();
        let mut set = PolicySet::new();
        // Each policy's document (its index) and offset there.
        let mut placed: HashMap<String, (usize, usize)> = HashMap::new();
        for (d, doc) in docs.iter().enumerate() {
            for parsed in split(doc) {
                let (offset, policy) = match parsed {
                    Err(e) => {
                        errors.push(e);
                        continue;
                    }
                    Ok(p) => p,
                };
                let (line, column) = line_column(&doc.text, offset);
                let id = policy
                    .annotation("id")
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("{}:{line}", doc.name));
                let located = |message: String| PolicyError {
                    doc: doc.name.clone(),
                    policy: Some(id.clone()),
                    line,
                    column,
                    message,
                };
                if let Some((other, at)) = placed.get(&id) {
                    let other = &docs[*other];
                    let (other_line, _) = line_column(&other.text, *at);
                    errors.push(located(format!(
                        "policy id `{id}` is already used at {}:{other_line}; give each policy its own @id",
                        other.name
                    )));
                    continue;
                }
                if policy.annotation(ASK_PERSON).is_some()
                    && policy.effect() == cedar_policy::Effect::Permit
                {
                    errors.push(located(format!(
                        "@{ASK_PERSON} is allowed on a forbid only: a permit never widens or asks; write `forbid` with @{ASK_PERSON} to ask a person instead of refusing"
                    )));
                }
                placed.insert(id.clone(), (d, offset));
                if let Err(e) = set.add(policy.new_id(PolicyId::new(&id))) {
                    errors.push(located(e.to_string()));
                }
            }
        }
        let validator = Validator::new(schema.cedar().clone());
        let validation = validator.validate(&set, ValidationMode::Strict);
        for e in validation.validation_errors() {
            let id = e.policy_id().to_string();
            let Some((d, base)) = placed.get(&id) else {
                continue;
            };
            let doc = &docs[*d];
            let at = labelled_offset(e).unwrap_or(0);
            let (line, column) = line_column(&doc.text, base + at);
            errors.push(PolicyError {
                doc: doc.name.clone(),
                policy: Some(id),
                line,
                column,
                message: explained(e, schema),
            });
        }
        if !errors.is_empty() {
            errors.sort_by(|a, b| (&a.doc, a.line, a.column).cmp(&(&b.doc, b.line, b.column)));
            errors.dedup();
            return Err(PolicyErrors(errors));
        }
        let mut asks = BTreeSet::new();
        let mut forbids = BTreeSet::new();
        let mut context_free = PolicySet::new();
        let mut uses_history = false;
        let mut reads = ContextReads::default();
        let mut reading_context = BTreeSet::new();
        for policy in set.policies() {
            let id = policy.id().to_string();
            let est = policy.to_json().unwrap_or(Value::Null);
            let reads_context = est_reads_context(&est);
            if reads_context {
                reading_context.insert(id.clone());
            }
            uses_history |= est_reads_history(&est);
            reads.args |= est_reads_context_attr(&est, "args");
            reads.now |= est_reads_context_attr(&est, "now");
            reads.email_domains |= est_reads_context_attr(&est, "email_domains");
            // `context` read whole (not through an attribute): build it all.
            if est_reads_context_whole(&est) {
                reads = ContextReads {
                    args: true,
                    history: true,
                    now: true,
                    email_domains: true,
                };
            }
            if policy.effect() != cedar_policy::Effect::Forbid {
                continue;
            }
            forbids.insert(id.clone());
            if policy.annotation(ASK_PERSON).is_some() {
                asks.insert(id);
            } else if !reads_context {
                // Added once per id, to a fresh set: cannot collide.
                let _ = context_free.add(policy.clone());
            }
        }
        reads.history |= uses_history;
        let by_action = schema
            .actions
            .iter()
            .map(|(action, shape)| {
                let group = schema::connector_group(&shape.connector);
                let mut sets = ActionSets {
                    fixed: PolicySet::new(),
                    reading: PolicySet::new(),
                    guarded: Vec::new(),
                };
                for policy in set.policies() {
                    // Permits never decide (they cannot widen): only forbids.
                    if policy.effect() == cedar_policy::Effect::Forbid
                        && scope_may_match(policy, action, &group)
                    {
                        let reads = reading_context.contains(&policy.id().to_string());
                        let guard = reads
                            .then(|| policy.to_json().ok())
                            .flatten()
                            .and_then(|est| guard::Guard::of(&est));
                        if let Some(guard) = guard {
                            sets.guarded.push((guard, policy.clone()));
                            continue;
                        }
                        let subset = if reads {
                            &mut sets.reading
                        } else {
                            &mut sets.fixed
                        };
                        // Each id once, to a fresh set: cannot collide.
                        let _ = subset.add(policy.clone());
                    }
                }
                (action.clone(), sets)
            })
            .collect();
        Ok(OperatorPolicies {
            revision,
            docs: docs.to_vec(),
            set,
            asks,
            forbids,
            context_free,
            uses_history,
            reads,
            by_action,
            entities_kept: Default::default(),
            schema: Arc::new(schema.clone()),
            authorizer: Authorizer::new(),
            types: Types::new(),
        })
    }

    /// The same documents and revision compiled against `schema` (the
    /// deployment changed): an error means they no longer validate.
    pub fn recompile(&self, schema: &DeploymentSchema) -> Result<OperatorPolicies, PolicyErrors> {
        OperatorPolicies::compile(&self.docs, schema, self.revision.clone())
    }

    /// The revision in force.
    pub fn revision(&self) -> &PolicyRevision {
        &self.revision
    }

    /// The documents it was compiled from.
    pub fn docs(&self) -> &[PolicyDoc] {
        &self.docs
    }

    /// The schema it was compiled against.
    pub fn schema(&self) -> &DeploymentSchema {
        &self.schema
    }

    /// Whether there are no policies (nothing to evaluate, nothing traced).
    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// Every policy id, in order.
    pub fn ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.set.policies().map(|p| p.id().to_string()).collect();
        ids.sort();
        ids
    }

    /// Decides one call: a forbid without `@ask_person` refuses, else an
    /// `@ask_person` forbid asks, else it is allowed. Each is named by the
    /// first such policy id in order.
    pub fn decide(&self, facts: &CallFacts) -> PolicyDecision {
        if self.forbids.is_empty() {
            return PolicyDecision::Allow;
        }
        let matched = match self.by_action.get(&facts.action) {
            None => self.matched(
                &self.set,
                &facts.principal,
                &facts.resource,
                &facts.action,
                self.context(facts),
            ),
            Some(sets)
                if sets.fixed.is_empty() && sets.reading.is_empty() && sets.guarded.is_empty() =>
            {
                return PolicyDecision::Allow;
            }
            Some(sets) => {
                let (principal, resource) = (&facts.principal, &facts.resource);
                match self.kept_entities(principal, resource, &facts.action) {
                    Err(e) => {
                        tracing::error!(error = %e, action = %facts.action, "cannot build the call's Cedar entities; every forbid is taken to match");
                        self.forbids.iter().cloned().collect()
                    }
                    Ok(kept) => {
                        let mut matched: BTreeSet<String> =
                            kept.fixed_matched.iter().cloned().collect();
                        // The guarded policies whose guard the call does
                        // not rule out join the unguarded ones (rarely any:
                        // a guard is mostly an argument rule's equality).
                        let mut joined = None;
                        for (guard, policy) in &sets.guarded {
                            if !guard.rules_out(facts) {
                                let set = joined.get_or_insert_with(|| sets.reading.clone());
                                // Distinct ids, from one compiled set: cannot collide.
                                let _ = set.add(policy.clone());
                            }
                        }
                        let reading = joined.as_ref().unwrap_or(&sets.reading);
                        if !reading.is_empty() {
                            matched.extend(self.evaluate(
                                reading,
                                &kept.entities,
                                principal,
                                resource,
                                &facts.action,
                                self.context(facts),
                            ));
                        }
                        matched.into_iter().collect()
                    }
                }
            }
        };
        self.verdict(matched)
    }

    /// The decision of the forbids that `matched`: a plain forbid wins over
    /// an `@ask_person` one.
    fn verdict(&self, matched: Vec<String>) -> PolicyDecision {
        let forbid = matched.iter().find(|id| !self.asks.contains(*id));
        if let Some(policy) = forbid {
            return PolicyDecision::Forbid {
                policy: policy.clone(),
            };
        }
        match matched.into_iter().next() {
            Some(policy) => PolicyDecision::AskPerson { policy },
            None => PolicyDecision::Allow,
        }
    }

    /// [`OperatorPolicies::decide`] with every policy of the set evaluated
    /// by Cedar (no scope slice, no guard, nothing kept): what `decide`
    /// must always agree with.
    #[cfg(test)]
    pub(crate) fn decide_whole(&self, facts: &CallFacts) -> PolicyDecision {
        let entities = match self.entities(&facts.principal, &facts.resource, &facts.action) {
            Ok(entities) => entities,
            Err(_) => return self.verdict(self.forbids.iter().cloned().collect()),
        };
        let matched = self.evaluate(
            &self.set,
            &entities,
            &facts.principal,
            &facts.resource,
            &facts.action,
            self.context(facts),
        );
        self.verdict(matched)
    }

    /// How many of `action`'s policies are behind a guard.
    #[cfg(test)]
    pub(crate) fn guarded(&self, action: &str) -> usize {
        self.by_action
            .get(action)
            .map_or(0, |sets| sets.guarded.len())
    }

    /// Whether any policy reads `context.history`: only then does the host
    /// read the session's history from the store for a call.
    pub fn uses_history(&self) -> bool {
        self.uses_history
    }

    /// A policy forbidding `action` for this principal and resource
    /// whatever the arguments, history and time: one that reads nothing of
    /// the call's context and matches. Exact, since such a policy's answer
    /// cannot depend on what it does not read. The tool is then not offered.
    pub fn forbids_always(
        &self,
        principal: &PrincipalFacts,
        resource: &ResourceFacts,
        action: &str,
    ) -> Option<String> {
        if self.context_free.is_empty() {
            return None;
        }
        // An action of the schema: its context-free forbids were decided
        // with its entities, once per session and facts; the plain ones
        // among them are `context_free`'s that can name the action.
        if self.by_action.contains_key(action) {
            return match self.kept_entities(principal, resource, action) {
                Ok(kept) => kept
                    .fixed_matched
                    .iter()
                    .find(|id| !self.asks.contains(*id))
                    .cloned(),
                Err(e) => {
                    tracing::error!(error = %e, action, "cannot build the call's Cedar entities; every forbid is taken to match");
                    self.forbids.iter().next().cloned()
                }
            };
        }
        self.matched(
            &self.context_free,
            principal,
            resource,
            action,
            Context::empty(),
        )
        .into_iter()
        .next()
    }

    /// The forbids of `set` that match (or fail to evaluate: closed), sorted.
    fn matched(
        &self,
        set: &PolicySet,
        principal: &PrincipalFacts,
        resource: &ResourceFacts,
        action: &str,
        context: Context,
    ) -> Vec<String> {
        match self.kept_entities(principal, resource, action) {
            Ok(kept) => self.evaluate(set, &kept.entities, principal, resource, action, context),
            Err(e) => {
                tracing::error!(error = %e, action, "cannot build the call's Cedar entities; every forbid is taken to match");
                self.forbids.iter().cloned().collect()
            }
        }
    }

    /// The forbids of `set` that match with `entities` (or fail to
    /// evaluate: closed), sorted.
    fn evaluate(
        &self,
        set: &PolicySet,
        entities: &Entities,
        principal: &PrincipalFacts,
        resource: &ResourceFacts,
        action: &str,
        context: Context,
    ) -> Vec<String> {
        let types = &self.types;
        let principal_uid = types.uid(&types.session, &principal.session);
        let resource_uid = types.uid(&types.connector, &resource.connector);
        let action_uid = types.uid(&types.action, action);
        let request = match Request::new(principal_uid, action_uid, resource_uid, context, None) {
            Ok(request) => request,
            Err(e) => {
                tracing::error!(error = %e, action, "cannot build the call's Cedar request; every forbid is taken to match");
                return self.forbids.iter().cloned().collect();
            }
        };
        let response = self.authorizer.is_authorized(&request, set, entities);
        let mut matched: BTreeSet<String> = BTreeSet::new();
        if response.decision() == Decision::Deny {
            matched.extend(response.diagnostics().reason().map(|id| id.to_string()));
        }
        for error in response.diagnostics().errors() {
            let cedar_policy::AuthorizationError::PolicyEvaluationError(e) = error;
            let id = e.policy_id().to_string();
            if self.forbids.contains(&id) {
                tracing::warn!(policy = %id, error = %e, action, "an operator forbid could not be evaluated; it is taken to match (fails closed)");
                matched.insert(id);
            }
        }
        matched.retain(|id| self.forbids.contains(id));
        matched.into_iter().collect()
    }

    /// [`OperatorPolicies::entities`], kept by session and action while
    /// the facts they hold are the same.
    fn kept_entities(
        &self,
        principal: &PrincipalFacts,
        resource: &ResourceFacts,
        action: &str,
    ) -> Result<Arc<KeptEntities>, String> {
        let key = (principal.session.clone(), action.to_string());
        if let Some(kept) = self.entities_kept.lock().get(&key)
            && kept.principal == *principal
            && kept.resource == *resource
        {
            return Ok(kept.clone());
        }
        let entities = self.entities(principal, resource, action)?;
        let fixed_matched = match self.by_action.get(action) {
            Some(sets) if !sets.fixed.is_empty() => self.evaluate(
                &sets.fixed,
                &entities,
                principal,
                resource,
                action,
                Context::empty(),
            ),
            _ => Vec::new(),
        };
        let kept = Arc::new(KeptEntities {
            principal: principal.clone(),
            resource: resource.clone(),
            entities,
            fixed_matched,
        });
        let mut all = self.entities_kept.lock();
        if all.len() >= ENTITIES_KEPT {
            all.clear();
        }
        all.insert(key, kept.clone());
        Ok(kept)
    }

    /// The principal, resource and action (with its connector group).
    fn entities(
        &self,
        principal: &PrincipalFacts,
        resource: &ResourceFacts,
        action: &str,
    ) -> Result<Entities, String> {
        let types = &self.types;
        let s = |v: &str| RestrictedExpression::new_string(v.to_string());
        let mut session = vec![
            ("session".to_string(), s(&principal.session)),
            ("brand".to_string(), s(&principal.brand)),
            ("role".to_string(), s(&principal.role)),
            ("base_role".to_string(), s(&principal.base_role)),
            (
                "person_can_be_asked".to_string(),
                RestrictedExpression::new_bool(principal.person_can_be_asked),
            ),
        ];
        if let Some(profile) = &principal.profile {
            session.push(("profile".into(), s(profile)));
        }
        if let Some(requester) = &principal.requester {
            session.push(("requester".into(), s(requester)));
        }
        let mut connector = vec![
            ("name".to_string(), s(&resource.connector)),
            ("origin".to_string(), s(&resource.origin)),
            ("effect".to_string(), s(&resource.effect)),
            (
                "routes".to_string(),
                RestrictedExpression::new_set(resource.routes.iter().map(|r| s(r))),
            ),
        ];
        if let Some(unit) = &resource.billing_unit {
            connector.push(("billing_unit".into(), s(unit)));
        }
        if let Some(destination) = &resource.destination {
            connector.push(("destination".into(), s(destination)));
        }
        let group = types.uid(
            &types.action,
            &schema::connector_group(
                self.schema
                    .actions
                    .get(action)
                    .map_or(resource.connector.as_str(), |a| a.connector.as_str()),
            ),
        );
        let entities = [
            Entity::new(
                types.uid(&types.session, &principal.session),
                session.into_iter().collect(),
                Default::default(),
            )
            .map_err(|e| e.to_string())?,
            Entity::new(
                types.uid(&types.connector, &resource.connector),
                connector.into_iter().collect(),
                Default::default(),
            )
            .map_err(|e| e.to_string())?,
            Entity::new_no_attrs(
                types.uid(&types.action, action),
                [group.clone()].into_iter().collect(),
            ),
            Entity::new_no_attrs(group, Default::default()),
        ];
        Entities::from_entities(entities, None).map_err(|e| e.to_string())
    }

    /// `context = { args, history, now }`, the arguments typed by the
    /// tool's schema (what it does not declare is left out).
    fn context(&self, facts: &CallFacts) -> Context {
        let reads = self.reads;
        let mut pairs = Vec::with_capacity(4);
        if reads.args {
            let fields = self
                .schema
                .actions
                .get(&facts.action)
                .map(|a| a.args.as_slice())
                .unwrap_or(&[]);
            pairs.push(("args".to_string(), record_of(fields, &facts.args)));
        }
        if reads.history {
            pairs.push(("history".to_string(), history_of(&facts.history)));
        }
        if reads.now {
            pairs.push((
                "now".to_string(),
                RestrictedExpression::new_long(facts.now_ms),
            ));
        }
        if reads.email_domains {
            pairs.push((
                "email_domains".to_string(),
                RestrictedExpression::new_set(
                    email_domains(&facts.args)
                        .into_iter()
                        .map(RestrictedExpression::new_string),
                ),
            ));
        }
        Context::from_pairs(pairs).unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot build a call's Cedar context; deciding with an empty one");
            Context::empty()
        })
    }
}

/// Each policy of `doc` with its offset in the text, or a located error.
fn split(doc: &PolicyDoc) -> Vec<Result<(usize, Policy), PolicyError>> {
    let set = match PolicySet::from_str(&doc.text) {
        Ok(set) => set,
        Err(errors) => {
            return errors
                .iter()
                .map(|e| {
                    let at = labelled_offset(e).unwrap_or(0);
                    let (line, column) = line_column(&doc.text, at);
                    Err(PolicyError {
                        doc: doc.name.clone(),
                        policy: None,
                        line,
                        column,
                        message: with_help(e),
                    })
                })
                .collect();
        }
    };
    let mut out = Vec::new();
    if set.templates().next().is_some() {
        out.push(Err(PolicyError {
            doc: doc.name.clone(),
            policy: None,
            line: 1,
            column: 1,
            message: "templates (?principal, ?resource) are not supported: write each policy whole"
                .into(),
        }));
    }
    // Parsed in order as `policy0`, `policy1`, ...: each found in the text
    // after the one before it.
    let mut policies: Vec<&Policy> = set.policies().collect();
    policies.sort_by_key(|p| {
        p.id()
            .to_string()
            .trim_start_matches("policy")
            .parse::<usize>()
            .unwrap_or(usize::MAX)
    });
    let mut cursor = 0;
    for policy in policies {
        let text = policy.to_cedar().unwrap_or_default();
        let offset = match doc.text.get(cursor..).and_then(|rest| rest.find(&text)) {
            Some(at) if !text.is_empty() => cursor + at,
            _ => cursor,
        };
        cursor = offset + text.len();
        // Parsed again from its own text, so its errors' offsets are
        // relative to `offset`.
        match Policy::parse(None, &text) {
            Ok(own) if !text.is_empty() => out.push(Ok((offset, own))),
            _ => out.push(Ok((offset, policy.clone()))),
        }
    }
    out
}

/// The first labelled offset of a diagnostic, if it has one.
fn labelled_offset(e: &dyn miette::Diagnostic) -> Option<usize> {
    e.labels()?.next().map(|label| label.offset())
}

fn with_help(e: &dyn miette::Diagnostic) -> String {
    match e.help() {
        Some(help) => format!("{e}; {help}"),
        None => e.to_string(),
    }
}

/// A validation error, with why an argument it names is not in the schema.
fn explained(e: &cedar_policy::ValidationError, schema: &DeploymentSchema) -> String {
    let mut message = with_help(e);
    let mut notes = BTreeMap::new();
    for action in schema.actions.values() {
        for (path, why) in &action.left_out {
            let leaf = path.rsplit(['.', '[']).next().unwrap_or(path);
            if message.contains(&format!("`args.{path}`"))
                || message.contains(&format!("`{leaf}`"))
                || message.contains(&format!("\"{leaf}\""))
            {
                notes.insert(path.clone(), *why);
            }
        }
    }
    for (path, why) in notes {
        message.push_str(&format!(
            "; note: argument `{path}` is left out of the schema: {why}"
        ));
    }
    message
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Whether a policy's JSON form reads `context` anywhere.
fn est_reads_context(est: &Value) -> bool {
    match est {
        Value::Object(map) => {
            map.get("Var").and_then(Value::as_str) == Some("context")
                || map.values().any(est_reads_context)
        }
        Value::Array(items) => items.iter().any(est_reads_context),
        _ => false,
    }
}

/// Whether a policy's JSON form reads `context.ATTR` (an attribute access
/// or `has` on `context` naming it).
fn est_reads_context_attr(est: &Value, attr: &str) -> bool {
    match est {
        Value::Object(map) => {
            let on_context = map
                .get("left")
                .and_then(|l| l.get("Var"))
                .and_then(Value::as_str)
                == Some("context");
            (on_context && map.get("attr").and_then(Value::as_str) == Some(attr))
                || map.values().any(|v| est_reads_context_attr(v, attr))
        }
        Value::Array(items) => items.iter().any(|v| est_reads_context_attr(v, attr)),
        _ => false,
    }
}

/// Whether a policy's JSON form uses `context` other than through one
/// attribute (`context == {...}`, `context` passed whole).
fn est_reads_context_whole(est: &Value) -> bool {
    match est {
        Value::Object(map) => {
            let attribute = map
                .get("left")
                .and_then(|l| l.get("Var"))
                .and_then(Value::as_str)
                == Some("context")
                && map.get("attr").is_some();
            if attribute {
                return false;
            }
            map.get("Var").and_then(Value::as_str) == Some("context")
                || map.values().any(est_reads_context_whole)
        }
        Value::Array(items) => items.iter().any(est_reads_context_whole),
        _ => false,
    }
}

/// Whether `policy`'s action scope can match `action`, a tool in `group`
/// (its connector's group): `action == X`, `action in [..]` naming it or
/// its group, or any action.
fn scope_may_match(policy: &Policy, action: &str, group: &str) -> bool {
    let names = |uid: &EntityUid| {
        let id = uid.id().unescaped();
        id == action || id == group
    };
    match policy.action_constraint() {
        cedar_policy::ActionConstraint::Any => true,
        cedar_policy::ActionConstraint::Eq(uid) => names(&uid),
        cedar_policy::ActionConstraint::In(uids) => uids.iter().any(names),
    }
}

/// Whether a policy's JSON form reads `context.history` (an attribute
/// access or `has` on `context` naming `history`).
fn est_reads_history(est: &Value) -> bool {
    match est {
        Value::Object(map) => {
            let on_context = map
                .get("left")
                .and_then(|l| l.get("Var"))
                .and_then(Value::as_str)
                == Some("context");
            (on_context && map.get("attr").and_then(Value::as_str) == Some("history"))
                || map.values().any(est_reads_history)
        }
        Value::Array(items) => items.iter().any(est_reads_history),
        _ => false,
    }
}

/// The record of `fields` read from `value` (what does not fit is left out:
/// a policy reading it errs, and an erring forbid matches).
fn record_of(fields: &[Field], value: &Value) -> RestrictedExpression {
    let pairs = fields.iter().filter_map(|field| {
        let v = value.get(&field.name)?;
        Some((field.name.clone(), value_of(&field.shape, v)?))
    });
    RestrictedExpression::new_record(pairs).unwrap_or_else(|_| {
        // Unique field names: a record always builds.
        RestrictedExpression::new_set([])
    })
}

fn value_of(shape: &ArgShape, value: &Value) -> Option<RestrictedExpression> {
    match (shape, value) {
        (ArgShape::String, Value::String(s)) => Some(RestrictedExpression::new_string(s.clone())),
        (ArgShape::Long, Value::Number(n)) => n.as_i64().map(RestrictedExpression::new_long),
        (ArgShape::Bool, Value::Bool(b)) => Some(RestrictedExpression::new_bool(*b)),
        (ArgShape::Set(item), Value::Array(items)) => items
            .iter()
            .map(|v| value_of(item, v))
            .collect::<Option<Vec<_>>>()
            .map(RestrictedExpression::new_set),
        (ArgShape::Record(fields), Value::Object(_)) => Some(record_of(fields, value)),
        _ => None,
    }
}

/// The domain of every string in `args` that is an e-mail address
/// (`local@domain` or `Name <local@domain>`, the domain holding a dot and
/// no space), lowercased.
fn email_domains(args: &Value) -> BTreeSet<String> {
    fn walk(value: &Value, out: &mut BTreeSet<String>) {
        match value {
            Value::String(s) => {
                let s = s.trim();
                let address = match (s.rfind('<'), s.ends_with('>')) {
                    (Some(at), true) => &s[at + 1..s.len() - 1],
                    _ => s,
                };
                if let Some((local, domain)) = address.rsplit_once('@')
                    && !local.is_empty()
                    && domain.contains('.')
                    && !domain.contains(char::is_whitespace)
                    && !local.contains(char::is_whitespace)
                {
                    out.insert(domain.to_ascii_lowercase());
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::Object(fields) => fields.values().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    walk(args, &mut out);
    out
}

fn history_of(history: &HistoryFacts) -> RestrictedExpression {
    let long = RestrictedExpression::new_long;
    let window = |w: &WindowCounts| {
        record([
            ("in_session", long(w.in_session)),
            ("in_session_last_hour", long(w.in_session_last_hour)),
            ("in_brand_last_hour", long(w.in_brand_last_hour)),
            ("in_brand_last_day", long(w.in_brand_last_day)),
        ])
    };
    record([
        ("session_calls", long(history.session_calls)),
        ("session_effects", long(history.session_effects)),
        ("session_spent_units", long(history.session_spent_units)),
        ("session_approvals", long(history.session_approvals)),
        ("tool", window(&history.tool)),
        ("connector", window(&history.connector)),
    ])
}

fn record<const N: usize>(pairs: [(&str, RestrictedExpression); N]) -> RestrictedExpression {
    RestrictedExpression::new_record(pairs.map(|(k, v)| (k.to_string(), v)))
        .unwrap_or_else(|_| RestrictedExpression::new_set([]))
}

#[cfg(test)]
mod tests;
