//! What the tests that serve HTTP from a `ServeHost` in their own process
//! share: the host listening on 127.0.0.1 until dropped, the client that
//! talks to it, and components by path. (Each test file that says `mod
//! common;` uses part of it.)
#![allow(dead_code)]

use scout_host::serve::ServeHost;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The bound of every wait for something that must happen (an answer, a
/// recovery, a notification): only a hang reaches it. The suite's work
/// shares two cores with some 300 other tests, so a bound near the time a
/// quiet machine takes fails a test for the machine being busy.
pub const EVENTUALLY: std::time::Duration = std::time::Duration::from_secs(180);

/// `host` serving its admin API and MCP on 127.0.0.1; stops when dropped.
pub struct Listening {
    pub base: String,
    pub addr: std::net::SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Binds `host` to the address its config names (127.0.0.1:0 in tests) and serves it.
pub async fn listen(host: Arc<ServeHost>) -> Listening {
    let listener = host.bind().await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        scout_host::serve::serve_http(host, listener, std::future::pending())
            .await
            .unwrap();
    });
    Listening {
        base: format!("http://{addr}"),
        addr,
        server,
    }
}

/// The tests' HTTP client: generous timeout, so a hung host fails the test
/// rather than hanging it.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

/// The absolute path of a component `scout-tests` built.
pub fn component(path: &str) -> String {
    Path::new(path)
        .canonicalize()
        .unwrap_or_else(|e| panic!("{path}: {e} (built by scout-tests)"))
        .display()
        .to_string()
}
