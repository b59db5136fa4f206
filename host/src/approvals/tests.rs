//! The approvals service without a server: a SQLite store in a temporary
//! directory, a call waiting, and each way its approval is decided.

use super::*;
use crate::serve::identity::{Principal, Role, Via};
use crate::store::{Approval, ApprovalId, ApprovalState, SqliteStore};
use crate::trace::Decided;
use serde_json::{Value, json};

/// What a waiting call's trace would have been told, in order.
#[derive(Default)]
struct Told(parking_lot::Mutex<Vec<String>>);

impl Told {
    fn all(&self) -> Vec<String> {
        self.0.lock().clone()
    }
}

impl WaitRecord for Told {
    fn requested(&self, id: ApprovalId) {
        self.0.lock().push(format!("requested {id}"));
    }
    fn decided(&self, decision: &Decision) {
        let by = decision.by.clone().unwrap_or_default();
        self.0.lock().push(format!(
            "decided {} {} by {by}",
            decision.id, decision.outcome
        ));
    }
    fn withdrawn(&self, id: ApprovalId) {
        self.0.lock().push(format!("withdrawn {id}"));
    }
}

const SESSION: &str = "s-approvals";
const TOOL: &str = "mcp__github__github_create_issue";

struct Fixture {
    _dir: tempfile::TempDir,
    store: Arc<dyn Store>,
    approvals: Approvals,
}

fn fixture(timeout: Duration) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.path().join("t.db")).unwrap());
    let approvals = Approvals::new(store.clone(), timeout);
    Fixture {
        _dir: dir,
        store,
        approvals,
    }
}

fn args() -> Value {
    json!({"title": "a bug"})
}

/// A call of [`TOOL`] waiting for a person (on another task) until the
/// service ends its wait; it is told the approval it asked for.
async fn waiting_call(
    fx: &Fixture,
    gone: &tokio_util::sync::CancellationToken,
    told: &Told,
) -> (Result<ApprovalId, Ended>, ApprovalId) {
    let args = args();
    let digest = crate::store::args_digest(&args);
    let (asked, asked_for) = tokio::sync::oneshot::channel();
    let ask = Ask {
        session: SESSION,
        tool: TOOL,
        digest: &digest,
        args: &args,
        call_id: "c-1",
        gone,
        asked: Some(asked),
        by_result: None,
    };
    let waited = fx.approvals.wait(ask, told).await;
    let id = asked_for.await.expect("the call asked for an approval");
    (waited, id)
}

