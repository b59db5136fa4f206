//! LISTEN/NOTIFY: how one host rings the approvals broker and drops the
//! caches of every host. What travels is a [`Notice`]: its channel says
//! which kind, its payload (JSON, `op` naming the variant) which one. The
//! text is the one every version of the host writes and reads, so a fleet
//! of mixed versions agrees; a payload no version writes is reported and
//! answered as "everything changed".

use super::*;
use serde::{Deserialize, Serialize};

/// The channels every host listens on.
pub(super) const APPROVAL_CHANNEL: &str = "scout_approval";
pub(super) const INVALIDATE_CHANNEL: &str = "scout_invalidate";

/// A NOTIFY payload must stay under 8000 bytes; above this the message
/// says "everything" instead.
const MAX_PAYLOAD: usize = 7000;

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

/// Acts on one notification; one that is not understood is logged and
/// answered as "everything changed" on its channel.
fn dispatch(shared: &Shared, channel: &str, payload: &str) {
    let notice = match Notice::parse(channel, payload) {
        Ok(notice) => notice,
        Err(error) => {
            tracing::warn!(error = %error, "PostgreSQL notification not understood; taken as everything changed");
            match error {
                UnknownNotice::Channel(_) => return,
                UnknownNotice::Payload { .. } if channel == APPROVAL_CHANNEL => {
                    Notice::Ring(Ring::All)
                }
                UnknownNotice::Payload { .. } => Notice::Invalidate(Invalidation::All),
            }
        }
    };
    match notice {
        Notice::Ring(Ring::One {
            session,
            tool,
            digest,
        }) => shared.broker.ring(&session, &tool, &digest),
        Notice::Ring(Ring::Session { session }) => shared.broker.ring_session(&session),
        Notice::Ring(Ring::All) => shared.broker.ring_all(),
        Notice::Invalidate(what) => {
            let _ = shared.invalidations.send(what);
        }
    }
}

/// Sends `notice` to every host (this one included) once `tx` commits.
pub(super) async fn notify(
    tx: &tokio_postgres::Transaction<'_>,
    notice: &Notice,
) -> Result<(), tokio_postgres::Error> {
    tx.execute(
        "SELECT pg_notify($1, $2)",
        &[&notice.channel(), &notice.payload()],
    )
    .await?;
    Ok(())
}

/// What one host tells every host through NOTIFY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Notice {
    /// Wake the calls waiting on approvals (on [`APPROVAL_CHANNEL`]).
    Ring(Ring),
    /// Drop what depends on a change (on [`INVALIDATE_CHANNEL`]).
    Invalidate(Invalidation),
}

/// Which waiters an approval's change wakes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(super) enum Ring {
    /// One call's approvals: `{"op":"one","s":…,"t":…,"d":…}`.
    One {
        #[serde(rename = "s")]
        session: String,
        #[serde(rename = "t")]
        tool: String,
        #[serde(rename = "d")]
        digest: String,
    },
    /// Every approval of a session: `{"op":"session","s":…}`.
    Session {
        #[serde(rename = "s")]
        session: String,
    },
    /// Every waiter: `{"op":"all"}`.
    All,
}

/// [`Invalidation`] as it travels: `{"op":"connections"}`, ...,
/// `{"op":"session","s":…}`, `{"op":"all"}`.
#[derive(Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum InvalidationText {
    Connections,
    Profiles,
    Reviews,
    Connectors,
    Policies,
    Session {
        #[serde(rename = "s")]
        session: String,
    },
    All,
}

impl From<&Invalidation> for InvalidationText {
    fn from(what: &Invalidation) -> InvalidationText {
        match what {
            Invalidation::Connections => InvalidationText::Connections,
            Invalidation::Profiles => InvalidationText::Profiles,
            Invalidation::Reviews => InvalidationText::Reviews,
            Invalidation::Connectors => InvalidationText::Connectors,
            Invalidation::Policies => InvalidationText::Policies,
            Invalidation::Session(session) => InvalidationText::Session {
                session: session.clone(),
            },
            Invalidation::All => InvalidationText::All,
        }
    }
}

impl From<InvalidationText> for Invalidation {
    fn from(text: InvalidationText) -> Invalidation {
        match text {
            InvalidationText::Connections => Invalidation::Connections,
            InvalidationText::Profiles => Invalidation::Profiles,
            InvalidationText::Reviews => Invalidation::Reviews,
            InvalidationText::Connectors => Invalidation::Connectors,
            InvalidationText::Policies => Invalidation::Policies,
            InvalidationText::Session { session } => Invalidation::Session(session),
            InvalidationText::All => Invalidation::All,
        }
    }
}

/// A notification no version of the host sends.
#[derive(Debug, thiserror::Error)]
pub(super) enum UnknownNotice {
    #[error("notification on unknown channel {0:?}")]
    Channel(String),
    #[error("unknown notification on {channel}: {payload:?}")]
    Payload {
        channel: &'static str,
        payload: String,
        #[source]
        cause: serde_json::Error,
    },
}

