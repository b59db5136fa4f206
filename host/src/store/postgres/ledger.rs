//! The ledger in PostgreSQL ([`LedgerStore`]): charges, runs and their holds.

use super::*;
use crate::store::rules;

#[async_trait::async_trait]
impl LedgerStore for PgStore {
    async fn charge(
        &self,
        run_id: &str,
        connector: &str,
        brand: &str,
        day: &str,
        amount: u64,
        idempotency_key: &str,
    ) -> Result<bool, StoreError> {
        let signed = crate::store::to_i64(amount)?;
        let shared = self.shared.clone();
        let (run_id, connector, brand, day, key) = (
            pg_text(run_id).into_owned(),
            pg_text(connector).into_owned(),
            pg_text(brand).into_owned(),
            pg_text(day).into_owned(),
            pg_text(idempotency_key).into_owned(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client
                .prepare_cached(
                    "INSERT INTO charges (idempotency_key, run_id, connector, brand, day, amount, at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (idempotency_key) DO NOTHING RETURNING seq",
                )
                .await?;
            let inserted = client
                .query_opt(&statement, &[&key, &run_id, &connector, &brand, &day, &signed, &crate::store::now_ms()])
                .await
                .map_err(|e| unknown_run(e, &run_id))?;
            if inserted.is_some() {
                return Ok(true);
            }
            // A concurrent insert of the same key waited on the unique
            // index, then did nothing: its row is committed and seen here.
            let same: bool = client
                .query_one(
                    statements::CHARGE_MATCHES_KEY.pg,
                    &[&key, &run_id, &connector, &brand, &day, &signed],
                )
                .await?
                .get(0);
            rules::charge_not_inserted(same, &key)
        }).await
    }

