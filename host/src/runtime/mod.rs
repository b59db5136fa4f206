//! The wasmtime runtime: engine, component loading, and one fresh store per call.
//!
//! DESIGN D1, D2, D5. Components are compiled once (and cached on disk, keyed
//! by the component's hash and the engine's configuration); loading refuses a
//! component whose imports fall outside the contract, naming every offending
//! import, and one whose manifest and exports disagree. A component not in
//! the cache is checked on its shape (`shape`: its types without its code,
//! compiled in milliseconds) and compiled in the background (`compile`), so
//! a host with many connectors serves as soon as their surfaces are known;
//! each call waits for its own component's compile only. Each call gets a new
//! store from the pooling allocator with an epoch deadline, a wall-clock
//! deadline that includes time spent in host calls, and memory, table and
//! instance limits; a store that trapped is dropped with the call.
//!
//! Split by concern: this module holds the engine (configuration, the
//! linker that defines the contract and the minimal WASI) and the types a
//! caller sees; `cache` the compile cache, `load` the checks a component
//! passes at load, `shape` and `compile` the background compile, `call`
//! the fresh store of one call and its run, `ticker` the thread that
//! advances the epoch while a call runs.

mod cache;
mod call;
mod compile;
mod load;
mod shape;
mod ticker;

pub use cache::default_cache_dir;
pub use compile::CompileHold;
pub use load::{import_allowed, import_inert, read_manifest};

use crate::capabilities::Capabilities;
use crate::capabilities::http::HttpExchange;
use crate::capabilities::log::GuestLog;
use crate::capabilities::routes::RouteSet;
use crate::capabilities::state::{CallDeadline, CallLimiter, CallState, HasTable};
use crate::convert;
use crate::error::{CallError, LoadError};
use crate::output::CappedOutput;
use crate::schema;
use compile::{Compilation, CompileQueue};
use scout_manifest::{Effect, Manifest};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::types::{ComponentItem, Type};
use wasmtime::component::{
    Component, ComponentExportIndex, InstancePre, Linker, ResourceTable, Val,
};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, Strategy,
    UpdateDeadline,
};

/// Entries of a call's resource table, WASI's own included (streams,
/// pollables, errors): a guest that asks for stdout a million times and
/// never drops the handles traps at this many instead of growing the host's
/// memory. A Rust guest holds a handful at a time.
pub const MAX_TABLE_ENTRIES: usize = 1024;

/// Bytes at the start of a pooled table kept resident between calls
/// (zeroed, not unmapped; 64 slots of 16 tables keep 16 MiB at most).
/// Measured (`tool_call`, one run): a fresh store and instantiation
/// 10.4 → 6.2 µs, a call refused in the guest 28.4 → 20.0 µs.
const KEEP_RESIDENT_PER_TABLE: usize = 16 << 10;

/// What one pooling slot holds: the core instances, memories and tables
/// of a Rust connector's call, with room to spare. A call of a larger
/// component (another language's runtime) takes several slots, so the
/// pool's totals stay what they were for every connector.
const CORE_INSTANCES_PER_SLOT: u32 = 16;
const MEMORIES_PER_SLOT: u32 = 2;
const TABLES_PER_SLOT: u32 = 16;

/// The most slots one call may take: the pool's per-component ceiling.
/// A componentize-py component (38 core instances) takes 3.
const MAX_SLOTS_PER_CALL: u32 = 4;

/// Freed pool slots reset together. Measured (`tool_call`, one run): a call
/// refused in the guest 20.0 → 17.5 µs against resetting each slot alone.
const DECOMMIT_BATCH: usize = 16;

/// Limits and locations of a runtime.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where compiled components are cached; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Largest linear memory of a call.
    pub max_memory_bytes: usize,
    /// Largest table of a call.
    pub max_table_elements: usize,
    /// Calls that can run at once (pooling allocator slots).
    pub max_concurrent_calls: u32,
    /// Wall-clock deadline of a call, host calls included.
    pub call_timeout: Duration,
    /// Bytes of stdout and of stderr kept per call.
    pub output_cap: usize,
    /// How often the epoch ticks; the deadline is checked at each tick.
    pub epoch_tick: Duration,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cache_dir: None,
            max_memory_bytes: 64 << 20,
            max_table_elements: 20_000,
            max_concurrent_calls: 64,
            call_timeout: Duration::from_secs(30),
            output_cap: 64 << 10,
            epoch_tick: Duration::from_millis(10),
        }
    }
}

