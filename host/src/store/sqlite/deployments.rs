//! Deployed connectors and session components in SQLite ([`DeploymentStore`]).

use super::*;

const DEPLOYED_COLUMNS: &str =
    "name, settings, artifact, digest, revision, retired, changed_by, changed_at_ms";

fn deployed_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<crate::store::StoredConnector> {
    Ok(crate::store::StoredConnector {
        name: row.get(0)?,
        settings: row.get(1)?,
        artifact: row.get(2)?,
        digest: row.get(3)?,
        revision: row.get(4)?,
        retired: row.get(5)?,
        changed_by: row.get(6)?,
        changed_at_ms: row.get(7)?,
    })
}

#[async_trait::async_trait]
impl crate::store::DeploymentStore for SqliteStore {
    async fn put_connector(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<crate::store::StoredConnector, StoreError> {
        let stamp = crate::store::now_ms();
        self.change_deployed(
            "deployed_connectors",
            name,
            statements::DEPLOY_CONNECTOR.lite,
            params![name, settings, artifact, digest, by, stamp],
        )?
        .ok_or_else(|| StoreError::Corrupt(format!("connector `{name}` vanished as it was stored")))
    }

    async fn retire_connector(
        &self,
        name: &str,
        by: &str,
    ) -> Result<Option<crate::store::StoredConnector>, StoreError> {
        let stamp = crate::store::now_ms();
        self.change_deployed(
            "deployed_connectors",
            name,
            statements::RETIRE_CONNECTOR.lite,
            params![by, stamp, name],
        )
    }

    async fn stored_connectors(&self) -> Result<Vec<crate::store::StoredConnector>, StoreError> {
        self.deployed_rows(&format!(
            "SELECT {DEPLOYED_COLUMNS} FROM deployed_connectors ORDER BY name"
        ))
    }

    async fn put_session_component(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<crate::store::StoredConnector, StoreError> {
        let stamp = crate::store::now_ms();
        self.change_deployed(
            "session_components",
            name,
            statements::PUT_SESSION_COMPONENT.lite,
            params![name, settings, artifact, digest, by, stamp],
        )?
        .ok_or_else(|| {
            StoreError::Corrupt(format!(
                "session component `{name}` vanished as it was stored"
            ))
        })
    }

    async fn drop_session_component(
        &self,
        name: &str,
        by: &str,
    ) -> Result<Option<crate::store::StoredConnector>, StoreError> {
        let stamp = crate::store::now_ms();
        self.change_deployed(
            "session_components",
            name,
            statements::DROP_SESSION_COMPONENT.lite,
            params![by, stamp, name],
        )
    }

    async fn session_components(&self) -> Result<Vec<crate::store::StoredConnector>, StoreError> {
        self.deployed_rows(statements::SESSION_COMPONENTS.lite)
    }
}

impl SqliteStore {
    /// Runs `change` on row `name` of `table` (the deployed connectors or
    /// the session components); the row after, `None` if nothing changed.
    fn change_deployed(
        &self,
        table: &str,
        name: &str,
        change: &str,
        params: impl rusqlite::Params,
    ) -> Result<Option<crate::store::StoredConnector>, StoreError> {
        self.write_tx(|tx| {
            if tx.execute(change, params)? == 0 {
                return Ok(None);
            }
            Ok(Some(tx.query_row(
                &format!("SELECT {DEPLOYED_COLUMNS} FROM {table} WHERE name = ?1"),
                [name],
                deployed_row,
            )?))
        })
    }

    /// The rows `sql` selects ([`DEPLOYED_COLUMNS`], in order).
    fn deployed_rows(&self, sql: &str) -> Result<Vec<crate::store::StoredConnector>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(sql)?;
        let rows = stmt.query_map([], deployed_row)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}
