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
//! **Per-call threshold** (person chat's "calls above a threshold ask a
//! person", [`SpendGate`]): a reservation at or below the operator's
//! threshold is made at once; one above it is first checked against the
//! run (a reservation that could not be made is refused without asking
//! anyone), then handed to the boundary as a [`SpendAsk`], which asks a
//! person about exactly this call and this estimate, and only an approval
//! makes the reservation. The call's deadline is paused while the person
//! decides. A reservation a person approved is capped at its estimate: a
//! settle above it is refused, and charged exactly the estimate.
//!
//! [`Allowance`] here is the meter's side of the one allowance type: integer
//! units only ([`crate::policy::MeteredAllowance`]). What a person grants is
//! [`crate::policy::Allowance`] (credits or dollars, as the seed writes
//! them); its `metered` is the only conversion into these units, so no
//! caller converts dollars by hand.

pub(crate) use super::bindings::meter::MeterError;
use super::bindings::meter::{Host, HostReservation};
use super::deadline::CallDeadline;
use super::view::View;
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
    /// The session's run already ended: the session spends no more.
    #[error("this session's run has ended: it spends no more")]
    RunEnded,
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

/// A run recorded in the store, which holds its figures: every hold and
/// every charge is made there, in its own transaction (a charge under an
/// idempotency key), before the guest is told, so every host serving the
/// run's session spends it exactly, a crash loses no charge and a retry
/// duplicates none.
struct StoreLedger {
    store: Arc<dyn LedgerStore>,
    run_id: String,
    brand: String,
    connector: String,
    day: String,
    /// This meter's own part of each charge's key: several hosts' meters
    /// of one run never share a key.
    nonce: String,
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

/// The per-call threshold a call's reservations are held to, in the
/// meter's unit, and where a reservation above it is sent to be decided
/// (the boundary running the call, which asks a person or refuses).
#[derive(Clone, Debug)]
pub struct SpendGate {
    /// A call's reservations run without asking as long as together they
    /// stay at or below this; none of them is settled above its amount.
    pub threshold: u64,
    /// Where a reservation that would take the call above it goes.
    pub ask: tokio::sync::mpsc::Sender<SpendAsk>,
}

/// A reservation above the threshold, waiting for the boundary's answer:
/// `Ok` once a person approved exactly this estimate, else the reason the
/// guest is given (nothing is reserved).
#[derive(Debug)]
pub struct SpendAsk {
    /// What the guest asked to reserve.
    pub estimate: u64,
    /// The meter's unit.
    pub unit: String,
    /// The threshold it is above.
    pub threshold: u64,
    /// What this call had already reserved without asking: the threshold
    /// holds for the call's reservations together.
    pub reserved_before: u64,
    /// Answered once.
    pub answer: tokio::sync::oneshot::Sender<Result<(), String>>,
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
        let started = crate::store::block(store.start_run(
            run_id,
            brand,
            connector,
            day,
            allowance.per_run,
            allowance.per_day,
        ));
        // The session's run, started by a host that served it before:
        // joined, as long as it is live.
        let joined = matches!(
            &started,
            Err(StartRunError::Store(crate::store::StoreError::RunExists(_)))
        );
        if joined {
            match crate::store::block(store.run_left(run_id)) {
                Ok(Some(_)) => {}
                Ok(None) => return Err(AllowanceError::RunEnded),
                Err(e) => return Err(AllowanceError::Ledger(e)),
            }
        }
        started
            .or_else(|e| if joined { Ok(()) } else { Err(e) })
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
                nonce: charge_nonce(),
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
        crate::store::block(ledger.store.charge(
            &ledger.run_id,
            &ledger.connector,
            &ledger.brand,
            &ledger.day,
            amount,
            &key,
        ))
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

