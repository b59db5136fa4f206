//! The execution boundary (DESIGN D6): where a requested call becomes an
//! effect, or a recorded, bounded denial.
//!
//! One call goes through three steps, in this order (DESIGN D14):
//! 1. [`Boundary::authorize`] decides: the same policy that decided the
//!    offered surface, at the session's current revision (a call planned,
//!    offered or even approved earlier is denied if its connector or its
//!    session was revoked since), then the tool's gate: open, an allowance,
//!    or a person's approval bound to a digest of the exact arguments and
//!    consumed once. A denial is recorded with the rule that decided and
//!    nothing else happens. An allowed call is an [`Authorized`] value
//!    that says which gate passed. A billed call in person chat under an
//!    operator's per-call threshold is allowed to run, and its meter is the
//!    gate: a reservation above the threshold asks a person while the call
//!    runs, bound to the call's arguments and that estimate (`spend.rs`).
//! 2. A [`Granter`] builds the handles for that [`Authorized`] call only:
//!    an HTTP client per destination with the credential resolved now, the
//!    meter bound to the run, the folders, whether a GraphQL mutation may
//!    pass. A refused call builds no handle, resolves no credential and
//!    starts no run.
//! 3. [`Boundary::execute`] runs the guest and records what it did.
//!
//! Every state lands in the trace: requested, allowed or denied (with the
//! rule that decided), executed, result; a name outside the ceiling is a
//! `permission_denied` event. A write, a billed call or one that waited for
//! a person has its intent durable before the effect and its outcome before
//! the caller hears it; a read with no effect and no charge writes its
//! request, decision and outcome in one commit before its answer is sent.

mod approval;
mod host_tool;
pub mod lineage;
mod policies;
pub(crate) mod remote_content;
mod spend;
mod trace;

use crate::capabilities::Capabilities;
use crate::policy::{self, Catalog, Gate, MutationGate, ReviewHold, Rule, SessionInput, Switches};
use crate::runtime::{CallOutcome, LoadedComponent, Tool, ToolOutput};
pub use crate::session::{Offered, Revision, Session};
use crate::store::{ApprovalId, Store, args_digest};
pub use host_tool::HostToolRefused;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;
use trace::{CallTrace, executed_detail};

/// Told the approval a call asked a person for, so its caller can put the
/// question (MCP elicitation) while the call waits.
pub type AskedFor = tokio::sync::oneshot::Sender<ApprovalId>;

/// Each (connector, tool)'s review hold, `None` where it is reviewed as it is.
type ReviewHolds = HashMap<(String, String), Option<ReviewHold>>;

/// The most of an argument misfit (its path and why) an agent is told.
const MISFIT_TOLD_BYTES: usize = 300;

/// Why a call did not run. `reason` is what the agent sees: bounded, safe.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .rule.safe_reason())]
pub struct Denied {
    /// The rule that decided: the trace names it exactly, the agent is
    /// told [`Rule::told`].
    pub rule: Rule,
    /// Where this refusal stands among the session's refusals of the same
    /// consequence, when it counts ([`lineage`]).
    pub lineage: Option<lineage::Lineage>,
    /// What the agent needs to mend its own call, where the rule has it:
    /// for arguments that do not fit, where and why (`$.filter: expected a
    /// JSON value ...`), never anything the session could not see.
    pub detail: Option<String>,
}

impl Denied {
    /// A refusal by `rule`, not counted in the session's lineage.
    pub fn by(rule: Rule) -> Denied {
        Denied {
            rule,
            lineage: None,
            detail: None,
        }
    }

    /// What the agent is told: the bounded reason, and for a repeated
    /// refusal the clearer constraint of its lineage; then the detail.
    pub fn told(&self) -> String {
        let reason = match &self.lineage {
            Some(lineage) if lineage.repeat >= 2 => lineage::constraint(self.rule, lineage),
            _ => self.rule.safe_reason().to_string(),
        };
        match &self.detail {
            Some(detail) => format!("{reason} ({detail})"),
            None => reason,
        }
    }
}

/// A tool call that passed the boundary.
#[derive(Debug)]
pub enum Executed {
    /// The guest ran; its answer (a tool error included) is in the outcome.
    Ran(CallOutcome),
    /// The host could not run it (deadline, trap, bad arguments...).
    Failed(crate::CallError),
}

/// Which of a brand's connectors still resolve right now: a connection
/// disabled in the store removes its connector from the next surface.
pub trait Connections: Send + Sync {
    /// The members of `candidates` (connector server names) that resolve
    /// for `brand` under `catalog` (the one the boundary decides with now,
    /// connectors added at runtime included). Only a session's own
    /// connectors are asked about.
    fn live(
        &self,
        brand: &str,
        candidates: &BTreeSet<String>,
        catalog: &Catalog,
    ) -> BTreeSet<String>;
}

/// Builds the handles of one call the boundary has authorized, and only
/// then (Zed's capability granter, Spin's `prepare`).
#[async_trait::async_trait]
pub trait Granter: Sync {
    /// The handles `call` may hold. Async: a credential the host obtains
    /// (an OAuth token, a broker's) is fetched here, after authorization.
    async fn grant(&self, call: &Authorized<'_>) -> Capabilities;
}

/// Handles built beforehand (a test, the demo, `scout-host call`): cloned
/// for each authorized call, with a GraphQL mutation allowed only where a
/// person approved it.
#[async_trait::async_trait]
impl Granter for Capabilities {
    async fn grant(&self, call: &Authorized<'_>) -> Capabilities {
        Capabilities {
            graphql_mutations: call.may_mutate(),
            ..self.clone()
        }
    }
}

/// One requested call.
pub struct CallRequest<'a> {
    /// The tool's wire name, e.g. `github_create_branch`.
    pub tool: &'a str,
    /// Its arguments, as the agent sent them.
    pub args: &'a Value,
    /// Cancelled when the caller goes away (an MCP request cancelled, its
    /// stream closed): a call waiting for a person then withdraws its
    /// approval and is denied. Once allowed, a call runs to its end whatever
    /// the caller does: an effect is never cut off halfway.
    pub gone: CancellationToken,
    /// Told which approval the call asked a person for, when it asks one,
    /// so the caller can put the question itself (MCP elicitation).
    pub asked: Option<AskedFor>,
    /// The client's trace context and transport, for the exported span.
    pub traced: Option<&'a crate::telemetry::TraceParent>,
    /// A client that asks its person through an `input_required` result:
    /// the call asks and returns, or spends the approval its answer decided.
    pub by_result: Option<crate::approvals::ByResult>,
}

impl<'a> CallRequest<'a> {
    /// A call of `tool` with `args` by a caller that stays.
    pub fn new(tool: &'a str, args: &'a Value) -> CallRequest<'a> {
        CallRequest {
            tool,
            args,
            gone: CancellationToken::new(),
            asked: None,
            traced: None,
            by_result: None,
        }
    }

    /// The same call, its exported span parented on `parent`.
    pub fn traced_from(mut self, parent: &'a crate::telemetry::TraceParent) -> CallRequest<'a> {
        self.traced = Some(parent);
        self
    }

    /// The same call by a caller that can go away (see [`CallRequest::gone`]).
    pub fn while_present(mut self, gone: CancellationToken) -> CallRequest<'a> {
        self.gone = gone;
        self
    }

    /// The same call, telling `asked` which approval it asks for.
    pub fn telling(mut self, asked: AskedFor) -> CallRequest<'a> {
        self.asked = Some(asked);
        self
    }

    /// The same call from a client that asks its person through an
    /// `input_required` result (see [`crate::approvals::ByResult`]).
    pub fn by_result(mut self, by_result: crate::approvals::ByResult) -> CallRequest<'a> {
        self.by_result = Some(by_result);
        self
    }
}

