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

/// One metric family as `/metrics` exposes it: what the table in
/// `docs/operating.md` is generated from, and what a test holds the
/// registry to (every family and its labels).
pub struct Described {
    /// The family's name (`# TYPE` line); a counter's samples add `_total`.
    pub name: &'static str,
    /// `counter`, `gauge` or `histogram`.
    pub kind: &'static str,
    /// Its labels, in order, each with its values where they are few.
    pub labels: &'static [&'static str],
    pub what: &'static str,
}

/// Every family, in the order the table shows them.
pub const FAMILIES: &[Described] = &[
    Described {
        name: "mcp_server_operation_duration_seconds",
        kind: "histogram",
        labels: &["mcp_method_name", "gen_ai_tool_name", "error_type"],
        what: "each `tools/call` answered (the MCP semantic conventions' `mcp.server.operation.duration`, their buckets)",
    },
    Described {
        name: "mcp_server_session_duration_seconds",
        kind: "histogram",
        labels: &[],
        what: "sessions ended on this host, by how long they lasted",
    },
    Described {
        name: "scout_tool_calls",
        kind: "counter",
        labels: &[
            "connector",
            "tool",
            "outcome (`ok`, `tool_error`, `host_error`, `denied`)",
        ],
        what: "the policy funnel",
    },
    Described {
        name: "scout_denials",
        kind: "counter",
        labels: &["rule"],
        what: "refusals by the rule that decided (`not_offered`, `approval_denied`, `lease_not_held`, ...)",
    },
    Described {
        name: "scout_approvals_requested",
        kind: "counter",
        labels: &[],
        what: "calls on this host that asked a person",
    },
    Described {
        name: "scout_approval_wait_seconds",
        kind: "histogram",
        labels: &["outcome (`approved`, `denied`, `timed_out`, `revoked`)"],
        what: "how long those calls waited",
    },
    Described {
        name: "scout_approvals_pending",
        kind: "gauge",
        labels: &[],
        what: "approvals waiting for a person in the whole fleet (read from the store at each scrape, so every host shows the same figure)",
    },
    Described {
        name: "scout_upstream_requests",
        kind: "counter",
        labels: &["connector", "status_class (`1xx`..`5xx`, `error`)"],
        what: "what guests sent upstream",
    },
    Described {
        name: "scout_upstream_request_duration_seconds",
        kind: "histogram",
        labels: &["connector"],
        what: "how long those requests took",
    },
    Described {
        name: "scout_calls_in_flight",
        kind: "gauge",
        labels: &["connector"],
        what: "guest runs now",
    },
    Described {
        name: "scout_max_concurrent_calls",
        kind: "gauge",
        labels: &[],
        what: "guest runs this host allows at once (the pooling allocator's slots, for every connector together)",
    },
    Described {
        name: "scout_guest_run_duration_seconds",
        kind: "histogram",
        labels: &["connector"],
        what: "instantiation and the tool",
    },
    Described {
        name: "scout_sessions_opened",
        kind: "counter",
        labels: &["role"],
        what: "sessions opened on this host",
    },
    Described {
        name: "scout_sessions_active",
        kind: "gauge",
        labels: &[],
        what: "sessions this host holds now",
    },
    Described {
        name: "scout_sessions_refused",
        kind: "counter",
        labels: &["rule (`brand_live_sessions`, `brand_inbound_rate`)"],
        what: "session opens on this host its brand's limits refused",
    },
    Described {
        name: "scout_wasm_traps",
        kind: "counter",
        labels: &["connector", "kind (`deadline`, `memory`, `trap`)"],
        what: "guest runs the sandbox stopped",
    },
    Described {
        name: "scout_component_instantiate_seconds",
        kind: "histogram",
        labels: &["connector"],
        what: "instantiating the component for one call (from the pooling allocator)",
    },
    Described {
        name: "scout_trace_write_seconds",
        kind: "histogram",
        labels: &[],
        what: "a call's trace rows made durable: the wait for the group commit and the commit",
    },
    Described {
        name: "scout_trace_commit_seconds",
        kind: "histogram",
        labels: &[],
        what: "each trace transaction the writer commits (the fsync on SQLite, the round trip on PostgreSQL)",
    },
    Described {
        name: "scout_trace_group_size",
        kind: "histogram",
        labels: &[],
        what: "how many calls' batches one trace transaction carried",
    },
    Described {
        name: "scout_store_up",
        kind: "gauge",
        labels: &[],
        what: "1 when the store answered at this scrape, else 0",
    },
    Described {
        name: "scout_lease_held",
        kind: "gauge",
        labels: &[],
        what: "1 while this host holds its lease and may start calls (always 1 on SQLite)",
    },
    Described {
        name: "scout_lease_rejoins",
        kind: "counter",
        labels: &[],
        what: "times this host rejoined the fleet under a new identity after another host recovered it (always 0 on SQLite)",
    },
    Described {
        name: "scout_hosts_recovered",
        kind: "counter",
        labels: &[],
        what: "hosts that died (their lease ran out) that this host recovered: their approvals ended by `host_lost`, their calls marked `interrupted`; a host stopped cleanly released its lease and is never counted (always 0 on SQLite)",
    },
    Described {
        name: "scout_allowance_charged",
        kind: "counter",
        labels: &["connector", "unit"],
        what: "what the allowance ledger charged",
    },
    Described {
        name: "scout_allowance_refusals",
        kind: "counter",
        labels: &[
            "connector",
            "reason (`run_exhausted`, `day_exhausted`, `denied`, `invalid`)",
        ],
        what: "reservations an allowance refused",
    },
    Described {
        name: "scout_tls_reload_failures",
        kind: "counter",
        labels: &[],
        what: "`[tls]` certificate and key replacements that could not be served (unreadable, bad PEM, a key not the certificate's); the pair in use stays",
    },
    Described {
        name: "process_cpu_seconds",
        kind: "counter",
        labels: &[],
        what: "CPU time this process used, user and system (Linux)",
    },
    Described {
        name: "process_resident_memory_bytes",
        kind: "gauge",
        labels: &[],
        what: "its resident memory (Linux)",
    },
    Described {
        name: "process_open_fds",
        kind: "gauge",
        labels: &[],
        what: "its open file descriptors (Linux)",
    },
    Described {
        name: "process_start_time_seconds",
        kind: "gauge",
        labels: &[],
        what: "when it started, in seconds since the Unix epoch (Linux)",
    },
    Described {
        name: "scout_build_info",
        kind: "gauge",
        labels: &["version"],
        what: "inventory (always 1)",
    },
];