    /// What the run may still reserve (the store's figure, for a run it
    /// records).
    pub fn remaining(&self) -> u64 {
        if let DaySide::Store(ledger) = &self.day {
            return crate::store::block(ledger.store.run_left(&ledger.run_id))
                .ok()
                .flatten()
                .unwrap_or(0);
        }
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

    /// Whether `amount` could be reserved now, holding nothing: what is
    /// checked before a person is asked about a reservation, so nobody is
    /// asked about one the run could not make. A refusal is observed as
    /// [`RunMeter::reserve`]'s would be.
    pub fn can_reserve(&self, amount: u64) -> Result<(), MeterError> {
        let checked = match &self.day {
            DaySide::Store(ledger) if amount > 0 => {
                match crate::store::block(ledger.store.run_left(&ledger.run_id)) {
                    Ok(Some(left)) if amount <= left => Ok(()),
                    Ok(Some(left)) => Err(MeterError::RunExhausted(left)),
                    Ok(None) => Err(MeterError::Denied("the run has ended".to_string())),
                    Err(e) => Err(ledger_down(&ledger.run_id, &e)),
                }
            }
            _ => self.check(&self.lock(), amount),
        };
        if let (Err(why), Some(observer)) = (&checked, self.observer.get()) {
            observer.refused(why);
        }
        checked
    }

    /// Observes a reservation refused before it reached the meter (a
    /// person declined it, or nobody could be asked), and returns it.
    pub(crate) fn refused(&self, why: MeterError) -> MeterError {
        if let Some(observer) = self.observer.get() {
            observer.refused(&why);
        }
        why
    }

    fn check(&self, run: &Run, amount: u64) -> Result<(), MeterError> {
        if amount == 0 {
            return Err(MeterError::Invalid(
                "an estimate must be above zero".to_string(),
            ));
        }
        if let DaySide::Refused(refusal) = &self.day {
            return Err(refusal.clone());
        }
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
        Ok(())
    }

    fn try_reserve(&self, amount: u64) -> Result<(), MeterError> {
        let mut run = self.lock();
        self.check(&run, amount)?;
        if let DaySide::Store(ledger) = &self.day {
            // The store holds the run's figures for every host.
            match crate::store::block(ledger.store.reserve_in_run(&ledger.run_id, amount)) {
                Ok(crate::store::RunHold::Held) => {}
                Ok(crate::store::RunHold::Short(left)) => {
                    return Err(MeterError::RunExhausted(left));
                }
                Ok(crate::store::RunHold::Ended) => {
                    run.ended = true;
                    return Err(MeterError::Denied("the run has ended".to_string()));
                }
                Err(e) => return Err(ledger_down(&ledger.run_id, &e)),
            }
        }
        run.reserved += amount;
        Ok(())
    }

    /// Settles a reservation of `reserved` held to a per-call threshold with
    /// the `actual` cost: at or below the reservation as [`RunMeter::settle`];
    /// above it, charges exactly the reservation and refuses the rest, since
    /// no one was asked about more (`approved`: a person approved exactly
    /// this reservation; otherwise it was made under the threshold).
    pub fn settle_capped(
        &self,
        reserved: u64,
        actual: u64,
        approved: bool,
    ) -> Result<(), MeterError> {
        if actual <= reserved {
            return self.settle(reserved, actual);
        }
        self.settle(reserved, reserved)?;
        let unit = &self.unit;
        let refused = MeterError::Denied(if approved {
            format!(
                "the settled cost of {actual} {unit} is above the {reserved} {unit} a person approved: \
                 charged {reserved} {unit}, the rest refused"
            )
        } else {
            format!(
                "the settled cost of {actual} {unit} is above the {reserved} {unit} reserved under \
                 this connector's per-call threshold, and no one was asked about more: \
                 charged {reserved} {unit}, the rest refused"
            )
        });
        Err(self.refused(refused))
    }

    /// Settles a reservation of `reserved` with the `actual` cost: charges
    /// it, releases the rest; an excess is charged only as far as the run's
    /// allowance allows, and refused beyond.
    pub fn settle(&self, reserved: u64, actual: u64) -> Result<(), MeterError> {
        // The lock is held while the charge is written, so charges reach the
        // ledger in the order they were made.
        let mut run = self.lock();
        if let DaySide::Store(ledger) = &self.day {
            return self.settle_in_store(ledger, &mut run, reserved, actual);
        }
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

    /// [`RunMeter::settle`] of a run the store holds: the hold released and
    /// the charge made there, within the run's allowance as every host has
    /// spent it.
    fn settle_in_store(
        &self,
        ledger: &StoreLedger,
        run: &mut Run,
        reserved: u64,
        actual: u64,
    ) -> Result<(), MeterError> {
        let key = format!(
            "{}:{}:{}",
            ledger.run_id,
            ledger.nonce,
            ledger.next_charge.fetch_add(1, Ordering::SeqCst)
        );
        let charged = crate::store::block(ledger.store.settle_in_run(
            &ledger.run_id,
            &ledger.connector,
            &ledger.brand,
            &ledger.day,
            reserved,
            actual,
            &key,
        ))
        .map_err(|e| {
            tracing::error!(run = %ledger.run_id, error = %e, "cannot record a charge");
            MeterError::Denied("the allowance ledger could not record the charge".to_string())
        })?;
        run.reserved = run.reserved.saturating_sub(reserved);
        let Some(charged) = charged else {
            run.ended = true;
            return Err(MeterError::Denied(
                "the run has ended; this reservation was charged in full".to_string(),
            ));
        };
        run.spent += charged;
        if charged > 0
            && let Some(observer) = self.observer.get()
        {
            observer.charged(charged);
        }
        if charged < actual {
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
                // The store charges every open hold of the run, this host's
                // and any other's, once (`open` counts only this host's).
                if let Err(e) = crate::store::block(ledger.store.end_run(&ledger.run_id)) {
                    tracing::error!(run = %ledger.run_id, error = %e, "cannot record the end of a run");
                }
            }
            DaySide::Refused(_) => {}
        }
    }
}

/// The refusal a guest is given when the ledger cannot be reached.
fn ledger_down(run_id: &str, e: &crate::store::StoreError) -> MeterError {
    tracing::error!(run = %run_id, error = %e, "the allowance ledger is unavailable");
    MeterError::Denied("the allowance ledger is unavailable".to_string())
}

/// A key part no other meter of the same run uses (several hosts may
/// serve one run's session).
fn charge_nonce() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // Never the same twice in one process, at least.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        return format!("p{}-{n}", std::process::id());
    }
    hex::encode(bytes)
}

