//! Stored policy documents in SQLite ([`PolicyStore`]): one host, so a
//! change is applied where it is made and nobody else is waited for.

use super::*;
use crate::store::{PolicyChange, StoredPolicies, StoredPolicy};

const POLICY_COLUMNS: &str = "name, text, revision, retired, changed_by, changed_at_ms, change";

fn policy_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredPolicy> {
    Ok(StoredPolicy {
        name: row.get(0)?,
        text: row.get(1)?,
        revision: row.get(2)?,
        retired: row.get(3)?,
        changed_by: row.get(4)?,
        changed_at_ms: row.get(5)?,
        change: row.get(6)?,
    })
}

/// Bumps the store-wide count inside `tx` if it is still `expected`; the
/// new count, or `Err(found)`.
fn bump_count(
    tx: &rusqlite::Transaction<'_>,
    expected: Option<i64>,
) -> Result<Result<i64, i64>, StoreError> {
    let found: i64 = tx.query_row("SELECT count FROM policy_changes WHERE id = 1", [], |r| {
        r.get(0)
    })?;
    if expected.is_some_and(|expected| expected != found) {
        return Ok(Err(found));
    }
    tx.execute(
        "UPDATE policy_changes SET count = ?1 WHERE id = 1",
        [found + 1],
    )?;
    Ok(Ok(found + 1))
}

#[async_trait::async_trait]
impl crate::store::PolicyStore for SqliteStore {
    async fn put_policy(
        &self,
        name: &str,
        text: &str,
        by: &str,
        validated_at: i64,
    ) -> Result<PolicyChange, StoreError> {
        let stamp = crate::store::now_ms();
        self.write_tx(|tx| {
            let change = match bump_count(tx, Some(validated_at))? {
                Ok(change) => change,
                Err(found) => return Ok(PolicyChange::Stale { change: found }),
            };
            tx.execute(
                "INSERT INTO policies (name, text, revision, retired, changed_by, changed_at_ms, change)
                 VALUES (?1, ?2, 1, FALSE, ?3, ?4, ?5)
                 ON CONFLICT (name) DO UPDATE SET text = excluded.text, revision = policies.revision + 1,
                     retired = FALSE, changed_by = excluded.changed_by,
                     changed_at_ms = excluded.changed_at_ms, change = excluded.change",
                params![name, text, by, stamp, change],
            )?;
            Ok(PolicyChange::Made(tx.query_row(
                &format!("SELECT {POLICY_COLUMNS} FROM policies WHERE name = ?1"),
                [name],
                policy_row,
            )?))
        })
    }

    async fn retire_policy(&self, name: &str, by: &str) -> Result<PolicyChange, StoreError> {
        let stamp = crate::store::now_ms();
        self.write_tx(|tx| {
            let live: Option<i64> = tx
                .query_row(
                    "SELECT revision FROM policies WHERE name = ?1 AND NOT retired",
                    [name],
                    |r| r.get(0),
                )
                .optional()?;
            if live.is_none() {
                return Ok(PolicyChange::NotFound);
            }
            let change = match bump_count(tx, None)? {
                Ok(change) | Err(change) => change,
            };
            tx.execute(
                "UPDATE policies SET retired = TRUE, revision = revision + 1, changed_by = ?1,
                     changed_at_ms = ?2, change = ?3 WHERE name = ?4",
                params![by, stamp, change, name],
            )?;
            Ok(PolicyChange::Made(tx.query_row(
                &format!("SELECT {POLICY_COLUMNS} FROM policies WHERE name = ?1"),
                [name],
                policy_row,
            )?))
        })
    }

    async fn stored_policies(&self) -> Result<StoredPolicies, StoreError> {
        let conn = self.read();
        // One read transaction: the count and the documents agree.
        let tx = conn.unchecked_transaction()?;
        let change: i64 =
            tx.query_row("SELECT count FROM policy_changes WHERE id = 1", [], |r| {
                r.get(0)
            })?;
        let docs = {
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {POLICY_COLUMNS} FROM policies ORDER BY name"
            ))?;
            let rows = stmt.query_map([], policy_row)?;
            rows.collect::<Result<Vec<_>, _>>()?
        };
        tx.finish()?;
        Ok(StoredPolicies { change, docs })
    }

    async fn policy_change_count(&self) -> Result<i64, StoreError> {
        Ok(self
            .read()
            .query_row("SELECT count FROM policy_changes WHERE id = 1", [], |r| {
                r.get(0)
            })?)
    }
}