/// Which gate a call passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// The tool runs without a per-call gate.
    Open,
    /// A GraphQL tool whose document holds only queries.
    GraphqlQuery,
    /// A person approved this exact call (`mutation`: a GraphQL mutation).
    Person {
        approval: ApprovalId,
        mutation: bool,
    },
    /// Charged against the grant's allowance, by the run's meter.
    Allowance,
    /// A billed call in person chat under the operator's per-call
    /// threshold: it runs, and each reservation above `threshold` asks a
    /// person while it runs (`asks`), or is refused where no one can
    /// approve it.
    Spend { threshold: u64, asks: bool },
}

impl Pass {
    /// The rule the trace's `allowed` event names.
    fn rule(&self) -> crate::trace::Passed {
        use crate::trace::Passed;
        match self {
            Pass::Open => Passed::Open,
            Pass::GraphqlQuery => Passed::GraphqlQuery,
            Pass::Person { mutation: true, .. } => Passed::GraphqlMutationApprovedByPerson,
            Pass::Person { .. } => Passed::ApprovedByPerson,
            Pass::Allowance => Passed::Allowance,
            Pass::Spend { .. } => Passed::SpendThreshold,
        }
    }
}

/// A call the boundary allowed, not yet run: what a [`Granter`] builds
/// handles for, and what [`Boundary::execute`] runs.
pub struct Authorized<'a> {
    session: &'a Session,
    connector: &'a str,
    /// The tool, as its component serves it: resolved once, when the call
    /// arrived, and what the grant, the run and the trace read.
    called: &'a Tool,
    args: &'a Value,
    pass: Pass,
    /// No effect and no charge: the request, decision and outcome are
    /// written together, after the call.
    one_commit: bool,
    trace: CallTrace<'a>,
    /// For a reservation above the spend threshold asked while it runs:
    /// whether the caller went away, and whom to tell which approval it asked.
    gone: CancellationToken,
    asked: Option<AskedFor>,
}

impl Authorized<'_> {
    /// The session it runs in.
    pub fn session(&self) -> &Session {
        self.session
    }

    /// The connector (server name) whose tool it is.
    pub fn connector(&self) -> &str {
        self.connector
    }

    /// The tool's wire name.
    pub fn tool(&self) -> &str {
        &self.called.name
    }

    /// The tool as its component serves it (its effect, routes, the
    /// connectors a joint tool reads).
    pub fn called(&self) -> &Tool {
        self.called
    }

    /// The gate it passed.
    pub fn pass(&self) -> Pass {
        self.pass
    }

    /// Whether a `(graphql)` route may carry a mutation in this call: only
    /// in a call a person approved (a Shopify mutation, or a write tool
    /// gated by approval). Otherwise only queries.
    pub fn may_mutate(&self) -> bool {
        matches!(self.pass, Pass::Person { .. })
    }

    /// The call's id in the trace.
    pub fn call_id(&self) -> &str {
        &self.trace.call_id
    }
}

/// Decides, at execution time, whether each requested call may run.
pub struct Boundary {
    store: Arc<dyn Store>,
    /// Replaced whole when a remote MCP server's reviewed tools change.
    catalog: parking_lot::RwLock<Arc<Catalog>>,
    /// Each remote MCP server's tools as this host serves them now
    /// (replaced at every listing and review): a call that began under an
    /// older listing, and waited, is held if its tool changed since.
    remote_served: parking_lot::RwLock<HashMap<String, Arc<LoadedComponent>>>,
    switches: Switches,
    revoked_connectors: parking_lot::RwLock<BTreeSet<String>>,
    connections: Option<Box<dyn Connections>>,
    require_review: bool,
    /// Repetitions of a refused consequence at which a session pauses (0: never).
    pub(crate) pause_after: u32,
    /// The connectors this host runs: what a session could be given, for
    /// the `removed` events at its start.
    hosted: parking_lot::RwLock<BTreeSet<String>>,
    /// Connectors an operator retired while the host ran: every later
    /// call of theirs is refused by [`Rule::Retired`].
    retired: parking_lot::RwLock<BTreeSet<String>>,
    next_call: AtomicU64,
    /// This boundary's own part of every call id: several hosts serve one
    /// session, and each call of it is one call in the trace.
    calls_from: String,
    /// Trace events the store did not take, to be written once it does.
    owed: trace::Owed,
    /// Bumped by every change that can alter any session's surface.
    revision: AtomicU64,
    /// Review holds by (connector, tool), at one host revision.
    reviews: parking_lot::Mutex<(u64, ReviewHolds)>,
    /// Every approval a call waits for, and every decision on one.
    approvals: Arc<crate::approvals::Approvals>,
    /// Seals the arguments a person approves into the approval row, so
    /// another host's approvals API can show them (see [`Boundary::sealing_arguments`]).
    arguments_key: Option<[u8; 32]>,
    /// The funnel, the in-flight runs and the upstream requests, for `/metrics`.
    pub(crate) metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Where each call's span goes, when the operator exports them.
    telemetry: Option<Arc<crate::telemetry::Telemetry>>,
    /// Person chat's per-call spend threshold by billing connector, in its
    /// meter's unit (see [`Boundary::asking_above`]); a connector changed
    /// through the admin API replaces its own.
    spend_thresholds: parking_lot::RwLock<std::collections::BTreeMap<String, u64>>,
    /// Cancelled once the host begins to shut down: nothing more starts,
    /// and every wait for a person ends (`host_shutdown`).
    shutdown: CancellationToken,
    /// The operator policies in force (issue 56), replaced whole.
    operator_policies: parking_lot::RwLock<Arc<policy::operator::OperatorPolicies>>,
    /// Held by whoever compiles a new set to put in force (a stored change
    /// applied, the deployment's tools changed), across reading its inputs,
    /// compiling and setting: the one who sets last read both the newest
    /// documents and the newest schema.
    policy_change: parking_lot::Mutex<()>,
}

impl Boundary {
    /// A boundary over `store`, deciding with `catalog` and `switches`.
    pub fn new(store: Arc<dyn Store>, catalog: Catalog, switches: Switches) -> Boundary {
        let shutdown = CancellationToken::new();
        let approvals =
            crate::approvals::Approvals::new(store.clone(), switches.approval_timeout())
                .ending_with(shutdown.clone());
        Boundary {
            store,
            catalog: parking_lot::RwLock::new(Arc::new(catalog)),
            remote_served: Default::default(),
            switches,
            revoked_connectors: Default::default(),
            connections: None,
            require_review: false,
            pause_after: lineage::DEFAULT_PAUSE_AFTER,
            hosted: Default::default(),
            retired: Default::default(),
            next_call: AtomicU64::new(1),
            calls_from: calls_from(),
            owed: Default::default(),
            revision: AtomicU64::new(0),
            reviews: Default::default(),
            approvals: Arc::new(approvals),
            arguments_key: None,
            metrics: None,
            telemetry: None,
            spend_thresholds: Default::default(),
            shutdown,
            operator_policies: parking_lot::RwLock::new(Arc::new(
                policy::operator::OperatorPolicies::none(),
            )),
            policy_change: parking_lot::Mutex::new(()),
        }
    }

    /// The operator policies in force now.
    pub fn policies(&self) -> Arc<policy::operator::OperatorPolicies> {
        self.operator_policies.read().clone()
    }

    /// Puts `policies` in force: every session's surface is decided afresh
    /// and every later call is decided under them.
    pub fn set_policies(&self, policies: Arc<policy::operator::OperatorPolicies>) {
        *self.operator_policies.write() = policies;
        self.changed();
    }

    /// Held while a new set is compiled from the documents and the schema
    /// of this moment and put in force, so two changes at once (a stored
    /// policy change, the deployment's tools) cannot leave in force the one
    /// compiled from older inputs.
    pub(crate) fn policy_change(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.policy_change.lock()
    }