/// Compiles, checks and runs components. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    engine: Engine,
    linker: Linker<CallState>,
    config: RuntimeConfig,
    /// Advances the engine's epoch while a call's store is alive.
    ticker: ticker::Ticker,
    /// One permit per pooling slot: a call waits for a free slot (at most
    /// its timeout) instead of failing while others run.
    slots: Arc<tokio::sync::Semaphore>,
    /// Components loaded from their shape, waiting for their real compile.
    compiles: CompileQueue,
}

/// Everything the host knows about a component before running it.
#[derive(Debug, Clone)]
pub struct ComponentInfo {
    /// What the component says about itself (from its WIT docs).
    pub manifest: Manifest,
    /// Every tool, read tools first.
    pub tools: Vec<Tool>,
    /// Every import of the component, as named in the binary.
    pub imports: Vec<String>,
    /// The imports outside the contract (a loadable component has none).
    pub forbidden_imports: Vec<String>,
    /// SHA-256 of the component's bytes.
    pub sha256: String,
}

/// What a call of tool `name` of `connector` would reach, the consequence
/// a refusal's lineage counts ([`crate::boundary::lineage`]): each route it
/// declares that changes something (with its destination), or all its
/// routes for a read, or the tool's name where it declares none; prefixed
/// by its connector and effect class.
fn reaches(
    connector: &str,
    effect: Effect,
    routes: &[scout_manifest::Route],
    name: &str,
) -> Vec<String> {
    let effect = effect.as_str();
    let shown = |r: &scout_manifest::Route| {
        format!(
            "{connector} {effect} {}{} {}",
            r.destination
                .as_deref()
                .map(|d| format!("{d}:"))
                .unwrap_or_default(),
            r.method.as_str(),
            r.path
        )
    };
    let changing: Vec<String> = routes
        .iter()
        .filter(|r| !matches!(r.method.as_str(), "GET" | "HEAD") && !r.read_only)
        .map(shown)
        .collect();
    if !changing.is_empty() {
        return changing;
    }
    let all: Vec<String> = routes.iter().map(shown).collect();
    if all.is_empty() {
        vec![format!("{connector} {effect} tool {name}")]
    } else {
        all
    }
}

/// The parameters of `tools` an agent sees only the names of (no
/// description), as `TOOL.PARAMETER`: `scout-host build` lists them, and
/// the catalogue's test allows none.
pub fn undescribed_parameters(tools: &[Tool]) -> Vec<String> {
    tools
        .iter()
        .flat_map(|t| {
            crate::schema::undescribed_parameters(&t.input_schema)
                .into_iter()
                .map(move |p| format!("{}.{p}", t.name))
        })
        .collect()
}

/// One tool of a component.
#[derive(Debug, Clone)]
pub struct Tool {
    /// Wire name, e.g. `github_read_file`.
    pub name: String,
    /// WIT function name, e.g. `read-file`.
    pub function: String,
    /// Read or write.
    pub effect: Effect,
    /// From the WIT doc comment.
    pub description: String,
    /// JSON Schema derived from the WIT parameter types.
    pub input_schema: Value,
    /// JSON Schema of a successful result, an object as MCP's `outputSchema`
    /// wants (derived from the WIT result's `ok` type).
    pub output_schema: Value,
    /// Whether the result is wrapped as `{"result": value}` in that object
    /// (any `ok` type but a record).
    pub output_wrapped: bool,
    /// The requests it may make through its `http` handle (from the manifest).
    pub routes: Vec<scout_manifest::Route>,
    /// The connectors a joint tool reads (from the manifest; empty for any
    /// other tool): each gets a handle of its own when the call is granted.
    pub reads_from: Vec<String>,
    /// What a call of it would reach, as a refusal's lineage counts it
    /// ([`crate::boundary::lineage`]); computed once, at load.
    pub(crate) reaches: Vec<String>,
    route_set: Arc<RouteSet>,
    params: Vec<(String, Type)>,
    /// Each parameter's declared range (`params[i]`'s), enforced at the call.
    ranges: Vec<Option<(f64, f64)>>,
    /// Which parameters are the contract's `json` type (`params[i]`'s):
    /// the guest receives their canonical text.
    json_params: Vec<bool>,
    /// The component interface exporting it (`github:connector/read-tools@0.1.0`);
    /// `None` for a remote MCP server's tool.
    export: Option<String>,
    /// The digest an operator's review approves ([`crate::review`]),
    /// computed at its first use.
    pub(crate) review_digest: std::sync::OnceLock<String>,
}

