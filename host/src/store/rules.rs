//! The decisions both backends make, written once. Each is a plain function
//! over what a backend read (its rows, as values) that answers what to
//! write, or the error: the SQL that reads and writes stays in each backend
//! (`sqlite/`, `postgres/`), the rule lives here, so a change to it is made
//! once and is tested without a database.

use super::{
    Answered, ApprovalError, ApprovalId, ApprovalState, CapabilityRequest, RunHold, StartRunError,
    StoreError, to_u64,
};

/// The state a person's decision gives a pending approval.
pub(crate) fn decided_state(approved: bool) -> ApprovalState {
    if approved {
        ApprovalState::Approved
    } else {
        ApprovalState::Denied
    }
}

/// Why a decision changed nothing: approval `id` exists (it was decided,
/// revoked or spent already) or it never did.
pub(crate) fn not_decided(id: ApprovalId, exists: bool) -> ApprovalError {
    if exists {
        ApprovalError::NotPending(id)
    } else {
        ApprovalError::Unknown(id)
    }
}

/// How many times a consumer tries to spend an approval that a concurrent
/// decision keeps changing under it (PostgreSQL's READ COMMITTED) before
/// answering [`ApprovalError::Pending`]: read again later.
pub(crate) const SPEND_ATTEMPTS: usize = 3;

/// What a consumer does when no approval could be spent.
#[derive(Debug)]
pub(crate) enum NothingSpent {
    /// The newest request is approved and unused: a decision committed
    /// between the spend and this read; spend again.
    TryAgain,
    /// The consumer's answer.
    Refused(ApprovalError),
}

impl NothingSpent {
    /// The answer once no attempt is left (or, on a backend that spends
    /// under its write lock and so never has to try again, at once).
    pub(crate) fn answer(self) -> ApprovalError {
        match self {
            NothingSpent::TryAgain => ApprovalError::Pending,
            NothingSpent::Refused(error) => error,
        }
    }
}

/// After a spend found nothing: the newest matching request's state and
/// whether it was used (`None`: never asked).
pub(crate) fn nothing_spent(latest: Option<(&str, bool)>) -> NothingSpent {
    match latest {
        Some((state, false)) if state == ApprovalState::Approved.as_str() => NothingSpent::TryAgain,
        latest => NothingSpent::Refused(unspendable(latest.map(|(state, _)| state))),
    }
}

/// Why no approval could be spent, from the newest matching request's
/// state (`None`: never asked). An approved one that could not be spent was
/// used, or (on PostgreSQL) taken by a concurrent consumer between the two
/// reads.
pub(crate) fn unspendable(latest_state: Option<&str>) -> ApprovalError {
    let Some(state) = latest_state else {
        return ApprovalError::Required;
    };
    match ApprovalState::parse(state) {
        Some(ApprovalState::Pending) => ApprovalError::Pending,
        Some(ApprovalState::Denied) => ApprovalError::Denied,
        Some(ApprovalState::Revoked) => ApprovalError::Revoked,
        Some(ApprovalState::Approved) => ApprovalError::AlreadyUsed,
        None => ApprovalError::Store(StoreError::Corrupt(format!("approval in state {state:?}"))),
    }
}

/// Whether a charge that inserted nothing (its key was taken) is a retry
/// of the same charge (`Ok(false)`: nothing new recorded) or another
/// charge under a used key (the caller's error).
pub(crate) fn charge_not_inserted(same: bool, idempotency_key: &str) -> Result<bool, StoreError> {
    if same {
        Ok(false)
    } else {
        Err(StoreError::IdempotencyConflict(idempotency_key.to_owned()))
    }
}

/// A run's figures make sense: it may spend something, and no more than
/// its day. Checked before anything is read.
pub(crate) fn valid_allowance(per_run: u64, per_day: u64) -> Result<(), StartRunError> {
    if per_run == 0 || per_run > per_day {
        return Err(StartRunError::InvalidAllowance { per_run, per_day });
    }
    Ok(())
}

