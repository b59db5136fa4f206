//! Errors at the host library's boundary.

/// Why the store refused or failed: what every service that keeps rows
/// answers with.
pub use crate::store::StoreError;

/// Why a component could not be loaded. Each names what was refused.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    /// The bytes are not a valid component for this engine.
    #[error("not a valid component: {0:#}")]
    Compile(#[source] wasmtime::Error),
    /// The component imports effects outside the contract. `also` is the
    /// next problem found (a missing or invalid manifest, exports that do
    /// not match it): the imports come first, because they say what a
    /// foreign component would do.
    #[error(
        "component imports what the contract does not give: {}{}",
        .imports.join(", "),
        .also.as_ref().map(|a| format!("; also: {a}")).unwrap_or_default()
    )]
    ForbiddenImports {
        imports: Vec<String>,
        also: Option<String>,
    },
    /// The component carries no manifest, or two.
    #[error("component manifest: {0}")]
    Manifest(String),
    /// The manifest it carries is not one this host reads.
    #[error("component manifest: {0}")]
    ManifestInvalid(#[source] scout_manifest::ManifestError),
    /// The manifest and the component's exports disagree, or a tool's type is unusable.
    #[error("component does not match its manifest: {0}")]
    Mismatch(String),
    /// Linking against the host's capabilities failed.
    #[error("cannot link component: {0:#}")]
    Link(#[source] wasmtime::Error),
    /// The engine could not be set up.
    #[error("engine: {0:#}")]
    Engine(#[source] wasmtime::Error),
    /// The thread that ticks the engine's epochs (call deadlines) could not start.
    #[error("engine: cannot start the epoch thread: {0}")]
    EpochThread(#[source] std::io::Error),
}

/// Why a tool call did not produce a tool result. A tool's own error (the
/// WIT `tool-error` variant) is not a `CallError`: it is a normal outcome.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No tool with this name in the component.
    #[error("unknown tool `{0}`")]
    UnknownTool(String),
    /// The arguments do not fit the tool's WIT types; the guest never ran.
    #[error("invalid arguments at {path}: {message}")]
    InvalidArguments { path: String, message: String },
    /// The call ran past its deadline and was stopped.
    #[error("the call exceeded its {0} ms deadline and was stopped")]
    Deadline(u64),
    /// The guest asked for more memory than the host allows.
    #[error("the call exceeded the memory limit of {0} bytes and was stopped")]
    MemoryLimit(usize),
    /// The guest trapped (panicked, hit `unreachable`, ...).
    #[error("the connector trapped: {0}")]
    Trap(String),
    /// No instance slot was free.
    #[error("the host is at its limit of concurrent calls")]
    Busy,
    /// Instantiating the component failed.
    #[error("cannot instantiate: {0:#}")]
    Instantiate(#[source] wasmtime::Error),
    /// The component's background compile failed (its load read only its
    /// shape): every call of it fails with the compile's error.
    #[error("the connector's component did not compile: {0}")]
    NotCompiled(String),
    /// A remote MCP server gave no answer the host can use.
    #[error("the remote MCP server gave no usable answer: {0}")]
    Upstream(String),
}

/// Why a capability could not be configured.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The destination origin is not acceptable.
    #[error("origin `{origin}`: {reason}")]
    Origin { origin: String, reason: String },
    /// The credential could not be resolved.
    #[error("credential: {0}")]
    Credential(String),
    /// The HTTP client could not be built.
    #[error("http client: {0}")]
    Client(#[source] reqwest::Error),
}