    /// The approvals service as configured so far (built again by each
    /// builder step that configures it, before any call waits).
    fn with_approvals(mut self) -> Boundary {
        let mut approvals =
            crate::approvals::Approvals::new(self.store.clone(), self.switches.approval_timeout())
                .ending_with(self.shutdown.clone());
        if let Some(key) = self.arguments_key {
            approvals = approvals.sealing_arguments(key);
        }
        if let Some(metrics) = &self.metrics {
            approvals = approvals.measured_by(metrics.clone());
        }
        self.approvals = Arc::new(approvals);
        self
    }

    /// Every approval a call of this boundary waits for, and every
    /// decision on one, whoever makes it.
    pub fn approvals(&self) -> &Arc<crate::approvals::Approvals> {
        &self.approvals
    }

    /// The host is shutting down: every call that arrives from now on is
    /// refused (`host_shutdown`), and every call waiting for a person ends
    /// without running, its approval revoked by `host_shutdown`. Calls
    /// already running finish.
    pub fn shut_down(&self) {
        self.shutdown.cancel();
    }

    /// Whether [`Boundary::shut_down`] was called.
    pub fn is_shutting_down(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    /// Person chat's per-call spend thresholds, by billing connector, each
    /// in the unit its meter counts (credits, micro-USD): a billed call of
    /// such a connector runs, a reservation at or below its threshold is
    /// made at once, and one above it asks a person while the call waits
    /// (or is refused where no one can approve it). A billing connector
    /// without a threshold asks a person before every call.
    pub fn asking_above<I: IntoIterator<Item = (String, u64)>>(
        mut self,
        thresholds: I,
    ) -> Boundary {
        *self.spend_thresholds.get_mut() = thresholds.into_iter().collect();
        self
    }

    /// Connector `name`'s per-call spend threshold from its next call on
    /// (`None`: it has none), as a runtime change of its settings says.
    pub(crate) fn set_spend_threshold(&self, name: &str, threshold: Option<u64>) {
        let mut thresholds = self.spend_thresholds.write();
        match threshold {
            Some(threshold) => thresholds.insert(name.to_string(), threshold),
            None => thresholds.remove(name),
        };
    }

    /// Exports a span per call, fed with the trace events as they are written.
    pub fn exported_to(mut self, telemetry: Arc<crate::telemetry::Telemetry>) -> Boundary {
        self.telemetry = Some(telemetry);
        self
    }

    /// Counts every call's outcome, run and upstream request in `metrics`.
    pub fn measured_by(mut self, metrics: Arc<crate::metrics::Metrics>) -> Boundary {
        self.metrics = Some(metrics);
        self.with_approvals()
    }

    /// Keeps each waiting call's arguments in its approval row, sealed with
    /// `key` and erased when decided, so the person approving sees them
    /// whichever host answers the approvals API.
    pub fn sealing_arguments(mut self, key: [u8; 32]) -> Boundary {
        self.arguments_key = Some(key);
        self.with_approvals()
    }

    /// The operator switches it decides with (read once at start).
    pub fn switches(&self) -> &Switches {
        &self.switches
    }

    /// Holds every tool that an operator has not approved as it is now
    /// (see [`crate::review`]): a new or changed tool is not offered.
    pub fn require_review(mut self) -> Boundary {
        self.require_review = true;
        self
    }

    /// Whether `component`'s tools are offered only as an operator reviewed
    /// them: every component's when review is required, and always a remote
    /// MCP server's (discovery produces no authority).
    fn reviews(&self, component: &LoadedComponent) -> bool {
        self.require_review || component.is_remote()
    }

    /// The catalogue it decides with now.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    /// Serves `spec` for its connector from now on (a remote MCP server's
    /// tools, as listed and reviewed now): every session decides afresh.
    pub(crate) fn replace_connector(&self, spec: policy::ConnectorSpec) {
        {
            let mut catalog = self.catalog.write();
            let next = (**catalog).clone().with_spec(spec);
            *catalog = Arc::new(next);
        }
        self.changed();
    }

    /// Remote MCP server `served` as this host lists it now: a call begun
    /// under an older listing is held, at its last look before it runs, if
    /// its tool changed or went since. Recorded before the listing is
    /// served, so no call can run a listing this host already replaced.
    pub(crate) fn remote_listed(&self, served: Arc<LoadedComponent>) {
        self.remote_served
            .write()
            .insert(served.name().to_string(), served);
    }

    /// For a remote MCP server's `tool` as `component` serves it: the
    /// effect the store's review gives it at this moment (read from the
    /// store, never from this host's cached listing, so a review another
    /// host changed a moment ago decides), or the rule that holds it: never
    /// reviewed, reviewed as something else, changed since on this host's
    /// latest listing, or the store not answering (fails closed).
    async fn remote_review_now(
        &self,
        component: &LoadedComponent,
        tool: &str,
    ) -> Result<crate::Effect, Rule> {
        let Some(called) = component.tool(tool) else {
            return Err(Rule::Held(ReviewHold::UnknownTool));
        };
        self.remote_review_of(component, called).await
    }

    /// [`Boundary::remote_review_now`] for `called`, a tool `component`
    /// serves, as the call resolved it.
    async fn remote_review_of(
        &self,
        component: &LoadedComponent,
        called: &Tool,
    ) -> Result<crate::Effect, Rule> {
        let tool = called.name.as_str();
        let digest = crate::review::tool_digest(component, called);
        let latest = self.remote_served.read().get(component.name()).cloned();
        if let Some(latest) = latest {
            match latest.tool(tool) {
                None => return Err(Rule::Held(ReviewHold::UnknownTool)),
                Some(now) if crate::review::tool_digest(&latest, now) != digest => {
                    return Err(Rule::Held(ReviewHold::Changed));
                }
                Some(_) => {}
            }
        }
        match self.store.reviewed(component.name(), tool).await {
            Err(e) => {
                tracing::error!(connector = %component.name(), tool = %tool, error = %e, "cannot read the tool's review; holding the call");
                Err(Rule::Held(ReviewHold::StoreUnavailable))
            }
            Ok(None) => Err(Rule::Held(ReviewHold::New)),
            Ok(Some(review)) if review.digest != digest => Err(Rule::Held(ReviewHold::Changed)),
            Ok(Some(review)) => Ok(
                match review
                    .effect
                    .as_deref()
                    .and_then(crate::remote::RemoteEffect::parse)
                {
                    Some(crate::remote::RemoteEffect::Read) => crate::Effect::Read,
                    // A write, a billed call, or no effect recorded: asks.
                    _ => crate::Effect::Write,
                },
            ),
        }
    }

    /// Pauses a session once it is refused the same consequence `n` times
    /// (0: never; [`lineage::DEFAULT_PAUSE_AFTER`] unless set).
    pub fn pausing_after(mut self, n: u32) -> Boundary {
        self.pause_after = n;
        self
    }

    /// Names the connectors this host runs, so a session's start traces a
    /// `removed` event for each of their tools it is not given.
    pub fn hosting<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        connectors: I,
    ) -> Boundary {
        self.hosted = parking_lot::RwLock::new(connectors.into_iter().map(Into::into).collect());
        self
    }

    /// Serves connector `name` from now on (added or upgraded at runtime):
    /// `spec` is its catalogue entry (`None` for a platform server, which
    /// the policy gives by its own rules); `hosted` whether it is a
    /// connector sessions are given by registration. Every session decides
    /// afresh at its next request; a call in flight finishes as it began.
    pub(crate) fn serve_connector(
        &self,
        name: &str,
        spec: Option<policy::ConnectorSpec>,
        hosted: bool,
    ) {
        self.retired.write().remove(name);
        {
            let mut set = self.hosted.write();
            if hosted {
                set.insert(name.to_string());
            } else {
                set.remove(name);
            }
        }
        match spec {
            Some(spec) => self.replace_connector(spec),
            None => self.changed(),
        }
    }