/// Whether run `run_id` may start, given whether a run of that id exists
/// already and what its day's runs hold (`committed`, see
/// [`day_allows`]).
pub(crate) fn run_may_start(
    run_id: &str,
    exists: bool,
    committed: i64,
    per_run: u64,
    per_day: u64,
) -> Result<(), StartRunError> {
    if exists {
        return Err(StoreError::RunExists(run_id.to_owned()).into());
    }
    day_allows(committed, per_run, per_day)
}

/// Whether a run of `per_run` may start on a day where runs already hold
/// `committed` ([`super::statements::DAY_COMMITTED`]) of `per_day`: the
/// seed's day arithmetic.
pub(crate) fn day_allows(committed: i64, per_run: u64, per_day: u64) -> Result<(), StartRunError> {
    let committed = to_u64(committed)?;
    if committed.saturating_add(per_run) > per_day {
        return Err(StartRunError::DayExhausted { committed, per_day });
    }
    Ok(())
}

/// What a live run has left: its per-run figure less what it holds and
/// what it recorded, never below zero.
pub(crate) fn left_in_run(per_run: i64, reserved: i64, spent: i64) -> Result<u64, StoreError> {
    to_u64((per_run - reserved - spent).max(0))
}

/// What holding `amount` against a run that has `left` does (`None`: the
/// run ended or never started); only [`RunHold::Held`] writes the hold.
pub(crate) fn hold(left: Option<u64>, amount: u64) -> RunHold {
    match left {
        None => RunHold::Ended,
        Some(left) if amount > left => RunHold::Short(left),
        Some(_) => RunHold::Held,
    }
}

/// What settling a hold does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Settlement {
    /// A retry of a settlement already recorded (whether or not the run
    /// ended since): the same answer, nothing written.
    Recorded(u64),
    /// The run ended (or never started): nothing written.
    RunEnded,
    /// Release the hold and record this charge (when above zero).
    Charge(u64),
}

impl Settlement {
    /// What the settlement answers: the amount charged, `None` if the run
    /// had ended.
    pub(crate) fn charged(self) -> Option<u64> {
        match self {
            Settlement::Recorded(amount) | Settlement::Charge(amount) => Some(amount),
            Settlement::RunEnded => None,
        }
    }
}

/// Settling a hold of `reserved` that cost `actual`, given what was
/// already recorded under its key (`recorded`) and what the run has beside
/// this hold (`left`, read before the hold is released, which would count
/// it twice; `None` if the run ended).
pub(crate) fn settlement(
    recorded: Option<i64>,
    left: Option<u64>,
    reserved: u64,
    actual: u64,
) -> Result<Settlement, StoreError> {
    if let Some(recorded) = recorded {
        return Ok(Settlement::Recorded(to_u64(recorded)?));
    }
    Ok(match left {
        None => Settlement::RunEnded,
        Some(left) => Settlement::Charge(settled_charge(reserved, actual, left)),
    })
}

/// What charging a settled run costs, given its allowance: `actual` when
/// within the hold, else the hold plus as much of the excess as `left`
/// (what the run has beside this hold) allows.
pub(crate) fn settled_charge(reserved: u64, actual: u64, left: u64) -> u64 {
    if actual <= reserved {
        actual
    } else {
        reserved + (actual - reserved).min(left)
    }
}

/// The charge that ends a run: the holds no call settled, in full, once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EndCharge {
    pub idempotency_key: String,
    pub amount: i64,
}

/// Ending run `run_id`, given its row (`open`: what it still holds, and
/// whether it ended already; `None`: no such run): the charge to record
/// first, if any. The run is then marked ended either way.
pub(crate) fn end_run(
    run_id: &str,
    run: Option<(i64, bool)>,
) -> Result<Option<EndCharge>, StoreError> {
    let Some((open, ended)) = run else {
        return Err(StoreError::UnknownRun(run_id.to_owned()));
    };
    Ok((!ended && open > 0).then(|| EndCharge {
        idempotency_key: format!("{run_id}:end"),
        amount: open,
    }))
}

