//! Scout Connector Host: runs connectors as WebAssembly components and gives
//! each call only the capability handles the host grants it.
//!
//! - [`runtime`]: engine, loading (imports checked, manifest matched against
//!   exports), one fresh store per call.
//! - [`capabilities`]: the `http` and `log` handles, one module per WIT interface.
//! - [`schema`] and [`convert`]: JSON Schema and JSON values from WIT types.
//! - [`inspect`]: the security reviewer's view of a component.
//! - [`remote`]: remote MCP servers as connectors, each tool reviewed first.

pub mod approvals;
pub mod artifact;
pub mod audit;
pub mod authority;
pub mod boundary;
pub mod capabilities;
pub mod config;
pub mod connections;
pub mod convert;
pub mod credentials;
mod dates;
// Built for the unit tests too, so that the README's first command is
// checked by `cargo test`.
#[cfg(any(test, feature = "demo"))]
pub mod demo;
pub mod deployment;
pub(crate) mod deployments;
pub mod docs;
pub mod error;
pub(crate) mod grant;
pub mod host;
pub mod inspect;
pub mod logs;
pub mod metrics;
mod output;
pub mod person;
pub mod policy;
pub mod profiles;
pub mod remote;
pub mod review;
pub mod runtime;
pub mod schema;
pub mod serve;
pub mod session;
pub mod sessions;
mod shown;
pub mod store;
pub mod telemetry;
pub mod trace;

pub use capabilities::Capabilities;
pub use capabilities::http::{
    CredentialConfig, CredentialScheme, HttpCapability, HttpConfig, SecretSource,
};
pub use error::{CallError, ConfigError, LoadError};
pub use runtime::{
    CallOutcome, ComponentInfo, LoadedComponent, Runtime, RuntimeConfig, Tool, ToolOutput,
};
pub use scout_manifest::Effect;
