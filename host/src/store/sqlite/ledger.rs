//! The ledger in SQLite ([`LedgerStore`]): charges, runs and their holds.

use super::*;
use crate::store::rules;

#[async_trait::async_trait]
impl LedgerStore for SqliteStore {
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
        self.write_tx(|tx| {
            let inserted = tx
                .prepare_cached(INSERT_CHARGE)
                .map_err(StoreError::from)?
                .execute(params![
                    idempotency_key,
                    run_id,
                    connector,
                    brand,
                    day,
                    signed,
                    crate::store::now_ms()
                ])?;
            if inserted == 1 {
                return Ok(true);
            }
            let same: bool = tx.query_row(
                statements::CHARGE_MATCHES_KEY.lite,
                params![idempotency_key, run_id, connector, brand, day, signed],
                |row| row.get(0),
            )?;
            rules::charge_not_inserted(same, idempotency_key)
        })
    }

    async fn spent_in_run(&self, run_id: &str) -> Result<u64, StoreError> {
        let conn = self.read();
        let total: i64 =
            conn.query_row(statements::SPENT_IN_RUN.lite, [run_id], |row| row.get(0))?;
        crate::store::to_u64(total)
    }

    async fn spent_on_day(
        &self,
        brand: &str,
        connector: &str,
        day: &str,
    ) -> Result<u64, StoreError> {
        let conn = self.read();
        let total: i64 = conn.query_row(
            statements::SPENT_ON_DAY.lite,
            [brand, connector, day],
            |row| row.get(0),
        )?;
        crate::store::to_u64(total)
    }

    async fn charges_in_run(&self, run_id: &str) -> Result<Vec<Charge>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(statements::CHARGES_IN_RUN.lite)?;
        let rows = stmt.query_map([run_id], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get::<_, i64>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (idempotency_key, run_id, connector, brand, day, amount) = row?;
            out.push(Charge {
                idempotency_key,
                run_id,
                connector,
                brand,
                day,
                amount: crate::store::to_u64(amount)?,
            });
        }
        Ok(out)
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
        self.write_tx(|tx| {
            let exists: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM runs WHERE run_id = ?1)",
                    [run_id],
                    |row| row.get(0),
                )
                .map_err(StoreError::from)?;
            // Ended runs at what they recorded, or their per-run figure if they
            // recorded nothing (as `capabilities::meter`); live runs at per-run.
            let committed: i64 = tx
                .query_row(
                    statements::DAY_COMMITTED.lite,
                    [brand, connector, day],
                    |row| row.get(0),
                )
                .map_err(StoreError::from)?;
            rules::run_may_start(run_id, exists, committed, per_run, per_day)?;
            tx.prepare_cached(START_RUN)
                .map_err(StoreError::from)?
                .execute(params![
                    run_id,
                    brand,
                    connector,
                    day,
                    run_signed,
                    day_signed,
                    crate::store::now_ms()
                ])
                .map_err(StoreError::from)?;
            Ok(())
        })
    }

    async fn end_run(&self, run_id: &str) -> Result<(), StoreError> {
        self.write_tx(|tx| {
            let run: Option<(String, String, String, i64, bool)> = tx
                .query_row(
                    "SELECT connector, brand, day, reserved, ended = 1 FROM runs WHERE run_id = ?1",
                    [run_id],
                    |row| {
                        Ok((
                            row.get(0)?,
                            row.get(1)?,
                            row.get(2)?,
                            row.get(3)?,
                            row.get(4)?,
                        ))
                    },
                )
                .optional()?;
            let end = rules::end_run(
                run_id,
                run.as_ref().map(|(_, _, _, open, ended)| (*open, *ended)),
            )?;
            if let (Some(charge), Some((connector, brand, day, _, _))) = (end, run) {
                tx.prepare_cached(INSERT_CHARGE)?.execute(params![
                    charge.idempotency_key,
                    run_id,
                    connector,
                    brand,
                    day,
                    charge.amount,
                    crate::store::now_ms()
                ])?;
            }
            tx.prepare_cached(END_RUN)
                .map_err(StoreError::from)?
                .execute(params![crate::store::now_ms(), run_id])?;
            Ok(())
        })
    }

    async fn reserve_in_run(
        &self,
        run_id: &str,
        amount: u64,
    ) -> Result<crate::store::RunHold, StoreError> {
        let signed = crate::store::to_i64(amount)?;
        self.write_tx(|tx| {
            let hold = rules::hold(run_left_in(tx, run_id)?, amount);
            if hold == crate::store::RunHold::Held {
                tx.execute(statements::HOLD_IN_RUN.lite, params![run_id, signed])?;
            }
            Ok(hold)
        })
    }

    async fn run_left(&self, run_id: &str) -> Result<Option<u64>, StoreError> {
        let conn = self.read();
        run_left_in(&conn, run_id)
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
        self.write_tx(|tx| {
            let done: Option<i64> = tx
                .query_row(
                    statements::CHARGED_UNDER_KEY.lite,
                    [idempotency_key],
                    |row| row.get(0),
                )
                .optional()?;
            // What the run has beside this hold: read before the hold is
            // released, which would count it twice.
            let left = run_left_in(tx, run_id)?;
            let settlement = rules::settlement(done, left, reserved, actual)?;
            let rules::Settlement::Charge(charged) = settlement else {
                return Ok(settlement.charged());
            };
            tx.execute(statements::RELEASE_HOLD.lite, params![run_id, held])?;
            if charged > 0 {
                tx.prepare_cached(INSERT_CHARGE)?.execute(params![
                    idempotency_key,
                    run_id,
                    connector,
                    brand,
                    day,
                    crate::store::to_i64(charged)?,
                    crate::store::now_ms()
                ])?;
            }
            Ok(Some(charged))
        })
    }

    async fn end_live_runs(&self, at_ms: i64) -> Result<usize, StoreError> {
        self.write_tx(|tx| {
            let ended = tx.execute(
                "UPDATE runs SET ended = 1, ended_at_ms = ?1 WHERE ended = 0",
                params![at_ms],
            )?;
            Ok(ended)
        })
    }
}

/// What live run `run_id` has left: its per-run figure less what it
/// recorded and what is held; `None` if it ended or never started.
fn run_left_in(conn: &Connection, run_id: &str) -> Result<Option<u64>, StoreError> {
    let row: Option<(i64, i64, bool, i64)> = conn
        .query_row(
            "SELECT per_run, reserved, ended = 1,
                    (SELECT COALESCE(SUM(amount), 0) FROM charges WHERE run_id = ?1)
             FROM runs WHERE run_id = ?1",
            [run_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .optional()?;
    match row {
        Some((per_run, reserved, false, spent)) => {
            Ok(Some(rules::left_in_run(per_run, reserved, spent)?))
        }
        _ => Ok(None),
    }
}
