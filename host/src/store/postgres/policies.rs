//! Stored policy documents in PostgreSQL ([`PolicyStore`]): a change rings
//! every host (NOTIFY), each records in its lease row the change count it
//! applied, and the admin API waits on those rows before it answers.

use super::*;
use crate::store::{PolicyChange, PolicyStore, StoredPolicies, StoredPolicy};

const POLICY_COLUMNS: &str = "name, text, revision, retired, changed_by, changed_at_ms, change";

fn policy_row(row: &tokio_postgres::Row) -> StoredPolicy {
    StoredPolicy {
        name: row.get(0),
        text: row.get(1),
        revision: row.get(2),
        retired: row.get(3),
        changed_by: row.get(4),
        changed_at_ms: row.get(5),
        change: row.get(6),
    }
}

/// What one change does to its row, once the count is bumped to `$1`.
enum Edit {
    Put { text: String },
    Retire,
}

impl PgStore {
    /// Bumps the store-wide count (its row lock queues two changes made at
    /// once) if it is `expected`, applies `edit` to document `name`, and
    /// rings every host, in one transaction.
    async fn change_policy(
        &self,
        name: &str,
        by: &str,
        expected: Option<i64>,
        edit: Edit,
    ) -> Result<PolicyChange, StoreError> {
        let shared = self.shared.clone();
        let name = pg_text(name).into_owned();
        let by = pg_text(by).into_owned();
        let made = self
            .run(async move {
                let mut client = shared.pool.get().await?;
                let tx = client.transaction().await?;
                let found: i64 = tx
                    .query_one(
                        "SELECT count FROM policy_changes WHERE id = 1 FOR UPDATE",
                        &[],
                    )
                    .await?
                    .get(0);
                if expected.is_some_and(|expected| expected != found) {
                    return Ok(PolicyChange::Stale { change: found });
                }
                let change = found + 1;
                let at_ms = crate::store::now_ms();
                let changed = match &edit {
                    Edit::Put { text } => {
                        tx.execute(
                            "INSERT INTO policies (name, text, revision, retired, changed_by, changed_at_ms, change)
                             VALUES ($1, $2, 1, FALSE, $3, $4, $5)
                             ON CONFLICT (name) DO UPDATE SET text = excluded.text,
                                 revision = policies.revision + 1, retired = FALSE,
                                 changed_by = excluded.changed_by,
                                 changed_at_ms = excluded.changed_at_ms, change = excluded.change",
                            &[&name, &pg_text(text).into_owned(), &by, &at_ms, &change],
                        )
                        .await?
                    }
                    Edit::Retire => {
                        tx.execute(
                            "UPDATE policies SET retired = TRUE, revision = revision + 1,
                                 changed_by = $1, changed_at_ms = $2, change = $3
                             WHERE name = $4 AND NOT retired",
                            &[&by, &at_ms, &change, &name],
                        )
                        .await?
                    }
                };
                if changed == 0 {
                    return Ok(PolicyChange::NotFound);
                }
                tx.execute(
                    "UPDATE policy_changes SET count = $1 WHERE id = 1",
                    &[&change],
                )
                .await?;
                let row = tx
                    .query_one(
                        &format!("SELECT {POLICY_COLUMNS} FROM policies WHERE name = $1"),
                        &[&name],
                    )
                    .await?;
                notify(&tx, &Notice::Invalidate(Invalidation::Policies)).await?;
                tx.commit().await?;
                Ok(PolicyChange::Made(policy_row(&row)))
            })
            .await?;
        if matches!(made, PolicyChange::Made(_)) {
            self.notify_invalidation(Invalidation::Policies);
        }
        Ok(made)
    }
}

#[async_trait::async_trait]
impl PolicyStore for PgStore {
    async fn put_policy(
        &self,
        name: &str,
        text: &str,
        by: &str,
        validated_at: i64,
    ) -> Result<PolicyChange, StoreError> {
        self.change_policy(
            name,
            by,
            Some(validated_at),
            Edit::Put {
                text: text.to_string(),
            },
        )
        .await
    }

    async fn retire_policy(&self, name: &str, by: &str) -> Result<PolicyChange, StoreError> {
        self.change_policy(name, by, None, Edit::Retire).await
    }

    async fn stored_policies(&self) -> Result<StoredPolicies, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let mut client = shared.pool.get().await?;
            // One snapshot: the count and the documents agree.
            let tx = client
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await?;
            let change: i64 = tx
                .query_one("SELECT count FROM policy_changes WHERE id = 1", &[])
                .await?
                .get(0);
            let docs = tx
                .query(
                    &format!("SELECT {POLICY_COLUMNS} FROM policies ORDER BY name"),
                    &[],
                )
                .await?
                .iter()
                .map(policy_row)
                .collect();
            tx.commit().await?;
            Ok(StoredPolicies { change, docs })
        })
        .await
    }

    async fn policy_change_count(&self) -> Result<i64, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query_one("SELECT count FROM policy_changes WHERE id = 1", &[])
                .await?
                .get(0))
        })
        .await
    }

    async fn policy_applied(&self, change: i64) -> Result<(), StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .execute(
                    "UPDATE hosts SET policy_applied = GREATEST(policy_applied, $2) WHERE host_id = $1",
                    &[&&*shared.id(), &change],
                )
                .await?;
            Ok(())
        })
        .await
    }

    async fn hosts_behind_policy(&self, change: i64) -> Result<Vec<String>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query(
                    "SELECT host_id FROM hosts
                     WHERE recovered_by IS NULL AND lease_until > now() AND policy_applied < $1
                     ORDER BY host_id",
                    &[&change],
                )
                .await?
                .iter()
                .map(|row| row.get(0))
                .collect())
        })
        .await
    }
}
