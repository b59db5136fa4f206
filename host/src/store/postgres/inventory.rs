//! Everything stored, for the audit ([`InventoryStore`]).

use super::approvals::{APPROVAL_COLUMNS, approval_row};
use super::*;

#[async_trait::async_trait]
impl crate::store::InventoryStore for PgStore {
    async fn stored_connections(&self) -> Result<Vec<crate::store::StoredConnection>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            let mut out: Vec<crate::store::StoredConnection> = client
                .query(statements::ALL_CONNECTIONS.pg, &[])
                .await?
                .iter()
                .map(|r| crate::store::StoredConnection {
                    brand: r.get(0),
                    connection: r.get(1),
                    disabled: r.get(2),
                    updated_at_ms: r.get(3),
                    shared_with: Vec::new(),
                })
                .collect();
            for r in client.query(statements::ALL_SHARES.pg, &[]).await? {
                let (owner, connection): (String, String) = (r.get(0), r.get(1));
                if let Some(c) = out
                    .iter_mut()
                    .find(|c| c.brand == owner && c.connection == connection)
                {
                    c.shared_with.push(r.get(2));
                }
            }
            Ok(out)
        })
        .await
    }

    async fn all_profiles(&self) -> Result<Vec<(String, SavedProfile)>, StoreError> {
        let shared = self.shared.clone();
        let rows: Vec<(String, String, String)> = self
            .run(async move {
                let client = shared.pool.get().await?;
                Ok(client
                    .query(statements::ALL_PROFILES.pg, &[])
                    .await?
                    .iter()
                    .map(|r| (r.get(0), r.get(1), r.get(2)))
                    .collect())
            })
            .await?;
        rows.into_iter()
            .map(|(brand, kind, body)| Ok((brand, crate::store::decode_profile(&kind, &body)?)))
            .collect()
    }

    async fn stored_reviews(&self) -> Result<Vec<crate::store::StoredReview>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query(statements::ALL_REVIEWS.pg, &[])
                .await?
                .iter()
                .map(|r| crate::store::StoredReview {
                    connector: r.get(0),
                    tool: r.get(1),
                    digest: r.get(2),
                    approved_by: r.get(3),
                    approved_at_ms: r.get(4),
                    effect: r.get(5),
                })
                .collect())
        })
        .await
    }

    async fn all_pending(&self) -> Result<Vec<Approval>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            let sql = format!(
                "SELECT {APPROVAL_COLUMNS} FROM approvals WHERE state = 'pending' ORDER BY id"
            );
            client
                .query(&sql, &[])
                .await?
                .iter()
                .map(approval_row)
                .collect()
        })
        .await
    }

    async fn last_executed(
        &self,
        brand: &str,
    ) -> Result<std::collections::BTreeMap<String, i64>, StoreError> {
        let shared = self.shared.clone();
        let brand = pg_text(brand).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query(statements::LAST_EXECUTED.pg, &[&brand])
                .await?
                .iter()
                .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)))
                .collect())
        })
        .await
    }
}
