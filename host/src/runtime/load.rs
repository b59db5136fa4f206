//! What a component must pass at load: its imports inside the contract
//! (every offending one named), its manifest present and valid, and its
//! exports matching the manifest's tools with usable types.

use super::compile::Compiled;
use super::*;

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

/// WASI interfaces linked as inert host implementations: the runtimes of
/// other languages (componentize-js, componentize-py) import them, and
/// none reaches outside the call. Each carries no authority:
/// - `wasi:clocks/wall-clock`: the time now, which anyone may know; read
///   from the host's clock at each call, never a build-time value, in
///   whole milliseconds as the monotonic clock is.
/// - `wasi:random/{random,insecure,insecure-seed}`: fresh randomness from the
///   host per call; it reveals nothing and changes nothing.
/// - `wasi:filesystem/{types,preopens}`: a filesystem with no preopened
///   directory: `get-directories` is empty, so the guest never holds a
///   descriptor to open anything with.
///
/// (`wasi:cli/environment`, in [`ALLOWED_WASI`], is empty: no variable, no
/// argument.) Anything else outside the contract, sockets and `wasi:http`
/// first, stays refused at load.
pub(crate) const INERT_WASI: &[&str] = &[
    "wasi:clocks/wall-clock",
    "wasi:random/random",
    "wasi:random/insecure",
    "wasi:random/insecure-seed",
    "wasi:filesystem/types",
    "wasi:filesystem/preopens",
];

/// The one export a connector may have besides its tools: componentize-py
/// exports its runtime's pre-initialisation entry (`exports.init`, run once
/// at build time). The host never calls it, offers it as no tool, and a
/// call of it could do nothing the component's imports do not allow.
const COMPONENTIZE_PY_EXPORT: &str = "exports";

/// The capability interfaces of the contract.
pub(crate) const ALLOWED_SCOUT: &[&str] = &[
    "scout:connector/types",
    "scout:connector/http",
    "scout:connector/meter",
    "scout:connector/folder",
    "scout:connector/log",
];

impl Runtime {
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

    /// Checks and prepares a component. One the compile cache holds is
    /// loaded compiled; any other is checked on its shape (`shape`) and
    /// compiled in the background (`compile`), its calls waiting for it.
    /// A component whose shape cannot be made or compiled is compiled
    /// here, so that it is refused with the real compile's error.
    pub fn load_bytes(&self, bytes: &[u8]) -> Result<LoadedComponent, LoadError> {
        let path = self.cache_path(bytes);
        if let Some(component) = path.as_deref().and_then(|p| self.cached_at(p)) {
            return self.prepare(bytes, &component, false);
        }
        let started = Instant::now();
        if let Some(shape) = shape::of(bytes)
            && let Ok(component) = Component::new(&self.inner.engine, &shape)
        {
            let loaded = self.prepare(bytes, &component, true)?;
            tracing::debug!(
                connector = %loaded.name(),
                bytes = bytes.len(),
                shape_bytes = shape.len(),
                ms = started.elapsed().as_millis() as u64,
                "loaded from its shape, compile queued"
            );
            return Ok(loaded);
        }
        let component = self.compile_into(bytes, path.as_deref())?;
        self.prepare(bytes, &component, false)
    }

