//! A gated call's wait for a person: the approval asked for (or joined),
//! the decision rung by the store's broker, the timeout, the host's
//! shutdown, and the withdrawal when the caller goes away. The call's
//! arguments are kept here while it waits, for the approvals API to show
//! (the store keeps only digests, or the arguments sealed).

use super::{Approvals, Decider, Decision, TIMEOUT_DECIDER};
use crate::policy::Rule;
use crate::store::{ApprovalError, ApprovalId, ApprovalWatch, StoreError};
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often a waiting call reads the store although nothing rang: only a
/// decision made by another process on the same database file is seen this
/// way (one in this process rings at once, see [`crate::store::broker`]).
const STORE_RECHECK: Duration = Duration::from_secs(1);

/// Who the store says revoked an approval whose caller went away.
const WITHDRAWN_BY: &str = "withdrawn: the caller went away";

/// One call's request for a person's approval.
pub struct Ask<'a> {
    pub session: &'a str,
    pub tool: &'a str,
    /// The digest of `args` the approval is bound to.
    pub digest: &'a str,
    /// What a person is shown (the call's arguments, or a reservation's).
    pub args: &'a Value,
    /// The call's id, for the log.
    pub call_id: &'a str,
    /// Cancelled when the call's caller goes away.
    pub gone: &'a CancellationToken,
    /// Told which approval this call asked for, when it asks one (so its
    /// caller can put the question through MCP elicitation).
    pub asked: Option<tokio::sync::oneshot::Sender<ApprovalId>>,
    /// How a client that asks its person through the protocol's
    /// `input_required` result takes part; `None`: the call waits.
    pub by_result: Option<ByResult>,
}

/// A call whose client asks its person itself, through a 2026-07-28
/// `input_required` result and a retry (SEP-2322): nobody waits in memory,
/// so any host can take the retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByResult {
    /// The first round: the approval is filed (or an identical pending one
    /// joined) and the wait ends at once with [`Ended::AskedByResult`],
    /// the approval left pending for the client's answer.
    Ask,
    /// The retry, with the client's answer to approval `approval` (opened
    /// from its `requestState`, never trusted): decided by that answer if
    /// it is still pending and this very call's (same session, tool and
    /// arguments), then spent or refused. Nothing is asked or awaited.
    Answered {
        approval: ApprovalId,
        approve: bool,
        /// The answer's action as the client sent it: `accept`, `decline`
        /// or `cancel`.
        answer: &'static str,
    },
}

/// How a wait ended without an approval to run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The request could not be recorded (the store away), or an approval
    /// was spent while the store did not answer (perhaps by this very call,
    /// whose answer was lost): nothing runs.
    Unrecorded,
    /// The host began to shut down: its approval revoked by `host_shutdown`.
    HostShutdown,
    /// The caller went away while it waited on another call's request.
    CallerGone,
    /// The caller went away: its own request was revoked, and
    /// [`WaitRecord::withdrawn`] told.
    Withdrawn,
    /// Nobody decided in time: denied by the timeout.
    TimedOut,
    /// A person said no.
    Denied,
    /// Revoked while it waited (the session lost its authority, the tool
    /// changed or was reviewed anew).
    Revoked,
    /// Asked of the client's person through an `input_required` result
    /// ([`ByResult::Ask`]): the approval stays pending for the retry.
    AskedByResult(ApprovalId),
    /// A retry's answer names an approval that is not this call's (another
    /// session, tool or arguments), or one already decided: nothing was
    /// decided, and nothing runs.
    AnswerRefused,
}

/// Where a wait's trace rows go: the waiting call's trace (the boundary's).
/// Each is told once it happened, in the order the trace keeps.
pub trait WaitRecord: Sync {
    /// Approval `id` was asked for.
    fn requested(&self, id: ApprovalId);
    /// The approval the call waited on was decided, or ended.
    fn decided(&self, decision: &Decision);
    /// The call's own request was revoked because its caller went away.
    fn withdrawn(&self, id: ApprovalId);
}

impl Approvals {
    /// Files a request for a person's approval of this exact call (its
    /// arguments sealed in the row when a key is set); its id.
    pub async fn ask(
        &self,
        session: &str,
        tool: &str,
        digest: &str,
        args: &Value,
    ) -> Result<ApprovalId, StoreError> {
        let id = match &self.arguments_key {
            Some(key) => {
                self.store
                    .request_approval_showing(session, tool, digest, args, key)
                    .await?
            }
            None => self.store.request_approval(session, tool, digest).await?,
        };
        if let Some(metrics) = &self.metrics {
            metrics.approval_asked();
        }
        Ok(id)
    }

