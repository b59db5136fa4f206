//! Capability handles: one module per WIT interface of `scout:connector`.
//!
//! A component reaches the world only through these. What a call may use is
//! decided by the host per call ([`Capabilities`]); the guest cannot name a
//! destination, a credential or a folder of its own.

pub mod folder;
pub mod http;
pub mod log;
pub mod meter;
pub mod net;

use std::sync::Arc;

/// The handles granted to one call.
#[derive(Clone, Default)]
pub struct Capabilities {
    /// The HTTP client bound to the connector's destination, if granted.
    pub http: Option<Arc<http::HttpCapability>>,
    /// The run's meter, for a connector that bills.
    pub meter: Option<Arc<meter::RunMeter>>,
    /// Folders granted, each under its name.
    pub folders: Vec<Arc<folder::FolderCapability>>,
}

impl Capabilities {
    /// Only an HTTP client.
    pub fn with_http(http: Arc<http::HttpCapability>) -> Capabilities {
        Capabilities { http: Some(http), ..Capabilities::default() }
    }
}
