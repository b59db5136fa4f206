//! `scout-sdk`: what a connector author depends on.
//!
//! A connector is a WASI component whose WIT world exports `read-tools`
//! and/or `write-tools`. You write the world (with a doc comment on every
//! tool and a `Withheld:` list on the world), implement the generated traits,
//! and call the host only through the capability handles it grants: today
//! [`Http`] for the connector's one destination and [`log`].
//!
//! ```ignore
//! scout_sdk::bindings!();
//!
//! use bindings::exports::acme::weather::read_tools::Guest;
//! use scout_sdk::{Http, ToolError};
//!
//! struct Weather;
//!
//! impl Guest for Weather {
//!     fn forecast(city: String) -> Result<String, ToolError> {
//!         let http = Http::connect()?;
//!         let body: serde_json::Value = http.get(&format!("/forecast/{}", scout_sdk::encode_segment(&city)), &[])?;
//!         Ok(body.to_string())
//!     }
//! }
//!
//! scout_sdk::export!(Weather);
//! ```
//!
//! The bindings of the shared `scout:connector` package live in this crate and
//! are private; the types a connector needs are re-exported below.

mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "scout:connector/imports",
        generate_all,
        generate_unused_types: true,
    });
}

pub mod args;
pub mod billing;
pub mod errors;
pub mod graphql;
mod http_client;
pub mod log;
pub mod pages;
pub mod testing;

/// The `meter` capability: reserve an estimate before a billed upstream
/// call, settle the actual cost after. See `wit/meter.wit`.
pub mod meter {
    pub use crate::bindings::scout::connector::meter::{
        MeterError, Reservation, remaining, reserve, unit,
    };
}

/// The `folder` capability: directories the host granted by name
/// (`folder::open("project")`). See `wit/folder.wit`.
pub mod folder {
    pub use crate::bindings::scout::connector::folder::{Dir, Entry, EntryKind, FolderError, open};
}

pub use bindings::scout::connector::http::{HttpError, Method, Request, Response};
pub use bindings::scout::connector::types::{
    Capability, CapabilityError, Effect, Json, ToolError, UpstreamError,
};
pub use errors::{ErrorFormat, cut_message};
pub use http_client::{Http, check_status, encode_path, encode_segment, parse_json};

/// `GET`, `POST`, ...: how errors name a method.
pub fn method_name(method: Method) -> &'static str {
    match method {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Patch => "PATCH",
        Method::Delete => "DELETE",
    }
}

/// Not public API: what `bindings!` and `export!` expand to.
#[doc(hidden)]
pub mod __private {
    pub use crate::bindings::scout::connector::{folder, http, log, meter, types};
    pub use scout_sdk_macros::embed_manifest;
    pub use wit_bindgen;
}

/// Generates the bindings of the connector's own world (from `wit/`, or the
/// folder given) into a module named `bindings`, reusing this crate's
/// `types` and `log`; the world must include `scout:connector/base` or a
/// `with-*` world.
#[macro_export]
macro_rules! bindings {
    () => {
        $crate::bindings!("wit");
    };
    ($path:tt) => {
        #[allow(clippy::all, dead_code, unused_imports)]
        mod bindings {
            scout_sdk::__private::wit_bindgen::generate!({
                path: $path,
                runtime_path: "scout_sdk::__private::wit_bindgen::rt",
                // Capability interfaces the world includes get local
                // bindings; connectors use this crate's wrappers instead.
                generate_all,
                with: {
                    // Every connector world includes `base` (types, log).
                    // The capability interfaces are reached through this
                    // crate's own bindings (`Http`, `meter`, `folder`), so a
                    // world that leaves one out needs no remapping for it.
                    "scout:connector/types@0.2.0": scout_sdk::__private::types,
                    "scout:connector/log@0.2.0": scout_sdk::__private::log,
                },
            });
        }
    };
}

/// Exports the connector type `$ty`, which implements the generated
/// `read_tools::Guest` and/or `write_tools::Guest` traits, and embeds the
/// manifest (tool descriptions and the WITHHELD list, read from the WIT doc
/// comments) in the component.
#[macro_export]
macro_rules! export {
    ($ty:ident) => {
        $crate::export!($ty, "wit");
    };
    ($ty:ident, $path:tt) => {
        // Exported names (`scout:github/read-tools@0.1.0#read-file`) are not
        // valid native symbols; natively the crate builds for unit tests only.
        #[cfg(target_family = "wasm")]
        bindings::export!($ty with_types_in bindings);
        scout_sdk::__private::embed_manifest!($path);
    };
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolError::InvalidInput(m) => write!(f, "invalid input: {m}"),
            ToolError::NotFound(m) => write!(f, "not found: {m}"),
            ToolError::Refused(m) => write!(f, "refused: {m}"),
            ToolError::Upstream(e) => write!(f, "upstream answered {}: {}", e.status, e.message),
            ToolError::Capability(e) => write!(f, "{:?} {}: {}", e.capability, e.kind, e.message),
            ToolError::BadResponse(m) => write!(f, "bad response: {m}"),
        }
    }
}

fn capability_error(
    capability: Capability,
    kind: &str,
    message: String,
    amount: Option<u64>,
) -> ToolError {
    ToolError::Capability(CapabilityError {
        capability,
        kind: kind.to_string(),
        message,
        amount,
    })
}

impl From<HttpError> for ToolError {
    fn from(e: HttpError) -> Self {
        let (kind, message, amount) = match e {
            HttpError::Denied(m) => ("denied", m, None),
            HttpError::Transport(m) => ("transport", m, None),
            HttpError::Timeout => ("timeout", "the request timed out".to_string(), None),
            HttpError::TooLarge(n) => (
                "too-large",
                format!("the response exceeded {n} bytes"),
                Some(n),
            ),
        };
        capability_error(Capability::Http, kind, message, amount)
    }
}

impl From<meter::MeterError> for ToolError {
    fn from(e: meter::MeterError) -> Self {
        use meter::MeterError;
        let (kind, message, amount) = match e {
            MeterError::RunExhausted(left) => (
                "run-exhausted",
                format!("the run's allowance has {left} left"),
                Some(left),
            ),
            MeterError::DayExhausted(left) => (
                "day-exhausted",
                format!("the day's allowance has {left} left"),
                Some(left),
            ),
            MeterError::Denied(m) => ("denied", m, None),
            MeterError::Invalid(m) => ("invalid", m, None),
        };
        capability_error(Capability::Meter, kind, message, amount)
    }
}

impl From<folder::FolderError> for ToolError {
    fn from(e: folder::FolderError) -> Self {
        use folder::FolderError;
        let (kind, message, amount) = match e {
            FolderError::Denied(m) => ("denied", m, None),
            FolderError::NotFound(m) => ("not-found", m, None),
            FolderError::InvalidPath(m) => ("invalid-path", m, None),
            FolderError::TooLarge(n) => ("too-large", format!("larger than {n} bytes"), Some(n)),
            FolderError::Io(m) => ("io", m, None),
        };
        capability_error(Capability::Folder, kind, message, amount)
    }
}

impl ToolError {
    /// An `invalid-input` error.
    pub fn invalid(msg: impl Into<String>) -> Self {
        ToolError::InvalidInput(msg.into())
    }
    /// A `refused` error: the connector's own rule forbids this.
    pub fn refused(msg: impl Into<String>) -> Self {
        ToolError::Refused(msg.into())
    }
}
