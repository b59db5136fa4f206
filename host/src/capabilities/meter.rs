//! The `meter` capability: spending against a run's and a day's allowance.
//!
//! The per-day figure is checked when a run starts ([`DayLedger::start_run`]):
//! runs already ended today count at what they recorded (or their whole
//! per-run figure if they recorded nothing), live runs at their whole
//! per-run figure. The per-run figure is enforced on every reservation
//! ([`RunMeter::reserve`]), atomically, so no interleaving of concurrent calls
//! can spend past it, and a refused reservation charges nothing. A
//! reservation dropped unsettled (the guest forgot, or trapped) is charged in
//! full.
//!
//! [`Allowance`] here is the meter's side of the one allowance type: integer
//! units only ([`crate::policy::MeteredAllowance`]). What a person grants is
//! [`crate::policy::Allowance`] (credits or dollars, as the seed writes
//! them); its `metered` is the only conversion into these units, so no
//! caller converts dollars by hand.

pub(crate) use super::bindings::meter::MeterError;
use super::bindings::meter::{Host, HostReservation};
use super::state::{MeterCtx, View};
use crate::store::{LedgerStore, StartRunError};
use parking_lot::{Mutex, MutexGuard};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use wasmtime::component::Resource;

/// An allowance for one billing connector, in its unit (credits, micro-USD):
/// the policy's type, so that the policy imports nothing from here.
pub use crate::policy::MeteredAllowance as Allowance;

/// Why a run may not start, or a reservation was refused.
#[derive(Debug, thiserror::Error)]
pub enum AllowanceError {
    /// Starting the run could spend past the day's allowance.
    #[error(
        "the day's allowance is exhausted: {committed} of {per_day} {unit} already spent or held by runs"
    )]
    DayExhausted {
        committed: u64,
        per_day: u64,
        unit: String,
    },
    /// The allowance's figures cannot start a run.
    #[error(transparent)]
    Unstartable(#[from] crate::policy::UnstartableAllowance),
    /// The ledger could not be read or written.
    #[error("the allowance ledger is unavailable: {0}")]
    Ledger(#[source] crate::store::StoreError),
}

#[derive(Debug, Default)]
struct Day {
    /// Spend recorded by ended runs (their whole per-run figure if they recorded nothing).
    ended: u64,
    /// Per-run figures of runs still live.
    live: u64,
}

/// One connector's spending for one brand and day: the runs that started.
#[derive(Debug)]
pub struct DayLedger {
    unit: String,
    day: Mutex<Day>,
}

impl DayLedger {
    /// A ledger counting in `unit` (e.g. `credits`, `micro-usd`).
    pub fn new(unit: impl Into<String>) -> Arc<DayLedger> {
        Arc::new(DayLedger {
            unit: unit.into(),
            day: Mutex::new(Day::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Day> {
        self.day.lock()
    }

    /// What ended runs recorded plus what live runs may still spend.
    pub fn committed(&self) -> u64 {
        let day = self.lock();
        day.ended + day.live
    }

    /// Starts a run under `allowance`, or refuses it if the day's figure
    /// could be exceeded.
    pub fn start_run(
        self: &Arc<Self>,
        allowance: Allowance,
    ) -> Result<Arc<RunMeter>, AllowanceError> {
        allowance.validate()?;
        let mut day = self.lock();
        let committed = day.ended + day.live;
        if committed + allowance.per_run > allowance.per_day {
            return Err(AllowanceError::DayExhausted {
                committed,
                per_day: allowance.per_day,
                unit: self.unit.clone(),
            });
        }
        day.live += allowance.per_run;
        Ok(Arc::new(RunMeter {
            unit: self.unit.clone(),
            day: DaySide::Memory(self.clone()),
            allowance,
            run: Mutex::new(Run::default()),
            observer: Default::default(),
        }))
    }
}

#[derive(Debug, Default)]
struct Run {
    reserved: u64,
    spent: u64,
    ended: bool,
}

/// Where a run's day is accounted: in memory, or in the store's ledger; or
/// nowhere, for a run that could not start and refuses every reservation.
enum DaySide {
    Memory(Arc<DayLedger>),
    Store(StoreLedger),
    Refused(MeterError),
}

/// A run recorded in the store: every charge is written, in its own
/// transaction and under an idempotency key, before the guest is told it
/// settled, so a crash loses no charge and a retry duplicates none.
struct StoreLedger {
    store: Arc<dyn LedgerStore>,
    run_id: String,
    brand: String,
    connector: String,
    day: String,
    next_charge: AtomicU64,
}

impl std::fmt::Debug for DaySide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DaySide::Memory(_) => f.write_str("Memory"),
            DaySide::Store(l) => write!(f, "Store({})", l.run_id),
            DaySide::Refused(e) => write!(f, "Refused({e:?})"),
        }
    }
}

/// Told of a run's charges and refusals as they happen (`/metrics`).
pub(crate) trait MeterObserver: Send + Sync {
    fn charged(&self, amount: u64);
    fn refused(&self, why: &MeterError);
}

/// One run's meter, shared by all of its calls.
pub struct RunMeter {
    unit: String,
    day: DaySide,
    allowance: Allowance,
    run: Mutex<Run>,
    observer: std::sync::OnceLock<Arc<dyn MeterObserver>>,
}

impl std::fmt::Debug for RunMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunMeter")
            .field("unit", &self.unit)
            .field("day", &self.day)
            .field("allowance", &self.allowance)
            .field("run", &self.run)
            .finish_non_exhaustive()
    }
}

