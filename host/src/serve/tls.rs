//! TLS in the process (`[tls]`), for a deployment with no ingress or load
//! balancer in front to end TLS.
//!
//! The main listener's TCP connections are handed to rustls (TLS 1.2 and
//! 1.3, ALPN `h2` and `http/1.1`, the `ring` provider) and then to the same
//! `axum::serve` the plain listener runs: [`TlsListener`] is an
//! [`axum::serve::Listener`] yielding finished handshakes, so the graceful
//! shutdown and the drain are the very code the plain listener runs. The
//! handshakes run in tasks of their own, each bounded in time, so a client
//! that stalls its handshake never holds the accept loop; one that fails
//! is logged at debug, with a warning at most once a minute that counts
//! them (a scanner's noise does not flood the log).
//!
//! The certificate is chosen per handshake by [`CurrentPair`], which holds
//! the pair in use behind a lock. A task reads both files again every
//! `reload_secs` and swaps in a new pair when their contents changed: new
//! connections get it, existing ones keep the one they started with. The
//! files are read rather than watched: Kubernetes updates a mounted Secret
//! by swapping a symlink over a new directory, which inotify on the file
//! paths does not report and which leaves the symlinks' own times alone;
//! two small reads every few seconds see it whatever the updater does. A
//! replacement that fails (unreadable, bad PEM, a key that is not the
//! certificate's) leaves the pair in use serving, is logged naming the
//! file, and counts in `scout_tls_reload_failures_total`: the host never
//! serves without a certificate. The probe and metrics listeners stay
//! plain: they are for the kubelet and the scraper inside the pod network.

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;

/// `[tls]`: the main listener (admin API and MCP) serves HTTPS with this
/// certificate and key, read again when they change. The probe and metrics
/// listeners stay plain HTTP.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM file holding the certificate chain, the host's own certificate
    /// first, then any intermediates. Relative to the configuration file.
    pub cert_file: PathBuf,
    /// PEM file holding the certificate's private key (PKCS#8, PKCS#1 RSA
    /// or SEC1 EC). Relative to the configuration file.
    pub key_file: PathBuf,
    /// How often (seconds) both files are read again; a changed pair is
    /// served to new connections, a broken one is logged and the pair in
    /// use kept. 0: read once, at start.
    #[serde(default = "default_reload_secs")]
    pub reload_secs: u64,
}

fn default_reload_secs() -> u64 {
    10
}

impl TlsConfig {
    /// Makes the files' paths relative to the configuration file's folder.
    pub(crate) fn relative_to(&mut self, base: &Path) {
        self.cert_file = base.join(&self.cert_file);
        self.key_file = base.join(&self.key_file);
    }

    /// Reads and checks the pair as `serve` would at start.
    pub fn check(&self) -> Result<(), TlsError> {
        read_pair(self, &provider()).map(drop)
    }
}

/// Why a certificate and key cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("[tls] {key} = \"{}\" cannot be read ({source}): set it to a readable PEM file", .file.display())]
    Unreadable {
        key: &'static str,
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("[tls] cert_file = \"{}\" holds no PEM certificate ({why}): it needs the certificate chain, `-----BEGIN CERTIFICATE-----` sections, the host's certificate first", .file.display())]
    NoCertificate { file: PathBuf, why: String },
    #[error("[tls] key_file = \"{}\" holds no PEM private key ({why}): it needs one `-----BEGIN PRIVATE KEY-----` (PKCS#8), `RSA PRIVATE KEY` or `EC PRIVATE KEY` section", .file.display())]
    NoKey { file: PathBuf, why: String },
    #[error("[tls] key_file = \"{}\" is not the private key of cert_file = \"{}\" ({source}): give the key the certificate was issued for", .key_file.display(), .cert_file.display())]
    Mismatch {
        cert_file: PathBuf,
        key_file: PathBuf,
        source: rustls::Error,
    },
    #[error("the TLS settings cannot be built: {0}")]
    Settings(#[source] rustls::Error),
}

/// The one crypto provider: ring (aws-lc-rs is not linked: it does not
/// build statically with musl here).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The digest of both files' contents, to tell a changed pair.
type PairDigest = [u8; 32];

fn read_file(key: &'static str, file: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(file).map_err(|source| TlsError::Unreadable {
        key,
        file: file.to_path_buf(),
        source,
    })
}

fn digest(cert: &[u8], key: &[u8]) -> PairDigest {
    let mut hasher = Sha256::new();
    hasher.update((cert.len() as u64).to_be_bytes());
    hasher.update(cert);
    hasher.update(key);
    hasher.finalize().into()
}

/// Reads both files: their digest and contents.
fn read_digest(config: &TlsConfig) -> Result<(PairDigest, Vec<u8>, Vec<u8>), TlsError> {
    let cert = read_file("cert_file", &config.cert_file)?;
    let key = read_file("key_file", &config.key_file)?;
    Ok((digest(&cert, &key), cert, key))
}