    async fn spent_in_run(&self, run_id: &str) -> Result<u64, StoreError> {
        let shared = self.shared.clone();
        let run_id = pg_text(run_id).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            let total: i64 = client
                .query_one(statements::SPENT_IN_RUN.pg, &[&run_id])
                .await?
                .get(0);
            crate::store::to_u64(total)
        })
        .await
    }

    async fn spent_on_day(
        &self,
        brand: &str,
        connector: &str,
        day: &str,
    ) -> Result<u64, StoreError> {
        let shared = self.shared.clone();
        let (brand, connector, day) = (
            pg_text(brand).into_owned(),
            pg_text(connector).into_owned(),
            pg_text(day).into_owned(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            let total: i64 = client
                .query_one(statements::SPENT_ON_DAY.pg, &[&brand, &connector, &day])
                .await?
                .get(0);
            crate::store::to_u64(total)
        })
        .await
    }

    async fn charges_in_run(&self, run_id: &str) -> Result<Vec<Charge>, StoreError> {
        let shared = self.shared.clone();
        let run_id = pg_text(run_id).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            let rows = client
                .query(statements::CHARGES_IN_RUN.pg, &[&run_id])
                .await?;
            rows.iter()
                .map(|row| {
                    Ok(Charge {
                        idempotency_key: row.get(0),
                        run_id: row.get(1),
                        connector: row.get(2),
                        brand: row.get(3),
                        day: row.get(4),
                        amount: crate::store::to_u64(row.get(5))?,
                    })
                })
                .collect()
        })
        .await
    }

    async fn start_run(
        &self,
        run_id: &str,
        brand: &str,
        connector: &str,
        day: &str,
        per_run: u64,
        per_day: u64,
    ) -> Result<(), StartRunError> {
        rules::valid_allowance(per_run, per_day)?;
        let (run_signed, day_signed) = (
            crate::store::to_i64(per_run)?,
            crate::store::to_i64(per_day)?,
        );
        let shared = self.shared.clone();
        let (run_id, brand, connector, day) = (
            pg_text(run_id).into_owned(),
            pg_text(brand).into_owned(),
            pg_text(connector).into_owned(),
            pg_text(day).into_owned(),
        );
        self.run_as(async move {
            let mut client = shared.pool.get().await.map_err(StoreError::from)?;
            let tx = client.transaction().await.map_err(StoreError::from)?;
            // One lock row per (brand, connector, day) serialises the runs
            // that start against it on every host; each then reads the
            // figure its predecessor committed.
            tx.execute(
                "INSERT INTO ledger_days (brand, connector, day) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[&brand, &connector, &day],
            )
            .await
            .map_err(StoreError::from)?;
            tx.execute(
                "SELECT 1 FROM ledger_days WHERE brand = $1 AND connector = $2 AND day = $3 FOR UPDATE",
                &[&brand, &connector, &day],
            )
            .await
            .map_err(StoreError::from)?;
            let exists = tx
                .query_opt("SELECT 1 FROM runs WHERE run_id = $1", &[&run_id])
                .await
                .map_err(StoreError::from)?
                .is_some();
            let committed: i64 = tx
                .query_one(
                    statements::DAY_COMMITTED.pg,
                    &[&brand, &connector, &day],
                )
                .await
                .map_err(StoreError::from)?
                .get(0);
            rules::run_may_start(&run_id, exists, committed, per_run, per_day)?;
            tx.execute(
                "INSERT INTO runs (run_id, host_id, brand, connector, day, per_run, per_day, started_at_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[&run_id, &&*shared.id(), &brand, &connector, &day, &run_signed, &day_signed, &crate::store::now_ms()],
            )
            .await
            .map_err(StoreError::from)?;
            tx.commit().await.map_err(StoreError::from)?;
            Ok(())
        }).await
    }

    async fn end_run(&self, run_id: &str) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        let run_id = pg_text(run_id).into_owned();
        self.run(async move { pg_end_run(&shared, run_id).await })
            .await
    }

    async fn reserve_in_run(
        &self,
        run_id: &str,
        amount: u64,
    ) -> Result<crate::store::RunHold, StoreError> {
        let signed = crate::store::to_i64(amount)?;
        let shared = self.shared.clone();
        let run_id = pg_text(run_id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let hold = rules::hold(pg_run_left(&tx, &run_id, true).await?, amount);
            if hold != crate::store::RunHold::Held {
                return Ok(hold);
            }
            tx.execute(statements::HOLD_IN_RUN.pg, &[&run_id, &signed])
                .await?;
            tx.commit().await?;
            Ok(hold)
        })
        .await
    }

    async fn run_left(&self, run_id: &str) -> Result<Option<u64>, StoreError> {
        let shared = self.shared.clone();
        let run_id = pg_text(run_id).into_owned();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            pg_run_left(&tx, &run_id, false).await
        })
        .await
    }

    async fn settle_in_run(
        &self,
        run_id: &str,
        connector: &str,
        brand: &str,
        day: &str,
        reserved: u64,
        actual: u64,
        idempotency_key: &str,
    ) -> Result<Option<u64>, StoreError> {
        let held = crate::store::to_i64(reserved)?;
        let shared = self.shared.clone();
        let (run_id, connector, brand, day, key) = (
            pg_text(run_id).into_owned(),
            pg_text(connector).into_owned(),
            pg_text(brand).into_owned(),
            pg_text(day).into_owned(),
            pg_text(idempotency_key).into_owned(),
        );
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            // The run's row first: settlements of one run queue here.
            let live = pg_run_left(&tx, &run_id, true).await?;
            let done = tx
                .query_opt(statements::CHARGED_UNDER_KEY.pg, &[&key])
                .await?
                .map(|row| row.get::<_, i64>(0));
            // What the run has beside this hold: read (above) before the
            // hold is released, which would count it twice.
            let settlement = rules::settlement(done, live, reserved, actual)?;
            let rules::Settlement::Charge(charged) = settlement else {
                return Ok(settlement.charged());
            };
            tx.execute(statements::RELEASE_HOLD.pg, &[&run_id, &held])
                .await?;
            if charged > 0 {
                tx.execute(
                    statements::INSERT_CHARGE.pg,
                    &[
                        &key,
                        &run_id,
                        &connector,
                        &brand,
                        &day,
                        &crate::store::to_i64(charged)?,
                        &crate::store::now_ms(),
                    ],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(Some(charged))
        })
        .await
    }

    /// Only the runs of hosts already recovered as lost: a live host's runs
    /// are its own, and a silent host's wait for its recovery.
    async fn end_live_runs(&self, at_ms: i64) -> Result<usize, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            // A run whose session the fleet still serves goes on (another
            // host takes the session up); one of a lost host's sessions
            // that has ended or expired ends, as does one whose session
            // the fleet never kept.
            let ended = client
                .execute(
                    "UPDATE runs r SET ended = true, ended_at_ms = $1
                     WHERE NOT ended AND host_id IN
                       (SELECT host_id FROM hosts WHERE recovered_by IS NOT NULL)
                       AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = split_part(r.run_id, ':', 1)
                         AND s.record IS NOT NULL AND s.closed_at_ms IS NULL AND s.ended_at_ms IS NULL
                         AND s.expires_at_ms > $1)",
                    &[&at_ms],
                )
                .await?;
            Ok(ended as usize)
        }).await
    }
}