impl RunMeter {
    /// Starts a run recorded in `store`: the day's figure is checked there
    /// (ended runs at what they recorded, live runs at their per-run figure),
    /// and every charge is written there.
    #[allow(clippy::too_many_arguments)]
    pub fn start_in_store(
        store: Arc<dyn LedgerStore>,
        run_id: &str,
        brand: &str,
        connector: &str,
        day: &str,
        unit: &str,
        allowance: Allowance,
    ) -> Result<Arc<RunMeter>, AllowanceError> {
        allowance.validate()?;
        store
            .start_run(
                run_id,
                brand,
                connector,
                day,
                allowance.per_run,
                allowance.per_day,
            )
            .map_err(|e| match e {
                StartRunError::DayExhausted { committed, per_day } => {
                    AllowanceError::DayExhausted {
                        committed,
                        per_day,
                        unit: unit.to_string(),
                    }
                }
                StartRunError::InvalidAllowance { per_run, per_day } => {
                    AllowanceError::Unstartable(crate::policy::UnstartableAllowance {
                        per_run,
                        per_day,
                    })
                }
                StartRunError::Store(e) => AllowanceError::Ledger(e),
            })?;
        Ok(Arc::new(RunMeter {
            unit: unit.to_string(),
            day: DaySide::Store(StoreLedger {
                store,
                run_id: run_id.to_string(),
                brand: brand.to_string(),
                connector: connector.to_string(),
                day: day.to_string(),
                next_charge: AtomicU64::new(0),
            }),
            allowance,
            run: Mutex::new(Run::default()),
            observer: Default::default(),
        }))
    }

    /// A meter for a run that could not start (the day's allowance is
    /// exhausted, the ledger is unavailable): every reservation is refused
    /// with `refusal`, nothing is held and nothing is recorded.
    pub fn refusing(unit: &str, refusal: MeterError) -> Arc<RunMeter> {
        Arc::new(RunMeter {
            unit: unit.to_string(),
            day: DaySide::Refused(refusal),
            allowance: Allowance {
                per_run: 0,
                per_day: 0,
            },
            run: Mutex::new(Run::default()),
            observer: Default::default(),
        })
    }