    /// The checks of a component compiled (or of its shape, `shaped`, whose
    /// real compile is then queued) and what a call needs of it.
    fn prepare(
        &self,
        bytes: &[u8],
        component: &Component,
        shaped: bool,
    ) -> Result<LoadedComponent, LoadError> {
        let info = self.analyse(bytes, component)?;
        if !info.forbidden_imports.is_empty() {
            return Err(LoadError::ForbiddenImports {
                imports: info.forbidden_imports,
                also: None,
            });
        }
        let paths: Vec<(String, String)> = info
            .tools
            .iter()
            .map(|t| (t.export.clone().unwrap_or_default(), t.function.clone()))
            .collect();
        let connector = &info.manifest.connector;
        let compiled = if shaped {
            // The shape's imports are the component's: linked now, so a
            // component the contract cannot link is refused at load.
            self.inner
                .linker
                .instantiate_pre(component)
                .map_err(LoadError::Link)?;
            Compilation::queued(&self.inner, connector, bytes.to_vec(), paths)
        } else {
            Compilation::ready(connector, Compiled::of(&self.inner, component, &paths)?)
        };
        let by_name = info
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        let slots_per_call =
            slots_per_call(bytes, component, self.inner.config.max_concurrent_calls)?;
        Ok(LoadedComponent {
            backend: Backend::Wasm {
                runtime: self.inner.clone(),
                compiled,
                slots_per_call,
            },
            interfaces: Interfaces::of(&info.imports),
            info,
            by_name,
        })
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
            if name == COMPONENTIZE_PY_EXPORT {
                continue;
            }
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
            let interface = name;
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
                component
                    .get_export_index(Some(&iface_index), fname)
                    .ok_or_else(|| {
                        LoadError::Mismatch(format!("function `{fname}` cannot be found"))
                    })?;
                exported.insert((effect, fname.to_string()));
                let ranges = declared_ranges(fname, &params, &doc.params)?;
                let json_params = crate::convert::json_params(&params, &doc.params);
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
                let name = manifest.wire_name(fname);
                tools.push(Tool {
                    output_schema,
                    output_wrapped,
                    reaches: super::reaches(&manifest.connector, effect, &doc.routes, &name),
                    routes: doc.routes.clone(),
                    reads_from: doc.reads_from.clone(),
                    route_set: Arc::new(route_set),
                    name,
                    function: fname.to_string(),
                    effect,
                    description: doc.description.clone(),
                    input_schema,
                    params,
                    ranges,
                    json_params,
                    export: Some(interface.to_string()),
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

/// Whether an import name (`wasi:io/poll@0.2.6`) is inside the contract
/// (the inert interfaces included).
pub fn import_allowed(name: &str) -> bool {
    let (base, version) = match name.split_once('@') {
        Some((b, v)) => (b, v),
        None => return false,
    };
    version.starts_with("0.2.")
        && (ALLOWED_WASI.contains(&base)
            || INERT_WASI.contains(&base)
            || ALLOWED_SCOUT.contains(&base))
}

/// Whether an import is one of the inert WASI interfaces ([`INERT_WASI`]):
/// allowed, linked, and carrying no authority; `inspect` lists them.
pub fn import_inert(name: &str) -> bool {
    name.split_once('@')
        .is_some_and(|(base, version)| version.starts_with("0.2.") && INERT_WASI.contains(&base))
}

/// The pooling slots a call of this component holds, sized at load: one
/// for a component that fits a slot (every Rust connector), more for a
/// larger one (a componentize-py runtime's 38 core instances take 3), so
/// the calls running at once never ask the pool for more than it has and
/// no connector's limits are raised for another's. Never more than the
/// runtime's slots: such a call runs alone, in a pool sized for it.
fn slots_per_call(bytes: &[u8], component: &Component, slots: u32) -> Result<u32, LoadError> {
    // Every core instantiation at any depth: what the pooling allocator
    // counts, as long as each nested component is instantiated once (as
    // componentizers lay them out).
    let mut core_instances: u32 = 0;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let wasmparser::Payload::InstanceSection(section) =
            payload.map_err(|e| LoadError::Compile(e.into()))?
        {
            for instance in section {
                if let wasmparser::Instance::Instantiate { .. } =
                    instance.map_err(|e| LoadError::Compile(e.into()))?
                {
                    core_instances = core_instances.saturating_add(1);
                }
            }
        }
    }
    let (memories, tables) = component
        .resources_required()
        .map(|r| (r.num_memories, r.num_tables))
        .unwrap_or((0, 0));
    let needed = [
        core_instances.div_ceil(CORE_INSTANCES_PER_SLOT),
        memories.div_ceil(MEMORIES_PER_SLOT),
        tables.div_ceil(TABLES_PER_SLOT),
    ]
    .into_iter()
    .max()
    .unwrap_or(1);
    Ok(needed.clamp(1, slots.max(1)))
}

/// Finds the manifest custom section anywhere in the component.
pub fn read_manifest(bytes: &[u8]) -> Result<Manifest, LoadError> {
    let mut found: Option<&[u8]> = None;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| LoadError::Compile(e.into()))?;
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
            "no `{}` section: in Rust, build the connector with scout-sdk's `export!`; \
             in another language, embed the manifest made from its WIT with \
             `scout-host manifest --wit WIT_DIR --world WORLD IN.wasm -o OUT.wasm`",
            scout_manifest::SECTION
        ))
    })?;
    Manifest::from_json(data).map_err(LoadError::ManifestInvalid)
}

fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    std::fs::read(path).map_err(|source| LoadError::Read {
        path: path.display().to_string(),
        source,
    })
}

/// Each parameter's range as its manifest declares it, checked against its
/// WIT type: a range only on a number, a default its type accepts, and no
/// bounds for a parameter the tool does not have. A hand-made manifest
/// cannot put a range the host would not hold to on a schema.
fn declared_ranges(
    function: &str,
    params: &[(String, Type)],
    docs: &BTreeMap<String, scout_manifest::TypeDoc>,
) -> Result<Vec<Option<(f64, f64)>>, LoadError> {
    let refuse = |param: &str, why: String| {
        LoadError::Manifest(format!("tool `{function}`, parameter `{param}`: {why}"))
    };
    for (name, doc) in docs {
        if !doc.bounds.is_empty() && !params.iter().any(|(p, _)| p == name) {
            return Err(refuse(name, "the tool has no such parameter".to_string()));
        }
    }
    let mut ranges = Vec::with_capacity(params.len());
    for (name, ty) in params {
        let Some(bounds) = docs.get(name).map(|d| &d.bounds) else {
            ranges.push(None);
            continue;
        };
        let ty = match ty {
            Type::Option(o) => o.ty(),
            ty => ty.clone(),
        };
        let range = bounds.range();
        if range.is_some() && !schema::is_number(&ty) {
            return Err(refuse(
                name,
                "a range on a value that is not a number".to_string(),
            ));
        }
        if let Some(default) = &bounds.default {
            crate::convert::to_val(&ty, default, "default").map_err(|m| {
                refuse(
                    name,
                    format!("its default {default} does not fit: {}", m.message),
                )
            })?;
        }
        ranges.push(range);
    }
    Ok(ranges)
}
