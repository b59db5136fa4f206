//! `/metrics`: what an operator watches, in OpenMetrics text
//! (prometheus-client, one explicit registry per host).
//!
//! Every figure is taken where the boundary decides or the guest runs, so
//! the funnel counts exactly the calls the trace records. Labels stay
//! bounded: connectors this host runs, tools their components declare
//! (any other name an agent sends is `unknown`), the rules of
//! [`crate::policy::Rule`], outcomes and status classes; never a session,
//! approval or run id, an argument or a brand.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::time::Duration;

/// The operation-duration buckets the MCP semantic conventions advise (seconds).
const OPERATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
/// A person's wait: a second to the longest approval timeout.
const WAIT_BUCKETS: [f64; 9] = [1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0];
/// Upstream requests and guest runs (seconds).
const UPSTREAM_BUCKETS: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];
/// Instantiating a component from the pooling allocator (seconds).
const INSTANTIATE_BUCKETS: [f64; 9] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05,
];
/// A call's trace write: waiting for the group and its commit (seconds).
const TRACE_WRITE_BUCKETS: [f64; 10] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];
/// Sessions last up to a day (seconds).
const SESSION_BUCKETS: [f64; 8] = [
    60.0, 300.0, 900.0, 3600.0, 10800.0, 21600.0, 43200.0, 86400.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Operation {
    mcp_method_name: &'static str,
    gen_ai_tool_name: String,
    error_type: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Call {
    connector: String,
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Denial {
    rule: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Decision {
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Upstream {
    connector: String,
    status_class: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConnectorLabel {
    connector: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RoleLabel {
    role: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Stopped {
    connector: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Charged {
    connector: String,
    unit: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Refused {
    connector: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Build {
    version: &'static str,
}

/// One host's metrics.
pub struct Metrics {
    registry: Registry,
    operation: Histograms<Operation>,
    calls: Family<Call, Counter>,
    denials: Family<Denial, Counter>,
    approvals_asked: Counter,
    approval_wait: Histograms<Decision>,
    upstream: Family<Upstream, Counter>,
    upstream_duration: Histograms<ConnectorLabel>,
    in_flight: Family<ConnectorLabel, Gauge>,
    guest_run: Histograms<ConnectorLabel>,
    sessions_opened: Family<RoleLabel, Counter>,
    sessions_active: Gauge,
    session_duration: Histogram,
    stopped: Family<Stopped, Counter>,
    instantiate: Histograms<ConnectorLabel>,
    trace_write: Histogram,
    charged: Family<Charged, Counter>,
    refused: Family<Refused, Counter>,
}

/// A family of histograms, each made by a plain constructor.
type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn operation_histogram() -> Histogram {
    Histogram::new(OPERATION_BUCKETS)
}

fn wait_histogram() -> Histogram {
    Histogram::new(WAIT_BUCKETS)
}

fn upstream_histogram() -> Histogram {
    Histogram::new(UPSTREAM_BUCKETS)
}

fn instantiate_histogram() -> Histogram {
    Histogram::new(INSTANTIATE_BUCKETS)
}

/// One run's meter's view of the allowance families.
struct AllowanceObserver {
    charged: Counter,
    refused: Family<Refused, Counter>,
    connector: String,
}

impl crate::capabilities::meter::MeterObserver for AllowanceObserver {
    fn charged(&self, amount: u64) {
        self.charged.inc_by(amount);
    }

    fn refused(&self, why: &crate::capabilities::meter::MeterError) {
        use crate::capabilities::meter::MeterError;
        let reason = match why {
            MeterError::RunExhausted(_) => "run_exhausted",
            MeterError::DayExhausted(_) => "day_exhausted",
            MeterError::Invalid(_) => "invalid",
            MeterError::Denied(_) => "denied",
        };
        self.refused
            .get_or_create(&Refused {
                connector: self.connector.clone(),
                reason,
            })
            .inc();
    }
}

impl Metrics {
    /// A registry holding every family, `max_concurrent_calls` exposed
    /// beside the in-flight gauge it bounds, and the store's trace writer's
    /// figures when it measures them.
    pub fn new(max_concurrent_calls: u32, writer: Option<crate::store::WriterMetrics>) -> Metrics {
        let mut registry = Registry::default();
        let operation = Histograms::<Operation>::new_with_constructor(operation_histogram);
        registry.register_with_unit(
            "mcp_server_operation_duration",
            "MCP requests served, by method, tool and error type (the semantic conventions' mcp.server.operation.duration)",
            prometheus_client::registry::Unit::Seconds,
            operation.clone(),
        );
        let calls = Family::<Call, Counter>::default();
        registry.register(
            "scout_tool_calls",
            "Tool calls by connector, tool and outcome (ok, tool_error, host_error, denied)",
            calls.clone(),
        );
        let denials = Family::<Denial, Counter>::default();
        registry.register(
            "scout_denials",
            "Calls the boundary refused, by the rule that refused them",
            denials.clone(),
        );
        let approvals_asked = Counter::default();
        registry.register(
            "scout_approvals_requested",
            "Calls that asked a person (pending = requested - decided)",
            approvals_asked.clone(),
        );
        let approval_wait = Histograms::<Decision>::new_with_constructor(wait_histogram);
        registry.register_with_unit(
            "scout_approval_wait",
            "How long calls waited for a person, by outcome (approved, denied, timed_out, revoked)",
            prometheus_client::registry::Unit::Seconds,
            approval_wait.clone(),
        );
        let upstream = Family::<Upstream, Counter>::default();
        registry.register(
            "scout_upstream_requests",
            "Requests guests sent upstream, by connector and status class (2xx..5xx, error)",
            upstream.clone(),
        );
        let upstream_duration =
            Histograms::<ConnectorLabel>::new_with_constructor(upstream_histogram);
        registry.register_with_unit(
            "scout_upstream_request_duration",
            "Upstream request durations by connector",
            prometheus_client::registry::Unit::Seconds,
            upstream_duration.clone(),
        );
        let in_flight = Family::<ConnectorLabel, Gauge>::default();
        registry.register(
            "scout_calls_in_flight",
            "Guest runs in progress, by connector",
            in_flight.clone(),
        );
        let max_calls: Gauge = Gauge::default();
        max_calls.set(i64::from(max_concurrent_calls));
        registry.register(
            "scout_max_concurrent_calls",
            "Guest runs the host allows at once (pooling allocator slots)",
            max_calls,
        );
        let guest_run = Histograms::<ConnectorLabel>::new_with_constructor(upstream_histogram);
        registry.register_with_unit(
            "scout_guest_run_duration",
            "Guest runs (instantiation and the tool) by connector",
            prometheus_client::registry::Unit::Seconds,
            guest_run.clone(),
        );
        let sessions_opened = Family::<RoleLabel, Counter>::default();
        registry.register(
            "scout_sessions_opened",
            "Sessions opened on this host, by role",
            sessions_opened.clone(),
        );
        let sessions_active: Gauge = Gauge::default();
        registry.register(
            "scout_sessions_active",
            "Sessions this host serves now",
            sessions_active.clone(),
        );
        let session_duration = Histogram::new(SESSION_BUCKETS.iter().copied());
        registry.register_with_unit(
            "mcp_server_session_duration",
            "Sessions ended, by how long they lasted (the semantic conventions' mcp.server.session.duration)",
            prometheus_client::registry::Unit::Seconds,
            session_duration.clone(),
        );
        let stopped = Family::<Stopped, Counter>::default();
        registry.register(
            "scout_wasm_traps",
            "Guest runs the sandbox stopped, by connector and kind (deadline, memory, trap)",
            stopped.clone(),
        );
        let instantiate = Histograms::<ConnectorLabel>::new_with_constructor(instantiate_histogram);
        registry.register_with_unit(
            "scout_component_instantiate",
            "Instantiating a component for one call, by connector",
            prometheus_client::registry::Unit::Seconds,
            instantiate.clone(),
        );
        let trace_write = Histogram::new(TRACE_WRITE_BUCKETS);
        registry.register_with_unit(
            "scout_trace_write",
            "A call's trace rows made durable: waiting for the group commit and the commit",
            prometheus_client::registry::Unit::Seconds,
            trace_write.clone(),
        );
        if let Some(writer) = writer {
            registry.register(
                "scout_trace_group_size",
                "Calls' batches per trace transaction (group commit)",
                writer.group_size,
            );
            registry.register_with_unit(
                "scout_trace_commit",
                "Trace transactions, by how long the commit took",
                prometheus_client::registry::Unit::Seconds,
                writer.commit_seconds,
            );
            registry.register(
                "scout_lease_rejoins",
                "Times this host rejoined the fleet under a new identity after another host recovered it (PostgreSQL)",
                writer.rejoins,
            );
        }
        let charged = Family::<Charged, Counter>::default();
        registry.register(
            "scout_allowance_charged",
            "Amounts charged to allowances, by connector and unit",
            charged.clone(),
        );
        let refused = Family::<Refused, Counter>::default();
        registry.register(
            "scout_allowance_refusals",
            "Reservations an allowance refused, by connector and reason (run_exhausted, day_exhausted, denied, invalid)",
            refused.clone(),
        );
        let build = Family::<Build, Gauge>::default();
        build
            .get_or_create(&Build {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1);
        registry.register("scout_build_info", "This host's version", build);
        Metrics {
            registry,
            operation,
            calls,
            denials,
            approvals_asked,
            approval_wait,
            upstream,
            upstream_duration,
            in_flight,
            guest_run,
            sessions_opened,
            sessions_active,
            session_duration,
            stopped,
            instantiate,
            trace_write,
            charged,
            refused,
        }
    }

    /// A guest run the sandbox stopped (`deadline`, `memory`, `trap`).
    pub(crate) fn guest_stopped(&self, connector: &str, kind: &'static str) {
        self.stopped
            .get_or_create(&Stopped {
                connector: connector.to_string(),
                kind,
            })
            .inc();
    }

    /// A component instantiated for one call in `micros`.
    pub(crate) fn instantiated(&self, connector: &str, micros: u64) {
        self.instantiate
            .get_or_create(&ConnectorLabel {
                connector: connector.to_string(),
            })
            .observe(micros as f64 / 1e6);
    }

    /// A call's trace rows written in `took`.
    pub(crate) fn trace_written(&self, took: Duration) {
        self.trace_write.observe(took.as_secs_f64());
    }

    /// What a run's meter of `connector` reports: its charges and refusals.
    pub(crate) fn allowance_observer(
        &self,
        connector: &str,
        unit: &str,
    ) -> std::sync::Arc<dyn crate::capabilities::meter::MeterObserver> {
        std::sync::Arc::new(AllowanceObserver {
            charged: self
                .charged
                .get_or_create(&Charged {
                    connector: connector.to_string(),
                    unit: unit.to_string(),
                })
                .clone(),
            refused: self.refused.clone(),
            connector: connector.to_string(),
        })
    }

    /// The OpenMetrics text of every family.
    pub fn render(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    /// One `tools/call` answered: `tool` is the declared tool's name, or
    /// `None` for a name the component does not declare.
    pub(crate) fn call_answered(
        &self,
        connector: &str,
        tool: Option<&str>,
        outcome: CallOutcome<'_>,
        took: Duration,
    ) {
        let tool = tool.unwrap_or("unknown").to_string();
        let (outcome, error_type) = match outcome {
            CallOutcome::Ok => ("ok", String::new()),
            CallOutcome::ToolError => ("tool_error", "tool_error".to_string()),
            CallOutcome::HostError => ("host_error", "host_error".to_string()),
            CallOutcome::Denied(rule) => {
                self.denials
                    .get_or_create(&Denial {
                        rule: rule.to_string(),
                    })
                    .inc();
                ("denied", rule.to_string())
            }
        };
        self.calls
            .get_or_create(&Call {
                connector: connector.to_string(),
                tool: tool.clone(),
                outcome,
            })
            .inc();
        self.operation
            .get_or_create(&Operation {
                mcp_method_name: "tools/call",
                gen_ai_tool_name: tool,
                error_type,
            })
            .observe(took.as_secs_f64());
    }

    /// A call asked a person.
    pub(crate) fn approval_asked(&self) {
        self.approvals_asked.inc();
    }

    /// A person's (or the timeout's) answer after `waited`.
    pub(crate) fn approval_decided(&self, outcome: &str, waited: Duration) {
        self.approval_wait
            .get_or_create(&Decision {
                outcome: outcome.to_string(),
            })
            .observe(waited.as_secs_f64());
    }

    /// A guest run starts; it is counted in flight until the guard drops.
    pub(crate) fn run_started(&self, connector: &str) -> RunGuard<'_> {
        let labels = ConnectorLabel {
            connector: connector.to_string(),
        };
        self.in_flight.get_or_create(&labels).inc();
        RunGuard {
            metrics: self,
            labels,
            started: std::time::Instant::now(),
        }
    }

    /// One upstream request a guest made (`status` `None`: no answer).
    pub(crate) fn upstream_request(&self, connector: &str, status: Option<u16>, micros: u64) {
        let status_class = match status {
            Some(100..=199) => "1xx",
            Some(200..=299) => "2xx",
            Some(300..=399) => "3xx",
            Some(400..=499) => "4xx",
            Some(500..=599) => "5xx",
            Some(_) | None => "error",
        };
        self.upstream
            .get_or_create(&Upstream {
                connector: connector.to_string(),
                status_class,
            })
            .inc();
        self.upstream_duration
            .get_or_create(&ConnectorLabel {
                connector: connector.to_string(),
            })
            .observe(micros as f64 / 1e6);
    }

    pub(crate) fn session_opened(&self, role: &str) {
        self.sessions_opened
            .get_or_create(&RoleLabel {
                role: role.to_string(),
            })
            .inc();
        self.sessions_active.inc();
    }

    pub(crate) fn session_ended(&self, lasted: Duration) {
        self.sessions_active.dec();
        self.session_duration.observe(lasted.as_secs_f64());
    }
}

/// How a call ended, for the funnel.
pub(crate) enum CallOutcome<'a> {
    Ok,
    ToolError,
    HostError,
    /// Refused, by the named rule.
    Denied(&'a str),
}

/// A guest run in flight; counted out when dropped.
pub(crate) struct RunGuard<'a> {
    metrics: &'a Metrics,
    labels: ConnectorLabel,
    started: std::time::Instant,
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        self.metrics.in_flight.get_or_create(&self.labels).dec();
        self.metrics
            .guest_run
            .get_or_create(&self.labels)
            .observe(self.started.elapsed().as_secs_f64());
    }
}