    /// Writes a charge to the store, if the run is recorded there.
    fn record(&self, amount: u64) -> Result<(), MeterError> {
        let DaySide::Store(ledger) = &self.day else {
            return Ok(());
        };
        if amount == 0 {
            return Ok(());
        }
        let key = format!(
            "{}:{}",
            ledger.run_id,
            ledger.next_charge.fetch_add(1, Ordering::SeqCst)
        );
        ledger
            .store
            .charge(
                &ledger.run_id,
                &ledger.connector,
                &ledger.brand,
                &ledger.day,
                amount,
                &key,
            )
            .map(|_| {
                if let Some(observer) = self.observer.get() {
                    observer.charged(amount);
                }
            })
            .map_err(|e| {
                tracing::error!(run = %ledger.run_id, error = %e, "cannot record a charge");
                MeterError::Denied("the allowance ledger could not record the charge".to_string())
            })
    }
    fn lock(&self) -> MutexGuard<'_, Run> {
        self.run.lock()
    }

    /// The unit.
    pub fn unit(&self) -> &str {
        &self.unit
    }

    /// Spent so far (settled, plus unsettled reservations charged in full).
    pub fn spent(&self) -> u64 {
        self.lock().spent
    }

    /// Held by open reservations.
    pub fn reserved(&self) -> u64 {
        self.lock().reserved
    }

    /// What the run may still reserve.
    pub fn remaining(&self) -> u64 {
        let run = self.lock();
        self.allowance
            .per_run
            .saturating_sub(run.spent + run.reserved)
    }

    /// Holds `amount` against the run's allowance, atomically, or refuses
    /// with nothing held.
    pub fn reserve(&self, amount: u64) -> Result<(), MeterError> {
        let reserved = self.try_reserve(amount);
        if let (Err(why), Some(observer)) = (&reserved, self.observer.get()) {
            observer.refused(why);
        }
        reserved
    }

    /// Tells `observer` (made once, at the first call) of this run's
    /// charges and refusals from now on.
    pub(crate) fn observed_by(&self, observer: impl FnOnce() -> Arc<dyn MeterObserver>) {
        self.observer.get_or_init(observer);
    }

    fn try_reserve(&self, amount: u64) -> Result<(), MeterError> {
        if amount == 0 {
            return Err(MeterError::Invalid(
                "an estimate must be above zero".to_string(),
            ));
        }
        if let DaySide::Refused(refusal) = &self.day {
            return Err(refusal.clone());
        }
        let mut run = self.lock();
        if run.ended {
            return Err(MeterError::Denied("the run has ended".to_string()));
        }
        let left = self
            .allowance
            .per_run
            .saturating_sub(run.spent + run.reserved);
        if amount > left {
            return Err(MeterError::RunExhausted(left));
        }
        run.reserved += amount;
        Ok(())
    }

    /// Settles a reservation of `reserved` with the `actual` cost: charges
    /// it, releases the rest; an excess is charged only as far as the run's
    /// allowance allows, and refused beyond.
    pub fn settle(&self, reserved: u64, actual: u64) -> Result<(), MeterError> {
        // The lock is held while the charge is written, so charges reach the
        // ledger in the order they were made.
        let mut run = self.lock();
        if run.ended {
            // Ending the run charged every open reservation in full.
            return Err(MeterError::Denied(
                "the run has ended; this reservation was charged in full".to_string(),
            ));
        }
        run.reserved = run.reserved.saturating_sub(reserved);
        if actual <= reserved {
            run.spent += actual;
            return self.record(actual);
        }
        let left = self
            .allowance
            .per_run
            .saturating_sub(run.spent + run.reserved + reserved);
        let extra = actual - reserved;
        let charged = reserved + extra.min(left);
        run.spent += charged;
        self.record(charged)?;
        if extra > left {
            let refused = MeterError::RunExhausted(0);
            if let Some(observer) = self.observer.get() {
                observer.refused(&refused);
            }
            return Err(refused);
        }
        Ok(())
    }

    /// Ends the run: the day then counts what it recorded, or its whole
    /// per-run figure if it recorded nothing. Open reservations are charged.
    pub fn end(&self) {
        let mut run = self.lock();
        if run.ended {
            return;
        }
        run.ended = true;
        let open = run.reserved;
        run.spent += open;
        run.reserved = 0;
        match &self.day {
            DaySide::Memory(ledger) => {
                let recorded = if run.spent == 0 {
                    self.allowance.per_run
                } else {
                    run.spent
                };
                let mut day = ledger.lock();
                day.live -= self.allowance.per_run;
                day.ended += recorded;
            }
            DaySide::Store(ledger) => {
                let _ = self.record(open);
                if let Err(e) = ledger.store.end_run(&ledger.run_id) {
                    tracing::error!(run = %ledger.run_id, error = %e, "cannot record the end of a run");
                }
            }
            DaySide::Refused(_) => {}
        }
    }
}

/// The `reservation` resource.
pub struct ReservationHandle {
    meter: Arc<RunMeter>,
    amount: u64,
    settled: bool,
}

impl Drop for ReservationHandle {
    fn drop(&mut self) {
        if !self.settled {
            // Unsettled (forgotten, or the guest trapped): charged in full.
            let _ = self.meter.settle(self.amount, self.amount);
        }
    }
}

