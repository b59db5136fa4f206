//! Tool reviews and artifact pins in SQLite ([`ReviewStore`]).

use super::*;

#[async_trait::async_trait]
impl ReviewStore for SqliteStore {
    async fn reviewed(
        &self,
        connector: &str,
        tool: &str,
    ) -> Result<Option<crate::store::Reviewed>, StoreError> {
        let conn = self.read();
        let reviewed = conn
            .query_row(statements::REVIEWED.lite, [connector, tool], |row| {
                Ok(crate::store::Reviewed {
                    digest: row.get(0)?,
                    effect: row.get(1)?,
                    facts: row.get(2)?,
                })
            })
            .optional()?;
        Ok(reviewed)
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
        self.write_tx(|tx| {
            tx.execute(
                statements::APPROVE_TOOL.lite,
                params![
                    connector,
                    tool,
                    digest,
                    by,
                    crate::store::now_ms(),
                    effect,
                    facts
                ],
            )?;
            Ok(())
        })
    }

    async fn reviewed_tools(&self, connector: &str) -> Result<Vec<String>, StoreError> {
        let conn = self.read();
        let mut statement = conn.prepare(statements::REVIEWED_TOOLS.lite)?;
        let tools = statement
            .query_map([connector], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(tools)
    }

    async fn pin_artifact(
        &self,
        reference: &str,
        digest: &str,
        by: &str,
    ) -> Result<String, StoreError> {
        self.write_tx(|tx| {
            tx.execute(
                statements::PIN_ARTIFACT.lite,
                params![reference, digest, by, crate::store::now_ms()],
            )?;
            Ok(
                tx.query_row(statements::PINNED_ARTIFACT.lite, [reference], |row| {
                    row.get(0)
                })?,
            )
        })
    }

    async fn pinned_artifact(&self, reference: &str) -> Result<Option<String>, StoreError> {
        let conn = self.read();
        Ok(conn
            .query_row(statements::PINNED_ARTIFACT.lite, [reference], |row| {
                row.get(0)
            })
            .optional()?)
    }
}
