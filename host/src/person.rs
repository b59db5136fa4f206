//! A session's person, reached through the MCP client of the call being
//! made.
//!
//! A call waiting for a person's approval, and a remote server's question,
//! are put to the person as a form elicitation on the way the call came:
//! rmcp's peer of the client (its session worker or its stdio loop), or
//! the event stream of a call the host answers itself
//! (`serve::in_session`). Both are an [`Asker`], so the question is built
//! and its answer read in one place whichever way it travels.

use futures_util::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult};
use rmcp::{Peer, RoleServer};

/// Puts a form question to the person behind one client.
pub trait Asker: Send + Sync {
    /// The person's answer to `question`, or why there is none (the
    /// client could not ask, or went away).
    fn elicit(&self, question: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, String>>;
}

impl Asker for Peer<RoleServer> {
    fn elicit(&self, question: ElicitRequestParams) -> BoxFuture<'_, Result<ElicitResult, String>> {
        Box::pin(async move {
            self.create_elicitation(question)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
