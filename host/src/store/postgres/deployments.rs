//! Deployed connectors and session components in PostgreSQL ([`DeploymentStore`]).

use super::*;

const DEPLOYED_COLUMNS: &str =
    "name, settings, artifact, digest, revision, retired, changed_by, changed_at_ms";

fn deployed_row(row: &tokio_postgres::Row) -> crate::store::StoredConnector {
    crate::store::StoredConnector {
        name: row.get(0),
        settings: row.get(1),
        artifact: row.get(2),
        digest: row.get(3),
        revision: row.get(4),
        retired: row.get(5),
        changed_by: row.get(6),
        changed_at_ms: row.get(7),
    }
}

impl PgStore {
    async fn stored_connector(
        &self,
        name: &str,
    ) -> Result<Option<crate::store::StoredConnector>, StoreError> {
        let shared = self.shared.clone();
        let name = pg_text(name).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query_opt(
                    &format!("SELECT {DEPLOYED_COLUMNS} FROM deployed_connectors WHERE name = $1"),
                    &[&name],
                )
                .await?
                .map(|row| deployed_row(&row)))
        })
        .await
    }
}

impl PgStore {
    /// Runs `change` on session component `name` (hosts read templates when
    /// a session names one: nobody is rung); the row after, `None` if
    /// nothing changed.
    async fn change_session_component(
        &self,
        name: &str,
        change: &'static str,
        params: Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>,
    ) -> Result<Option<crate::store::StoredConnector>, StoreError> {
        let shared = self.shared.clone();
        let name = pg_text(name).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            let refs: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
                .iter()
                .map(|p| p.as_ref() as &(dyn tokio_postgres::types::ToSql + Sync))
                .collect();
            if client.execute(change, &refs).await? == 0 {
                return Ok(None);
            }
            Ok(client
                .query_opt(
                    &format!("SELECT {DEPLOYED_COLUMNS} FROM session_components WHERE name = $1"),
                    &[&name],
                )
                .await?
                .map(|row| deployed_row(&row)))
        })
        .await
    }
}

#[async_trait::async_trait]
impl crate::store::DeploymentStore for PgStore {
    async fn put_connector(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<crate::store::StoredConnector, StoreError> {
        self.change_and_invalidate(
            statements::DEPLOY_CONNECTOR.pg,
            vec![
                owned(name),
                owned(settings),
                owned(artifact),
                owned(digest),
                owned(by),
                Box::new(crate::store::now_ms()),
            ],
            Invalidation::Connectors,
        )
        .await?;
        self.stored_connector(name).await?.ok_or_else(|| {
            StoreError::Corrupt(format!("connector `{name}` vanished as it was stored"))
        })
    }

    async fn retire_connector(
        &self,
        name: &str,
        by: &str,
    ) -> Result<Option<crate::store::StoredConnector>, StoreError> {
        let changed = self
            .change_and_invalidate(
                statements::RETIRE_CONNECTOR.pg,
                vec![owned(by), Box::new(crate::store::now_ms()), owned(name)],
                Invalidation::Connectors,
            )
            .await?;
        if changed == 0 {
            return Ok(None);
        }
        self.stored_connector(name).await
    }

    async fn stored_connectors(&self) -> Result<Vec<crate::store::StoredConnector>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query(
                    &format!("SELECT {DEPLOYED_COLUMNS} FROM deployed_connectors ORDER BY name"),
                    &[],
                )
                .await?
                .iter()
                .map(deployed_row)
                .collect())
        })
        .await
    }

    async fn put_session_component(
        &self,
        name: &str,
        settings: &str,
        artifact: &str,
        digest: &str,
        by: &str,
    ) -> Result<crate::store::StoredConnector, StoreError> {
        self.change_session_component(
            name,
            statements::PUT_SESSION_COMPONENT.pg,
            vec![
                owned(name),
                owned(settings),
                owned(artifact),
                owned(digest),
                owned(by),
                Box::new(crate::store::now_ms()),
            ],
        )
        .await?
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
        self.change_session_component(
            name,
            statements::DROP_SESSION_COMPONENT.pg,
            vec![owned(by), Box::new(crate::store::now_ms()), owned(name)],
        )
        .await
    }

    async fn session_components(&self) -> Result<Vec<crate::store::StoredConnector>, StoreError> {
        let shared = self.shared.clone();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query(statements::SESSION_COMPONENTS.pg, &[])
                .await?
                .iter()
                .map(deployed_row)
                .collect())
        })
        .await
    }
}
