//! The allowance ledger ([`LedgerStore`]): charges, runs and their holds.

use super::*;

/// One recorded charge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Charge {
    pub idempotency_key: String,
    pub run_id: String,
    pub connector: String,
    pub brand: String,
    pub day: String,
    pub amount: u64,
}

/// Why a run may not start.
#[derive(Debug, thiserror::Error)]
pub enum StartRunError {
    /// Starting the run could spend past the day's allowance.
    #[error(
        "the day's allowance is exhausted: {committed} of {per_day} already spent or held by runs"
    )]
    DayExhausted { committed: u64, per_day: u64 },
    /// The allowance itself is not acceptable (per-run zero or above per-day).
    #[error(
        "invalid allowance: per-run {per_run} must be above zero and at most the per-day {per_day}"
    )]
    InvalidAllowance { per_run: u64, per_day: u64 },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The allowance ledger: runs against a per-day figure, idempotent charges.
#[async_trait::async_trait]
pub trait LedgerStore: Send + Sync {
    /// Records a charge once per `idempotency_key`: `Ok(true)` if recorded now,
    /// `Ok(false)` if this very charge was already recorded (a retry), and
    /// [`StoreError::IdempotencyConflict`] if the key was used for a different one.
    async fn charge(
        &self,
        run_id: &str,
        connector: &str,
        brand: &str,
        day: &str,
        amount: u64,
        idempotency_key: &str,
    ) -> Result<bool, StoreError>;
    /// What one run has recorded.
    async fn spent_in_run(&self, run_id: &str) -> Result<u64, StoreError>;
    /// What all runs of a brand recorded against one connector on one day.
    async fn spent_on_day(
        &self,
        brand: &str,
        connector: &str,
        day: &str,
    ) -> Result<u64, StoreError>;
    /// One run's charges in the order recorded.
    async fn charges_in_run(&self, run_id: &str) -> Result<Vec<Charge>, StoreError>;
    /// Starts a run, or refuses it if the day's figure could be exceeded:
    /// runs already ended that day count at what they recorded (or their whole
    /// per-run figure if they recorded nothing), live runs at their whole
    /// per-run figure. Checked and recorded in one exclusive transaction.
    async fn start_run(
        &self,
        run_id: &str,
        brand: &str,
        connector: &str,
        day: &str,
        per_run: u64,
        per_day: u64,
    ) -> Result<(), StartRunError>;
    /// Ends a run; from then on the day counts what it recorded. Its
    /// reservations still open (a call on any host that has not settled)
    /// are charged in full, once (`{run_id}:end`).
    async fn end_run(&self, run_id: &str) -> Result<(), StoreError>;
    /// Holds `amount` against run `run_id`'s allowance, atomically with
    /// every other host's holds and charges for the same run.
    async fn reserve_in_run(&self, run_id: &str, amount: u64) -> Result<RunHold, StoreError>;
    /// What run `run_id` may still reserve; `None` if it ended (or never
    /// started).
    async fn run_left(&self, run_id: &str) -> Result<Option<u64>, StoreError>;
    /// Releases a hold of `reserved` on run `run_id` and charges what
    /// `actual` costs within the run's allowance (at most `reserved` plus
    /// what is left), once per `idempotency_key`; what was charged, or
    /// `None` if the run ended first (which charged the hold in full).
    #[allow(clippy::too_many_arguments)]
    async fn settle_in_run(
        &self,
        run_id: &str,
        connector: &str,
        brand: &str,
        day: &str,
        reserved: u64,
        actual: u64,
        idempotency_key: &str,
    ) -> Result<Option<u64>, StoreError>;
    /// Ends every run still live: at start, a live run's session died with
    /// the host that ran it, and would otherwise hold its whole per-run
    /// figure against the day until the day ends. Each then counts at what
    /// it recorded, or its per-run figure if it recorded nothing. Returns
    /// how many were ended.
    async fn end_live_runs(&self, at_ms: i64) -> Result<usize, StoreError>;
}

/// What holding an amount against a run's allowance did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunHold {
    Held,
    /// It does not fit: what the run has left.
    Short(u64),
    /// The run ended (or never started).
    Ended,
}
