//! Person chat's spend thresholds (seed 000: DataForSEO and Firecrawl,
//! "every call bills; calls above a threshold ask a person").
//!
//! With an operator's per-call threshold for a billing connector, the
//! boundary lets its billed calls run ([`super::Pass::Spend`]) and the
//! meter is the gate: the guest's `reserve(estimate)` is what is compared.
//! The threshold holds for one call's reservations together: while they
//! stay at or below it they are made at once. One that would take the call
//! above it (a cost split into several reservations asks as one would),
//! the meter hands here ([`SpendAsk`]) and the call waits
//! while a person is asked, through the same approvals as a write (the
//! approvals API, the console, MCP elicitation), about exactly this call
//! and this estimate: the approval is bound to the SHA-256 digest of
//! `{"arguments": <the call's arguments>, "estimate": n, "unit": u}` (with
//! `reserved_before` when the call had already reserved some), shows that,
//! and is consumed once. Only an approval makes the reservation. No
//! reservation under a threshold, approved or not, is settled above its
//! amount: past it no one was asked, so the rest is refused. A session where no
//! one can approve refuses every reservation above the threshold. Without
//! a threshold nothing here applies: the call asks before it runs.

use super::approval::Wait;
use super::trace::CallTrace;
use super::{AskedFor, Boundary, Denied, Pass};
use crate::capabilities::Capabilities;
use crate::capabilities::meter::{SpendAsk, SpendGate};
use crate::policy::{AboveThreshold, Gate, Rule};
use crate::runtime::{CallOutcome, LoadedComponent};
use crate::store::args_digest;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use tokio_util::sync::CancellationToken;

/// Reservations above the threshold one call may ask a person about: a
/// guest cannot keep a call (and its instance) waiting for people forever.
pub(super) const MAX_ASKS_PER_CALL: usize = 4;

/// The gate a billed call passes when the operator set a threshold for its
/// connector; `None` for any other gate, or a billing connector without
/// one (which then asks a person before every call: fails closed).
pub(super) fn pass(gate: &Gate, thresholds: &BTreeMap<String, u64>) -> Option<Pass> {
    let Gate::Spend {
        connector,
        above_threshold,
    } = gate
    else {
        return None;
    };
    thresholds.get(connector).map(|&threshold| Pass::Spend {
        threshold,
        asks: *above_threshold == AboveThreshold::AsksPerson,
    })
}

/// One billed call to run under its threshold.
pub(super) struct GatedRun<'a> {
    pub(super) component: &'a LoadedComponent,
    /// The tool as the call resolved it.
    pub(super) called: &'a crate::runtime::Tool,
    pub(super) args: &'a Value,
    pub(super) caps: &'a Capabilities,
    pub(super) threshold: u64,
    /// Whether a person can be asked in this session.
    pub(super) asks: bool,
}

/// `amount` of `unit` as a person reads it: micro-USD also in dollars.
fn amount(n: u64, unit: &str) -> String {
    match unit {
        "micro-usd" => format!("{n} micro-usd (${}.{:06})", n / 1_000_000, n % 1_000_000),
        _ => format!("{n} {unit}"),
    }
}

impl Boundary {
    /// Runs `run`'s guest with its meter held to the threshold, answering
    /// each reservation above it while the guest waits; what was asked and
    /// answered is added to `spends` for the trace's `executed` event.
    pub(super) async fn run_gated(
        &self,
        run: GatedRun<'_>,
        trace: &CallTrace<'_>,
        gone: &CancellationToken,
        asked: &mut Option<AskedFor>,
        spends: &mut Vec<Value>,
    ) -> Result<CallOutcome, crate::CallError> {
        let (ask, mut asks) = tokio::sync::mpsc::channel::<SpendAsk>(1);
        let caps = Capabilities {
            spend: Some(SpendGate {
                threshold: run.threshold,
                ask,
            }),
            ..run.caps.clone()
        };
        let call = run.component.run(run.called, run.args, &caps);
        tokio::pin!(call);
        loop {
            tokio::select! {
                result = &mut call => return result,
                Some(ask) = asks.recv() => {
                    let (answer, entry) = self
                        .decide_spend(&run, trace, &ask, gone, asked, spends)
                        .await;
                    spends.push(entry);
                    let _ = ask.answer.send(answer);
                }
            }
        }
    }

