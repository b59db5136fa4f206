//! The wasmtime runtime: engine, component loading, and one fresh store per call.
//!
//! DESIGN D1, D2, D5. Components are compiled once (and cached on disk, keyed
//! by the component's hash and the engine's configuration); loading refuses a
//! component whose imports fall outside the contract, naming every offending
//! import, and one whose manifest and exports disagree. Each call gets a new
//! store from the pooling allocator with an epoch deadline, a wall-clock
//! deadline that includes time spent in host calls, and memory, table and
//! instance limits; a store that trapped is dropped with the call.

use crate::capabilities::Capabilities;
use crate::capabilities::http::HttpExchange;
use crate::capabilities::log::GuestLog;
use crate::capabilities::routes::RouteSet;
use crate::capabilities::state::{CallLimiter, CallState, HasSelf, HasTable};
use crate::convert;
use crate::error::{CallError, LoadError};
use crate::output::CappedOutput;
use crate::schema;
use scout_manifest::{Effect, Manifest};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wasmtime::component::types::{ComponentItem, Type};
use wasmtime::component::{
    Component, ComponentExportIndex, InstancePre, Linker, ResourceTable, Val,
};
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, Strategy,
    UpdateDeadline,
};
use wasmtime_wasi::WasiCtx;

/// WASI interfaces a Rust guest needs (measured), and the only ones linked.
///
/// `wasi:clocks/monotonic-clock` is imported by every Rust 1.97 `wasm32-wasip2`
/// guest's standard library; it expresses no effect, and the host serves it
/// at a coarse 1 ms resolution (see [`CoarseClock`]).
pub(crate) const ALLOWED_WASI: &[&str] = &[
    "wasi:clocks/monotonic-clock",
    "wasi:io/poll",
    "wasi:io/error",
    "wasi:io/streams",
    "wasi:cli/environment",
    "wasi:cli/exit",
    "wasi:cli/stdin",
    "wasi:cli/stdout",
    "wasi:cli/stderr",
    "wasi:cli/terminal-input",
    "wasi:cli/terminal-output",
    "wasi:cli/terminal-stdin",
    "wasi:cli/terminal-stdout",
    "wasi:cli/terminal-stderr",
];

/// The capability interfaces of the contract.
pub(crate) const ALLOWED_SCOUT: &[&str] = &[
    "scout:connector/types",
    "scout:connector/http",
    "scout:connector/meter",
    "scout:connector/folder",
    "scout:connector/log",
];

/// Entries of a call's resource table, WASI's own included (streams,
/// pollables, errors): a guest that asks for stdout a million times and
/// never drops the handles traps at this many instead of growing the host's
/// memory. A Rust guest holds a handful at a time.
pub const MAX_TABLE_ENTRIES: usize = 1024;

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
    ticker_stop: Arc<AtomicBool>,
    /// One permit per pooling slot: a call waits for a free slot (at most
    /// its timeout) instead of failing while others run.
    slots: Arc<tokio::sync::Semaphore>,
}

impl Drop for RuntimeInner {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
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
    route_set: Arc<RouteSet>,
    params: Vec<(String, Type)>,
    export: ComponentExportIndex,
    /// The digest an operator's review approves ([`crate::review`]),
    /// computed at its first use.
    pub(crate) review_digest: std::sync::OnceLock<String>,
}

/// A checked component, ready to be called.
pub struct LoadedComponent {
    runtime: Arc<RuntimeInner>,
    info: ComponentInfo,
    by_name: BTreeMap<String, usize>,
    pre: InstancePre<CallState>,
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
    /// Wall-clock time of the call, instantiation included.
    pub micros: u64,
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
        let engine_err = |e: wasmtime::Error| LoadError::Engine(format!("{e:#}"));
        let mut pool = PoolingAllocationConfig::default();
        let slots = config.max_concurrent_calls.max(1);
        pool.total_component_instances(slots)
            .total_core_instances(slots * 16)
            .total_memories(slots * 2)
            .total_tables(slots * 16)
            .total_stacks(slots)
            .max_memory_size(config.max_memory_bytes)
            .table_elements(config.max_table_elements)
            .max_core_instances_per_component(32)
            .max_memories_per_component(2)
            .max_tables_per_component(32);