impl Tool {
    /// The agent's arguments with each `json` parameter sent as JSON text
    /// replaced by the value it denotes (`None` when nothing changes): what
    /// the boundary digests and a person is shown.
    pub fn json_text_as_values(&self, args: &Value) -> Option<Value> {
        crate::convert::json_text_as_values(&self.params, &self.json_params, args)
    }

    /// The agent's arguments as the guest's values: typed as the WIT
    /// declares, each `json` parameter as its canonical text, each number
    /// within its declared range; else where and why they do not fit. The
    /// boundary asks this before it asks a person about a call, and the
    /// run takes these values.
    pub(crate) fn guest_values(
        &self,
        args: &Value,
    ) -> Result<Vec<wasmtime::component::Val>, crate::convert::Mismatch> {
        use crate::convert;
        let canonical = convert::json_as_canonical_text(&self.params, &self.json_params, args)?;
        let vals = convert::args_to_vals(&self.params, canonical.as_ref().unwrap_or(args))?;
        convert::within_ranges(&self.params, &self.ranges, &vals)?;
        Ok(vals)
    }

    /// Where and why `args` do not fit this tool's parameters ([`Tool::guest_values`]);
    /// `None` when they fit, or when the tool is a remote MCP server's,
    /// whose server judges its own arguments.
    pub fn arguments_misfit(&self, args: &Value) -> Option<crate::convert::Mismatch> {
        self.export.as_ref()?;
        self.guest_values(args).err()
    }
}

/// A checked component, ready to be called; or a remote MCP server's
/// tools as this host serves them now (see [`LoadedComponent::remote`]).
pub struct LoadedComponent {
    backend: Backend,
    info: ComponentInfo,
    by_name: BTreeMap<String, usize>,
    /// The capability interfaces it imports, read once at load: a call's
    /// grant asks them without scanning the imports.
    interfaces: Interfaces,
}

/// Which of the contract's capability interfaces a component imports.
#[derive(Debug, Clone, Copy, Default)]
struct Interfaces {
    http: bool,
    meter: bool,
    folder: bool,
    log: bool,
}

impl Interfaces {
    /// Read from `imports`, as named in the binary.
    fn of(imports: &[String]) -> Interfaces {
        let imports = |name: &str| imports.iter().any(|i| imports_named(i, name));
        Interfaces {
            http: imports("http"),
            meter: imports("meter"),
            folder: imports("folder"),
            log: imports("log"),
        }
    }
}

/// Whether import `import` is the `scout:connector` interface `name`.
fn imports_named(import: &str, name: &str) -> bool {
    import
        .strip_prefix("scout:connector/")
        .and_then(|rest| rest.strip_prefix(name))
        .is_some_and(|rest| rest.starts_with('@'))
}

/// What runs a connector's tools.
enum Backend {
    /// A WebAssembly component, instantiated fresh for each call.
    Wasm {
        runtime: Arc<RuntimeInner>,
        /// Its compiled code, or the compile a call waits for.
        compiled: Arc<Compilation>,
        /// Pooling slots a call holds ([`load::slots_per_call`]).
        slots_per_call: u32,
    },
    /// A remote MCP server: each call goes through the `mcp` handle the
    /// host grants it ([`crate::capabilities::mcp`]); nothing runs here.
    Remote { call_timeout: Duration },
}