/// The one approval pending in the session, once the call has asked.
async fn pending_one(approvals: &Approvals) -> Approval {
    loop {
        if let Some(approval) = approvals.pending(SESSION).await.unwrap().into_iter().next() {
            return approval;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn person(subject: &str) -> Decider<'_> {
    Decider::Person {
        subject,
        actor: json!({"kind": "person", "subject": subject}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_and_the_waiting_call_runs_with_that_approval() {
    let fx = fixture(Duration::from_secs(30));
    let (gone, told) = (Default::default(), Told::default());
    let decide = async {
        let approval = pending_one(&fx.approvals).await;
        assert_eq!(
            fx.approvals.arguments(&approval),
            Some(args()),
            "a person is shown what the waiting call asked"
        );
        fx.approvals
            .decide(approval.id, true, person("alice"))
            .await
            .unwrap();
    };
    let ((waited, id), ()) = tokio::join!(waiting_call(&fx, &gone, &told), decide);
    assert_eq!(waited, Ok(id));
    assert_eq!(
        told.all(),
        [
            format!("requested {id}"),
            format!("decided {id} approved by alice (approvals API)")
        ]
    );
    let row = fx.approvals.approval(id).await.unwrap().unwrap();
    assert!(row.used, "spent by the call it was asked for");
    assert_eq!(row.decided_actor.unwrap()["subject"], "alice");
    assert!(fx.approvals.pending(SESSION).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_denies_and_the_waiting_call_ends_denied() {
    let fx = fixture(Duration::from_secs(30));
    let (gone, told) = (Default::default(), Told::default());
    let decide = async {
        let approval = pending_one(&fx.approvals).await;
        fx.approvals
            .decide(approval.id, false, Decider::Elicitation)
            .await
            .unwrap();
    };
    let ((waited, id), ()) = tokio::join!(waiting_call(&fx, &gone, &told), decide);
    assert_eq!(waited, Err(Ended::Denied));
    assert_eq!(
        told.all().last().unwrap(),
        &format!("decided {id} denied by person (MCP elicitation)")
    );
    let row = fx.approvals.approval(id).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Denied);
    assert_eq!(row.decided_actor.unwrap()["via"], "mcp_elicitation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_decision_is_refused_and_changes_nothing() {
    let fx = fixture(Duration::from_secs(30));
    let id = fx
        .approvals
        .ask(SESSION, TOOL, "digest", &args())
        .await
        .unwrap();
    fx.approvals
        .decide(id, false, person("alice"))
        .await
        .unwrap();
    let again = fx.approvals.decide(id, true, person("bob")).await;
    assert!(
        matches!(again, Err(DecideError::NotPending { id: i, ended_by: None }) if i == id),
        "{again:?}"
    );
    let row = fx.approvals.approval(id).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Denied);
    assert_eq!(row.decided_by.as_deref(), Some("alice (approvals API)"));
    let unknown = fx
        .approvals
        .decide(ApprovalId(id.0 + 100), true, person("bob"))
        .await;
    assert!(
        matches!(unknown, Err(DecideError::Unknown(_))),
        "{unknown:?}"
    );
}

/// Why the admin API refuses a caller, as its handler does: a role over
/// the session's brand that may not decide (or none) is told there is no
/// such approval.
#[derive(Debug)]
enum Refused {
    NoSuchApproval,
    Decide(DecideError),
}

impl From<DecideError> for Refused {
    fn from(e: DecideError) -> Refused {
        Refused::Decide(e)
    }
}

fn caller(brands: &[(&str, Role)]) -> Principal {
    let highest = brands.iter().map(|(_, r)| *r).max().unwrap_or(Role::Viewer);
    Principal {
        subject: "carol".into(),
        role: highest,
        via: Via::Oidc,
        every_brand: None,
        brands: brands.iter().map(|(b, r)| (b.to_string(), *r)).collect(),
        auditor: false,
        audited: Default::default(),
        issuer: None,
        sub: None,
    }
}

/// Decides as the admin API would for `caller`, the session being of
/// brand `acme`.
async fn decide_as_caller(
    approvals: &Approvals,
    id: ApprovalId,
    caller: &Principal,
) -> Result<(), Refused> {
    let decider = Decider::Person {
        subject: &caller.subject,
        actor: caller.actor(),
    };
    approvals
        .decide_if(id, true, decider, |approval| {
            assert_eq!(approval.session, SESSION);
            match caller.may_in("acme", "POST", "/v1/approvals/{id}") {
                true => Ok(()),
                false => Err(Refused::NoSuchApproval),
            }
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_by_someone_who_may_not_decide_is_refused() {
    let fx = fixture(Duration::from_secs(30));
    let id = fx
        .approvals
        .ask(SESSION, TOOL, "digest", &args())
        .await
        .unwrap();
    for refused in [
        caller(&[("acme", Role::Viewer)]),
        caller(&[("other", Role::Admin)]),
    ] {
        let answer = decide_as_caller(&fx.approvals, id, &refused).await;
        assert!(matches!(answer, Err(Refused::NoSuchApproval)), "{answer:?}");
        let row = fx.approvals.approval(id).await.unwrap().unwrap();
        assert_eq!(row.state, ApprovalState::Pending, "nothing decided");
    }
    let approver = caller(&[("acme", Role::Approver)]);
    decide_as_caller(&fx.approvals, id, &approver)
        .await
        .unwrap();
    let row = fx.approvals.approval(id).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Approved);
    assert_eq!(row.decided_by.as_deref(), Some("carol (approvals API)"));
    let unknown = decide_as_caller(&fx.approvals, ApprovalId(id.0 + 1), &approver).await;
    assert!(
        matches!(unknown, Err(Refused::Decide(DecideError::Unknown(_)))),
        "{unknown:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_a_pending_approval_ends_its_wait_and_it_cannot_be_decided() {
    let fx = fixture(Duration::from_secs(30));
    let (gone, told) = (Default::default(), Told::default());
    let revoke = async {
        let approval = pending_one(&fx.approvals).await;
        let revoked = fx.approvals.revoke_tools(
            "github",
            &["github_create_issue".to_string()],
            "ops (the tool was reviewed anew)",
        );
        assert_eq!(revoked, [approval.id.0]);
        assert!(
            fx.approvals
                .revoke_tools("github", &["github_create_issue".to_string()], "ops")
                .is_empty(),
            "revoked once"
        );
    };
    let ((waited, id), ()) = tokio::join!(waiting_call(&fx, &gone, &told), revoke);
    assert_eq!(waited, Err(Ended::Revoked));
    assert_eq!(
        told.all().last().unwrap(),
        &format!("decided {id} revoked by ops (the tool was reviewed anew)")
    );
    let late = fx.approvals.decide(id, true, person("alice")).await;
    assert!(
        matches!(late, Err(DecideError::NotPending { ended_by: None, .. })),
        "{late:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_the_host_ended_names_its_rule_to_a_late_decider() {
    let fx = fixture(Duration::from_secs(30));
    let id = fx
        .approvals
        .ask(SESSION, TOOL, "digest", &args())
        .await
        .unwrap();
    assert!(
        fx.approvals
            .revoke(id, crate::store::HOST_LOST)
            .await
            .unwrap()
    );
    let late = fx.approvals.decide(id, true, person("alice")).await;
    assert!(
        matches!(
            late,
            Err(DecideError::NotPending {
                ended_by: Some(crate::store::HOST_LOST),
                ..
            })
        ),
        "{late:?}"
    );
    let other = fx
        .approvals
        .ask("s-other", TOOL, "digest", &args())
        .await
        .unwrap();
    assert_eq!(fx.approvals.revoke_session("s-other").unwrap(), 1);
    let row = fx.approvals.approval(other).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Revoked);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_deciding_in_time_denies_by_the_timeout() {
    let fx = fixture(Duration::from_millis(200));
    let (gone, told) = (Default::default(), Told::default());
    let (waited, id) = waiting_call(&fx, &gone, &told).await;
    assert_eq!(waited, Err(Ended::TimedOut));
    assert_eq!(
        told.all(),
        [
            format!("requested {id}"),
            format!("decided {id} {} by {TIMEOUT_DECIDER}", Decided::TimedOut)
        ]
    );
    let row = fx.store.approval(id).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Denied);
    assert_eq!(row.decided_by.as_deref(), Some(TIMEOUT_DECIDER));
    let late = fx.approvals.decide(id, true, person("alice")).await;
    assert!(
        matches!(late, Err(DecideError::NotPending { .. })),
        "not approvable later: {late:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_goes_away_withdraws_its_request() {
    let fx = fixture(Duration::from_secs(30));
    let (gone, told) = (tokio_util::sync::CancellationToken::new(), Told::default());
    let leave = async {
        pending_one(&fx.approvals).await;
        gone.cancel();
    };
    let ((waited, id), ()) = tokio::join!(waiting_call(&fx, &gone, &told), leave);
    assert_eq!(waited, Err(Ended::Withdrawn));
    assert_eq!(
        told.all(),
        [format!("requested {id}"), format!("withdrawn {id}")]
    );
    let row = fx.store.approval(id).await.unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Revoked);
    assert!(
        fx.approvals
            .waiting_arguments(SESSION, &row.args_digest)
            .is_none(),
        "no longer shown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_shutting_down_ends_every_wait() {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let mut fx = fixture(Duration::from_secs(30));
    fx.approvals =
        Approvals::new(fx.store.clone(), Duration::from_secs(30)).ending_with(shutdown.clone());
    let (gone, told) = (Default::default(), Told::default());
    let stop = async {
        pending_one(&fx.approvals).await;
        shutdown.cancel();
    };
    let ((waited, id), ()) = tokio::join!(waiting_call(&fx, &gone, &told), stop);
    assert_eq!(waited, Err(Ended::HostShutdown));
    assert_eq!(
        told.all().last().unwrap(),
        &format!("decided {id} revoked by host_shutdown")
    );
}

/// One round of a call whose client is asked through an `input_required`
/// result (`by_result`), with `args`.
async fn by_result_round(
    fx: &Fixture,
    args: &Value,
    by_result: ByResult,
    told: &Told,
) -> (Result<ApprovalId, Ended>, Option<ApprovalId>) {
    let digest = crate::store::args_digest(args);
    let (asked, asked_for) = tokio::sync::oneshot::channel();
    let gone = tokio_util::sync::CancellationToken::new();
    let ask = Ask {
        session: SESSION,
        tool: TOOL,
        digest: &digest,
        args,
        call_id: "c-ir",
        gone: &gone,
        asked: Some(asked),
        by_result: Some(by_result),
    };
    let waited = fx.approvals.wait(ask, told).await;
    (waited, asked_for.await.ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asked_by_result_the_approval_stays_pending_and_the_answer_decides_it_once() {
    let fx = fixture(Duration::from_secs(30));
    let told = Told::default();
    let (first, asked) = by_result_round(&fx, &args(), ByResult::Ask, &told).await;
    let id = asked.expect("told which approval it asked");
    assert_eq!(first, Err(Ended::AskedByResult(id)));
    assert_eq!(
        fx.approvals.pending(SESSION).await.unwrap()[0].id,
        id,
        "left pending for the retry, not withdrawn"
    );
    let answered = ByResult::Answered {
        approval: id,
        approve: true,
        answer: "accept",
    };
    let (retry, _) = by_result_round(&fx, &args(), answered, &told).await;
    assert_eq!(retry, Ok(id));
    let row = fx.approvals.approval(id).await.unwrap().unwrap();
    assert!(row.used && row.state == ApprovalState::Approved);
    assert_eq!(
        row.decided_by.as_deref(),
        Some("person (MCP input_required: accept)")
    );
    assert_eq!(row.decided_actor.unwrap()["via"], "input_required");
    // The same answer again: already decided, nothing runs.
    let (replay, _) = by_result_round(&fx, &args(), answered, &told).await;
    assert_eq!(replay, Err(Ended::AnswerRefused));
    assert_eq!(
        told.all(),
        [
            format!("requested {id}"),
            format!("decided {id} approved by person (MCP input_required: accept)")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_for_other_arguments_decides_nothing() {
    let fx = fixture(Duration::from_secs(30));
    let told = Told::default();
    let (_, asked) = by_result_round(&fx, &args(), ByResult::Ask, &told).await;
    let id = asked.unwrap();
    let answered = ByResult::Answered {
        approval: id,
        approve: true,
        answer: "accept",
    };
    let other = json!({"title": "another bug"});
    let (retry, _) = by_result_round(&fx, &other, answered, &told).await;
    assert_eq!(retry, Err(Ended::AnswerRefused));
    let row = fx.approvals.approval(id).await.unwrap().unwrap();
    assert_eq!(
        row.state,
        ApprovalState::Pending,
        "still the person's to answer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_answer_refuses_and_an_expired_one_times_out() {
    let fx = fixture(Duration::from_millis(300));
    let told = Told::default();
    let (_, asked) = by_result_round(&fx, &args(), ByResult::Ask, &told).await;
    let declined = asked.unwrap();
    let (retry, _) = by_result_round(
        &fx,
        &args(),
        ByResult::Answered {
            approval: declined,
            approve: false,
            answer: "decline",
        },
        &told,
    )
    .await;
    assert_eq!(retry, Err(Ended::Denied));
    let (_, asked) = by_result_round(&fx, &args(), ByResult::Ask, &told).await;
    let late = asked.unwrap();
    assert_ne!(late, declined, "a declined approval is not asked again");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (retry, _) = by_result_round(
        &fx,
        &args(),
        ByResult::Answered {
            approval: late,
            approve: true,
            answer: "accept",
        },
        &told,
    )
    .await;
    assert_eq!(retry, Err(Ended::TimedOut));
    let row = fx.approvals.approval(late).await.unwrap().unwrap();
    assert_eq!(
        (row.state, row.decided_by.as_deref()),
        (ApprovalState::Denied, Some(TIMEOUT_DECIDER))
    );
}