impl Notice {
    /// The channel it travels on.
    pub(super) fn channel(&self) -> &'static str {
        match self {
            Notice::Ring(_) => APPROVAL_CHANNEL,
            Notice::Invalidate(_) => INVALIDATE_CHANNEL,
        }
    }

    /// Its payload, or "everything" on its channel when it would not fit
    /// (NOTIFY takes under 8000 bytes).
    pub(super) fn payload(&self) -> String {
        let text = match self {
            Notice::Ring(ring) => serde_json::to_string(ring),
            Notice::Invalidate(what) => serde_json::to_string(&InvalidationText::from(what)),
        };
        match text {
            Ok(text) if text.len() <= MAX_PAYLOAD => text,
            // Strings only: serialising cannot fail, but were it to, the
            // safe message is "everything".
            _ => r#"{"op":"all"}"#.to_string(),
        }
    }

    /// The notice `payload` on `channel` says.
    pub(super) fn parse(channel: &str, payload: &str) -> Result<Notice, UnknownNotice> {
        let unknown = |channel, cause| UnknownNotice::Payload {
            channel,
            payload: payload.to_string(),
            cause,
        };
        match channel {
            APPROVAL_CHANNEL => serde_json::from_str(payload)
                .map(Notice::Ring)
                .map_err(|cause| unknown(APPROVAL_CHANNEL, cause)),
            INVALIDATE_CHANNEL => serde_json::from_str::<InvalidationText>(payload)
                .map(|text| Notice::Invalidate(text.into()))
                .map_err(|cause| unknown(INVALIDATE_CHANNEL, cause)),
            other => Err(UnknownNotice::Channel(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one() -> Notice {
        Notice::Ring(Ring::One {
            session: "s-1".into(),
            tool: "mcp__a__b".into(),
            digest: "abc".into(),
        })
    }

    /// Each notice is written as every version of the host writes it.
    #[test]
    fn each_notice_keeps_its_wire_text() {
        let cases = [
            (
                one(),
                APPROVAL_CHANNEL,
                r#"{"op":"one","s":"s-1","t":"mcp__a__b","d":"abc"}"#,
            ),
            (
                Notice::Ring(Ring::Session {
                    session: "s-1".into(),
                }),
                APPROVAL_CHANNEL,
                r#"{"op":"session","s":"s-1"}"#,
            ),
            (Notice::Ring(Ring::All), APPROVAL_CHANNEL, r#"{"op":"all"}"#),
            (
                Notice::Invalidate(Invalidation::Connections),
                INVALIDATE_CHANNEL,
                r#"{"op":"connections"}"#,
            ),
            (
                Notice::Invalidate(Invalidation::Profiles),
                INVALIDATE_CHANNEL,
                r#"{"op":"profiles"}"#,
            ),
            (
                Notice::Invalidate(Invalidation::Reviews),
                INVALIDATE_CHANNEL,
                r#"{"op":"reviews"}"#,
            ),
            (
                Notice::Invalidate(Invalidation::Connectors),
                INVALIDATE_CHANNEL,
                r#"{"op":"connectors"}"#,
            ),
            (
                Notice::Invalidate(Invalidation::Policies),
                INVALIDATE_CHANNEL,
                r#"{"op":"policies"}"#,
            ),
            (
                Notice::Invalidate(Invalidation::Session("s-1".into())),
                INVALIDATE_CHANNEL,
                r#"{"op":"session","s":"s-1"}"#,
            ),
            (
                Notice::Invalidate(Invalidation::All),
                INVALIDATE_CHANNEL,
                r#"{"op":"all"}"#,
            ),
        ];
        for (notice, channel, text) in cases {
            assert_eq!(notice.channel(), channel, "{notice:?}");
            assert_eq!(notice.payload(), text, "{notice:?}");
            assert_eq!(Notice::parse(channel, text).unwrap(), notice, "{text}");
        }
    }

    /// Today's text as the earlier code built it (`json!`), read back.
    #[test]
    fn the_text_of_earlier_versions_is_read() {
        let earlier = serde_json::json!({"op": "one", "s": "s-1", "t": "mcp__a__b", "d": "abc"});
        assert_eq!(one().payload(), earlier.to_string());
        assert_eq!(
            Notice::parse(APPROVAL_CHANNEL, &earlier.to_string()).unwrap(),
            one()
        );
    }

    /// A notice too large for NOTIFY says "everything" on its channel.
    #[test]
    fn a_notice_too_large_says_everything() {
        let long = "x".repeat(MAX_PAYLOAD);
        let ring = Notice::Ring(Ring::Session {
            session: long.clone(),
        });
        assert_eq!(
            Notice::parse(APPROVAL_CHANNEL, &ring.payload()).unwrap(),
            Notice::Ring(Ring::All)
        );
        let invalidate = Notice::Invalidate(Invalidation::Session(long));
        assert_eq!(
            Notice::parse(INVALIDATE_CHANNEL, &invalidate.payload()).unwrap(),
            Notice::Invalidate(Invalidation::All)
        );
    }

    /// What no version sends is reported, never panicked on.
    #[test]
    fn an_unknown_notice_is_reported() {
        for (channel, payload) in [
            (APPROVAL_CHANNEL, r#"{"op":"everything"}"#),
            (APPROVAL_CHANNEL, r#"{"op":"one","s":"s-1"}"#),
            (APPROVAL_CHANNEL, "not json"),
            (APPROVAL_CHANNEL, ""),
            (INVALIDATE_CHANNEL, r#"{"op":"weather"}"#),
            (INVALIDATE_CHANNEL, r#"{"s":"s-1"}"#),
            (INVALIDATE_CHANNEL, "[1, 2]"),
        ] {
            let error = Notice::parse(channel, payload).unwrap_err();
            assert!(
                matches!(&error, UnknownNotice::Payload { channel: c, payload: p, .. } if *c == channel && p == payload),
                "{channel} {payload}: {error:?}"
            );
            assert!(std::error::Error::source(&error).is_some());
        }
        assert!(matches!(
            Notice::parse("elsewhere", r#"{"op":"all"}"#),
            Err(UnknownNotice::Channel(channel)) if channel == "elsewhere"
        ));
    }
}