/// The result of a call that ran.
#[derive(Debug, Clone, Serialize)]
pub struct CallOutcome {
    /// `{"ok": value}` or `{"err": tool-error}`: the guest's own answer.
    pub output: ToolOutput,
    /// Captured stdout (capped).
    pub stdout: String,
    /// Captured stderr (capped).
    pub stderr: String,
    /// Bytes of stdout and stderr dropped past the cap.
    pub output_dropped: u64,
    /// Lines the guest logged.
    pub logs: Vec<GuestLog>,
    /// Requests the guest made through its `http` handle.
    pub http: Vec<HttpExchange>,
    /// What obtaining and renewing the call's credentials did (token
    /// endpoint statuses, never a token).
    pub credentials: Vec<Value>,
    /// Wall-clock time of the call, instantiation included.
    pub micros: u64,
    /// Of which instantiating the component (for `/metrics`; not traced).
    #[serde(skip)]
    pub instantiate_micros: u64,
    /// Whether the ok value is wrapped as `{"result": value}` in the
    /// structured content (the tool's [`Tool::output_wrapped`]; not traced).
    #[serde(skip)]
    pub output_wrapped: bool,
}

/// A tool's own answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolOutput {
    /// The tool succeeded with this value.
    Ok(Value),
    /// The tool returned its `tool-error` variant.
    Err(Value),
}

impl ToolOutput {
    /// The success value, if any.
    pub fn ok(&self) -> Option<&Value> {
        match self {
            ToolOutput::Ok(v) => Some(v),
            ToolOutput::Err(_) => None,
        }
    }
    /// The tool error, if any.
    pub fn err(&self) -> Option<&Value> {
        match self {
            ToolOutput::Ok(_) => None,
            ToolOutput::Err(e) => Some(e),
        }
    }
}

impl Runtime {
    /// Builds the engine (DESIGN D5) and the linker that defines the contract.
    pub fn new(config: RuntimeConfig) -> Result<Runtime, LoadError> {
        let engine_err = LoadError::Engine;
        let mut pool = PoolingAllocationConfig::default();
        let slots = config.max_concurrent_calls.max(1);
        // Room for one call of the largest component even with one slot.
        let units = slots.max(MAX_SLOTS_PER_CALL);
        pool.total_component_instances(slots)
            .total_core_instances(units * CORE_INSTANCES_PER_SLOT)
            .total_memories(units * MEMORIES_PER_SLOT)
            .total_tables(units * TABLES_PER_SLOT)
            .total_stacks(slots)
            .max_memory_size(config.max_memory_bytes)
            .table_elements(config.max_table_elements)
            .max_core_instances_per_component(MAX_SLOTS_PER_CALL * CORE_INSTANCES_PER_SLOT)
            .max_memories_per_component(MAX_SLOTS_PER_CALL * MEMORIES_PER_SLOT)
            .max_tables_per_component(MAX_SLOTS_PER_CALL * TABLES_PER_SLOT)
            // A slot's tables are reset for the next call with `memset`, not
            // `madvise`: the next instantiation takes no page faults there.
            // Linear memory stays reset by `madvise`: a Rust guest's stack
            // and heap start at 1 MiB, beyond what a `memset` pays for, and
            // PAGEMAP_SCAN (which finds the touched pages) measured slower.
            .table_keep_resident(KEEP_RESIDENT_PER_TABLE)
            .pagemap_scan(wasmtime::Enabled::No)
            // Freed slots are reset in batches: one `madvise` flush and TLB
            // shootdown for many calls. A queued slot is not reused before
            // its reset (wasmtime flushes the queue when it runs short).
            .decommit_batch_size(DECOMMIT_BATCH);

        let mut cfg = Config::new();
        cfg.strategy(Strategy::Cranelift)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
            .epoch_interruption(true)
            .wasm_component_model(true)
            // Proposals a connector does not need stay off.
            .wasm_memory64(false)
            // On for the adapters wasmtime makes between two components'
            // memories (a Python connector composed with its trapping
            // sockets, scout_build::sockets); off, wasmtime 50 panics
            // compiling such a component. A guest module still defines at
            // most one memory: the pool's `max_memories_per_module` is 1.
            .wasm_multi_memory(true)
            .wasm_custom_page_sizes(false)
            .wasm_wide_arithmetic(false)
            .wasm_stack_switching(false);
        // Threads, GC and function references are not compiled into this
        // build of wasmtime at all (see the workspace's feature list).
        let engine = Engine::new(&cfg).map_err(engine_err)?;

        let mut linker: Linker<CallState> = Linker::new(&engine);
        link_minimal_wasi(&mut linker).map_err(engine_err)?;
        crate::capabilities::state::add_to_linker(&mut linker).map_err(engine_err)?;

        let ticker = {
            let engine = engine.clone();
            ticker::Ticker::start(config.epoch_tick, move || engine.increment_epoch())
                .map_err(LoadError::EpochThread)?
        };
        let slots = Arc::new(tokio::sync::Semaphore::new(
            config.max_concurrent_calls.max(1) as usize,
        ));
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                config,
                ticker,
                slots,
                compiles: CompileQueue::default(),
            }),
        })
    }

    /// The runtime's configuration.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }
}