/// A charge against a run no host started is the caller's error, named as such.
fn unknown_run(e: tokio_postgres::Error, run_id: &str) -> StoreError {
    if e.code() == Some(&tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION) {
        StoreError::UnknownRun(run_id.to_string())
    } else {
        StoreError::from(e)
    }
}

/// Ends run `run_id`: its open holds charged in full, once.
pub(super) async fn pg_end_run(shared: &Shared, run_id: String) -> Result<(), StoreError> {
    let mut client = shared.pool.get().await?;
    let tx = client.transaction().await?;
    let row = tx
        .query_opt(
            "SELECT connector, brand, day, reserved, ended FROM runs WHERE run_id = $1 FOR UPDATE",
            &[&run_id],
        )
        .await?;
    let end = rules::end_run(
        &run_id,
        row.as_ref()
            .map(|row| (row.get::<_, i64>(3), row.get::<_, bool>(4))),
    )?;
    if let (Some(charge), Some(row)) = (end, row) {
        let (connector, brand, day): (String, String, String) =
            (row.get(0), row.get(1), row.get(2));
        tx.execute(
            statements::INSERT_CHARGE.pg,
            &[
                &charge.idempotency_key,
                &run_id,
                &connector,
                &brand,
                &day,
                &charge.amount,
                &crate::store::now_ms(),
            ],
        )
        .await?;
    }
    tx.execute(statements::END_RUN.pg, &[&crate::store::now_ms(), &run_id])
        .await?;
    tx.commit().await?;
    Ok(())
}

/// What live run `run_id` has left (its per-run figure less what it
/// recorded and what is held), the run's row locked for the transaction
/// when `lock`; `None` if it ended or never started.
async fn pg_run_left(
    tx: &tokio_postgres::Transaction<'_>,
    run_id: &str,
    lock: bool,
) -> Result<Option<u64>, StoreError> {
    let sql = if lock {
        "SELECT per_run, reserved, ended FROM runs WHERE run_id = $1 FOR UPDATE"
    } else {
        "SELECT per_run, reserved, ended FROM runs WHERE run_id = $1"
    };
    let Some(row) = tx.query_opt(sql, &[&run_id]).await? else {
        return Ok(None);
    };
    let (per_run, reserved, ended): (i64, i64, bool) = (row.get(0), row.get(1), row.get(2));
    if ended {
        return Ok(None);
    }
    let spent: i64 = tx
        .query_one(statements::SPENT_IN_RUN.pg, &[&run_id])
        .await?
        .get(0);
    Ok(Some(rules::left_in_run(per_run, reserved, spent)?))
}