/// What the `meter` interface of one call holds: the run's meter, if any;
/// the per-call threshold above which a reservation asks a person; and the
/// call's deadline, paused while a person decides.
pub(crate) struct MeterCtx {
    pub(crate) meter: Option<Arc<RunMeter>>,
    pub(crate) spend: Option<SpendGate>,
    /// What this call reserved under the threshold without asking.
    pub(crate) reserved_unasked: u64,
    pub(crate) deadline: Arc<CallDeadline>,
    /// The reservations the guest holds handles to, by number; one never
    /// settled is charged in full when it is dropped (by the guest, or
    /// with the call).
    pub(crate) reservations: std::collections::HashMap<u64, Reservation>,
    pub(crate) next_reservation: u64,
}

pub use super::handles::ReservationHandle;

/// One reservation a call made, kept in its `meter` context under the
/// number its handle carries.
pub(crate) struct Reservation {
    meter: Arc<RunMeter>,
    amount: u64,
    settled: bool,
    /// Made under a per-call threshold: the amount caps the settlement.
    capped: bool,
    /// A person approved exactly this amount.
    approved: bool,
}

impl Drop for Reservation {
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

    async fn reserve(
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
                super::view::MAX_HANDLES
            ))));
        }
        // The threshold holds for the call's reservations together: those
        // made without asking count against it, so splitting a cost into
        // several reservations asks as one would.
        let reserved_unasked = self.ctx.reserved_unasked;
        let approved = match &self.ctx.spend {
            Some(gate) if estimate > gate.threshold.saturating_sub(reserved_unasked) => {
                // Nobody is asked about a reservation the run could not make.
                if let Err(e) = meter.can_reserve(estimate) {
                    return Ok(Err(e));
                }
                let (answer, answered) = tokio::sync::oneshot::channel();
                let ask = SpendAsk {
                    estimate,
                    unit: meter.unit().to_string(),
                    threshold: gate.threshold,
                    reserved_before: reserved_unasked,
                    answer,
                };
                let decided = {
                    // A person's time is not the guest's: the deadline waits.
                    let _paused = self.ctx.deadline.pause();
                    match gate.ask.send(ask).await {
                        Ok(()) => answered.await.unwrap_or_else(|_| {
                            Err("no one could be asked about this reservation".to_string())
                        }),
                        Err(_) => Err("no one could be asked about this reservation".to_string()),
                    }
                };
                if let Err(reason) = decided {
                    return Ok(Err(meter.refused(MeterError::Denied(reason))));
                }
                true
            }
            _ => false,
        };
        if let Err(e) = meter.reserve(estimate) {
            return Ok(Err(e));
        }
        let capped = self.ctx.spend.is_some();
        if capped && !approved {
            self.ctx.reserved_unasked += estimate;
        }
        let reservation = Reservation {
            meter,
            amount: estimate,
            settled: false,
            capped,
            approved,
        };
        let id = self.ctx.next_reservation;
        self.ctx.next_reservation += 1;
        let handle = self
            .handles
            .push(ReservationHandle { id })?
            .expect("room was checked");
        // Kept (and charged in full unless settled) from the moment its
        // handle exists.
        self.ctx.reservations.insert(id, reservation);
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
        let id = self.handles.get(&handle)?.id;
        let Some(reservation) = self.ctx.reservations.get_mut(&id) else {
            return Err(wasmtime::Error::msg(
                "a reservation handle names no reservation",
            ));
        };
        if reservation.settled {
            return Ok(Err(MeterError::Invalid(
                "this reservation is already settled".to_string(),
            )));
        }
        reservation.settled = true;
        // Held to a threshold, no cost goes past what was reserved: past it,
        // no one was asked.
        Ok(if reservation.capped {
            reservation
                .meter
                .settle_capped(reservation.amount, actual, reservation.approved)
        } else {
            reservation.meter.settle(reservation.amount, actual)
        })
    }

    fn drop(&mut self, handle: Resource<ReservationHandle>) -> wasmtime::Result<()> {
        let ReservationHandle { id } = self.handles.drop(handle)?;
        // An unsettled reservation is charged in full as it goes.
        self.ctx.reservations.remove(&id);
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
    fn a_settle_above_an_approved_estimate_is_refused_and_charged_the_estimate() {
        let ledger = DayLedger::new("credits");
        let run = ledger
            .start_run(Allowance {
                per_run: 100,
                per_day: 1000,
            })
            .unwrap();
        run.reserve(20).unwrap();
        let refused = run.settle_capped(20, 60, true);
        assert!(
            matches!(&refused, Err(MeterError::Denied(m)) if m.contains("60 credits") && m.contains("charged 20 credits")),
            "{refused:?}"
        );
        assert_eq!(
            (run.spent(), run.reserved()),
            (20, 0),
            "charged exactly the approved estimate, though the run had room for more"
        );
        assert_eq!(run.remaining(), 80);
        // At or below the estimate, as any settlement.
        run.reserve(20).unwrap();
        run.settle_capped(20, 7, true).unwrap();
        assert_eq!((run.spent(), run.reserved()), (27, 0));
        // Not approved: an overrun is charged up to the allowance, as before.
        run.reserve(3).unwrap();
        run.settle(3, 10).unwrap();
        assert_eq!(run.spent(), 37);
    }

    #[test]
    fn a_capped_settlement_is_recorded_in_the_store_at_the_estimate() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn LedgerStore> =
            Arc::new(crate::store::SqliteStore::open(dir.path().join("scout.db")).unwrap());
        let run = RunMeter::start_in_store(
            store.clone(),
            "s-1:firecrawl",
            "acme",
            "firecrawl",
            "2026-01-01",
            "credits",
            Allowance {
                per_run: 100,
                per_day: 1000,
            },
        )
        .unwrap();
        run.reserve(20).unwrap();
        assert!(run.settle_capped(20, 60, true).is_err());
        run.end();
        let charged: u64 = crate::store::block(store.charges_in_run("s-1:firecrawl"))
            .unwrap()
            .iter()
            .map(|c| c.amount)
            .sum();
        assert_eq!(
            charged, 20,
            "the ledger holds the estimate, not the overrun"
        );
    }

    #[test]
    fn checking_a_reservation_holds_nothing() {
        let ledger = DayLedger::new("credits");
        let run = ledger
            .start_run(Allowance {
                per_run: 10,
                per_day: 100,
            })
            .unwrap();
        run.can_reserve(10).unwrap();
        assert_eq!(run.reserved(), 0);
        assert!(matches!(
            run.can_reserve(11),
            Err(MeterError::RunExhausted(10))
        ));
        assert!(matches!(run.can_reserve(0), Err(MeterError::Invalid(_))));
        run.end();
        assert!(matches!(run.can_reserve(1), Err(MeterError::Denied(_))));
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
