//! A remote server's progress and log messages, relayed to the calls' own
//! clients in the order the server sent them, each before the answer it
//! preceded.
//!
//! rmcp hands a notification to the session's handler in a task of its
//! own but a response straight to the request awaiting it, so a notice the
//! server sent just before its answer could be handled after the call had
//! its result and had withdrawn its relay: the notice was lost. Here the
//! upstream session's transport is wrapped ([`Relaying`]): each message is
//! looked at as rmcp takes it, in the order it arrived, and a notice is
//! given to its call's relay ([`super::relay::CallRelay`], whose bounds
//! apply) before rmcp sees the next message. A call's relay is registered
//! as its request is sent ([`Ticket`], carried in the request's extensions,
//! never on the wire), so nothing the server says about it comes too early
//! either. The handler relays nothing; rmcp still sees every notice.

use super::relay::CallRelay;
use crate::capabilities::http::HttpCapability;
use rmcp::RoleClient;
use rmcp::model::{
    ClientJsonRpcMessage, GetExtensions, GetMeta, JsonRpcMessage, ProgressToken,
    ServerJsonRpcMessage, ServerNotification,
};
use rmcp::transport::Transport;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

/// The running calls of one upstream session whose clients hear their
/// progress and log messages, by the progress token the host's client
/// sent the server with each call (never the client's own).
pub(crate) type Relays = Arc<parking_lot::Mutex<HashMap<ProgressToken, Relayed>>>;

/// One call's relay, and the handle whose secrets are scrubbed from what
/// the server says.
#[derive(Clone)]
pub(crate) struct Relayed {
    relay: Arc<CallRelay>,
    http: Arc<HttpCapability>,
}

/// A call's relay, waiting for its request to be sent: carried in the
/// request's extensions to the transport, which registers it under the
/// request's progress token before anything is posted.
#[derive(Clone)]
pub(crate) struct Ticket {
    relayed: Relayed,
    registered: Arc<parking_lot::Mutex<Registration>>,
}

/// Where a call's relay stands.
#[derive(Default)]
struct Registration {
    /// The token it is registered under, and the map it is in.
    under: Option<(Relays, ProgressToken)>,
    /// The call has ended: a request sent after that is not relayed.
    ended: bool,
}

/// Withdraws a call's relay from its upstream session when the call ends,
/// and says how many of its notices were dropped.
pub(crate) struct RelayedCall {
    registered: Arc<parking_lot::Mutex<Registration>>,
}

impl Drop for RelayedCall {
    fn drop(&mut self) {
        let mut registration = self.registered.lock();
        registration.ended = true;
        if let Some((relays, token)) = registration.under.take()
            && let Some(relayed) = relays.lock().remove(&token)
        {
            relayed.relay.tell_dropped();
        }
    }
}

/// The ticket to put in a call's request (its relay is registered when
/// the request is sent), and the guard that withdraws it when the call ends.
pub(crate) fn ticket(relay: Arc<CallRelay>, http: &Arc<HttpCapability>) -> (Ticket, RelayedCall) {
    let registered = Arc::new(parking_lot::Mutex::new(Registration::default()));
    let ticket = Ticket {
        relayed: Relayed {
            relay,
            http: http.clone(),
        },
        registered: registered.clone(),
    };
    (ticket, RelayedCall { registered })
}

impl Ticket {
    pub(crate) fn register(self, relays: &Relays, token: ProgressToken) {
        let mut registration = self.registered.lock();
        if registration.ended {
            return;
        }
        relays.lock().insert(token.clone(), self.relayed);
        if let Some((relays, old)) = registration.under.replace((relays.clone(), token)) {
            // The same request sent again: its old token is withdrawn.
            relays.lock().remove(&old);
        }
    }
}

/// An upstream session's transport whose server notices are relayed as
/// they are received (see the module's doc).
pub(crate) struct Relaying<T> {
    inner: T,
    relays: Relays,
}

