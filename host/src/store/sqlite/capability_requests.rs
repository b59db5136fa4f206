//! Parked capability requests in SQLite ([`CapabilityRequestStore`]).

use super::*;

fn capability_request_of(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<crate::store::CapabilityRequest> {
    let request: String = row.get(3)?;
    Ok(crate::store::CapabilityRequest {
        id: row.get(0)?,
        session: row.get(1)?,
        brand: row.get(2)?,
        request: serde_json::from_str(&request).unwrap_or(serde_json::Value::Null),
        requested_at_ms: row.get(4)?,
        answer: row.get(5)?,
        answered_by: row.get(6)?,
        answered_at_ms: row.get(7)?,
    })
}

const CAPABILITY_COLUMNS: &str =
    "id, session, brand, request, requested_at_ms, answer, answered_by, answered_at_ms";

#[async_trait::async_trait]
impl crate::store::CapabilityRequestStore for SqliteStore {
    async fn park_capability_request(
        &self,
        session: &str,
        brand: &str,
        request: &serde_json::Value,
    ) -> Result<i64, StoreError> {
        let text = request.to_string();
        self.write_tx(|tx| {
            tx.execute(
                "INSERT INTO capability_requests (session, brand, request, requested_at_ms) VALUES (?1, ?2, ?3, ?4)",
                params![session, brand, text, crate::store::now_ms()],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    async fn capability_requests(
        &self,
        session: Option<&str>,
        pending_only: bool,
    ) -> Result<Vec<crate::store::CapabilityRequest>, StoreError> {
        let conn = self.read();
        let sql = format!(
            "SELECT {CAPABILITY_COLUMNS} FROM capability_requests WHERE (?1 IS NULL OR session = ?1) AND (?2 = 0 OR answer IS NULL) ORDER BY id"
        );
        let mut statement = conn.prepare_cached(&sql)?;
        let rows = statement.query_map(params![session, pending_only], capability_request_of)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    async fn answer_capability_request(
        &self,
        id: i64,
        answer: &str,
        by: &str,
    ) -> Result<crate::store::Answered, StoreError> {
        self.write_tx(|tx| {
            let found = tx
                .query_row(
                    &format!("SELECT {CAPABILITY_COLUMNS} FROM capability_requests WHERE id = ?1"),
                    [id],
                    capability_request_of,
                )
                .optional()?;
            let at = crate::store::now_ms();
            let answered = crate::store::rules::answer_capability_request(found, answer, by, at);
            if let crate::store::Answered::Now(_) = answered {
                tx.execute(
                    statements::ANSWER_CAPABILITY_REQUEST.lite,
                    params![answer, by, at, id],
                )?;
            }
            Ok(answered)
        })
    }
}