    /// Waits for a person to approve this exact call: spends an approval
    /// already given, joins a request another identical call made, or asks
    /// ([`Approvals::ask`]); then waits for the decision until the timeout.
    /// The approval it consumed, or how the wait ended. Dropped mid-wait,
    /// it withdraws the request it made.
    pub async fn wait(&self, ask: Ask<'_>, record: &dyn WaitRecord) -> Result<ApprovalId, Ended> {
        let _shown = self.waiting.show(ask.session, ask.digest, ask.args);
        let mut wait = Waiting {
            approvals: self,
            session: ask.session,
            tool: ask.tool,
            digest: ask.digest,
            call_id: ask.call_id,
            record,
            // The exact arguments, sealed with the store key, for the row of
            // the decision: an auditor can read what was approved or denied.
            sealed: self.sealed_for_audit(ask.session, ask.tool, ask.digest, ask.args),
            started: Instant::now(),
            deadline: tokio::time::Instant::now() + self.timeout,
            // Withdraws the approval this call asked for if the call goes
            // away (its MCP request cancelled, its stream closed) before it
            // is decided and used: nobody is waiting for it, so nothing may
            // run it.
            withdraw: Withdraw {
                approvals: self,
                record,
                approval: None,
            },
            watched: None,
            store_failed: false,
        };
        match ask.by_result {
            Some(ByResult::Ask) => return wait.ask_by_result(ask.args, ask.asked).await,
            Some(ByResult::Answered {
                approval,
                approve,
                answer,
            }) => return wait.answered(approval, approve, answer).await,
            None => {}
        }
        // Subscribe, then read: a decision committed in between rings.
        let mut bell = self.store.watch_approval(ask.session, ask.tool, ask.digest);
        if let Some(id) = wait.first_look(ask.args, ask.asked).await? {
            return Ok(id);
        }
        loop {
            wait.next_ring(&mut bell, ask.gone).await?;
            bell = self.store.watch_approval(ask.session, ask.tool, ask.digest);
            if let Some(done) = wait.look().await {
                return done;
            }
        }
    }
}

/// The arguments of calls waiting for a person, by session and digest, so
/// the approvals API can show a person what they approve (the store keeps
/// only digests). Counted: two identical calls may wait at once.
#[derive(Default)]
pub(super) struct WaitingArgs {
    waiting: parking_lot::Mutex<HashMap<(String, String), (usize, Value)>>,
}

impl WaitingArgs {
    pub(super) fn get(&self, session: &str, digest: &str) -> Option<Value> {
        self.waiting
            .lock()
            .get(&(session.to_string(), digest.to_string()))
            .map(|(_, args)| args.clone())
    }

    fn show<'w>(&'w self, session: &str, digest: &str, args: &Value) -> Shown<'w> {
        let key = (session.to_string(), digest.to_string());
        self.waiting
            .lock()
            .entry(key.clone())
            .or_insert_with(|| (0, args.clone()))
            .0 += 1;
        Shown { args: self, key }
    }
}

/// Keeps a waiting call's arguments visible until it stops waiting (it may
/// be dropped mid-wait when its client goes away).
struct Shown<'w> {
    args: &'w WaitingArgs,
    key: (String, String),
}

impl Drop for Shown<'_> {
    fn drop(&mut self) {
        let mut waiting = self.args.waiting.lock();
        if let Some(entry) = waiting.get_mut(&self.key) {
            entry.0 -= 1;
            if entry.0 == 0 {
                waiting.remove(&self.key);
            }
        }
    }
}

/// What woke a waiting call.
enum Woken {
    /// The store rang, the recheck or the deadline came: read it again.
    Look,
    ShutDown,
    Gone,
}

/// One call's wait, as it goes.
struct Waiting<'a> {
    approvals: &'a Approvals,
    session: &'a str,
    tool: &'a str,
    digest: &'a str,
    call_id: &'a str,
    record: &'a dyn WaitRecord,
    sealed: Option<Value>,
    started: Instant,
    deadline: tokio::time::Instant,
    withdraw: Withdraw<'a>,
    /// The approval whose decision the trace will name.
    watched: Option<ApprovalId>,
    /// Whether the store failed to answer during the wait.
    store_failed: bool,
}