impl ComponentInfo {
    /// The `scout:connector` capability interfaces it imports (`http`,
    /// `meter`, `folder`, `log`; the shared `types` left out): its authority
    /// beyond computing.
    pub fn capabilities(&self) -> Vec<&str> {
        self.imports
            .iter()
            .filter_map(|i| i.strip_prefix("scout:connector/"))
            .map(|i| i.split('@').next().unwrap_or(i))
            .filter(|i| *i != "types")
            .collect()
    }
}

impl LoadedComponent {
    /// What the component is and offers.
    pub fn info(&self) -> &ComponentInfo {
        &self.info
    }

    /// The connector's name, e.g. `github`.
    pub fn name(&self) -> &str {
        &self.info.manifest.connector
    }

    /// Every tool.
    pub fn tools(&self) -> &[Tool] {
        &self.info.tools
    }

    /// Whether the component imports the `scout:connector` interface
    /// `name` (`http`, `meter`, `folder`, `log`).
    pub fn imports_interface(&self, name: &str) -> bool {
        match name {
            "http" => self.interfaces.http,
            "meter" => self.interfaces.meter,
            "folder" => self.interfaces.folder,
            "log" => self.interfaces.log,
            _ => self.info.imports.iter().any(|i| imports_named(i, name)),
        }
    }

    /// The tool with this wire name.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.info.tools[i])
    }

    /// Waits for the component's compile (at once when it was compiled at
    /// load, or is a remote server's): its error when it did not compile.
    pub async fn compiled(&self) -> Result<(), CallError> {
        match &self.backend {
            Backend::Wasm { compiled, .. } => compiled.compiled().await.map(|_| ()),
            Backend::Remote { .. } => Ok(()),
        }
    }

    /// Why the component's background compile failed, once it has: its
    /// calls fail with it.
    pub fn compile_error(&self) -> Option<&str> {
        match &self.backend {
            Backend::Wasm { compiled, .. } => compiled.error(),
            Backend::Remote { .. } => None,
        }
    }

    /// Whether this is a remote MCP server's tools rather than a component.
    pub fn is_remote(&self) -> bool {
        matches!(self.backend, Backend::Remote { .. })
    }

    /// A remote MCP server's tools as served now: `manifest` names the
    /// connector and each tool's effect (what an operator reviewed; a tool
    /// not reviewed is a write, and held), `tools` what the server
    /// describes. Its only import is `http` (the handle its `mcp` session
    /// rides on), so the credential machinery of components applies.
    pub fn remote(
        manifest: Manifest,
        tools: Vec<RemoteTool>,
        call_timeout: Duration,
    ) -> LoadedComponent {
        let tools: Vec<Tool> = tools
            .into_iter()
            .map(|t| {
                let digest = std::sync::OnceLock::new();
                let _ = digest.set(t.digest);
                Tool {
                    function: t.name.clone(),
                    reaches: reaches(&manifest.connector, t.effect, &[], &t.name),
                    name: t.name,
                    effect: t.effect,
                    description: t.description,
                    input_schema: t.input_schema,
                    output_schema: t.output_schema,
                    output_wrapped: false,
                    routes: Vec::new(),
                    reads_from: Vec::new(),
                    route_set: Arc::new(RouteSet::none()),
                    params: Vec::new(),
                    ranges: Vec::new(),
                    json_params: Vec::new(),
                    export: None,
                    review_digest: digest,
                }
            })
            .collect();
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        let imports = vec![REMOTE_IMPORT.to_string()];
        LoadedComponent {
            backend: Backend::Remote { call_timeout },
            interfaces: Interfaces::of(&imports),
            info: ComponentInfo {
                manifest,
                tools,
                imports,
                forbidden_imports: Vec::new(),
                // No bytes: what an operator reviews is each tool's digest.
                sha256: String::new(),
            },
            by_name,
        }
    }
}