/// [`read_digest`], once the files hold still: a certificate that changed
/// while the key was read (a swap between the two reads) is read again,
/// so a reload never pairs the old certificate with the new key.
fn read_settled(config: &TlsConfig) -> Result<(PairDigest, Vec<u8>, Vec<u8>), TlsError> {
    let mut read = read_digest(config)?;
    for _ in 0..3 {
        if read_file("cert_file", &config.cert_file)? == read.1 {
            break;
        }
        read = read_digest(config)?;
    }
    Ok(read)
}

fn parse_pair(
    config: &TlsConfig,
    cert: &[u8],
    key: &[u8],
    provider: &CryptoProvider,
) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::NoCertificate {
            file: config.cert_file.clone(),
            why: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            file: config.cert_file.clone(),
            why: "no CERTIFICATE section".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| TlsError::NoKey {
        file: config.key_file.clone(),
        why: e.to_string(),
    })?;
    let pair =
        CertifiedKey::from_der(chain, key, provider).map_err(|source| TlsError::Mismatch {
            cert_file: config.cert_file.clone(),
            key_file: config.key_file.clone(),
            source,
        })?;
    // `from_der` lets a key whose public half it cannot read through.
    pair.keys_match().map_err(|source| TlsError::Mismatch {
        cert_file: config.cert_file.clone(),
        key_file: config.key_file.clone(),
        source,
    })?;
    Ok(pair)
}

fn read_pair(
    config: &TlsConfig,
    provider: &CryptoProvider,
) -> Result<(PairDigest, CertifiedKey), TlsError> {
    let (digest, cert, key) = read_digest(config)?;
    Ok((digest, parse_pair(config, &cert, &key, provider)?))
}

/// The certificate and key new handshakes are given.
#[derive(Debug)]
struct CurrentPair(parking_lot::RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for CurrentPair {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().clone())
    }
}

/// The main listener's TLS: its settings and the task that reloads the pair.
pub(crate) struct Tls {
    acceptor: tokio_rustls::TlsAcceptor,
    handshake_failures: Arc<HandshakeFailures>,
    _reloading: Option<super::AbortOnDrop>,
}

/// How long a client has to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes under way at once; past it, connections wait in the kernel's
/// backlog.
const MAX_PENDING_HANDSHAKES: usize = 512;
/// Finished handshakes waiting for the HTTP server to take them.
const ACCEPTED_QUEUE: usize = 64;

impl Tls {
    /// Reads the pair (an error names the file and what to do) and starts
    /// the task that reloads it every `reload_secs`.
    pub(crate) fn start(
        config: &TlsConfig,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Result<Tls, TlsError> {
        let provider = provider();
        let (digest, pair) = read_pair(config, &provider)?;
        let current = Arc::new(CurrentPair(parking_lot::RwLock::new(Arc::new(pair))));
        let mut settings = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(TlsError::Settings)?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        settings.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let reloading = (config.reload_secs > 0).then(|| {
            super::AbortOnDrop(tokio::spawn(reload(
                config.clone(),
                provider,
                current,
                digest,
                metrics,
            )))
        });
        Ok(Tls {
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(settings)),
            handshake_failures: Arc::default(),
            _reloading: reloading,
        })
    }

    /// Serves TLS on `listener`: what `axum::serve` takes instead of it.
    pub(crate) fn listener(&self, listener: TcpListener) -> std::io::Result<TlsListener> {
        let local = listener.local_addr()?;
        let (accepted, connections) = tokio::sync::mpsc::channel(ACCEPTED_QUEUE);
        let accepting = tokio::spawn(accept_loop(
            listener,
            self.acceptor.clone(),
            accepted,
            self.handshake_failures.clone(),
        ));
        Ok(TlsListener {
            connections,
            local,
            _accepting: super::AbortOnDrop(accepting),
        })
    }
}

/// Reads the files every `reload_secs`; a changed pair that can be served
/// replaces the one in use.
async fn reload(
    config: TlsConfig,
    provider: Arc<CryptoProvider>,
    current: Arc<CurrentPair>,
    mut seen: PairDigest,
    metrics: Arc<crate::metrics::Metrics>,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(config.reload_secs));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    let mut unreadable_reported = false;
    loop {
        tick.tick().await;
        let config = config.clone();
        let provider = provider.clone();
        // Small files, but a read may block (a network volume).
        let read = tokio::task::spawn_blocking(move || -> Result<_, Failed> {
            let (digest, cert, key) = read_settled(&config)?;
            if digest == seen {
                return Ok((digest, None));
            }
            match parse_pair(&config, &cert, &key, &provider) {
                Ok(pair) => Ok((digest, Some(pair))),
                Err(e) => Err(Failed::Pair(digest, Box::new(e))),
            }
        })
        .await;
        match read {
            Ok(Ok((_, None))) => unreadable_reported = false,
            Ok(Ok((digest, Some(pair)))) => {
                *current.0.write() = Arc::new(pair);
                seen = digest;
                unreadable_reported = false;
                crate::logs::say(
                    "[tls] the certificate and key changed: new connections get the new pair",
                );
            }
            Ok(Err(Failed::Pair(digest, e))) => {
                // Reported once per content: the next change is tried anew.
                seen = digest;
                unreadable_reported = false;
                metrics.tls_reload_failed();
                tracing::error!(error = %e, "[tls] the new certificate and key are not served; the pair in use stays");
            }
            Ok(Err(Failed::Read(e))) => {
                // Mid-swap, or gone: said once until the files read again.
                if !unreadable_reported {
                    unreadable_reported = true;
                    metrics.tls_reload_failed();
                    tracing::error!(error = %e, "[tls] the certificate and key cannot be read; the pair in use stays");
                }
            }
            Err(e) => tracing::error!(error = %e, "[tls] the reload's read did not finish"),
        }
    }
}