/// The metrics table of `docs/operating.md`, from [`FAMILIES`].
pub fn table() -> String {
    let mut text = String::from("| metric | type | labels | what |\n|---|---|---|---|\n");
    for family in FAMILIES {
        let name = if family.kind == "counter" {
            format!("{}_total", family.name)
        } else {
            family.name.to_string()
        };
        let labels = family
            .labels
            .iter()
            .map(|label| match label.split_once(' ') {
                Some((name, values)) => format!("`{name}` {values}"),
                None => format!("`{label}`"),
            })
            .collect::<Vec<_>>()
            .join(", ");
        text.push_str(&format!(
            "| `{name}` | {} | {labels} | {} |\n",
            family.kind, family.what
        ));
    }
    text
}

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
    sessions_refused: Family<Denial, Counter>,
    session_duration: Histogram,
    stopped: Family<Stopped, Counter>,
    instantiate: Histograms<ConnectorLabel>,
    trace_write: Histogram,
    charged: Family<Charged, Counter>,
    refused: Family<Refused, Counter>,
    /// Set at each scrape ([`Metrics::at_scrape`]).
    approvals_pending: Gauge,
    store_up: Gauge,
    lease_held: Gauge,
    tls_reload_failures: Counter,
    process: ProcessMetrics,
}