        let mut cfg = Config::new();
        cfg.strategy(Strategy::Cranelift)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
            .epoch_interruption(true)
            .wasm_component_model(true)
            // Proposals a connector does not need stay off.
            .wasm_memory64(false)
            .wasm_multi_memory(false)
            .wasm_custom_page_sizes(false)
            .wasm_wide_arithmetic(false)
            .wasm_stack_switching(false);
        // Threads, GC and function references are not compiled into this
        // build of wasmtime at all (see the workspace's feature list).
        let engine = Engine::new(&cfg).map_err(engine_err)?;

        let mut linker: Linker<CallState> = Linker::new(&engine);
        link_minimal_wasi(&mut linker).map_err(engine_err)?;
        crate::capabilities::bindings::Imports::add_to_linker::<CallState, HasSelf>(
            &mut linker,
            |s| s,
        )
        .map_err(engine_err)?;

        let ticker_stop = Arc::new(AtomicBool::new(false));
        {
            let engine = engine.clone();
            let stop = ticker_stop.clone();
            let tick = config.epoch_tick;
            std::thread::Builder::new()
                .name("scout-epoch".to_string())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(tick);
                        engine.increment_epoch();
                    }
                })
                .map_err(|e| LoadError::Engine(format!("cannot start the epoch thread: {e}")))?;
        }
        let slots = Arc::new(tokio::sync::Semaphore::new(
            config.max_concurrent_calls.max(1) as usize,
        ));
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                config,
                ticker_stop,
                slots,
            }),
        })
    }

    /// The runtime's configuration.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    /// Reads and inspects a component file without refusing it for its imports.
    pub fn inspect_file(&self, path: &Path) -> Result<ComponentInfo, LoadError> {
        let bytes = read(path)?;
        let component = self.compile(&bytes)?;
        self.analyse(&bytes, &component)
    }

    /// Reads, checks and prepares a component file.
    pub fn load_file(&self, path: &Path) -> Result<LoadedComponent, LoadError> {
        let bytes = read(path)?;
        self.load_bytes(&bytes)
    }

    /// Every import of a component file, each with whether the contract
    /// allows it, read without the manifest: what `inspect` shows of a
    /// component that is not a connector at all.
    pub fn imports_of_file(&self, path: &Path) -> Result<Vec<(String, bool)>, LoadError> {
        let bytes = read(path)?;
        let component = self.compile(&bytes)?;
        Ok(self
            .imports_of(&component)
            .into_iter()
            .map(|name| {
                let ok = import_allowed(&name);
                (name, ok)
            })
            .collect())
    }

    fn imports_of(&self, component: &Component) -> Vec<String> {
        component
            .component_type()
            .imports(&self.inner.engine)
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// Checks and prepares a component.
    pub fn load_bytes(&self, bytes: &[u8]) -> Result<LoadedComponent, LoadError> {
        let component = self.compile(bytes)?;
        let info = self.analyse(bytes, &component)?;
        if !info.forbidden_imports.is_empty() {
            return Err(LoadError::ForbiddenImports {
                imports: info.forbidden_imports,
                also: None,
            });
        }
        let pre = self
            .inner
            .linker
            .instantiate_pre(&component)
            .map_err(|e| LoadError::Link(format!("{e:#}")))?;
        let by_name = info
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        Ok(LoadedComponent {
            runtime: self.inner.clone(),
            info,
            by_name,
            pre,
        })
    }

    fn compile(&self, bytes: &[u8]) -> Result<Component, LoadError> {
        let engine = &self.inner.engine;
        let compile =
            || Component::new(engine, bytes).map_err(|e| LoadError::Compile(format!("{e:#}")));
        let Some(dir) = &self.inner.config.cache_dir else {
            return compile();
        };
        let path = dir.join(format!("{}.cwasm", self.cache_key(bytes)));
        if let Ok(cached) = std::fs::read(&path) {
            // Read into memory rather than mapped: a mapped file that someone
            // truncates under us would crash the host with SIGBUS.
            // SAFETY: the cache directory is the host's own; entries are
            // written only by `Component::serialize` below, keyed by the
            // component's hash and this engine's configuration, and
            // `deserialize` still checks that they match this engine.
            match unsafe { Component::deserialize(engine, &cached) } {
                Ok(component) => return Ok(component),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %format!("{e:#}"), "dropping unusable cache entry");
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        let component = compile()?;
        if let Ok(serialized) = component.serialize()
            && std::fs::create_dir_all(dir).is_ok()
        {
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            if std::fs::write(&tmp, serialized).is_ok() {
                let _ = std::fs::rename(&tmp, &path);
            }
        }
        Ok(component)
    }

    /// The cache key: the component's hash and the engine's configuration.
    pub fn cache_key(&self, bytes: &[u8]) -> String {
        use std::hash::Hash;
        let mut hasher = ShaHasher(Sha256::new());
        self.inner
            .engine
            .precompile_compatibility_hash()
            .hash(&mut hasher);
        let engine_hash = hasher.0.finalize();
        let mut key = Sha256::new();
        key.update(bytes);
        key.update(engine_hash);
        hex::encode(&key.finalize()[..20])
    }

    /// Imports first: a component that imports what the contract does not
    /// give is reported for every such import even when it has no manifest
    /// or one that does not match.
    fn analyse(&self, bytes: &[u8], component: &Component) -> Result<ComponentInfo, LoadError> {
        let imports = self.imports_of(component);
        let forbidden_imports: Vec<String> = imports
            .iter()
            .filter(|name| !import_allowed(name))
            .cloned()
            .collect();
        match self.analyse_exports(bytes, component, imports, forbidden_imports.clone()) {
            Err(e) if !forbidden_imports.is_empty() => Err(LoadError::ForbiddenImports {
                imports: forbidden_imports,
                also: Some(e.to_string()),
            }),
            other => other,
        }
    }

    fn analyse_exports(
        &self,
        bytes: &[u8],
        component: &Component,
        imports: Vec<String>,
        forbidden_imports: Vec<String>,
    ) -> Result<ComponentInfo, LoadError> {
        let engine = &self.inner.engine;
        let ty = component.component_type();
        let manifest = read_manifest(bytes)?;
        let version = if manifest.version.is_empty() {
            String::new()
        } else {
            format!("@{}", manifest.version)
        };
        let mut exported: BTreeSet<(Effect, String)> = BTreeSet::new();
        let mut tools = Vec::new();
        for (name, item) in ty.exports(engine) {
            let effect = [Effect::Read, Effect::Write].into_iter().find(|e| {
                let iface = match e {
                    Effect::Read => scout_manifest::READ_INTERFACE,
                    Effect::Write => scout_manifest::WRITE_INTERFACE,
                };
                name == format!(
                    "{}:{}/{iface}{version}",
                    manifest.namespace, manifest.connector
                )
            });
            let (Some(effect), ComponentItem::ComponentInstance(instance)) = (effect, &item.ty)
            else {
                return Err(LoadError::Mismatch(format!(
                    "export `{name}` is not `{}:{}/read-tools{version}` or `.../write-tools{version}`",
                    manifest.namespace, manifest.connector
                )));
            };
            let iface_index = component
                .get_export_index(None, name)
                .ok_or_else(|| LoadError::Mismatch(format!("export `{name}` cannot be found")))?;
            for (fname, fitem) in instance.exports(engine) {
                let func = match &fitem.ty {
                    ComponentItem::ComponentFunc(func) => func,
                    // Types used by the tools' signatures.
                    ComponentItem::Type(_) => continue,
                    _ => {
                        return Err(LoadError::Mismatch(format!(
                            "`{name}` exports `{fname}`, which is not a function or a type"
                        )));
                    }
                };
                let params: Vec<(String, Type)> =
                    func.params().map(|(n, t)| (n.to_string(), t)).collect();
                for (pname, pty) in &params {
                    if let Some(what) = schema::unsupported(pty) {
                        return Err(LoadError::Mismatch(format!(
                            "tool `{fname}` parameter `{pname}` is {what}"
                        )));
                    }
                }
                let results: Vec<Type> = func.results().collect();
                if !matches!(results.as_slice(), [Type::Result(_)]) {
                    return Err(LoadError::Mismatch(format!(
                        "tool `{fname}` must return `result<_, tool-error>`"
                    )));
                }
                let Some(doc) = manifest
                    .tools
                    .iter()
                    .find(|t| t.function == fname && t.effect == effect)
                else {
                    return Err(LoadError::Mismatch(format!(
                        "{} tool `{fname}` is exported but not described in the manifest",
                        effect.as_str()
                    )));
                };
                let export = component
                    .get_export_index(Some(&iface_index), fname)
                    .ok_or_else(|| {
                        LoadError::Mismatch(format!("function `{fname}` cannot be found"))
                    })?;
                exported.insert((effect, fname.to_string()));
                let route_set = RouteSet::new(&doc.routes)
                    .map_err(|e| LoadError::Manifest(format!("tool `{fname}`: {e}")))?;
                let (mut output_schema, output_wrapped) = schema::output_schema(&results[0]);
                schema::describe_output(
                    &mut output_schema,
                    &results[0],
                    output_wrapped,
                    &doc.result,
                );
                let mut input_schema =
                    schema::params_schema(params.iter().map(|(n, t)| (n.as_str(), t)));
                schema::describe_params(
                    &mut input_schema,
                    params.iter().map(|(n, t)| (n.as_str(), t)),
                    &doc.params,
                );
                tools.push(Tool {
                    output_schema,
                    output_wrapped,
                    routes: doc.routes.clone(),
                    route_set: Arc::new(route_set),
                    name: manifest.wire_name(fname),
                    function: fname.to_string(),
                    effect,
                    description: doc.description.clone(),
                    input_schema,
                    params,
                    export,
                    review_digest: std::sync::OnceLock::new(),
                });
            }
        }
        let described: BTreeSet<(Effect, String)> = manifest
            .tools
            .iter()
            .map(|t| (t.effect, t.function.clone()))
            .collect();
        let missing: Vec<String> = described
            .difference(&exported)
            .map(|(e, f)| format!("{} tool `{f}`", e.as_str()))
            .collect();
        if !missing.is_empty() {
            return Err(LoadError::Mismatch(format!(
                "described but not exported: {}",
                missing.join(", ")
            )));
        }
        if tools.is_empty() {
            return Err(LoadError::Mismatch(
                "the component exports no tools".to_string(),
            ));
        }
        tools.sort_by_key(|t| {
            (
                t.effect,
                manifest
                    .tools
                    .iter()
                    .position(|d| d.function == t.function && d.effect == t.effect),
            )
        });
        let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        if names.len() != tools.len() {
            return Err(LoadError::Mismatch(
                "two tools have the same wire name".to_string(),
            ));
        }
        Ok(ComponentInfo {
            manifest,
            tools,
            imports,
            forbidden_imports,
            sha256: hex::encode(Sha256::digest(bytes)),
        })
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
        self.info.imports.iter().any(|i| {
            i.strip_prefix("scout:connector/")
                .and_then(|rest| rest.strip_prefix(name))
                .is_some_and(|rest| rest.starts_with('@'))
        })
    }

    /// The tool with this wire name.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|&i| &self.info.tools[i])
    }

    /// A fresh store for one call: limits, deadline, captured output.
    fn new_store(
        &self,
        caps: &Capabilities,
        tool: Option<&Tool>,
        started: Instant,
        deadline: Instant,
    ) -> (Store<CallState>, CappedOutput, CappedOutput) {
        let config = &self.runtime.config;
        let stdout = CappedOutput::new(config.output_cap);
        let stderr = CappedOutput::new(config.output_cap);
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .monotonic_clock(CoarseClock(started))
            .build();
        let mut table = ResourceTable::new();
        table.set_max_capacity(MAX_TABLE_ENTRIES);
        let state = CallState {
            wasi,
            table,
            limiter: CallLimiter {
                max_memory: config.max_memory_bytes,
                max_table: config.max_table_elements,
                memory_hit: false,
            },
            caps: caps.clone(),
            handles: 0,
            logs: Vec::new(),
            logs_dropped: 0,
            http_log: Vec::new(),
            routes: tool.map_or_else(|| Arc::new(RouteSet::none()), |t| t.route_set.clone()),
            tool: tool.map(|t| t.name.clone()).unwrap_or_default(),
            deadline_hit: false,
        };
        let mut store = Store::new(&self.runtime.engine, state);
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |mut ctx| {
            if Instant::now() >= deadline {
                ctx.data_mut().deadline_hit = true;
                return Err(wasmtime::Error::msg("the call's deadline passed"));
            }
            Ok(UpdateDeadline::Yield(1))
        });
        (store, stdout, stderr)
    }

    /// Creates a fresh store and instantiates the component in it, then drops
    /// both: what every call pays before the tool runs (for benchmarks).
    pub async fn instantiate_fresh(&self) -> Result<(), CallError> {
        let _slot = self.slot().await?;
        let started = Instant::now();
        let (mut store, _, _) = self.new_store(
            &Capabilities::default(),
            None,
            started,
            started + self.runtime.config.call_timeout,
        );
        self.pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| CallError::Instantiate(format!("{e:#}")))?;
        Ok(())
    }

    /// Waits for a free instance slot, at most the call timeout.
    async fn slot(&self) -> Result<tokio::sync::OwnedSemaphorePermit, CallError> {
        let wait = self.runtime.config.call_timeout;
        match tokio::time::timeout(wait, self.runtime.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            _ => Err(CallError::Busy),
        }
    }

    /// Calls a tool in a fresh store, granting it `caps` for this call only.
    pub async fn call(
        &self,
        tool: &str,
        args: &Value,
        caps: &Capabilities,
    ) -> Result<CallOutcome, CallError> {
        let tool = self
            .tool(tool)
            .ok_or_else(|| CallError::UnknownTool(tool.to_string()))?;
        let params =
            convert::args_to_vals(&tool.params, args).map_err(|m| CallError::InvalidArguments {
                path: m.path,
                message: m.message,
            })?;
        let _slot = self.slot().await?;
        let config = &self.runtime.config;
        let started = Instant::now();
        let deadline = started + config.call_timeout;

        let (mut store, stdout, stderr) = self.new_store(caps, Some(tool), started, deadline);

        let run = async {
            let instance = self.pre.instantiate_async(&mut store).await?;
            let func = instance.get_func(&mut store, tool.export).ok_or_else(|| {
                wasmtime::Error::msg("the tool's export is missing from the instance")
            })?;
            let mut results = vec![Val::Bool(false)];
            func.call_async(&mut store, &params, &mut results).await?;
            wasmtime::Result::Ok(results.pop().expect("one result"))
        };
        let result: Result<wasmtime::Result<Val>, _> =
            tokio::time::timeout_at(deadline.into(), run).await;
        let timeout_ms = config.call_timeout.as_millis() as u64;
        let state = store.data();
        let value = match result {
            Err(_elapsed) => return Err(CallError::Deadline(timeout_ms)),
            Ok(Err(_)) if state.deadline_hit => return Err(CallError::Deadline(timeout_ms)),
            Ok(Err(_)) if state.limiter.memory_hit => {
                return Err(CallError::MemoryLimit(config.max_memory_bytes));
            }
            Ok(Err(e))
                if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                    .is_some() =>
            {
                return Err(CallError::Busy);
            }
            Ok(Err(e)) => return Err(CallError::Trap(caps.scrub_text(&format!("{e:#}")))),
            Ok(Ok(value)) => value,
        };
        // The tool's own answer is its WIT `result`: read from the value,
        // then scrubbed (defence in depth: the guest never held the secret,
        // so this finds nothing unless an upstream reflected it in a form
        // the http scrub missed).
        let json = |v: Option<Box<Val>>| v.map_or(Value::Null, |v| convert::to_json(&v));
        let mut output = match value {
            Val::Result(Ok(ok)) => ToolOutput::Ok(json(ok)),
            Val::Result(Err(err)) => ToolOutput::Err(json(err)),
            // The export was checked to return a `result` at load.
            other => ToolOutput::Err(convert::to_json(&other)),
        };
        match &mut output {
            ToolOutput::Ok(v) | ToolOutput::Err(v) => caps.scrub_json(v),
        }
        // What the caps kept is the start of longer output: scrubbed, then
        // cut again so that no secret's beginning is left at its end.
        let (out, out_dropped) = stdout.take();
        let (err, err_dropped) = stderr.take();
        let (out, out_cut) = caps.scrub_and_cut(&out, config.output_cap, out_dropped > 0);
        let (err, err_cut) = caps.scrub_and_cut(&err, config.output_cap, err_dropped > 0);
        let state = store.into_data();
        Ok(CallOutcome {
            output,
            stdout: out,
            stderr: err,
            output_dropped: out_dropped + err_dropped + out_cut + err_cut,
            logs: state.logs,
            http: state.http_log,
            micros: started.elapsed().as_micros() as u64,
        })
    }
}