    /// Retires connector `name`: from the next execution boundary on,
    /// every call of its tools is refused by [`Rule::Retired`] and traced.
    pub(crate) fn retire_connector(&self, name: &str) {
        self.retired.write().insert(name.to_string());
        self.hosted.write().remove(name);
        self.changed();
    }

    /// Whether connector `name` was retired while this host ran.
    pub fn is_retired(&self, name: &str) -> bool {
        self.retired.read().contains(name)
    }

    /// Re-resolves a brand's connections at each revision, so a connection
    /// disabled in the store (and [`Boundary::changed`] called) denies the
    /// next call.
    pub fn with_connections(mut self, connections: impl Connections + 'static) -> Boundary {
        self.connections = Some(Box::new(connections));
        self
    }

    /// The store the boundary records into.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Something every session's surface may depend on changed (a
    /// connection stored, disabled, shared or unshared; a tool reviewed; a
    /// profile saved): the next request of every session decides afresh.
    /// Call it after the change is committed and before acknowledging it.
    pub fn changed(&self) {
        self.revision.fetch_add(1, Ordering::SeqCst);
    }

    /// The surface `session` is offered now, computed once per revision.
    pub fn offered(&self, session: &Session) -> Result<Arc<Offered>, policy::PolicyError> {
        let revision = session.revision(self.revision.load(Ordering::SeqCst));
        if let Some(offered) = session.offered_at(revision) {
            return Ok(offered);
        }
        let surface = policy::surface(
            &self.current_input(session),
            &self.catalog(),
            &self.switches,
        )?;
        let offered = Arc::new(Offered::new(revision, surface));
        session.keep(offered.clone());
        Ok(offered)
    }

    /// The surface a session with `input` would be given now (before any
    /// review holds a tool back).
    pub(crate) fn surface_for(
        &self,
        input: &SessionInput,
    ) -> Result<policy::Surface, policy::PolicyError> {
        policy::surface(input, &self.catalog(), &self.switches)
    }

    /// Opens a session: decides its surface now and records what was
    /// registered (the connectors whose credentials resolve) and what is
    /// offered, so the trace can explain every later decision.
    pub fn open_session(&self, session: &Session) -> Result<Arc<Offered>, policy::PolicyError> {
        self.open_session_with(session, &[], Default::default())
    }

    /// [`Boundary::open_session`] for a session served by `components`: a
    /// tool the policy allows but an operator has not reviewed (when
    /// [`Boundary::require_review`] is on) is eligible, not offered, and the
    /// trace records a `denied` event with the rule that held it.
    /// Its rows name `origin`, the trace of the request that opened it.
    pub(crate) fn open_session_with(
        &self,
        session: &Session,
        components: &[&LoadedComponent],
        origin: crate::store::Origin,
    ) -> Result<Arc<Offered>, policy::PolicyError> {
        let input = self.current_input(session);
        let offered = self.offered(session)?;
        let surface = &offered.surface;
        session.set_opened(surface.names().into_iter().map(str::to_string).collect());
        let connected: Vec<&String> = input.brand.connected.iter().collect();
        let start = crate::trace::SessionStart::new(session);
        let mut events = vec![
            start.registered(&connected),
            start.eligible(surface.names().len()),
        ];
        let mut held = BTreeSet::new();
        // A tool an operator's policy forbids whatever its arguments is
        // removed, naming the policy and its revision.
        let operator_policies = self.policies();
        for component in components {
            for tool in component.tools() {
                let name = policy::names::mcp(component.name(), &tool.name);
                if surface.get(&name).is_some()
                    && let Some(policy) =
                        self.forbidden_always(&operator_policies, session, component, tool)
                {
                    let mut event = start.removed(&name, policy::Removal::OperatorPolicy);
                    event.detail = json!({
                        "policy": policy,
                        "policy_revision": operator_policies.revision().to_string(),
                    });
                    events.push(event);
                    held.insert(name);
                }
            }
        }
        for component in components.iter().filter(|c| self.reviews(c)) {
            for tool in component.tools() {
                let name = policy::names::mcp(component.name(), &tool.name);
                if surface.get(&name).is_some()
                    && !held.contains(&name)
                    && let Some(hold) = self.unreviewed(component, tool)
                {
                    events.push(start.held(&name, hold));
                    held.insert(name);
                }
            }
        }
        let offered_names: Vec<&str> = surface
            .names()
            .into_iter()
            .filter(|n| !held.contains(*n))
            .collect();
        // Every tool it could have had and was not given, with the rule that
        // removed it; then what it is offered: all in one transaction.
        let hosted = self.hosted.read().clone();
        let removed = policy::removed(&input, &self.catalog(), &self.switches, &hosted);
        session.set_removed(
            removed
                .iter()
                .map(|r| (r.name.clone(), r.rule))
                .chain(events.iter().filter_map(|e| {
                    let by_policy = e.state == crate::store::TraceState::Removed
                        && e.rule.as_deref() == Some("operator_policy");
                    let tool = e.tool.clone().filter(|_| by_policy)?;
                    Some((tool, policy::Removal::OperatorPolicy))
                }))
                .collect(),
        );
        for r in removed {
            events.push(start.removed(&r.name, r.rule));
        }
        events.push(start.offered(&offered_names));
        for event in &mut events {
            event.origin = origin.clone();
        }
        self.write_or_owe(&events, "a session's start");
        Ok(offered)
    }