/// What a remote connector is said to import: the `http` handle its
/// upstream MCP session is sent through.
pub const REMOTE_IMPORT: &str = "scout:connector/http@0.2.0";

/// One tool of a remote MCP server, as [`LoadedComponent::remote`] takes it.
#[derive(Debug, Clone)]
pub struct RemoteTool {
    /// The server's name for it.
    pub name: String,
    pub effect: Effect,
    pub description: String,
    pub input_schema: Value,
    /// `{}` when the server gives none.
    pub output_schema: Value,
    /// What an operator reviews: name, description, schemas, annotations.
    pub digest: String,
}

/// Links the minimal WASI a Rust guest needs and the inert interfaces
/// other languages' runtimes import ([`load::INERT_WASI`]: the wall clock,
/// randomness, a filesystem with no preopen), and nothing else (DESIGN D2).
fn link_minimal_wasi(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::cli::{WasiCli, WasiCliView};
    use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
    use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
    use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, io, random};
    use wasmtime_wasi::random::{WasiRandom, WasiRandomView};
    clocks::monotonic_clock::add_to_linker::<CallState, WasiClocks>(
        linker,
        <CallState as WasiClocksView>::clocks,
    )?;
    // Inert: the host's clock and randomness at each call, and a
    // filesystem whose list of preopened directories is empty.
    clocks::wall_clock::add_to_linker::<CallState, WasiClocks>(
        linker,
        <CallState as WasiClocksView>::clocks,
    )?;
    random::random::add_to_linker::<CallState, WasiRandom>(
        linker,
        <CallState as WasiRandomView>::random,
    )?;
    random::insecure::add_to_linker::<CallState, WasiRandom>(
        linker,
        <CallState as WasiRandomView>::random,
    )?;
    random::insecure_seed::add_to_linker::<CallState, WasiRandom>(
        linker,
        <CallState as WasiRandomView>::random,
    )?;
    filesystem::types::add_to_linker::<CallState, WasiFilesystem>(
        linker,
        <CallState as WasiFilesystemView>::filesystem,
    )?;
    filesystem::preopens::add_to_linker::<CallState, WasiFilesystem>(
        linker,
        <CallState as WasiFilesystemView>::filesystem,
    )?;
    io::error::add_to_linker::<CallState, HasTable>(linker, |s| &mut s.table)?;
    io::poll::add_to_linker::<CallState, HasTable>(linker, |s| &mut s.table)?;
    io::streams::add_to_linker::<CallState, HasTable>(linker, |s| &mut s.table)?;
    cli::exit::add_to_linker::<CallState, WasiCli>(linker, <CallState as WasiCliView>::cli)?;
    cli::environment::add_to_linker::<CallState, WasiCli>(linker, <CallState as WasiCliView>::cli)?;
    cli::stdin::add_to_linker::<CallState, WasiCli>(linker, <CallState as WasiCliView>::cli)?;
    cli::stdout::add_to_linker::<CallState, WasiCli>(linker, <CallState as WasiCliView>::cli)?;
    cli::stderr::add_to_linker::<CallState, WasiCli>(linker, <CallState as WasiCliView>::cli)?;
    cli::terminal_input::add_to_linker::<CallState, WasiCli>(
        linker,
        <CallState as WasiCliView>::cli,
    )?;
    cli::terminal_output::add_to_linker::<CallState, WasiCli>(
        linker,
        <CallState as WasiCliView>::cli,
    )?;
    cli::terminal_stdin::add_to_linker::<CallState, WasiCli>(
        linker,
        <CallState as WasiCliView>::cli,
    )?;
    cli::terminal_stdout::add_to_linker::<CallState, WasiCli>(
        linker,
        <CallState as WasiCliView>::cli,
    )?;
    cli::terminal_stderr::add_to_linker::<CallState, WasiCli>(
        linker,
        <CallState as WasiCliView>::cli,
    )?;
    Ok(())
}

// `ClientHandle` is stored in the call's resource table.
const _: fn() = || {
    fn assert_send<T: Send + 'static>() {}
    assert_send::<crate::capabilities::http::ClientHandle>();
    assert_send::<CallState>();
};
