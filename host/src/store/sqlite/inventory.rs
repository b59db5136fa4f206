//! Everything stored, for the audit ([`InventoryStore`]).

use super::approvals::APPROVAL_COLUMNS;
use super::*;

#[async_trait::async_trait]
impl crate::store::InventoryStore for SqliteStore {
    async fn stored_connections(&self) -> Result<Vec<crate::store::StoredConnection>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(statements::ALL_CONNECTIONS.lite)?;
        let mut out: Vec<crate::store::StoredConnection> = stmt
            .query_map([], |row| {
                Ok(crate::store::StoredConnection {
                    brand: row.get(0)?,
                    connection: row.get(1)?,
                    disabled: row.get(2)?,
                    updated_at_ms: row.get(3)?,
                    shared_with: Vec::new(),
                })
            })?
            .collect::<Result<_, _>>()?;
        let mut stmt = conn.prepare_cached(statements::ALL_SHARES.lite)?;
        let shares = stmt.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
            ))
        })?;
        for share in shares {
            let (owner, connection, with) = share?;
            if let Some(c) = out
                .iter_mut()
                .find(|c| c.brand == owner && c.connection == connection)
            {
                c.shared_with.push(with);
            }
        }
        Ok(out)
    }

    async fn all_profiles(&self) -> Result<Vec<(String, SavedProfile)>, StoreError> {
        let rows: Vec<(String, String, String)> = {
            let conn = self.read();
            let mut stmt = conn.prepare_cached(statements::ALL_PROFILES.lite)?;
            let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
            rows.collect::<Result<Vec<_>, _>>()?
        };
        rows.into_iter()
            .map(|(brand, kind, body)| Ok((brand, crate::store::decode_profile(&kind, &body)?)))
            .collect()
    }

    async fn stored_reviews(&self) -> Result<Vec<crate::store::StoredReview>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(statements::ALL_REVIEWS.lite)?;
        let rows = stmt.query_map([], |row| {
            Ok(crate::store::StoredReview {
                connector: row.get(0)?,
                tool: row.get(1)?,
                digest: row.get(2)?,
                approved_by: row.get(3)?,
                approved_at_ms: row.get(4)?,
                effect: row.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    async fn all_pending(&self) -> Result<Vec<Approval>, StoreError> {
        let sql = format!("SELECT {APPROVAL_COLUMNS} FROM approvals WHERE state = ?1 ORDER BY id");
        self.approvals_query(&sql, &"pending")
    }

    async fn last_executed(
        &self,
        brand: &str,
    ) -> Result<std::collections::BTreeMap<String, i64>, StoreError> {
        crate::store::off_worker(|| {
            let conn = self.read();
            let mut stmt = conn.prepare_cached(statements::LAST_EXECUTED.lite)?;
            let rows = stmt.query_map([brand], |row| Ok((row.get(0)?, row.get(1)?)))?;
            Ok(rows.collect::<Result<_, _>>()?)
        })
    }
}