    /// The tools of `component` that `session` is offered now: allowed by
    /// the policy given current revocations and, when review is required,
    /// approved by an operator as they are now. This is what an MCP
    /// `tools/list` returns.
    pub(crate) fn offered_tools<'c>(
        &self,
        session: &Session,
        component: &'c LoadedComponent,
    ) -> Vec<&'c crate::runtime::Tool> {
        if self.is_revoked(session, component.name()) || self.is_retired(component.name()) {
            return Vec::new();
        }
        let Ok(offered) = self.offered(session) else {
            return Vec::new();
        };
        let operator_policies = self.policies();
        component
            .tools()
            .iter()
            .filter(|t| {
                offered
                    .surface
                    .get(&policy::names::mcp(component.name(), &t.name))
                    .is_some()
            })
            .filter(|t| !self.reviews(component) || self.unreviewed(component, t).is_none())
            // Absent beats refusing: forbidden whatever its arguments.
            .filter(|t| {
                self.forbidden_always(&operator_policies, session, component, t)
                    .is_none()
            })
            .collect()
    }

    /// Disables a connector (its connection or its grant) for every session,
    /// from the next execution boundary on; unused approvals for its tools
    /// are revoked and never revive.
    pub fn revoke_connector(&self, connector: &str, sessions: &[&Session]) {
        self.revoked_connectors
            .write()
            .insert(connector.to_string());
        self.changed();
        for session in sessions {
            let _ = self.approvals.revoke_session(&session.id);
        }
    }

    /// Withdraws a connector from one session's grant (a person edited the
    /// coworker's grant): its tools are denied from the next boundary on,
    /// and the session's unused approvals are revoked.
    pub fn withdraw_grant(&self, session: &Session, connector: &str) {
        session.withdraw(connector);
        let _ = self.approvals.revoke_session(&session.id);
    }

    /// Re-enables a connector. Approvals revoked with it stay revoked.
    pub fn restore_connector(&self, connector: &str) {
        self.revoked_connectors.write().remove(connector);
        self.changed();
    }

    /// Ends a session's authority: every later call is denied.
    pub fn revoke_session(&self, session: &Session) {
        session.revoke();
        let _ = self.approvals.revoke_session(&session.id);
    }

    /// The arguments of a call of `session` waiting for a person, if this
    /// host holds it.
    pub fn waiting_arguments(&self, session: &str, digest: &str) -> Option<Value> {
        self.approvals.waiting_arguments(session, digest)
    }

    /// The arguments approval `approval` waits on: from the call waiting on
    /// this host, else from the approval row (sealed), whichever host asked.
    pub fn approval_arguments(&self, approval: &crate::store::Approval) -> Option<Value> {
        self.approvals.arguments(approval)
    }

    /// A trace row as the admin API shows it: the arguments a decision
    /// sealed (`detail.sealed_arguments`) opened as `detail.arguments` for
    /// a caller who may read them (`reveal`: the admin token, an auditor),
    /// else left out; either way the sealed form itself is never shown,
    /// only its `args_digest`. Arguments that do not open here (another
    /// store key) are `null` with `arguments_unreadable`.
    pub fn shown_row(&self, row: &mut Value, reveal: bool) {
        use base64::Engine;
        let Value::Object(fields) = row else { return };
        let text = |key: &str| {
            fields
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let (session, tool) = (text("session"), text("tool"));
        let Some(detail) = fields.get_mut("detail").and_then(Value::as_object_mut) else {
            return;
        };
        let Some(sealed) = detail.remove("sealed_arguments") else {
            return;
        };
        let digest = sealed["args_digest"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if reveal {
            let b64 = base64::engine::general_purpose::STANDARD;
            let bytes = |key: &str| sealed[key].as_str().and_then(|t| b64.decode(t).ok());
            let opened = match (
                self.arguments_key.as_ref(),
                bytes("nonce"),
                bytes("ciphertext"),
            ) {
                (Some(key), Some(nonce), Some(ciphertext)) => {
                    crate::store::open_arguments(key, &session, &tool, &digest, &nonce, &ciphertext)
                }
                _ => None,
            };
            if opened.is_none() {
                detail.insert("arguments_unreadable".into(), json!(true));
            }
            detail.insert("arguments".into(), opened.unwrap_or(Value::Null));
        }
        detail.insert("args_digest".into(), json!(digest));
    }

    fn current_input(&self, session: &Session) -> SessionInput {
        let mut input = session.input.clone();
        {
            let revoked = self.revoked_connectors.read();
            input
                .brand
                .connected
                .retain(|c| !revoked.contains(c) && !session.is_withdrawn(c));
        }
        if let Some(connections) = &self.connections {
            let now = connections.live(&session.brand, &input.brand.connected, &self.catalog());
            input.brand.connected.retain(|c| now.contains(c));
        }
        input
    }

    fn is_revoked(&self, session: &Session, connector: &str) -> bool {
        session.is_revoked() || self.revoked_connectors.read().contains(connector)
    }

    /// Authorizes, grants, executes: runs `request` of `component` for
    /// `session` if the policy allows it now (waiting for a person's
    /// approval where the gate asks for one), with the handles `granter`
    /// builds for it once it is allowed.
    pub async fn call(
        &self,
        session: &Session,
        component: &LoadedComponent,
        request: CallRequest<'_>,
        granter: &dyn Granter,
    ) -> Result<Executed, Denied> {
        let started = std::time::Instant::now();
        // The tool is resolved here, once: the decision, the grant, the run
        // and the trace all read this one.
        let called = component.tool(request.tool);
        // A `json` parameter sent as JSON text is digested, shown and run
        // as the value it denotes.
        let structured = called.and_then(|tool| tool.json_text_as_values(request.args));
        let request = CallRequest {
            args: structured.as_ref().unwrap_or(request.args),
            ..request
        };
        let answered = async {
            let authorized = self
                .authorize_called(session, component, called, request)
                .await?;
            let caps = granter.grant(&authorized).await;
            self.execute(authorized, component, &caps).await
        }
        .await;
        if let Some(metrics) = &self.metrics {
            use crate::metrics::CallOutcome;
            let rule;
            let outcome = match &answered {
                Ok(Executed::Ran(ran)) => match ran.output {
                    ToolOutput::Ok(_) => CallOutcome::Ok,
                    ToolOutput::Err(_) => CallOutcome::ToolError,
                },
                Ok(Executed::Failed(_)) => CallOutcome::HostError,
                Err(denied) => {
                    rule = denied.rule.name();
                    CallOutcome::Denied(&rule)
                }
            };
            // Only names the component declares: an agent's invention is `unknown`.
            let declared = called.map(|t| t.name.as_str());
            metrics.call_answered(component.name(), declared, outcome, started.elapsed());
        }
        answered
    }

    /// Decides whether `request` may run now: a recorded denial, or an
    /// [`Authorized`] call whose intent is durable (for anything but a
    /// plain read, which is recorded with its outcome).
    pub async fn authorize<'a>(
        &'a self,
        session: &'a Session,
        component: &'a LoadedComponent,
        request: CallRequest<'a>,
    ) -> Result<Authorized<'a>, Denied> {
        let called = component.tool(request.tool);
        self.authorize_called(session, component, called, request)
            .await
    }

    /// [`Boundary::authorize`] with the tool already resolved: `called` is
    /// `component`'s tool of the requested name, `None` where it serves no
    /// such tool (denied as not offered, after the rules that come first).
    async fn authorize_called<'a>(
        &'a self,
        session: &'a Session,
        component: &'a LoadedComponent,
        called: Option<&'a Tool>,
        request: CallRequest<'a>,
    ) -> Result<Authorized<'a>, Denied> {
        let CallRequest {
            tool,
            args,
            gone,
            mut asked,
            traced,
            by_result,
        } = request;
        let connector = component.name();
        let name = policy::names::mcp(connector, tool);
        let call_id = self.new_call_id(session);
        let digest = args_digest(args);
        let span = self.telemetry.as_ref().map(|t| {
            t.call_span(crate::telemetry::CallSpanStart {
                // Only names the component declares, as the metrics: an
                // agent's invention is `unknown`, so it cannot mint span
                // names or probe names into a collector.
                tool: called.map_or("unknown", |declared| declared.name.as_str()),
                connector,
                session: &session.id,
                brand: &session.brand,
                role: session.input.role.api_name(),
                parent: traced,
            })
        });
        let origin = match (&span, traced) {
            (Some(span), _) => span.origin(),
            (None, Some(traced)) => traced.origin(),
            (None, None) => Default::default(),
        };
        let mut trace = CallTrace {
            boundary: self,
            session,
            call_id,
            name,
            events: Vec::new(),
            span,
            targets: lineage::targets(component, called),
            origin,
        };
        trace.push(trace.rows().requested(&digest));
        if let Err(rule) = self.standing(session) {
            return Err(trace.deny(rule).await);
        }

        let gate = match self.check(session, connector, &trace.name) {
            Ok(gate) => gate,
            // A tool the session was not given: the trace names the rule
            // that removed it (a switch, registration, the ceiling); the
            // agent is told only that it is not offered.
            Err(Rule::NotOffered) => {
                let rule = session
                    .removed
                    .get()
                    .and_then(|r| r.get(&trace.name))
                    .map_or(Rule::NotOffered, |removal| Rule::Removed(*removal));
                return Err(trace.deny(rule).await);
            }
            Err(rule) => return Err(trace.deny(rule).await),
        };
        // Offered, but not a tool the component serves (a listing or a
        // deployment replaced meanwhile): held, and not offered to the agent.
        let Some(called) = called else {
            return Err(trace.deny(Rule::Held(ReviewHold::UnknownTool)).await);
        };
        // A remote MCP server's tool runs under its review in the store at
        // this moment, not under the one this host last applied: a review
        // another host changed a moment ago decides here too (DESIGN D22).
        let reviewed_effect = if component.is_remote() {
            match self.remote_review_of(component, called).await {
                Ok(effect) => Some(effect),
                Err(rule) => return Err(trace.deny(rule).await),
            }
        } else {
            if self.reviews(component)
                && let Some(hold) = self.unreviewed_now(component, called).await
            {
                // Not offered, whatever the policy says; the trace says why, the agent does not.
                return Err(trace.deny(Rule::Held(hold)).await);
            }
            None
        };
        let served_read = called.effect == crate::Effect::Read;
        // Served here as a read while the store's review now says it acts:
        // this host has not applied the review yet (the host applies it
        // before deciding, see `Host::call`; this is the moment in
        // between). Refused, never run as a read: the policy decided its
        // gate as a read's.
        if served_read && reviewed_effect.is_some_and(|e| e != crate::Effect::Read) {
            return Err(trace.deny(Rule::Held(ReviewHold::Changed)).await);
        }
        // Only a read as served and as reviewed runs as one.
        let reads_only = served_read && reviewed_effect.is_none_or(|e| e == crate::Effect::Read);
        // Operators' policies narrow what the seed allows, or ask a person
        // (issue 56): decided before any person is asked or handle granted.
        let effect = if reads_only {
            crate::Effect::Read
        } else {
            reviewed_effect.unwrap_or(called.effect)
        };
        let by_policy = self
            .decide_by_policies(&mut trace, component, called, args, effect)
            .await?;
        // A billed call in person chat under an operator's per-call threshold
        // runs, and its meter asks a person about a reservation above it;
        // without a threshold, it fails closed and asks before every call.
        // An allowance is enforced by the `meter` handle on every reservation.
        // Shopify Admin GraphQL: the host parses the operation the tool will
        // send (its `query` argument) to tell a query, which runs, from a
        // mutation, which follows the mutation gate; the `http` handle then
        // refuses a body holding more than was decided here.
        let mut mutation = false;
        let spend = spend::pass(&gate, &self.spend_thresholds.read());
        let (mut asks, mut pass) = match (&gate, graphql_operation(&gate, args)) {
            (_, Some(Err(why))) => {
                let rule = Rule::GraphqlUnreadable;
                trace.push(trace.rows().refused_with(rule, json!({ "why": why })));
                trace.flush_async().await;
                return Err(Denied::by(rule));
            }
            (_, Some(Ok(false))) => (false, Pass::GraphqlQuery),
            (Gate::ReadsRunMutationsGated { mutations }, Some(Ok(true))) => match mutations {
                MutationGate::AsksPerson => {
                    mutation = true;
                    (true, Pass::Open)
                }
                MutationGate::Refuses(r) => return Err(trace.deny(*r).await),
            },
            (Gate::Allowance { .. }, _) => (false, Pass::Allowance),
            _ => match (spend, asks_person(&gate)) {
                (Some(spend), _) => (false, spend),
                (None, Ok(asks)) => (asks, Pass::Open),
                (None, Err(rule)) => return Err(trace.deny(rule).await),
            },
        };
        // An `@ask_person` policy makes a call that would run ask first.
        // A GraphQL operation the host read as a query stays one when a
        // policy makes it ask: the person approves a query, and the `http`
        // handle still refuses a body holding a mutation.
        let asked_query = pass == Pass::GraphqlQuery;
        if matches!(by_policy, policies::PolicyPass::AsksPerson { .. }) && !asks {
            asks = true;
            pass = Pass::Open;
        }
        if asks {
            // Arguments that do not fit the tool's parameters (a type, a
            // `json` value that is not JSON, a number out of its range) are
            // refused before a person is asked about the call. A call that
            // asks nobody is refused by its run, before the guest runs, so a
            // read converts its arguments once.
            if let Some(denied) = policies::misfit(&mut trace, called, args).await {
                return Err(denied);
            }
            trace.flush_async().await;
            let approval = self
                .await_approval(approval::Wait {
                    session,
                    call_id: &trace.call_id,
                    name: &trace.name,
                    digest: &digest,
                    args,
                    gone: &gone,
                    asked: asked.take(),
                    span: trace.span.as_ref(),
                    origin: &trace.origin,
                    targets: &trace.targets,
                    spend: None,
                    remote: component.is_remote().then_some((component, tool)),
                    by_result,
                })
                .await?;
            pass = if asked_query {
                Pass::GraphqlQuery
            } else {
                Pass::Person { approval, mutation }
            };
            // The world may have changed while a person was deciding: the
            // session paused or its delegation expired, or (for a mutation)
            // its switch turned off.
            if let Err(rule) = self.standing(session) {
                return Err(trace.deny(rule).await);
            }
            match self.check(session, connector, &trace.name) {
                Err(rule) => return Err(trace.deny(rule).await),
                Ok(now) if mutation && now.refusal().is_some() => {
                    let rule = now.refusal().unwrap_or(Rule::ApprovalRequired);
                    return Err(trace.deny(rule).await);
                }
                Ok(_) => {}
            }
            // A remote tool is authorized again against its review now and
            // this host's latest listing: one the server changed, or an
            // operator reviewed anew, while a person decided does not run
            // on that decision (seed 003: current policy checked
            // immediately before execution).
            if component.is_remote()
                && let Err(rule) = self.remote_review_of(component, called).await
            {
                return Err(trace.deny(rule).await);
            }
            if let policies::PolicyPass::AsksPerson { facts, .. } = &by_policy {
                self.decide_again_after_wait(&mut trace, facts).await?;
            }
        }
        // A write or a billed call takes one of the delegation's effects; a
        // GraphQL query the host read as one does not.
        let consequential = pass != Pass::GraphqlQuery
            && (matches!(gate, Gate::Spend { .. } | Gate::Allowance { .. }) || !reads_only);
        // The session's own count of calls that run, then its effects: the
        // grant's and the session's, the lower binding.
        let limits = session.limits();
        // Looked at before an effect is taken, taken after: a call refused
        // for its effects does not count.
        if let Some(max) = limits.max_calls
            && session.calls() >= max
        {
            return Err(trace.deny(Rule::SessionCallsExhausted).await);
        }
        let grant_limited = session.delegation().map(|g| g.max_effects);
        if consequential && (grant_limited.is_some() || limits.max_effects.is_some()) {
            let max = grant_limited
                .flatten()
                .into_iter()
                .chain(limits.max_effects)
                .min();
            if !session.take_effect(max) {
                let rule = if limits.max_effects.is_some() && limits.max_effects == max {
                    Rule::SessionEffectsExhausted
                } else {
                    Rule::DelegationExhausted
                };
                return Err(trace.deny(rule).await);
            }
        }
        if let Some(max) = limits.max_calls
            && !session.take_call(max)
        {
            return Err(trace.deny(Rule::SessionCallsExhausted).await);
        }
        let detail = match pass {
            Pass::Spend { threshold, asks } => json!({
                "threshold": threshold,
                "above_threshold": if asks { "asks_person" } else { "refuses" },
            }),
            _ => Value::Null,
        };
        let detail = match (&by_policy, detail) {
            (policies::PolicyPass::AsksPerson { policy, .. }, Value::Null) => {
                json!({ "asked_by_policy": policy })
            }
            (_, detail) => detail,
        };
        trace.push(trace.rows().allowed(pass.rule(), detail));
        // A read with no effect and no charge: nothing to make durable
        // before it runs; its rows are written with its outcome.
        let one_commit = pass == Pass::Open && reads_only && !component.imports_interface("meter");
        // Fails closed: the intent is durable before the effect, or there is no effect.
        if !one_commit && let Err(e) = trace.write_async(None).await {
            tracing::error!(error = %e, call = %trace.call_id, "cannot record the call's intent; not running it");
            trace.events.pop();
            return Err(trace.deny(Rule::Unrecorded).await);
        }
        Ok(Authorized {
            session,
            connector,
            called,
            args,
            pass,
            one_commit,
            trace,
            gone,
            asked,
        })
    }

    /// Whether `session` may call anything now: this host not shutting
    /// down and holding its lease, the session not paused by repeated
    /// refusals (nothing runs until a person resumes it), and its delegation
    /// not expired (nothing more runs under it, reads included, and what was
    /// approved under it is revoked for good). Checked when a call arrives
    /// and again after every wait for a person.
    pub(super) fn standing(&self, session: &Session) -> Result<(), Rule> {
        if self.shutdown.is_cancelled() {
            return Err(Rule::HostShutdown);
        }
        // In memory, against the lease's deadline on this host's clock: a
        // host another may be recovering starts nothing, a read included.
        if !self.store.lease_held() {
            return Err(Rule::LeaseNotHeld);
        }
        // Held under an identity this host lost meanwhile (another host
        // recovered it, and it rejoined). A fleet's session lives on: this
        // call did not run, and the next request takes the session up here
        // afresh. A session only this host kept was closed by the recovery.
        if session.generation() != self.store.lease_generation() {
            return Err(if self.store.shares_sessions() {
                Rule::LeaseNotHeld
            } else {
                Rule::Revoked
            });
        }
        if session.is_paused() {
            return Err(Rule::Paused);
        }
        if let Some(end) = session.limits().expires_at_ms
            && crate::store::now_ms() >= end
        {
            return Err(Rule::SessionExpired);
        }
        if let Some(expiry) = session.delegation().and_then(|g| g.expires_at_ms())
            && crate::store::now_ms() >= expiry
        {
            if session.end_delegation()
                && let Err(e) = self.approvals.revoke_session(&session.id)
            {
                tracing::error!(session = %session.id, error = %e, "cannot revoke an expired delegation's approvals");
            }
            return Err(Rule::DelegationExpired);
        }
        Ok(())
    }

    /// Runs an authorized call with the handles granted to it and records
    /// what it did. A read whose record cannot be written is not answered:
    /// every result an agent sees is in the trace.
    pub async fn execute(
        &self,
        authorized: Authorized<'_>,
        component: &LoadedComponent,
        caps: &Capabilities,
    ) -> Result<Executed, Denied> {
        let Authorized {
            called,
            args,
            pass,
            one_commit,
            mut trace,
            gone,
            mut asked,
            ..
        } = authorized;
        // What was asked of a person about reservations above the threshold.
        let mut spends = Vec::new();
        let result = {
            let _running = self
                .metrics
                .as_ref()
                .map(|m| m.run_started(component.name()));
            match pass {
                Pass::Spend { threshold, asks } => {
                    let run = spend::GatedRun {
                        component,
                        called,
                        args,
                        caps,
                        threshold,
                        asks,
                    };
                    self.run_gated(run, &trace, &gone, &mut asked, &mut spends)
                        .await
                }
                _ => component.run(called, args, caps).await,
            }
        };
        if let Some(metrics) = &self.metrics {
            match &result {
                Ok(outcome) => {
                    metrics.instantiated(component.name(), outcome.instantiate_micros);
                    for exchange in &outcome.http {
                        metrics.upstream_request(
                            component.name(),
                            exchange.status,
                            exchange.micros,
                        );
                    }
                }
                Err(crate::error::CallError::Deadline(_)) => {
                    metrics.guest_stopped(component.name(), "deadline")
                }
                Err(crate::error::CallError::MemoryLimit(_)) => {
                    metrics.guest_stopped(component.name(), "memory")
                }
                Err(crate::error::CallError::Trap(_)) => {
                    metrics.guest_stopped(component.name(), "trap")
                }
                Err(_) => {}
            }
        }
        if let (Some(span), Ok(outcome)) = (&trace.span, &result) {
            // As many as the trace's `executed` event shows.
            span.upstream(&outcome.http[..outcome.http.len().min(trace::TRACED_EXCHANGES)]);
        }
        let executed = match result {
            Ok(outcome) => {
                // What the guest did, exchange by exchange (method, declared
                // route, status, bytes; never headers or bodies) and what it
                // logged; scrubbed with the rest of the call's events.
                let mut detail = executed_detail(&outcome);
                if let (false, Value::Object(fields)) = (spends.is_empty(), &mut detail) {
                    fields.insert("spend".into(), Value::Array(std::mem::take(&mut spends)));
                }
                trace.push(trace.rows().executed(detail));
                let detail = match &outcome.output {
                    ToolOutput::Ok(_) => json!({"ok": true, "requests": outcome.http.len()}),
                    ToolOutput::Err(e) => {
                        json!({"ok": false, "tool_error": e, "requests": outcome.http.len()})
                    }
                };
                trace.push(trace.rows().result(detail));
                Executed::Ran(outcome)
            }
            Err(e) => {
                let detail = if spends.is_empty() {
                    Value::Null
                } else {
                    json!({ "spend": spends })
                };
                trace.push(trace.rows().executed(detail));
                trace.push(
                    trace
                        .rows()
                        .result(json!({"ok": false, "host_error": e.to_string()})),
                );
                Executed::Failed(e)
            }
        };
        // The outcome is durable before the caller hears it.
        if let Err(e) = trace.write_async(Some(caps)).await {
            tracing::error!(error = %e, call = %trace.call_id, "cannot record the call's outcome");
            if one_commit {
                // The read ran, but nobody may see an answer the trace does
                // not hold: the request stays, with why nothing came of it.
                trace.events.truncate(1);
                trace.push(trace.rows().refused_with(Rule::Unrecorded, json!({"ran": true,
                    "why": "the read ran, but its record could not be written, so its answer was withheld"})));
                trace.flush_async().await;
                return Err(Denied::by(Rule::Unrecorded));
            }
        }
        Ok(executed)
    }

    /// Why the tool is held, when the operator has not approved it as the
    /// component describes it now; kept per host revision (a review bumps
    /// it) and tool digest. For a session's surface, built where nothing
    /// awaits: the store is waited for on a miss.
    fn unreviewed(&self, component: &LoadedComponent, t: &Tool) -> Option<ReviewHold> {
        let (revision, key) = self.review_key(component, t);
        if let Some(held) = self.kept_hold(revision, &key) {
            return held;
        }
        let status =
            crate::store::block(crate::review::status_of(self.store.as_ref(), component, t));
        match review_hold(status) {
            Ok(held) => self.keep_hold(revision, key, held),
            Err(unavailable) => Some(unavailable),
        }
    }

    /// [`Boundary::unreviewed`] on a call's path, awaiting the store.
    async fn unreviewed_now(&self, component: &LoadedComponent, t: &Tool) -> Option<ReviewHold> {
        let (revision, key) = self.review_key(component, t);
        if let Some(held) = self.kept_hold(revision, &key) {
            return held;
        }
        let status = crate::review::status_of(self.store.as_ref(), component, t).await;
        match review_hold(status) {
            Ok(held) => self.keep_hold(revision, key, held),
            Err(unavailable) => Some(unavailable),
        }
    }

    /// The host revision now, and the key a tool's hold is kept under: what
    /// the operator reviews is the tool as it describes itself.
    fn review_key(&self, component: &LoadedComponent, t: &Tool) -> (u64, (String, String)) {
        let revision = self.revision.load(Ordering::SeqCst);
        let key = (
            component.name().to_string(),
            crate::review::tool_digest(component, t),
        );
        (revision, key)
    }

    /// The hold kept for `key` under `revision`, if one is.
    fn kept_hold(&self, revision: u64, key: &(String, String)) -> Option<Option<ReviewHold>> {
        let reviews = self.reviews.lock();
        (reviews.0 == revision)
            .then(|| reviews.1.get(key).copied())
            .flatten()
    }

    /// Keeps `held` for `key` under `revision` (unless a newer revision is
    /// kept already) and returns it.
    fn keep_hold(
        &self,
        revision: u64,
        key: (String, String),
        held: Option<ReviewHold>,
    ) -> Option<ReviewHold> {
        let mut reviews = self.reviews.lock();
        if reviews.0 != revision {
            if reviews.0 > revision {
                return held;
            }
            *reviews = (revision, HashMap::new());
        }
        reviews.1.insert(key, held);
        held
    }

    /// The policy's answer for `name` now.
    fn check(&self, session: &Session, connector: &str, name: &str) -> Result<Gate, Rule> {
        if self.is_retired(connector) {
            return Err(Rule::Retired);
        }
        if self.is_revoked(session, connector) {
            return Err(Rule::Revoked);
        }
        let offered = self.offered(session).map_err(|_| Rule::OutsideRole)?;
        match policy::check_call(&offered.surface, name) {
            Err(Rule::NotOffered) if session.opened.get().is_some_and(|o| o.contains(name)) => {
                Err(Rule::Revoked)
            }
            other => other,
        }
    }
}

