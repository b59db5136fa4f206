//! Opening the store a deployment names: the SQLite file, or the PostgreSQL
//! database whose URL is in an environment variable (never in a file, never
//! in an error: it carries a password). The configuration only says where
//! ([`StoreLocation`]); `serve`, `audit` and the trace export open it here.

use super::{PgOptions, PgStore, SqliteStore, Store, StoreError, TraceDurability};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Where the store is, as the configuration names it.
#[derive(Debug, Clone, Copy)]
pub enum StoreLocation<'a> {
    /// One SQLite file, its trace commits durable against `durability`.
    Sqlite {
        path: &'a Path,
        durability: TraceDurability,
    },
    /// One PostgreSQL database shared by several hosts.
    Postgres {
        /// The environment variable holding the connection URL.
        url_env: &'a str,
        /// How long this host's lease lasts unrenewed (the default if `None`).
        lease: Option<Duration>,
        /// The PEM file of the authority that signs the server's certificate.
        ca_file: Option<&'a Path>,
    },
}

/// What the host does with the store it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `serve`: created and migrated if needed, written, this host registered.
    ReadWrite,
    /// The audit and the trace export: nothing is created, migrated or
    /// written; on PostgreSQL no host is registered, nothing is recovered,
    /// and the session is read-only on the server.
    ReadOnly,
}

/// Why the store could not be opened. Each names what to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The environment variable that holds the PostgreSQL URL is not set.
    #[error("the environment variable {var} is not set: it holds the PostgreSQL connection URL")]
    MissingUrl { var: String },
    /// The backend refused to open (`path` names the store, never its URL).
    #[error("cannot open the store {path}: {source}")]
    Open {
        path: String,
        #[source]
        source: StoreError,
    },
}

/// Opens the store at `location` for `access`; `env` looks up the
/// PostgreSQL URL's variable.
pub fn open(
    location: StoreLocation<'_>,
    env: &dyn Fn(&str) -> Option<String>,
    access: Access,
) -> Result<Arc<dyn Store>, OpenError> {
    let read_only = access == Access::ReadOnly;
    match location {
        StoreLocation::Sqlite { path, durability } => {
            let opened = if read_only {
                SqliteStore::open_to_read(path)
            } else {
                SqliteStore::open_durable(path, durability)
            };
            Ok(Arc::new(opened.map_err(|source| OpenError::Open {
                path: path.display().to_string(),
                source,
            })?))
        }
        StoreLocation::Postgres {
            url_env,
            lease,
            ca_file,
        } => {
            let url = env(url_env).ok_or_else(|| OpenError::MissingUrl {
                var: url_env.to_string(),
            })?;
            let mut options = PgOptions::new(url);
            if let Some(lease) = lease {
                options.lease = lease;
            }
            options.ca_file = ca_file.map(Path::to_path_buf);
            options.reader = read_only;
            Ok(Arc::new(PgStore::connect(options).map_err(|source| {
                OpenError::Open {
                    path: format!("PostgreSQL (the URL in {url_env})"),
                    source,
                }
            })?))
        }
    }
}
