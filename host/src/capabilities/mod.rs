//! Capability handles: one module per WIT interface of `scout:connector`.
//!
//! A component reaches the world only through these. What a call may use is
//! decided by the host per call ([`Capabilities`]); the guest cannot name a
//! destination, a credential or a folder of its own. As in wasmtime-wasi,
//! each interface's host code works on its own context (defined beside it)
//! and view of the call (`view::View`: its context and the shared handle
//! table), never on the whole store data, and `state::add_to_linker`
//! projects each one. The resources a guest holds are plain names
//! (`handles`), so the WIT bindings depend on no capability module and no
//! import runs in a circle.

pub(crate) mod bindings;
mod deadline;
pub mod encoding;
pub mod folder;
pub mod graphql;
pub mod handles;
pub mod http;
pub mod log;
pub mod mcp;
pub mod meter;
pub mod net;
pub(crate) mod path;
pub mod replay;
pub mod routes;
pub mod scrub;
pub(crate) mod state;
mod view;

use std::sync::Arc;

/// The handles granted to one call.
#[derive(Clone, Default)]
pub struct Capabilities {
    /// The HTTP client bound to the connector's destination, if granted.
    pub http: Option<Arc<http::HttpCapability>>,
    /// Further clients by destination name (`Route: drive GET ...`): the
    /// connector's other origins, and for a joint tool the live connectors
    /// it reads. A tool reaches one only through routes that name it.
    pub destinations: std::collections::BTreeMap<String, Arc<http::HttpCapability>>,
    /// This call was decided as a GraphQL mutation and passed its gate: a
    /// `(graphql)` route may carry mutations. Otherwise only queries.
    pub graphql_mutations: bool,
    /// The run's meter, for a connector that bills.
    pub meter: Option<Arc<meter::RunMeter>>,
    /// The per-call spend threshold this call's reservations are held to
    /// (person chat): set by the boundary when it runs the call, never by
    /// a granter.
    pub spend: Option<meter::SpendGate>,
    /// Folders granted, each under its name.
    pub folders: Vec<Arc<folder::FolderCapability>>,
    /// Handles that could not be granted because their credential could
    /// not be obtained, by destination (`None`: the connector's own), with
    /// the reason the guest is told.
    pub refused: std::collections::BTreeMap<Option<String>, String>,
    /// What obtaining the credentials did, for the call's trace.
    pub credential_events: Vec<serde_json::Value>,
    /// Asked before every request is sent: `false` refuses it (this host
    /// no longer holds its lease for the call's session). `None`: always sent.
    pub fence: Option<Fence>,
    /// A remote MCP connector's upstream session for this agent session,
    /// bound to the server and the brand's credential ([`mcp`]).
    pub mcp: Option<std::sync::Arc<dyn mcp::McpSession>>,
}

/// Whether this host may still start an effect for a call, asked at the
/// moment of the effect (see [`Capabilities::fence`]).
pub type Fence = Arc<dyn Fn() -> bool + Send + Sync>;

/// What a guest is told of a request its host refused to send because it
/// no longer holds its lease.
pub const LEASE_NOT_HELD: &str =
    "not sent: this host no longer holds its lease on the shared store, so it starts nothing";

impl Capabilities {
    /// Only an HTTP client.
    pub fn with_http(http: Arc<http::HttpCapability>) -> Capabilities {
        Capabilities {
            http: Some(http),
            ..Capabilities::default()
        }
    }

    /// Removes every secret these handles inject, in any encoded form, from
    /// text the host is about to show (defence in depth: a guest never holds
    /// a secret, so finding one means a form the `http` scrub missed).
    pub(crate) fn scrub_text(&self, text: &str) -> String {
        let mut text = match &self.http {
            Some(http) => http.scrub_text(text),
            None => text.to_string(),
        };
        for other in self.destinations.values() {
            text = other.scrub_text(&text);
        }
        text
    }

    /// [`Capabilities::scrub_text`], then cut to at most `cap` bytes so
    /// that no beginning of a secret is left at the cut
    /// ([`scrub::cut_scrubbed`]); `already_cut` when `text` is
    /// the kept start of something longer. Returns the text and how many
    /// bytes the cut dropped.
    pub(crate) fn scrub_and_cut(&self, text: &str, cap: usize, already_cut: bool) -> (String, u64) {
        let scrubbers: Vec<&scrub::Scrubber> = self
            .http
            .iter()
            .chain(self.destinations.values())
            .map(|h| h.scrubber())
            .collect();
        scrub::cut_scrubbed(self.scrub_text(text), cap, already_cut, &scrubbers)
    }

    /// [`Capabilities::scrub_text`] over every string of a JSON value.
    pub(crate) fn scrub_json(&self, value: &mut serde_json::Value) {
        if let Some(http) = &self.http {
            http.scrubber().scrub_json(value);
        }
        for other in self.destinations.values() {
            other.scrubber().scrub_json(value);
        }
    }
}