/// A tool's hold from its review status: `Err` when the store did not
/// answer, which holds the tool too (fails closed) and is not kept.
fn review_hold(
    status: Result<crate::review::ToolReview, crate::store::StoreError>,
) -> Result<Option<ReviewHold>, ReviewHold> {
    use crate::review::ReviewStatus;
    match status.map(|r| r.status) {
        Ok(ReviewStatus::Reviewed) => Ok(None),
        Ok(ReviewStatus::New) => Ok(Some(ReviewHold::New)),
        Ok(ReviewStatus::Changed) => Ok(Some(ReviewHold::Changed)),
        Err(_) => Err(ReviewHold::StoreUnavailable),
    }
}

/// A short tag no other process's boundary shares (4 random bytes, hex,
/// and a dash): the part of a call id that keeps two hosts' calls of one
/// session apart.
fn calls_from() -> String {
    let mut bytes = [0u8; 4];
    if getrandom::fill(&mut bytes).is_err() {
        bytes = std::process::id().to_be_bytes();
    }
    format!("{}-", hex::encode(bytes))
}

/// For a tool whose gate tells reads from mutations: whether the GraphQL
/// document in its `query` argument holds anything but queries, or why it
/// cannot be read (no `query` string, a parse error). `None` for other gates.
fn graphql_operation(gate: &Gate, args: &Value) -> Option<Result<bool, String>> {
    matches!(gate, Gate::ReadsRunMutationsGated { .. })
        .then(|| crate::capabilities::graphql::argument_mutates(args))
}

