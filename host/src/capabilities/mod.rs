//! Capability handles: one module per WIT interface of `scout:connector`.
//!
//! A component reaches the world only through these. What a call may use is
//! decided by the host per call ([`Capabilities`]); the guest cannot name a
//! destination, a credential or a folder of its own.

pub mod http;
pub mod log;
pub mod net;

use std::sync::Arc;

/// The handles granted to one call.
#[derive(Clone, Default)]
pub struct Capabilities {
    /// The HTTP client bound to the connector's destination, if granted.
    pub http: Option<Arc<http::HttpCapability>>,
}
