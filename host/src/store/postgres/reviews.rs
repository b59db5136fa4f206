//! Tool reviews and artifact pins in PostgreSQL ([`ReviewStore`]).

use super::*;

#[async_trait::async_trait]
impl ReviewStore for PgStore {
    async fn reviewed(
        &self,
        connector: &str,
        tool: &str,
    ) -> Result<Option<crate::store::Reviewed>, StoreError> {
        let shared = self.shared.clone();
        let (c, t) = (pg_text(connector).into_owned(), pg_text(tool).into_owned());
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client.prepare_cached(statements::REVIEWED.pg).await?;
            Ok(client
                .query_opt(&statement, &[&c, &t])
                .await?
                .map(|r| crate::store::Reviewed {
                    digest: r.get(0),
                    effect: r.get(1),
                    facts: r.get(2),
                }))
        })
        .await
    }

    async fn approve_tool(
        &self,
        connector: &str,
        tool: &str,
        digest: &str,
        effect: Option<&str>,
        facts: Option<&str>,
        by: &str,
    ) -> Result<(), StoreError> {
        self.change_and_invalidate(
            statements::APPROVE_TOOL.pg,
            vec![
                owned(connector),
                owned(tool),
                owned(digest),
                owned(by),
                Box::new(crate::store::now_ms()),
                Box::new(effect.map(str::to_string)),
                Box::new(facts.map(|f| pg_text(f).into_owned())),
            ],
            Invalidation::Reviews,
        )
        .await?;
        Ok(())
    }

    async fn reviewed_tools(&self, connector: &str) -> Result<Vec<String>, StoreError> {
        let shared = self.shared.clone();
        let c = pg_text(connector).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query(statements::REVIEWED_TOOLS.pg, &[&c])
                .await?
                .iter()
                .map(|row| row.get(0))
                .collect())
        })
        .await
    }

    async fn pin_artifact(
        &self,
        reference: &str,
        digest: &str,
        by: &str,
    ) -> Result<String, StoreError> {
        let shared = self.shared.clone();
        let (r, d, b) = (
            pg_text(reference).into_owned(),
            pg_text(digest).into_owned(),
            pg_text(by).into_owned(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            client
                .execute(
                    statements::PIN_ARTIFACT.pg,
                    &[&r, &d, &b, &crate::store::now_ms()],
                )
                .await?;
            Ok(client
                .query_one(statements::PINNED_ARTIFACT.pg, &[&r])
                .await?
                .get(0))
        })
        .await
    }

    async fn pinned_artifact(&self, reference: &str) -> Result<Option<String>, StoreError> {
        let shared = self.shared.clone();
        let r = pg_text(reference).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            Ok(client
                .query_opt(statements::PINNED_ARTIFACT.pg, &[&r])
                .await?
                .map(|row| row.get(0)))
        })
        .await
    }
}