/// Whether a call through `gate` waits for a person, or is refused.
fn asks_person(gate: &Gate) -> Result<bool, Rule> {
    match gate {
        Gate::Open | Gate::Allowance { .. } => Ok(false),
        Gate::AsksPerson | Gate::Spend { .. } | Gate::ReadsRunMutationsGated { .. } => Ok(true),
        Gate::Refuses(r) => Err(*r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::AboveThreshold;

    #[test]
    fn gates_fail_closed_where_no_finer_rule_applies() {
        assert_eq!(asks_person(&Gate::Open), Ok(false));
        assert_eq!(asks_person(&Gate::AsksPerson), Ok(true));
        let spend = Gate::Spend {
            connector: "firecrawl".into(),
            above_threshold: AboveThreshold::AsksPerson,
        };
        assert_eq!(
            spend::pass(&spend, &Default::default()),
            None,
            "no threshold configured"
        );
        assert_eq!(
            asks_person(&spend),
            Ok(true),
            "without a threshold, every billed call asks before it runs"
        );
        let graphql = Gate::ReadsRunMutationsGated {
            mutations: MutationGate::AsksPerson,
        };
        assert_eq!(
            asks_person(&graphql),
            Ok(true),
            "a mutation cannot slip through as a read"
        );
        assert_eq!(
            asks_person(&Gate::Refuses(Rule::ApprovalRequired)),
            Err(Rule::ApprovalRequired)
        );
    }
}

#[cfg(test)]
pub(super) mod test_guest {
    //! The capabilities test guest behind a boundary on a fresh SQLite
    //! store: the setup the boundary's own tests share.
    use super::*;
    use crate::runtime::{Runtime, RuntimeConfig};
    use crate::store::SqliteStore;

    /// The guest as loaded, and the store its boundary keeps.
    pub(in crate::boundary) struct Guest {
        /// Kept alive for the component it compiled.
        _runtime: Runtime,
        pub component: LoadedComponent,
        pub store: Arc<dyn Store>,
        _dir: tempfile::TempDir,
    }

    /// The guest loaded by a runtime configured as `config`.
    pub(in crate::boundary) fn load(config: RuntimeConfig) -> Guest {
        let runtime = Runtime::new(config).unwrap();
        let component = runtime
            .load_file(std::path::Path::new(scout_tests::components::CAPABILITIES))
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("t.db")).unwrap());
        Guest {
            _runtime: runtime,
            component,
            store,
            _dir: dir,
        }
    }

    impl Guest {
        /// A boundary over the seed's catalogue with the guest admitted;
        /// its billed calls run unasked at or under `threshold` credits.
        pub(in crate::boundary) fn boundary(&self, threshold: Option<u64>) -> Boundary {
            let spec = Catalog::seed()
                .admit(&self.component.info().manifest)
                .expect("the test guest is admitted");
            Boundary::new(
                self.store.clone(),
                Catalog::seed().with_spec(spec),
                Switches::default(),
            )
            .asking_above(threshold.map(|t| ("capabilities".to_string(), t)))
        }
    }
}