impl<T> Relaying<T> {
    pub(crate) fn new(inner: T, relays: Relays) -> Relaying<T> {
        Relaying { inner, relays }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Relaying<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &mut item
            && let Some(ticket) = request.request.extensions_mut().remove::<Ticket>()
            && let Some(token) = request.request.get_meta().get_progress_token()
        {
            ticket.register(&self.relays, token);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(notice) = &message {
            relay(&self.relays, &notice.notification);
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// Gives a server notice to the relays it is for: progress to the call
/// whose token it names (a token of no running call is dropped); a log
/// message, which names no call, to every call of the session running
/// (all of one agent session's).
pub(crate) fn relay(relays: &Relays, notice: &ServerNotification) {
    match notice {
        ServerNotification::ProgressNotification(progress) => {
            let relayed = relays.lock().get(&progress.params.progress_token).cloned();
            if let Some(relayed) = relayed {
                let http = &relayed.http;
                relayed
                    .relay
                    .remote_progress(&progress.params, &|text: &str| http.scrub_text(text));
            }
        }
        #[allow(deprecated)]
        ServerNotification::LoggingMessageNotification(message) => {
            let relayed: Vec<Relayed> = relays.lock().values().cloned().collect();
            for relayed in relayed {
                let http = &relayed.http;
                relayed
                    .relay
                    .remote_log(&message.params, &|text: &str| http.scrub_text(text));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    // Logging is deprecated in MCP (SEP-2577), and still relayed.
    #![allow(deprecated)]

    use super::*;
    use crate::capabilities::http::HttpConfig;
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, LoggingLevel,
        LoggingMessageNotification, LoggingMessageNotificationParam, NumberOrString,
        ProgressNotification, ProgressNotificationParam, ServerResult,
    };
    use rmcp::service::PeerRequestOptions;
    use std::collections::VecDeque;

    /// Progress steps the scripted server sends before its answer.
    const STEPS: usize = 5;

    /// A server that, to each `tools/call`, says [`STEPS`] steps of
    /// progress and one log message and answers, all at once: rmcp reads
    /// them back to back, the answer right after the last notice.
    #[derive(Default)]
    struct Scripted {
        said: VecDeque<ServerJsonRpcMessage>,
        told: Arc<tokio::sync::Notify>,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("never")]
    struct Never;

    impl Transport<RoleClient> for Scripted {
        type Error = Never;

        fn send(
            &mut self,
            item: ClientJsonRpcMessage,
        ) -> impl Future<Output = Result<(), Never>> + Send + 'static {
            if let JsonRpcMessage::Request(request) = item
                && let Some(token) = request.request.get_meta().get_progress_token()
            {
                for step in 1..=STEPS {
                    let step = ProgressNotificationParam::new(token.clone(), step as f64);
                    self.said.push_back(ServerJsonRpcMessage::notification(
                        ProgressNotification::new(step).into(),
                    ));
                }
                let message =
                    LoggingMessageNotificationParam::new(LoggingLevel::Info, "done".into());
                self.said.push_back(ServerJsonRpcMessage::notification(
                    LoggingMessageNotification::new(message).into(),
                ));
                self.said.push_back(ServerJsonRpcMessage::response(
                    ServerResult::CallToolResult(CallToolResult::success(Vec::new())),
                    request.id,
                ));
                self.told.notify_one();
            }
            std::future::ready(Ok(()))
        }

        async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
            loop {
                if let Some(said) = self.said.pop_front() {
                    return Some(said);
                }
                self.told.notified().await;
            }
        }

        async fn close(&mut self) -> Result<(), Never> {
            Ok(())
        }
    }

    /// One worker thread: a task woken last runs first (tokio's LIFO
    /// slot), so the call, woken by its answer, would run before any task
    /// rmcp spawned for the notices just before it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn every_notice_sent_before_the_answer_is_relayed_before_the_call_has_it() {
        let relays = Relays::default();
        let service = rmcp::service::serve_directly::<RoleClient, _, _, _, _>(
            (),
            Relaying::new(Scripted::default(), relays.clone()),
            None,
        );
        let http = crate::capabilities::http::HttpCapability::new(HttpConfig::new(
            "https://scripted.example",
        ))
        .unwrap();
        for call in 0..50 {
            let theirs = ProgressToken(NumberOrString::String(format!("theirs-{call}").into()));
            let (relay, mut notices) =
                CallRelay::new("scripted", Some(theirs), Some(LoggingLevel::Info)).unwrap();
            let (ticket, relayed) = ticket(relay, &http);
            let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new("anything"),
            ));
            request.extensions_mut().insert(ticket);
            let handle = service
                .peer()
                .send_cancellable_request(request, PeerRequestOptions::default())
                .await
                .unwrap();
            handle.await_response().await.unwrap();
            drop(relayed);
            assert!(relays.lock().is_empty(), "the relay is withdrawn");
            let mut progress = 0;
            let mut messages = 0;
            while let Ok(notice) = notices.try_recv() {
                match notice {
                    ServerNotification::ProgressNotification(_) => progress += 1,
                    _ => messages += 1,
                }
            }
            assert_eq!((progress, messages), (STEPS, 1), "call {call}");
        }
    }

    #[test]
    fn a_call_that_ended_before_its_request_was_sent_is_not_registered() {
        let relays = Relays::default();
        let http = crate::capabilities::http::HttpCapability::new(HttpConfig::new(
            "https://scripted.example",
        ))
        .unwrap();
        let (relay, _notices) = CallRelay::new("c", None, Some(LoggingLevel::Info)).unwrap();
        let (ticket, relayed) = ticket(relay, &http);
        drop(relayed);
        ticket.register(&relays, ProgressToken(NumberOrString::Number(1)));
        assert!(relays.lock().is_empty());
    }
}