impl Waiting<'_> {
    /// The first read: an approval given already is spent (`Some`); a
    /// request made already is joined, or one is asked for (`None`).
    async fn first_look(
        &mut self,
        args: &Value,
        asked: Option<tokio::sync::oneshot::Sender<ApprovalId>>,
    ) -> Result<Option<ApprovalId>, Ended> {
        let store = &self.approvals.store;
        match store
            .consume_approval(self.session, self.tool, self.digest)
            .await
        {
            Ok(id) => {
                self.decided(id, None).await;
                Ok(Some(id))
            }
            // Another call with the same arguments asked already: wait for
            // the same answer.
            Err(ApprovalError::Pending) => {
                self.watched = self.pending_id().await;
                Ok(None)
            }
            // Never asked, or an earlier answer that cannot serve this call
            // (used, denied, revoked): ask again.
            Err(_) => {
                let id = match self
                    .approvals
                    .ask(self.session, self.tool, self.digest, args)
                    .await
                {
                    Ok(id) => id,
                    // The request could not be recorded (the store is away):
                    // nothing runs.
                    Err(e) => {
                        tracing::error!(error = %e, call = %self.call_id, "cannot ask for an approval; not running the call");
                        return Err(Ended::Unrecorded);
                    }
                };
                self.record.requested(id);
                self.withdraw.approval = Some(id);
                if let Some(tx) = asked {
                    let _ = tx.send(id);
                }
                self.watched = Some(id);
                Ok(None)
            }
        }
    }

    /// The first round of a call asked through an `input_required`
    /// result: an approval given already is spent; otherwise the pending
    /// one (asked now, or by an identical call) is told to the caller and
    /// left pending, nobody waiting for it in memory.
    async fn ask_by_result(
        &mut self,
        args: &Value,
        asked: Option<tokio::sync::oneshot::Sender<ApprovalId>>,
    ) -> Result<ApprovalId, Ended> {
        let (tell, told) = tokio::sync::oneshot::channel();
        if let Some(id) = self.first_look(args, Some(tell)).await? {
            return Ok(id);
        }
        // Left pending for the retry: not withdrawn when this round ends.
        self.withdraw.approval = None;
        let id = match told.await {
            Ok(id) => Some(id),
            Err(_) => self.watched,
        };
        match id {
            Some(id) => {
                if let Some(asked) = asked {
                    let _ = asked.send(id);
                }
                Err(Ended::AskedByResult(id))
            }
            // Joined a request that was decided in between: ask again later.
            None => Err(Ended::Unrecorded),
        }
    }

    /// The retry of a call whose client answered approval `id`: the answer
    /// decides it, if it is this call's and still pending, and the call
    /// spends it or ends as it was decided. Nothing is asked or awaited.
    async fn answered(
        &mut self,
        id: ApprovalId,
        approve: bool,
        answer: &str,
    ) -> Result<ApprovalId, Ended> {
        let row = match self.approvals.store.approval(id).await {
            Ok(Some(row)) => row,
            Ok(None) => return Err(Ended::AnswerRefused),
            Err(e) => {
                tracing::error!(error = %e, call = %self.call_id, "cannot read the approval a retry answers; not running the call");
                return Err(Ended::Unrecorded);
            }
        };
        // Bound to this exact call: another call's approval is not decided
        // by this one's answer.
        if row.session != self.session || row.tool != self.tool || row.args_digest != self.digest {
            return Err(Ended::AnswerRefused);
        }
        if row.state != crate::store::ApprovalState::Pending {
            return Err(Ended::AnswerRefused);
        }
        self.watched = Some(id);
        let timeout = self.approvals.timeout.as_millis() as i64;
        if row.requested_at_ms + timeout <= crate::dates::now_ms() {
            let _ = self.approvals.decide(id, false, Decider::Timeout).await;
            self.decided(id, Some(TIMEOUT_DECIDER)).await;
            return Err(Ended::TimedOut);
        }
        match self
            .approvals
            .decide(id, approve, Decider::InputRequired { answer })
            .await
        {
            Ok(()) => {}
            // Decided by someone else in between: not by this answer.
            Err(super::DecideError::NotPending { .. } | super::DecideError::Unknown(_)) => {
                return Err(Ended::AnswerRefused);
            }
            Err(e) => {
                tracing::error!(error = %e, call = %self.call_id, "cannot record a person's answer; not running the call");
                return Err(Ended::Unrecorded);
            }
        }
        match self
            .approvals
            .store
            .consume_approval(self.session, self.tool, self.digest)
            .await
        {
            Ok(spent) => {
                self.decided(spent, None).await;
                Ok(spent)
            }
            Err(other) => Err(self.refused(other).await),
        }
    }

    /// Sleeps until the store rings, the recheck or the deadline comes;
    /// the end of the wait if the host stops or the caller goes away first.
    async fn next_ring(
        &mut self,
        bell: &mut ApprovalWatch,
        gone: &CancellationToken,
    ) -> Result<(), Ended> {
        let woken = tokio::select! {
            () = bell.rung() => Woken::Look,
            // Only for a decision made by another process on the same file.
            () = tokio::time::sleep(STORE_RECHECK) => Woken::Look,
            () = tokio::time::sleep_until(self.deadline) => Woken::Look,
            () = self.approvals.shutdown.cancelled() => Woken::ShutDown,
            () = gone.cancelled() => Woken::Gone,
        };
        match woken {
            Woken::Look => Ok(()),
            Woken::ShutDown => Err(self.shut_down().await),
            // The withdrawal revokes this call's own approval and records
            // why as it drops; a call that joined another's request just
            // ends (its caller records that it left).
            Woken::Gone if self.withdraw.approval.is_none() => Err(Ended::CallerGone),
            Woken::Gone => Err(Ended::Withdrawn),
        }
    }

    /// Nobody may approve it once this host is gone: revoked with its own
    /// rule, and the call ends without running.
    async fn shut_down(&mut self) -> Ended {
        let rule = Rule::HostShutdown.name();
        if let Some(id) = self.withdraw.approval.take() {
            if let Err(e) = self.approvals.revoke(id, &rule).await {
                tracing::error!(error = %e, approval = id.0, "cannot revoke an approval at shutdown");
            }
            self.watched = Some(id);
        }
        if let Some(id) = self.watched {
            self.decided(id, Some(&rule)).await;
        }
        Ended::HostShutdown
    }

    /// Reads the approval again; the wait's end once it is decided, or
    /// timed out.
    async fn look(&mut self) -> Option<Result<ApprovalId, Ended>> {
        let consumed = self
            .approvals
            .store
            .consume_approval(self.session, self.tool, self.digest)
            .await;
        // The store away for a moment (a database restarting): the
        // approval waits as it was, and a person may still decide it
        // once the store is back, until the deadline.
        if let Err(ApprovalError::Store(e)) = &consumed
            && tokio::time::Instant::now() < self.deadline
        {
            // Once per wait: the store's own outage is logged where it starts.
            if !self.store_failed {
                tracing::warn!(error = %e, call = %self.call_id, "cannot read the approval this call waits for; waiting on");
            }
            self.store_failed = true;
            return None;
        }
        if !matches!(consumed, Err(ApprovalError::Pending)) {
            // Decided one way or the other: nothing left to withdraw.
            self.withdraw.approval = None;
        }
        match consumed {
            Ok(id) => {
                self.decided(id, None).await;
                Some(Ok(id))
            }
            Err(ApprovalError::Pending) if tokio::time::Instant::now() < self.deadline => {
                if self.watched.is_none() {
                    self.watched = self.pending_id().await;
                }
                None
            }
            Err(ApprovalError::Pending) => Some(Err(self.time_out().await)),
            Err(other) => Some(Err(self.refused(other).await)),
        }
    }

    /// Timed out: the pending request must not be approvable later.
    async fn time_out(&mut self) -> Ended {
        for approval in self
            .approvals
            .pending(self.session)
            .await
            .unwrap_or_default()
        {
            if approval.tool == self.tool && approval.args_digest == self.digest {
                let _ = self
                    .approvals
                    .decide(approval.id, false, Decider::Timeout)
                    .await;
                self.watched = Some(approval.id);
            }
        }
        if let Some(id) = self.watched {
            self.decided(id, Some(TIMEOUT_DECIDER)).await;
        }
        Ended::TimedOut
    }

    /// Decided, but not for this call to run.
    async fn refused(&self, other: ApprovalError) -> Ended {
        if let Some(id) = self.watched {
            self.decided(id, None).await;
        }
        match other {
            ApprovalError::Revoked => Ended::Revoked,
            ApprovalError::Denied => Ended::Denied,
            // Spent while the store did not answer: perhaps by this very
            // call's spend whose answer was lost, so it does not run;
            // asking again is safe.
            ApprovalError::AlreadyUsed if self.store_failed => Ended::Unrecorded,
            // Required, already used, unknown, no longer pending, or the
            // store failing: nobody approved this call in time.
            _ => Ended::TimedOut,
        }
    }

    /// The pending request an identical call of the session made.
    async fn pending_id(&self) -> Option<ApprovalId> {
        self.approvals
            .pending(self.session)
            .await
            .unwrap_or_default()
            .into_iter()
            .find(|a| a.tool == self.tool && a.args_digest == self.digest)
            .map(|a| a.id)
    }

    /// Tells the call's trace who decided approval `id`, and when (`by`:
    /// the host's own reason, when it ended the wait).
    async fn decided(&self, id: ApprovalId, by: Option<&str>) {
        let decision = self
            .approvals
            .decision(id, self.started, by, self.sealed.clone())
            .await;
        self.record.decided(&decision);
    }
}

/// An approval request whose call may still go away while it waits: on
/// drop, an approval still unused is revoked and the trace says why.
struct Withdraw<'a> {
    approvals: &'a Approvals,
    record: &'a dyn WaitRecord,
    approval: Option<ApprovalId>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let Some(id) = self.approval.take() else {
            return;
        };
        match crate::store::block(self.approvals.store.revoke_approval(id, WITHDRAWN_BY)) {
            Ok(true) => self.record.withdrawn(id),
            // Decided or used in the meantime: it served (or refused) this call.
            Ok(false) => {}
            Err(e) => {
                tracing::error!(error = %e, approval = id.0, "cannot withdraw an approval whose caller went away")
            }
        }
    }
}
