//! LISTEN/NOTIFY: how one host rings the approvals broker and drops the
//! caches of every other.

use super::*;

/// The listener: one connection that does nothing but LISTEN. Whatever was
/// sent while it was away is lost, so after every (re)connect every waiter
/// is rung (each re-reads the store) and every cache dropped.
pub(super) async fn listen_loop(shared: Arc<Shared>, config: Config, tls: Tls) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let (tx, mut rx) = mpsc::unbounded_channel();
        match connect(
            &config,
            &tls,
            &format!("scout-listener {}", shared.id()),
            Some(tx),
        )
        .await
        {
            Ok(client) => {
                let listening = client
                    .batch_execute(&format!(
                        "LISTEN {APPROVAL_CHANNEL}; LISTEN {INVALIDATE_CHANNEL}"
                    ))
                    .await;
                if listening.is_ok() {
                    backoff = Duration::from_millis(100);
                    shared.broker.ring_all();
                    let _ = shared.invalidations.send(Invalidation::All);
                    while let Some(message) = rx.recv().await {
                        if let AsyncMessage::Notification(n) = message {
                            dispatch(&shared, n.channel(), n.payload());
                        }
                    }
                }
                // The connection closed (killed, server restart).
                shared.broker.ring_all();
            }
            Err(e) => tracing::warn!(error = %e, "PostgreSQL listener could not connect; retrying"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(2));
    }
}

fn dispatch(shared: &Shared, channel: &str, payload: &str) {
    let message: serde_json::Value = serde_json::from_str(payload).unwrap_or_default();
    let text = |k: &str| message.get(k).and_then(|v| v.as_str()).unwrap_or_default();
    match channel {
        APPROVAL_CHANNEL => match text("op") {
            "one" => shared.broker.ring(text("s"), text("t"), text("d")),
            "session" => shared.broker.ring_session(text("s")),
            _ => shared.broker.ring_all(),
        },
        INVALIDATE_CHANNEL => {
            let what = match text("op") {
                "connections" => Invalidation::Connections,
                "profiles" => Invalidation::Profiles,
                "reviews" => Invalidation::Reviews,
                "connectors" => Invalidation::Connectors,
                "session" => Invalidation::Session(text("s").to_string()),
                _ => Invalidation::All,
            };
            let _ = shared.invalidations.send(what);
        }
        _ => {}
    }
}

/// A notification's payload: `message`, or "everything" when it would not
/// fit (NOTIFY takes under 8000 bytes).
fn payload(message: serde_json::Value) -> String {
    let text = message.to_string();
    if text.len() > MAX_PAYLOAD {
        r#"{"op":"all"}"#.to_string()
    } else {
        text
    }
}

/// The ring for one call's approvals.
pub(super) fn approval_payload(session: &str, tool: &str, digest: &str) -> String {
    payload(serde_json::json!({"op": "one", "s": session, "t": tool, "d": digest}))
}

/// The ring for every approval of a session.
pub(super) fn session_payload(session: &str) -> String {
    payload(serde_json::json!({"op": "session", "s": session}))
}