    /// Asks a person about one reservation above the threshold, or refuses
    /// it: the answer the meter gets (`Ok`: reserve it) and the trace's
    /// record of it.
    async fn decide_spend(
        &self,
        run: &GatedRun<'_>,
        trace: &CallTrace<'_>,
        ask: &SpendAsk,
        gone: &CancellationToken,
        asked: &mut Option<AskedFor>,
        earlier: &[Value],
    ) -> (Result<(), String>, Value) {
        let SpendAsk {
            estimate,
            unit,
            threshold,
            reserved_before,
            ..
        } = ask;
        let spending = if *reserved_before == 0 {
            format!(
                "spending {}, above this connector's per-call threshold of {}",
                amount(*estimate, unit),
                amount(*threshold, unit)
            )
        } else {
            format!(
                "spending {} after {} already reserved in this call, above this connector's per-call threshold of {}",
                amount(*estimate, unit),
                amount(*reserved_before, unit),
                amount(*threshold, unit)
            )
        };
        let mut entry = json!({"estimate": estimate, "unit": unit, "threshold": threshold});
        if *reserved_before > 0 {
            entry["reserved_before"] = json!(reserved_before);
        }
        let refuse = |mut entry: Value, outcome: &str, message: String| {
            entry["outcome"] = json!(outcome);
            (Err(format!("{message}; nothing was reserved")), entry)
        };
        if !run.asks {
            return refuse(
                entry,
                Rule::ApprovalRequired.name().as_ref(),
                format!("approval required: {spending}, and no one can approve it in this session"),
            );
        }
        let refused_before = earlier.iter().any(|e| e["outcome"] != "approved");
        if refused_before || earlier.len() >= MAX_ASKS_PER_CALL {
            return refuse(
                entry,
                "not_asked",
                format!(
                    "not asked: {spending}, and this call already had a reservation above it refused, or asked {MAX_ASKS_PER_CALL} times"
                ),
            );
        }
        // Bound to this call's arguments and this estimate; shown as such.
        let mut shown = json!({"arguments": run.args, "estimate": estimate, "unit": unit});
        if *reserved_before > 0 {
            shown["reserved_before"] = json!(reserved_before);
        }
        let digest = args_digest(&shown);
        let traced = json!({"estimate": estimate, "unit": unit, "threshold": threshold});
        let waited = self
            .await_approval(Wait {
                session: trace.session,
                call_id: &trace.call_id,
                name: &trace.name,
                digest: &digest,
                args: &shown,
                gone,
                asked: asked.take(),
                span: trace.span.as_ref(),
                origin: &trace.origin,
                spend: Some(&traced),
                remote: None,
                by_result: None,
                // A reservation's refusal is the guest's to handle: the
                // call goes on, and it is not counted as a refused request.
                targets: &[],
            })
            .await;
        // The world may have changed while a person was deciding: the
        // session paused, its delegation expired, the tool withdrawn.
        let waited = waited.and_then(|id| {
            match self
                .standing(trace.session)
                .and_then(|()| self.check(trace.session, run.component.name(), &trace.name))
            {
                Ok(_) => Ok(id),
                Err(rule) => Err(Denied::by(rule)),
            }
        });
        match waited {
            Ok(id) => {
                entry["outcome"] = json!("approved");
                entry["approval"] = json!(id.0);
                (Ok(()), entry)
            }
            Err(Denied { rule, .. }) => {
                let message = match rule.told() {
                    Rule::ApprovalDenied => {
                        format!("approval denied: a person declined {spending}")
                    }
                    Rule::ApprovalTimedOut => {
                        format!("approval timed out: nobody answered in time about {spending}")
                    }
                    Rule::ApprovalWithdrawn => format!(
                        "approval withdrawn: the caller went away before a person decided on {spending}"
                    ),
                    Rule::Revoked => format!(
                        "revoked: access was withdrawn while a person decided on {spending}"
                    ),
                    Rule::ApprovalRequired => {
                        format!("approval required: no approval could be asked for {spending}")
                    }
                    other => format!("{}: {spending}", other.name()),
                };
                refuse(entry, rule.name().as_ref(), message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threshold_lets_a_billed_call_run_and_none_keeps_it_asking() {
        let thresholds: BTreeMap<String, u64> = [("firecrawl".to_string(), 5)].into();
        let spend = |connector: &str, above_threshold| Gate::Spend {
            connector: connector.into(),
            above_threshold,
        };
        assert_eq!(
            pass(&spend("firecrawl", AboveThreshold::AsksPerson), &thresholds),
            Some(Pass::Spend {
                threshold: 5,
                asks: true
            })
        );
        assert_eq!(
            pass(&spend("firecrawl", AboveThreshold::Refuses), &thresholds),
            Some(Pass::Spend {
                threshold: 5,
                asks: false
            }),
            "where no one can approve, above the threshold refuses"
        );
        assert_eq!(
            pass(
                &spend("dataforseo", AboveThreshold::AsksPerson),
                &thresholds
            ),
            None,
            "no threshold: the call asks before it runs, as before"
        );
        assert_eq!(pass(&Gate::Open, &thresholds), None);
        assert_eq!(pass(&Gate::AsksPerson, &thresholds), None);
    }

    /// A person's time is not the guest's: a call whose reservation waits
    /// for a person longer than the call's whole deadline still runs once
    /// approved, and only then reaches the upstream.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_persons_wait_does_not_count_against_the_calls_deadline() {
        use crate::capabilities::http::{
            CredentialScheme, HttpCapability, HttpConfig, SecretSource,
        };
        use crate::capabilities::meter::{Allowance, DayLedger};
        use crate::policy::{BrandFacts, Role, SessionInput};
        use crate::runtime::RuntimeConfig;
        use crate::session::Session;
        use std::time::Duration;

        let timeout = Duration::from_millis(500);
        let guest = super::super::test_guest::load(RuntimeConfig {
            max_concurrent_calls: 2,
            call_timeout: timeout,
            ..Default::default()
        });
        let (component, store) = (&guest.component, &guest.store);
        let boundary = guest.boundary(Some(5));
        let session = Session::new(
            "s-wait",
            "acme",
            SessionInput::new(Role::PersonChat)
                .brand(BrandFacts::with_connectors(["capabilities"]))
                .approval_channel(true),
        );
        let upstream = scout_tests::upstream::Upstream::start().await;
        let caps = Capabilities {
            http: Some(
                HttpCapability::new(
                    HttpConfig::new(upstream.origin())
                        .credential(
                            CredentialScheme::Bearer,
                            SecretSource::Value("s3cret-token-0123".into()),
                        )
                        .allow_private_network(true),
                )
                .unwrap(),
            ),
            meter: Some(
                DayLedger::new("credits")
                    .start_run(Allowance {
                        per_run: 100,
                        per_day: 100,
                    })
                    .unwrap(),
            ),
            ..Capabilities::default()
        };
        let args = serde_json::json!({"estimate": 10, "actual": 10, "path": "/p"});
        let call = boundary.call(
            &session,
            component,
            super::super::CallRequest::new("capabilities_spend", &args),
            &caps,
        );
        let person = async {
            let approval = loop {
                if let Some(a) = store.pending("s-wait").await.unwrap().into_iter().next() {
                    break a;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            // Longer than the call's whole deadline.
            tokio::time::sleep(timeout * 3).await;
            assert!(
                upstream.seen().is_empty(),
                "nothing sent while a person decides"
            );
            store.decide(approval.id, true, "a person").await.unwrap();
        };
        let (ran, ()) = tokio::join!(call, person);
        match ran {
            Ok(super::super::Executed::Ran(outcome)) => {
                assert!(
                    matches!(outcome.output, crate::runtime::ToolOutput::Ok(_)),
                    "{:?}",
                    outcome.output
                )
            }
            other => panic!("the approved call ran to its end: {other:?}"),
        }
        assert_eq!(
            upstream.seen().len(),
            1,
            "and reached the upstream once approved"
        );
    }

    /// A session paused while one of its calls waits for a person: the
    /// person's approval, given after the pause, runs nothing. Both waits:
    /// before a billed call with no threshold (`None`), and for a
    /// reservation above one (`Some`).
    async fn paused_while_a_person_decides(threshold: Option<u64>) {
        use crate::capabilities::http::{
            CredentialScheme, HttpCapability, HttpConfig, SecretSource,
        };
        use crate::capabilities::meter::{Allowance, DayLedger};
        use crate::policy::{BrandFacts, Role, SessionInput};
        use crate::runtime::RuntimeConfig;
        use crate::session::Session;
        use std::time::Duration;

        let guest = super::super::test_guest::load(RuntimeConfig::default());
        let (component, store) = (&guest.component, &guest.store);
        let boundary = guest.boundary(threshold);
        let session = Session::new(
            "s-paused",
            "acme",
            SessionInput::new(Role::PersonChat)
                .brand(BrandFacts::with_connectors(["capabilities"]))
                .approval_channel(true),
        );
        let upstream = scout_tests::upstream::Upstream::start().await;
        let meter = DayLedger::new("credits")
            .start_run(Allowance {
                per_run: 100,
                per_day: 100,
            })
            .unwrap();
        let caps = Capabilities {
            http: Some(
                HttpCapability::new(
                    HttpConfig::new(upstream.origin())
                        .credential(
                            CredentialScheme::Bearer,
                            SecretSource::Value("s3cret-token-0123".into()),
                        )
                        .allow_private_network(true),
                )
                .unwrap(),
            ),
            meter: Some(meter.clone()),
            ..Capabilities::default()
        };
        let args = serde_json::json!({"estimate": 10, "actual": 10, "path": "/p"});
        let call = boundary.call(
            &session,
            component,
            super::super::CallRequest::new("capabilities_spend", &args),
            &caps,
        );
        let person = async {
            let approval = loop {
                if let Some(a) = store.pending("s-paused").await.unwrap().into_iter().next() {
                    break a;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            // Another call's refusals pause the session meanwhile.
            session.pause();
            store.decide(approval.id, true, "a person").await.unwrap();
        };
        let (ran, ()) = tokio::join!(call, person);
        match (threshold, ran) {
            (None, Err(denied)) => assert_eq!(denied.rule, Rule::Paused),
            (Some(_), Ok(super::super::Executed::Ran(outcome))) => {
                let crate::runtime::ToolOutput::Err(error) = &outcome.output else {
                    panic!("the reservation is refused: {:?}", outcome.output);
                };
                assert!(
                    error.to_string().contains("nothing was reserved"),
                    "{error}"
                );
            }
            (_, other) => panic!("refused as paused after the approval: {other:?}"),
        }
        assert!(upstream.seen().is_empty(), "nothing reached the upstream");
        assert_eq!(meter.spent(), 0, "nothing was charged");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_approval_given_after_the_session_paused_runs_nothing() {
        paused_while_a_person_decides(None).await;
        paused_while_a_person_decides(Some(5)).await;
    }

    /// Runs the test guest's `tool` with `args` under a threshold of 5
    /// credits in a person's chat where no one can approve; returns the
    /// tool's output and what the run was charged.
    async fn under_a_threshold_of_5_unasked(
        tool: &str,
        args: serde_json::Value,
    ) -> (crate::runtime::ToolOutput, u64) {
        use crate::capabilities::meter::{Allowance, DayLedger};
        use crate::policy::{BrandFacts, Role, SessionInput};
        use crate::runtime::RuntimeConfig;
        use crate::session::Session;

        let guest = super::super::test_guest::load(RuntimeConfig::default());
        let (component, store) = (&guest.component, &guest.store);
        let boundary = guest.boundary(Some(5));
        let session = Session::new(
            "s-parts",
            "acme",
            SessionInput::new(Role::PersonChat)
                .brand(BrandFacts::with_connectors(["capabilities"]))
                .approval_channel(false),
        );
        let meter = DayLedger::new("credits")
            .start_run(Allowance {
                per_run: 100,
                per_day: 100,
            })
            .unwrap();
        let caps = Capabilities {
            meter: Some(meter.clone()),
            ..Capabilities::default()
        };
        let ran = boundary
            .call(
                &session,
                component,
                super::super::CallRequest::new(tool, &args),
                &caps,
            )
            .await;
        let output = match ran {
            Ok(super::super::Executed::Ran(outcome)) => outcome.output,
            other => panic!("the billed call ran: {other:?}"),
        };
        assert!(
            store.pending("s-parts").await.unwrap().is_empty(),
            "no one was asked"
        );
        (output, meter.spent())
    }

    /// The threshold holds for a call's reservations together: two that
    /// fit run, and a second that takes the call above it is refused as
    /// one reservation above it would be, with nothing reserved for it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cost_split_into_reservations_is_held_to_the_threshold_as_one() {
        let (fits, charged) = under_a_threshold_of_5_unasked(
            "capabilities_spend_in_parts",
            serde_json::json!({"estimates": [2, 3]}),
        )
        .await;
        assert_eq!(fits.ok(), Some(&serde_json::json!(95)), "{fits:?}");
        assert_eq!(charged, 5, "at the threshold together: both ran");

        let (split, charged) = under_a_threshold_of_5_unasked(
            "capabilities_spend_in_parts",
            serde_json::json!({"estimates": [3, 3]}),
        )
        .await;
        let crate::runtime::ToolOutput::Err(error) = &split else {
            panic!("the second reservation is refused: {split:?}");
        };
        let text = error.to_string();
        assert!(
            text.contains(
                "approval required: spending 3 credits after 3 credits already reserved in this call, above this connector's per-call threshold of 5 credits"
            ),
            "{text}"
        );
        assert_eq!(charged, 3, "only the first reservation was made");
    }

    /// A reservation made under the threshold without asking is the most
    /// its settlement charges: past it, no one was asked.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_settle_past_an_unasked_reservation_is_refused_and_charged_the_reservation() {
        let (output, charged) = under_a_threshold_of_5_unasked(
            "capabilities_spend",
            serde_json::json!({"estimate": 2, "actual": 60}),
        )
        .await;
        let crate::runtime::ToolOutput::Err(error) = &output else {
            panic!("the settlement is refused: {output:?}");
        };
        let text = error.to_string();
        assert!(
            text.contains("the settled cost of 60 credits is above the 2 credits reserved under this connector's per-call threshold, and no one was asked about more"),
            "{text}"
        );
        assert_eq!(charged, 2, "charged the reservation, not the 60 reported");
    }

    #[test]
    fn amounts_read_as_a_person_reads_them() {
        assert_eq!(amount(20, "credits"), "20 credits");
        assert_eq!(amount(15_500, "micro-usd"), "15500 micro-usd ($0.015500)");
        assert_eq!(
            amount(2_000_000, "micro-usd"),
            "2000000 micro-usd ($2.000000)"
        );
    }
}