#[cfg(test)]
mod resolved {
    use super::*;
    use crate::policy::{BrandFacts, Role, SessionInput};
    use crate::runtime::RuntimeConfig;
    use crate::store::TraceState;

    /// A granter that keeps the name of each tool it was asked to grant.
    #[derive(Default)]
    struct Recording(parking_lot::Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl Granter for Recording {
        async fn grant(&self, call: &Authorized<'_>) -> Capabilities {
            self.0.lock().push(call.called().name.clone());
            Capabilities::default()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_carries_its_resolved_tool_and_an_unknown_name_is_denied_as_not_offered() {
        let guest = super::test_guest::load(RuntimeConfig {
            max_concurrent_calls: 2,
            ..Default::default()
        });
        let (component, store) = (&guest.component, &guest.store);
        // The guest bills: under a threshold its calls run, gated by their meter.
        let boundary = guest.boundary(Some(5));
        let session = Session::new(
            "s-resolved",
            "acme",
            SessionInput::new(Role::PersonChat)
                .brand(BrandFacts::with_connectors(["capabilities"])),
        );
        let granter = Recording::default();
        let args = json!({"folder": "notes", "path": "a.txt"});

        let unknown = boundary
            .call(
                &session,
                component,
                CallRequest::new("capabilities_no_such_tool", &args),
                &granter,
            )
            .await
            .expect_err("a name the component does not serve never runs");
        assert_eq!(unknown.rule, Rule::NotOffered);
        assert_eq!(unknown.told(), Rule::NotOffered.safe_reason());
        assert!(granter.0.lock().is_empty(), "nothing granted for it");
        let rows = store.trace_for_session("s-resolved").await.unwrap();
        let states: Vec<(TraceState, Option<&str>)> =
            rows.iter().map(|r| (r.state, r.rule.as_deref())).collect();
        assert_eq!(
            states,
            [
                (TraceState::Requested, None),
                (TraceState::PermissionDenied, Some("not_offered"))
            ],
            "requested, then refused as a name outside the surface"
        );

        boundary
            .call(
                &session,
                component,
                CallRequest::new("capabilities_read_text", &args),
                &granter,
            )
            .await
            .expect("a read the session is offered passes the boundary");
        assert_eq!(
            *granter.0.lock(),
            ["capabilities_read_text"],
            "the grant is handed the tool the call resolved"
        );
    }
}
