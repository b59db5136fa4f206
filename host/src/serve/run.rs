//! The process: `serve` until a stop signal (the admin API, the MCP
//! endpoints, the probes, the sweeps), draining within its grace; or one
//! session over stdio.

use super::*;

/// Runs `serve` until ctrl-c: the admin API and the MCP endpoints on the
/// configured listener. Prints the listening address on stdout. However it
/// ends (drained, or failing to start), the host gives its lease back: only
/// a host that died is recovered and counted as lost by the others.
pub async fn run(host: Arc<ServeHost>) -> anyhow::Result<()> {
    let served = run_until_stopped(host.clone()).await;
    host.host().release_lease().await;
    host.host().flush_telemetry().await;
    if served.is_ok() {
        crate::logs::say(format_args!("stopped"));
    }
    served
}

async fn run_until_stopped(host: Arc<ServeHost>) -> anyhow::Result<()> {
    // A pair that cannot be served stops the start, before anything runs.
    let tls = main_tls(&host)?;
    let listener = host.bind().await?;
    let addr = listener.local_addr()?;
    // Before any call: close what a host killed mid-call left open. After the
    // bind, so a second `serve` on the same address stops before it touches
    // the first one's approvals and calls.
    host.host().recover_previous_run().await?;
    // The connectors the fleet added through the admin API, each pulled
    // and verified here, before the first request.
    host.host().deploy_stored().await;
    // On stderr, beside the switch banner: stdout's one line is the address.
    crate::logs::say(format_args!("{}", host.setup_line()));
    for line in host.host().connector_lines() {
        crate::logs::say(format_args!("{line}"));
    }
    host.host().discover_remote();
    drain::ignore_hangups();
    let probe_server = match host.host().config().probe_listen {
        Some(at) => {
            let probes =
                anyhow::Context::with_context(tokio::net::TcpListener::bind(at).await, || {
                    format!("probe_listen = \"{at}\" cannot be bound: set it to a free address")
                })?;
            crate::logs::say(format_args!(
                "probes (/livez, /readyz) on http://{}",
                probes.local_addr()?
            ));
            let router = drain::probes().with_state(host.clone());
            Some(AbortOnDrop(tokio::spawn(async move {
                if let Err(e) = axum::serve(probes, router).await {
                    tracing::error!(error = %e, "the probe listener stopped");
                }
            })))
        }
        None => None,
    };
    let metrics_server = match host.host().config().metrics_listen {
        Some(at) => {
            let scrapes =
                anyhow::Context::with_context(tokio::net::TcpListener::bind(at).await, || {
                    format!("metrics_listen = \"{at}\" cannot be bound: set it to a free address")
                })?;
            crate::logs::say(format_args!(
                "metrics (/metrics) on http://{}{}",
                scrapes.local_addr()?,
                if host.metrics_token_digest.is_some() {
                    ", for the token metrics_token_env names"
                } else {
                    ", without a credential"
                }
            ));
            let router = super::scrape::router().with_state(host.clone());
            Some(AbortOnDrop(tokio::spawn(async move {
                if let Err(e) = axum::serve(scrapes, router).await {
                    tracing::error!(error = %e, "the metrics listener stopped");
                }
            })))
        }
        None => None,
    };
    println!(
        "scout-host serving the admin API and MCP on {}://{addr}",
        host.host().config().scheme()
    );
    let grace = std::time::Duration::from_secs(host.host().config().shutdown_grace_secs);
    let (stopping, stopped_at) = tokio::sync::oneshot::channel();
    let graceful = {
        let host = host.clone();
        async move {
            stop_signal().await;
            let _ = stopping.send(tokio::time::Instant::now());
            drain::drain(&host, grace).await;
        }
    };
    let served = serve_main(host.clone(), listener, tls.as_ref(), graceful);
    tokio::pin!(served);
    // The grace bounds the whole stop, the listener's close included.
    let cut = async {
        match stopped_at.await {
            Ok(at) => tokio::time::sleep_until(at + grace).await,
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        served = &mut served => served?,
        () = cut => {
            tracing::warn!("the shutdown grace ended with connections still open; they are cut");
        }
    }
    drop(probe_server);
    drop(metrics_server);
    Ok(())
}

/// SIGINT or SIGTERM (what a service manager sends to stop a process).
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// The main listener's TLS under `[tls]`; `None` without it.
fn main_tls(host: &ServeHost) -> Result<Option<super::tls::Tls>, super::tls::TlsError> {
    host.host()
        .config()
        .tls
        .as_ref()
        .map(|config| super::tls::Tls::start(config, host.host().metrics().clone()))
        .transpose()
}

/// Serves the admin API and MCP on `listener`, plain HTTP, until `shutdown`.
pub async fn serve_http(
    host: Arc<ServeHost>,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_main(host, listener, None, shutdown).await
}

/// Serves the admin API and MCP on `listener` until `shutdown`: HTTPS
/// with `tls`, through the same `axum::serve` and its graceful shutdown.
async fn serve_main(
    host: Arc<ServeHost>,
    listener: tokio::net::TcpListener,
    tls: Option<&super::tls::Tls>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    let invalidations = host.host().follow_invalidations();
    let sweeper = {
        let host = Arc::downgrade(&host);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(EXPIRY_SWEEP);
            loop {
                tick.tick().await;
                let Some(host) = host.upgrade() else { return };
                host.host().end_expired();
                host.host().pay_owed().await;
            }
        })
    };
    let _stop_sweeper = AbortOnDrop(sweeper);
    let _stop_invalidations = invalidations.map(AbortOnDrop);
    // A policy change whose ring this host missed is applied all the same.
    let _stop_policy_poll = AbortOnDrop(host.host().policies().follow_stored());
    let router = admin::router(host);
    if let Some(tls) = tls {
        return axum::serve(tls.listener(listener)?, router)
            .with_graceful_shutdown(shutdown)
            .await;
    }
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::warn!(error = %e, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

/// Serves one session's `connector` over stdin/stdout (MCP stdio), while the
/// admin API listens as configured so a person can answer approvals. The
/// session ends when the client closes stdin.
pub async fn run_stdio(
    host: Arc<ServeHost>,
    request: OpenSession,
    connector: String,
) -> anyhow::Result<()> {
    let served = stdio_until_closed(host.clone(), request, connector).await;
    host.host().release_lease().await;
    host.host().flush_telemetry().await;
    served
}

async fn stdio_until_closed(
    host: Arc<ServeHost>,
    request: OpenSession,
    connector: String,
) -> anyhow::Result<()> {
    // The admin API is for approvals a client cannot ask for itself; a
    // `serve` already on that address leaves this session with elicitation.
    let tls = main_tls(&host)?;
    let admin = match host.bind().await {
        Ok(listener) => {
            crate::logs::say(format_args!(
                "admin API on {}://{}",
                host.host().config().scheme(),
                listener.local_addr()?
            ));
            let host = host.clone();
            Some(tokio::spawn(async move {
                serve_main(host, listener, tls.as_ref(), std::future::pending()).await
            }))
        }
        Err(e) => {
            crate::logs::say(format_args!(
                "no admin API ({}: {e}); approvals only through MCP elicitation",
                host.host().config().listen
            ));
            None
        }
    };
    host.host().deploy_stored().await;
    host.host().discover_remote();
    let view = host.open_session(&request)?;
    let Some((live, _)) = host.endpoint(&view.id, &connector) else {
        host.host().end_session(&view.id);
        anyhow::bail!(
            "connector `{connector}` is not served to this session (connected: {:?})",
            view.mcp.keys().collect::<Vec<_>>()
        );
    };
    crate::logs::say(format_args!("session {} over stdio", view.id));
    let server = mcp::ConnectorServer::new(&host, &live, connector);
    // Pipes (how MCP clients start a stdio server) are read and written on
    // tokio's reactor; tokio's own stdin and stdout hand every read and
    // write to a blocking thread. Anything else falls back to those.
    let (input, output) = rmcp::transport::stdio_pipes();
    let keep_alive =
        std::time::Duration::from_millis(host.host().config().sse_keep_alive_ms.max(10));
    let served = super::stdio::serve(server, input, output, keep_alive).await;
    host.host().end_session(&view.id);
    if let Some(admin) = admin {
        admin.abort();
    }
    served
}