/// A stored connection's secret, from its row (`nonce`, `ciphertext`,
/// `disabled`; `None`: never stored): a disabled one resolves for no one.
pub(crate) fn connection_secret(
    brand: &str,
    connector: &str,
    key: &[u8; 32],
    row: Option<(Vec<u8>, Vec<u8>, bool)>,
) -> Result<Option<String>, StoreError> {
    match row {
        None | Some((_, _, true)) => Ok(None),
        Some((nonce, ciphertext, false)) => {
            super::sealed::open_connection(brand, connector, key, &nonce, &ciphertext).map(Some)
        }
    }
}

/// Answering capability request `found` (`None`: no such request) at
/// `at_ms`: the first answer is kept; only [`Answered::Now`] is written.
pub(crate) fn answer_capability_request(
    found: Option<CapabilityRequest>,
    answer: &str,
    by: &str,
    at_ms: i64,
) -> Answered {
    let Some(mut found) = found else {
        return Answered::Unknown;
    };
    if found.answer.is_some() {
        return Answered::Already(found);
    }
    found.answer = Some(answer.to_owned());
    found.answered_by = Some(by.to_owned());
    found.answered_at_ms = Some(at_ms);
    Answered::Now(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_approves_or_denies() {
        assert_eq!(decided_state(true), ApprovalState::Approved);
        assert_eq!(decided_state(false), ApprovalState::Denied);
    }

    #[test]
    fn a_decision_that_changed_nothing_says_whether_the_approval_exists() {
        assert!(matches!(
            not_decided(ApprovalId(4), true),
            ApprovalError::NotPending(ApprovalId(4))
        ));
        assert!(matches!(
            not_decided(ApprovalId(4), false),
            ApprovalError::Unknown(ApprovalId(4))
        ));
    }

    #[test]
    fn nothing_spent_is_explained_by_the_newest_request() {
        let refused = |latest| match nothing_spent(latest) {
            NothingSpent::Refused(error) => error,
            NothingSpent::TryAgain => panic!("{latest:?} tries again"),
        };
        assert!(matches!(refused(None), ApprovalError::Required));
        assert!(matches!(
            refused(Some(("pending", false))),
            ApprovalError::Pending
        ));
        assert!(matches!(
            refused(Some(("denied", false))),
            ApprovalError::Denied
        ));
        assert!(matches!(
            refused(Some(("revoked", false))),
            ApprovalError::Revoked
        ));
        assert!(matches!(
            refused(Some(("approved", true))),
            ApprovalError::AlreadyUsed
        ));
        assert!(matches!(
            refused(Some(("weird", false))),
            ApprovalError::Store(StoreError::Corrupt(_))
        ));
    }

    #[test]
    fn an_approved_unused_request_is_spent_again_and_at_the_end_is_pending() {
        assert!(matches!(
            nothing_spent(Some(("approved", false))),
            NothingSpent::TryAgain
        ));
        assert!(matches!(
            NothingSpent::TryAgain.answer(),
            ApprovalError::Pending
        ));
        assert!(matches!(
            NothingSpent::Refused(ApprovalError::Denied).answer(),
            ApprovalError::Denied
        ));
    }

    #[test]
    fn a_repeated_charge_is_a_retry_only_when_it_is_the_same() {
        assert!(!charge_not_inserted(true, "k").unwrap());
        assert!(matches!(
            charge_not_inserted(false, "k"),
            Err(StoreError::IdempotencyConflict(key)) if key == "k"
        ));
    }

    #[test]
    fn a_run_starts_within_its_allowance_and_its_day() {
        assert!(valid_allowance(1, 1).is_ok());
        assert!(matches!(
            valid_allowance(0, 5),
            Err(StartRunError::InvalidAllowance {
                per_run: 0,
                per_day: 5
            })
        ));
        assert!(matches!(
            valid_allowance(6, 5),
            Err(StartRunError::InvalidAllowance {
                per_run: 6,
                per_day: 5
            })
        ));
        assert!(run_may_start("r", false, 40, 60, 100).is_ok());
        assert!(matches!(
            run_may_start("r", false, 41, 60, 100),
            Err(StartRunError::DayExhausted {
                committed: 41,
                per_day: 100
            })
        ));
        assert!(matches!(
            run_may_start("r", true, 0, 1, 100),
            Err(StartRunError::Store(StoreError::RunExists(id))) if id == "r"
        ));
        assert!(matches!(
            day_allows(-1, 1, 100),
            Err(StartRunError::Store(StoreError::Corrupt(_)))
        ));
    }

    #[test]
    fn a_hold_fits_what_the_run_has_left() {
        assert_eq!(left_in_run(100, 30, 20).unwrap(), 50);
        assert_eq!(left_in_run(100, 80, 40).unwrap(), 0);
        assert_eq!(hold(Some(50), 50), RunHold::Held);
        assert_eq!(hold(Some(50), 51), RunHold::Short(50));
        assert_eq!(hold(None, 1), RunHold::Ended);
    }

    #[test]
    fn a_settlement_charges_within_the_run_once() {
        assert_eq!(
            settlement(Some(7), Some(100), 10, 20).unwrap(),
            Settlement::Recorded(7)
        );
        assert_eq!(
            settlement(Some(7), None, 10, 20).unwrap().charged(),
            Some(7)
        );
        assert_eq!(
            settlement(None, None, 10, 20).unwrap(),
            Settlement::RunEnded
        );
        assert_eq!(settlement(None, None, 10, 20).unwrap().charged(), None);
        assert_eq!(
            settlement(None, Some(100), 10, 4).unwrap(),
            Settlement::Charge(4)
        );
        assert_eq!(
            settlement(None, Some(5), 10, 20).unwrap(),
            Settlement::Charge(15)
        );
        assert_eq!(
            settlement(None, Some(0), 0, 3).unwrap(),
            Settlement::Charge(0)
        );
    }

    #[test]
    fn ending_a_run_charges_its_open_holds_once() {
        assert!(matches!(
            end_run("r", None),
            Err(StoreError::UnknownRun(id)) if id == "r"
        ));
        assert_eq!(
            end_run("r", Some((9, false))).unwrap(),
            Some(EndCharge {
                idempotency_key: "r:end".into(),
                amount: 9
            })
        );
        assert_eq!(end_run("r", Some((9, true))).unwrap(), None);
        assert_eq!(end_run("r", Some((0, false))).unwrap(), None);
    }

    #[test]
    fn a_disabled_or_missing_connection_resolves_for_no_one() {
        let key = [7u8; 32];
        let (nonce, ciphertext) = crate::store::sealed::seal(
            &key,
            &crate::store::sealed::connection_aad("b", "c"),
            b"secret",
        )
        .unwrap();
        assert_eq!(connection_secret("b", "c", &key, None).unwrap(), None);
        assert_eq!(
            connection_secret(
                "b",
                "c",
                &key,
                Some((nonce.clone(), ciphertext.clone(), true))
            )
            .unwrap(),
            None
        );
        assert_eq!(
            connection_secret(
                "b",
                "c",
                &key,
                Some((nonce.clone(), ciphertext.clone(), false))
            )
            .unwrap()
            .as_deref(),
            Some("secret")
        );
        assert!(matches!(
            connection_secret("other", "c", &key, Some((nonce, ciphertext, false))),
            Err(StoreError::Decrypt { .. })
        ));
    }

    #[test]
    fn a_capability_request_keeps_its_first_answer() {
        let request = CapabilityRequest {
            id: 1,
            session: "s".into(),
            brand: "b".into(),
            request: serde_json::json!({}),
            requested_at_ms: 5,
            answer: None,
            answered_by: None,
            answered_at_ms: None,
        };
        assert_eq!(
            answer_capability_request(None, "yes", "ann", 9),
            Answered::Unknown
        );
        let Answered::Now(answered) =
            answer_capability_request(Some(request.clone()), "yes", "ann", 9)
        else {
            panic!("not answered now");
        };
        assert_eq!(answered.answer.as_deref(), Some("yes"));
        assert_eq!(answered.answered_by.as_deref(), Some("ann"));
        assert_eq!(answered.answered_at_ms, Some(9));
        assert_eq!(
            answer_capability_request(Some(answered.clone()), "no", "bob", 10),
            Answered::Already(answered)
        );
    }
}