/// Links the minimal WASI a Rust guest needs, and nothing else (DESIGN D2).
fn link_minimal_wasi(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::cli::{WasiCli, WasiCliView};
    use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
    use wasmtime_wasi::p2::bindings::{cli, clocks, io};
    clocks::monotonic_clock::add_to_linker::<CallState, WasiClocks>(
        linker,
        <CallState as WasiClocksView>::clocks,
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

/// Whether an import name (`wasi:io/poll@0.2.6`) is inside the contract.
pub fn import_allowed(name: &str) -> bool {
    let (base, version) = match name.split_once('@') {
        Some((b, v)) => (b, v),
        None => return false,
    };
    (ALLOWED_WASI.contains(&base) && version.starts_with("0.2."))
        || (ALLOWED_SCOUT.contains(&base) && version.starts_with("0.2."))
}

/// Finds the manifest custom section anywhere in the component.
pub fn read_manifest(bytes: &[u8]) -> Result<Manifest, LoadError> {
    let mut found: Option<&[u8]> = None;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| LoadError::Compile(e.to_string()))?;
        if let wasmparser::Payload::CustomSection(section) = payload
            && section.name() == scout_manifest::SECTION
        {
            match found {
                Some(previous) if previous != section.data() => {
                    return Err(LoadError::Manifest(
                        "the component carries two different manifests".to_string(),
                    ));
                }
                _ => found = Some(section.data()),
            }
        }
    }
    let data = found.ok_or_else(|| {
        LoadError::Manifest(format!(
            "no `{}` section: build the connector with scout-sdk's `export!`",
            scout_manifest::SECTION
        ))
    })?;
    Manifest::from_json(data).map_err(|e| LoadError::Manifest(e.to_string()))
}

fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|source| LoadError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// The guest's monotonic clock: time since the call started, in whole
/// milliseconds, so a guest cannot use it as a fine timer.
struct CoarseClock(Instant);

impl wasmtime_wasi::HostMonotonicClock for CoarseClock {
    fn resolution(&self) -> u64 {
        1_000_000
    }
    fn now(&self) -> u64 {
        let nanos = self.0.elapsed().as_nanos() as u64;
        nanos - nanos % 1_000_000
    }
}

/// Feeds `std::hash::Hash` output into SHA-256, for a stable cache key.
struct ShaHasher(Sha256);

impl std::hash::Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

// `ClientHandle` is stored in the call's resource table.
const _: fn() = || {
    fn assert_send<T: Send + 'static>() {}
    assert_send::<crate::capabilities::http::ClientHandle>();
    assert_send::<CallState>();
};

/// Path helpers for the default cache location.
pub fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("SCOUT_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .map(|p| p.join("scout-host").join("components"))
        })
}
