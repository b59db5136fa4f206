//! Parked capability requests in PostgreSQL ([`CapabilityRequestStore`]).

use super::*;

fn capability_request_row(row: &tokio_postgres::Row) -> crate::store::CapabilityRequest {
    let request: String = row.get(3);
    crate::store::CapabilityRequest {
        id: row.get(0),
        session: row.get(1),
        brand: row.get(2),
        request: serde_json::from_str(&request).unwrap_or(serde_json::Value::Null),
        requested_at_ms: row.get(4),
        answer: row.get(5),
        answered_by: row.get(6),
        answered_at_ms: row.get(7),
    }
}

const CAPABILITY_COLUMNS: &str =
    "id, session, brand, request, requested_at_ms, answer, answered_by, answered_at_ms";

#[async_trait::async_trait]
impl crate::store::CapabilityRequestStore for PgStore {
    async fn park_capability_request(
        &self,
        session: &str,
        brand: &str,
        request: &serde_json::Value,
    ) -> Result<i64, StoreError> {
        let shared = self.shared.clone();
        let (session, brand) = (pg_text(session).into_owned(), pg_text(brand).into_owned());
        let request = pg_text(&request.to_string()).into_owned();
        self.run(async move {
            let client = shared.pool.get().await?;
            let row = client
                .query_one(
                    "INSERT INTO capability_requests (session, brand, request, requested_at_ms) VALUES ($1, $2, $3, $4) RETURNING id",
                    &[&session, &brand, &request, &crate::store::now_ms()],
                )
                .await?;
            Ok(row.get(0))
        }).await
    }

    async fn capability_requests(
        &self,
        session: Option<&str>,
        pending_only: bool,
    ) -> Result<Vec<crate::store::CapabilityRequest>, StoreError> {
        let shared = self.shared.clone();
        let session = session.map(|s| pg_text(s).into_owned());
        self.run(async move {
            let client = shared.pool.get().await?;
            let rows = client
                .query(
                    &format!(
                        "SELECT {CAPABILITY_COLUMNS} FROM capability_requests
                         WHERE ($1::text IS NULL OR session = $1) AND (NOT $2 OR answer IS NULL) ORDER BY id"
                    ),
                    &[&session, &pending_only],
                )
                .await?;
            Ok(rows.iter().map(capability_request_row).collect())
        }).await
    }

    async fn answer_capability_request(
        &self,
        id: i64,
        answer: &str,
        by: &str,
    ) -> Result<crate::store::Answered, StoreError> {
        let shared = self.shared.clone();
        let (answer, by) = (pg_text(answer).into_owned(), pg_text(by).into_owned());
        self.run(async move {
            let mut client = shared.pool.get().await?;
            let tx = client.transaction().await?;
            let found = tx
                .query_opt(
                    &format!("SELECT {CAPABILITY_COLUMNS} FROM capability_requests WHERE id = $1 FOR UPDATE"),
                    &[&id],
                )
                .await?
                .map(|row| capability_request_row(&row));
            let at = crate::store::now_ms();
            let answered = crate::store::rules::answer_capability_request(found, &answer, &by, at);
            let crate::store::Answered::Now(_) = answered else {
                return Ok(answered);
            };
            tx.execute(
                statements::ANSWER_CAPABILITY_REQUEST.pg,
                &[&answer, &by, &at, &id],
            )
            .await?;
            tx.commit().await?;
            Ok(answered)
        }).await
    }
}