impl Host for View<'_, MeterCtx> {
    fn unit(&mut self) -> wasmtime::Result<String> {
        Ok(self
            .ctx
            .meter
            .as_ref()
            .map(|m| m.unit().to_string())
            .unwrap_or_default())
    }

    fn reserve(
        &mut self,
        estimate: u64,
    ) -> wasmtime::Result<Result<Resource<ReservationHandle>, MeterError>> {
        let Some(meter) = self.ctx.meter.clone() else {
            return Ok(Err(MeterError::Denied(
                "this session holds no meter for this connector".to_string(),
            )));
        };
        // Check for room first: a reservation that cannot be handed out
        // would be charged when dropped.
        if !self.handles.has_room() {
            return Ok(Err(MeterError::Denied(format!(
                "at most {} handles per call",
                super::state::MAX_HANDLES
            ))));
        }
        if let Err(e) = meter.reserve(estimate) {
            return Ok(Err(e));
        }
        let reservation = ReservationHandle {
            meter,
            amount: estimate,
            settled: false,
        };
        let handle = self.handles.push(reservation)?.expect("room was checked");
        Ok(Ok(handle))
    }

    fn remaining(&mut self) -> wasmtime::Result<u64> {
        Ok(self.ctx.meter.as_ref().map(|m| m.remaining()).unwrap_or(0))
    }
}

impl HostReservation for View<'_, MeterCtx> {
    fn settle(
        &mut self,
        handle: Resource<ReservationHandle>,
        actual: u64,
    ) -> wasmtime::Result<Result<(), MeterError>> {
        let reservation = self.handles.get_mut(&handle)?;
        if reservation.settled {
            return Ok(Err(MeterError::Invalid(
                "this reservation is already settled".to_string(),
            )));
        }
        reservation.settled = true;
        Ok(reservation.meter.settle(reservation.amount, actual))
    }

    fn drop(&mut self, handle: Resource<ReservationHandle>) -> wasmtime::Result<()> {
        self.handles.drop(handle)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_day_arithmetic() {
        let ledger = DayLedger::new("credits");
        let allowance = Allowance {
            per_run: 25,
            per_day: 100,
        };
        let a = ledger.start_run(allowance).unwrap();
        let b = ledger.start_run(allowance).unwrap();
        let c = ledger.start_run(allowance).unwrap();
        let d = ledger.start_run(allowance).unwrap();
        // Four live runs hold 100: a fifth cannot start.
        assert!(matches!(
            ledger.start_run(allowance),
            Err(AllowanceError::DayExhausted { committed: 100, .. })
        ));
        // An ended run counts at what it recorded.
        a.reserve(5).unwrap();
        a.settle(5, 5).unwrap();
        a.end();
        assert_eq!(ledger.committed(), 80);
        // A run that recorded nothing counts at its whole per-run figure.
        b.end();
        assert_eq!(ledger.committed(), 80);
        // 80 committed: a run of 25 would reach 105.
        assert!(ledger.start_run(allowance).is_err());
        c.reserve(10).unwrap();
        c.settle(10, 10).unwrap();
        c.end();
        assert_eq!(ledger.committed(), 5 + 25 + 10 + 25);
        let e = ledger.start_run(allowance).unwrap();
        assert_eq!(ledger.committed(), 90);
        drop((d, e));
    }

    #[test]
    fn a_reservation_settled_after_its_run_ended_was_charged_once() {
        let ledger = DayLedger::new("credits");
        let run = ledger
            .start_run(Allowance {
                per_run: 25,
                per_day: 100,
            })
            .unwrap();
        run.reserve(7).unwrap();
        run.end();
        assert_eq!(
            run.spent(),
            7,
            "ending charges the open reservation in full"
        );
        assert!(matches!(run.settle(7, 2), Err(MeterError::Denied(_))));
        assert_eq!((run.spent(), run.reserved()), (7, 0));
        assert!(matches!(run.reserve(1), Err(MeterError::Denied(_))));
        let refusing = RunMeter::refusing("credits", MeterError::DayExhausted(3));
        assert!(matches!(
            refusing.reserve(1),
            Err(MeterError::DayExhausted(3))
        ));
        assert_eq!(refusing.remaining(), 0);
        assert!(
            Allowance {
                per_run: 1,
                per_day: u64::MAX
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn reservations_never_exceed_the_run() {
        let ledger = DayLedger::new("credits");
        let run = ledger
            .start_run(Allowance {
                per_run: 25,
                per_day: 100,
            })
            .unwrap();
        run.reserve(5).unwrap();
        run.settle(5, 3).unwrap();
        assert_eq!(run.remaining(), 22);
        assert!(matches!(run.reserve(23), Err(MeterError::RunExhausted(22))));
        assert_eq!(run.spent(), 3, "a refused reservation charges nothing");
        run.reserve(20).unwrap();
        assert!(matches!(
            run.settle(20, 30),
            Err(MeterError::RunExhausted(0))
        ));
        assert_eq!(
            run.spent(),
            25,
            "an overrun is charged only up to the allowance"
        );
    }
}
