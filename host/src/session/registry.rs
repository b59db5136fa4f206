//! The sessions a host holds, by id: each one's policy state, how its
//! caller proves it holds it (the digest of its token), when it ends, and
//! how it is reached (`E`: the serving layer's endpoints, MCP's for
//! `serve`). The registry knows nothing of HTTP; `serve` opens a session,
//! puts it here, and finds it again for each request.

use super::Session;
use parking_lot::RwLock;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// One live session.
pub struct Live<E> {
    pub session: Session,
    /// The role as it was asked for (`person-chat`).
    pub role_name: String,
    pub profile: Option<String>,
    token_digest: [u8; 32],
    /// The connectors it is served.
    pub connectors: Vec<String>,
    /// Each connector it is not served, and why: shared by every session
    /// told the same ([`super::shared`]).
    pub left_out: Arc<BTreeMap<String, String>>,
    /// How it is reached, per connector.
    pub endpoints: BTreeMap<String, E>,
    /// Its whole allowlist (D12), shared likewise.
    pub allowlist: Arc<Vec<String>>,
    /// Cancelled when it ends: its streams close.
    pub cancel: CancellationToken,
    pub expires: Instant,
    /// When it opened (for the session-duration metric).
    pub opened: Instant,
    /// When it ends, in milliseconds since the Unix epoch.
    pub expires_at_ms: i64,
}

/// A session the fleet keeps, as a host takes it up.
pub struct Kept {
    pub session: Session,
    pub role_name: String,
    pub profile: Option<String>,
    pub token_digest: [u8; 32],
    pub connectors: Vec<String>,
    pub left_out: BTreeMap<String, String>,
    pub allowlist: Vec<String>,
    pub expires_at_ms: i64,
}

/// What a session is opened with, besides its endpoints.
pub struct Opened {
    pub session: Session,
    pub role_name: String,
    pub profile: Option<String>,
    pub token: String,
    pub connectors: Vec<String>,
    pub left_out: BTreeMap<String, String>,
    pub allowlist: Vec<String>,
    pub ttl: std::time::Duration,
}

impl<E> Live<E> {
    /// A session opened now for `ttl`, its token kept as a digest only.
    pub fn new(opened: Opened) -> Live<E> {
        let now = Instant::now();
        Live {
            session: opened.session,
            role_name: opened.role_name,
            profile: opened.profile,
            token_digest: token_digest(&opened.token),
            connectors: opened.connectors,
            left_out: shared_left_out(opened.left_out),
            endpoints: BTreeMap::new(),
            allowlist: shared_allowlist(opened.allowlist),
            cancel: CancellationToken::new(),
            expires: now + opened.ttl,
            opened: now,
            expires_at_ms: (std::time::SystemTime::now() + opened.ttl)
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
        }
    }

    /// A session the fleet keeps, taken up by this host: its token known
    /// only by its digest, its end where it was set when it opened.
    pub fn kept(kept: Kept) -> Live<E> {
        let now = Instant::now();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let left = u64::try_from(kept.expires_at_ms.saturating_sub(now_ms)).unwrap_or(0);
        Live {
            session: kept.session,
            role_name: kept.role_name,
            profile: kept.profile,
            token_digest: kept.token_digest,
            connectors: kept.connectors,
            left_out: shared_left_out(kept.left_out),
            endpoints: BTreeMap::new(),
            allowlist: shared_allowlist(kept.allowlist),
            cancel: CancellationToken::new(),
            expires: now + std::time::Duration::from_millis(left),
            opened: now,
            expires_at_ms: kept.expires_at_ms,
        }
    }

    /// Whether `token` is this session's bearer token.
    pub fn token_matches(&self, token: &str) -> bool {
        token_digest(token) == self.token_digest
    }

    /// Its token's digest, hex, as the fleet keeps it.
    pub fn token_digest_hex(&self) -> String {
        hex::encode(self.token_digest)
    }

    /// Whether it is past its time at `now`.
    pub fn expired_at(&self, now: Instant) -> bool {
        self.expires <= now
    }
}

/// `left_out`, shared with every session told the same.
fn shared_left_out(left_out: BTreeMap<String, String>) -> Arc<BTreeMap<String, String>> {
    static LEFT_OUT: std::sync::LazyLock<super::shared::Interner<BTreeMap<String, String>>> =
        std::sync::LazyLock::new(Default::default);
    LEFT_OUT.intern(left_out)
}

/// `allowlist`, shared with every session given the same.
fn shared_allowlist(allowlist: Vec<String>) -> Arc<Vec<String>> {
    static ALLOWLISTS: std::sync::LazyLock<super::shared::Interner<Vec<String>>> =
        std::sync::LazyLock::new(Default::default);
    ALLOWLISTS.intern(allowlist)
}

/// The digest a session's bearer token is kept and checked by.
pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The sessions a host holds.
pub struct Registry<E> {
    live: RwLock<HashMap<String, Arc<Live<E>>>>,
}

impl<E> Default for Registry<E> {
    fn default() -> Self {
        Registry {
            live: RwLock::new(HashMap::new()),
        }
    }
}

impl<E> Registry<E> {
    pub fn insert(&self, live: Arc<Live<E>>) {
        self.live.write().insert(live.session.id.clone(), live);
    }

    /// Session `id`, expired or not.
    pub fn get(&self, id: &str) -> Option<Arc<Live<E>>> {
        self.live.read().get(id).cloned()
    }

    /// Takes session `id` out; `None` if it was not held (or already taken).
    pub fn remove(&self, id: &str) -> Option<Arc<Live<E>>> {
        self.live.write().remove(id)
    }

    /// Every session held.
    pub fn all(&self) -> Vec<Arc<Live<E>>> {
        self.live.read().values().cloned().collect()
    }

    /// The ids of the sessions past their time at `now`.
    pub fn expired(&self, now: Instant) -> Vec<String> {
        self.live
            .read()
            .values()
            .filter(|s| s.expired_at(now))
            .map(|s| s.session.id.clone())
            .collect()
    }
}