/// Why a reload read nothing to serve.
enum Failed {
    Read(TlsError),
    Pair(PairDigest, Box<TlsError>),
}

impl From<TlsError> for Failed {
    fn from(e: TlsError) -> Failed {
        Failed::Read(e)
    }
}

/// Failed handshakes since the last warning.
#[derive(Default)]
struct HandshakeFailures(parking_lot::Mutex<FailureCount>);

#[derive(Default)]
struct FailureCount {
    since_warned: u64,
    warned_at: Option<tokio::time::Instant>,
}

/// At most one warning about failed handshakes per this long.
const HANDSHAKE_WARNING_EVERY: Duration = Duration::from_secs(60);

impl HandshakeFailures {
    fn note(&self, peer: SocketAddr, why: &dyn std::fmt::Display) {
        tracing::debug!(%peer, error = %why, "TLS handshake failed");
        let mut count = self.0.lock();
        count.since_warned += 1;
        let now = tokio::time::Instant::now();
        if count
            .warned_at
            .is_none_or(|at| now.duration_since(at) >= HANDSHAKE_WARNING_EVERY)
        {
            tracing::warn!(
                failed = count.since_warned,
                %peer,
                error = %why,
                "TLS handshakes failed (a client without the CA, plain HTTP to the HTTPS port, a scanner); the latest is shown, the others are logged at debug"
            );
            count.since_warned = 0;
            count.warned_at = Some(now);
        }
    }
}

/// Takes TCP connections and runs each one's handshake in a task of its
/// own; the finished ones go to the HTTP server.
async fn accept_loop(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    accepted: tokio::sync::mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
    failures: Arc<HandshakeFailures>,
) {
    let pending = Arc::new(tokio::sync::Semaphore::new(MAX_PENDING_HANDSHAKES));
    loop {
        let Ok(permit) = pending.clone().acquire_owned().await else {
            return;
        };
        let (tcp, peer) = match listener.accept().await {
            Ok(connection) => connection,
            Err(e) => {
                accept_failed(e).await;
                continue;
            }
        };
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!(error = %e, "cannot set TCP_NODELAY");
        }
        let acceptor = acceptor.clone();
        let accepted = accepted.clone();
        let failures = failures.clone();
        tokio::spawn(async move {
            let _permit = permit;
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => {
                    // Refused only once the server stopped taking connections.
                    let _ = accepted.send((tls, peer)).await;
                }
                Ok(Err(e)) => failures.note(peer, &e),
                Err(_) => failures.note(peer, &"the client did not finish its handshake in time"),
            }
        });
    }
}

/// As `axum::serve` does for a plain listener: a connection's own error is
/// skipped, anything else (out of file descriptors) waits a second.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// The main listener under TLS, as `axum::serve` takes it: each accept is
/// a finished handshake.
pub(crate) struct TlsListener {
    connections: tokio::sync::mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    _accepting: super::AbortOnDrop,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.connections.recv().await {
            Some(connection) => connection,
            // The accept loop ended: nothing more will come.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_of_either_file_changes_the_digest() {
        let one = digest(b"cert", b"key");
        assert_ne!(one, digest(b"cert", b"key2"));
        assert_ne!(one, digest(b"cert2", b"key"));
        // The boundary between the files counts.
        assert_ne!(digest(b"ab", b"c"), digest(b"a", b"bc"));
        assert_eq!(one, digest(b"cert", b"key"));
    }

    #[test]
    fn a_missing_file_is_named_with_its_key() {
        let config = TlsConfig {
            cert_file: "/nonexistent/scout-cert.pem".into(),
            key_file: "/nonexistent/scout-key.pem".into(),
            reload_secs: 10,
        };
        let e = config.check().unwrap_err().to_string();
        assert!(
            e.contains("cert_file = \"/nonexistent/scout-cert.pem\""),
            "{e}"
        );
    }

    #[test]
    fn pem_without_a_certificate_is_refused_naming_the_file() {
        let config = TlsConfig {
            cert_file: "cert.pem".into(),
            key_file: "key.pem".into(),
            reload_secs: 10,
        };
        let e = parse_pair(&config, b"not pem", b"", &provider())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("cert_file = \"cert.pem\" holds no PEM certificate"),
            "{e}"
        );
    }
}