/// This process's figures, read from `/proc/self` at each scrape (Linux;
/// elsewhere they stay 0).
#[derive(Default)]
struct ProcessMetrics {
    cpu_seconds: Counter<f64, std::sync::atomic::AtomicU64>,
    /// The CPU time counted so far, so each scrape adds what was used since.
    cpu_counted: parking_lot::Mutex<f64>,
    resident_bytes: Gauge,
    open_fds: Gauge,
    start_time_seconds: Gauge,
}

impl ProcessMetrics {
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "process_cpu_seconds",
            "CPU time this process used, user and system",
            self.cpu_seconds.clone(),
        );
        registry.register(
            "process_resident_memory_bytes",
            "Resident memory of this process",
            self.resident_bytes.clone(),
        );
        registry.register(
            "process_open_fds",
            "Open file descriptors of this process",
            self.open_fds.clone(),
        );
        registry.register(
            "process_start_time_seconds",
            "When this process started, in seconds since the Unix epoch",
            self.start_time_seconds.clone(),
        );
    }

    #[cfg(target_os = "linux")]
    fn refresh(&self) {
        // proc(5) counts CPU time and the start in clock ticks of USER_HZ,
        // which Linux fixes at 100 for what /proc shows.
        const TICKS: f64 = 100.0;
        let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
            return;
        };
        // After the command's closing parenthesis: the 3rd field on, so
        // utime (14th) is at 11, stime (15th) at 12, starttime (22nd) at 19.
        let Some((_, after)) = stat.rsplit_once(')') else {
            return;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<f64>().ok());
        if let (Some(user), Some(system)) = (field(14), field(15)) {
            let used = (user + system) / TICKS;
            let mut counted = self.cpu_counted.lock();
            if used > *counted {
                self.cpu_seconds.inc_by(used - *counted);
                *counted = used;
            }
        }
        if let Some(start) = field(22)
            && let Ok(system) = std::fs::read_to_string("/proc/stat")
            && let Some(boot) = system
                .lines()
                .find_map(|l| l.strip_prefix("btime "))
                .and_then(|b| b.trim().parse::<f64>().ok())
        {
            self.start_time_seconds.set((boot + start / TICKS) as i64);
        }
        if let Ok(status) = std::fs::read_to_string("/proc/self/status")
            && let Some(kib) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        {
            self.resident_bytes.set(kib * 1024);
        }
        if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
            self.open_fds.set(fds.count() as i64);
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn refresh(&self) {}
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
        let sessions_refused = Family::<Denial, Counter>::default();
        registry.register(
            "scout_sessions_refused",
            "Session opens refused by their brand's limits, by rule",
            sessions_refused.clone(),
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
            registry.register(
                "scout_hosts_recovered",
                "Hosts whose lease ran out that this host recovered (PostgreSQL)",
                writer.recovered,
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
        let approvals_pending: Gauge = Gauge::default();
        registry.register(
            "scout_approvals_pending",
            "Approvals waiting for a person in the whole fleet (from the store)",
            approvals_pending.clone(),
        );
        let store_up: Gauge = Gauge::default();
        registry.register(
            "scout_store_up",
            "1 when the store answered at this scrape",
            store_up.clone(),
        );
        let lease_held: Gauge = Gauge::default();
        registry.register(
            "scout_lease_held",
            "1 while this host holds its lease and may start calls",
            lease_held.clone(),
        );
        let tls_reload_failures = Counter::default();
        registry.register(
            "scout_tls_reload_failures",
            "[tls] certificate and key replacements that could not be served (the pair in use stays)",
            tls_reload_failures.clone(),
        );
        let process = ProcessMetrics::default();
        process.register(&mut registry);
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
            sessions_refused,
            session_duration,
            stopped,
            instantiate,
            trace_write,
            charged,
            refused,
            approvals_pending,
            store_up,
            lease_held,
            tls_reload_failures,
            process,
        }
    }

    /// What is read afresh at each scrape: the fleet's pending approvals
    /// (`None` when the store did not answer), whether the store answered,
    /// whether this host holds its lease, and the process's figures.
    pub(crate) fn at_scrape(&self, pending: Option<usize>, lease_held: bool) {
        self.store_up.set(i64::from(pending.is_some()));
        if let Some(pending) = pending {
            self.approvals_pending.set(pending as i64);
        }
        self.lease_held.set(i64::from(lease_held));
        self.process.refresh();
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

    /// A `[tls]` replacement pair that could not be served.
    pub(crate) fn tls_reload_failed(&self) {
        self.tls_reload_failures.inc();
    }

    /// A session open its brand's limit `rule` refused.
    pub(crate) fn session_refused(&self, rule: &str) {
        self.sessions_refused
            .get_or_create(&Denial {
                rule: rule.to_string(),
            })
            .inc();
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

#[cfg(test)]
mod tests {
    use super::{CallOutcome, FAMILIES, Metrics};
    use std::collections::{BTreeMap, BTreeSet};
    use std::time::Duration;

    /// The registry exposes exactly the families [`FAMILIES`] describes,
    /// each of its kind and with its labels: the table in the docs is
    /// generated from that list, so it cannot say what `/metrics` does not.
    #[test]
    fn every_family_is_described_with_its_kind_and_labels() {
        let metrics = Metrics::new(8, Some(crate::store::WriterMetrics::default()));
        // One sample in every family with labels.
        metrics.call_answered(
            "github",
            Some("t"),
            CallOutcome::Denied("not_offered"),
            Duration::ZERO,
        );
        metrics.approval_decided("approved", Duration::ZERO);
        metrics.upstream_request("github", Some(200), 1);
        drop(metrics.run_started("github"));
        metrics.session_opened("person-chat");
        metrics.session_refused("brand_live_sessions");
        metrics.guest_stopped("github", "trap");
        metrics.instantiated("github", 1);
        let observer = metrics.allowance_observer("firecrawl", "credits");
        observer.charged(1);
        observer.refused(&crate::capabilities::meter::MeterError::Invalid(
            String::new(),
        ));
        metrics.at_scrape(Some(2), true);
        let text = metrics.render();

        let mut kinds = BTreeMap::new();
        let mut labels: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                kinds.insert(name.to_string(), kind.to_string());
            }
        }
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, _)) = line.split_once('{') else {
                continue;
            };
            let family = kinds
                .keys()
                .filter(|name| series.starts_with(name.as_str()))
                .max_by_key(|name| name.len())
                .unwrap_or_else(|| panic!("a sample of no family: {line}"));
            let inside = line.split_once('{').unwrap().1.split('}').next().unwrap();
            for pair in inside.split("\",") {
                let name = pair.split('=').next().unwrap().trim();
                if name != "le" {
                    labels
                        .entry(family.clone())
                        .or_default()
                        .insert(name.to_string());
                }
            }
        }
        let described: BTreeMap<String, String> = FAMILIES
            .iter()
            .map(|f| (f.name.to_string(), f.kind.to_string()))
            .collect();
        assert_eq!(
            kinds, described,
            "the families /metrics exposes, and their kinds"
        );
        for family in FAMILIES {
            let declared: BTreeSet<String> = family
                .labels
                .iter()
                .map(|l| l.split(' ').next().unwrap().to_string())
                .collect();
            assert_eq!(
                labels.get(family.name).cloned().unwrap_or_default(),
                declared,
                "the labels of {}",
                family.name
            );
        }
        assert!(text.contains("scout_approvals_pending 2"), "{text}");
        assert!(text.contains("scout_store_up 1"), "{text}");
    }
}
