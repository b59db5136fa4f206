//! Sealed connections and their shares in PostgreSQL ([`ConnectionStore`]).

use super::*;

#[async_trait::async_trait]
impl ConnectionStore for PgStore {
    async fn put_connection(
        &self,
        brand: &str,
        connector: &str,
        secret: &str,
        key: &[u8; 32],
    ) -> Result<(), StoreError> {
        let (nonce, ciphertext) = crate::store::sealed::seal(
            key,
            &crate::store::sealed::connection_aad(brand, connector),
            secret.as_bytes(),
        )?;
        self.change_and_invalidate(
            statements::PUT_CONNECTION.pg,
            vec![
                owned(brand),
                owned(connector),
                Box::new(nonce),
                Box::new(ciphertext),
                Box::new(crate::store::now_ms()),
            ],
            Invalidation::Connections,
        )
        .await?;
        Ok(())
    }

    async fn get_connection(
        &self,
        brand: &str,
        connector: &str,
        key: &[u8; 32],
    ) -> Result<Option<String>, StoreError> {
        let shared = self.shared.clone();
        let (b, c) = (pg_text(brand).into_owned(), pg_text(connector).into_owned());
        let row: Option<(Vec<u8>, Vec<u8>, bool)> = self
            .run(async move {
                let client = shared.pool.get().await?;
                let statement = client
                    .prepare_cached(statements::SEALED_CONNECTION.pg)
                    .await?;
                Ok(client
                    .query_opt(&statement, &[&b, &c])
                    .await?
                    .map(|row| (row.get(0), row.get(1), row.get(2))))
            })
            .await?;
        crate::store::rules::connection_secret(brand, connector, key, row)
    }

    async fn disable_connection(&self, brand: &str, connector: &str) -> Result<bool, StoreError> {
        Ok(self
            .change_and_invalidate(
                statements::DISABLE_CONNECTION.pg,
                vec![
                    Box::new(crate::store::now_ms()),
                    owned(brand),
                    owned(connector),
                ],
                Invalidation::Connections,
            )
            .await?
            == 1)
    }

    async fn share_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<(), StoreError> {
        self.change_and_invalidate(
            statements::SHARE_CONNECTION.pg,
            vec![
                owned(owner_brand),
                owned(connector),
                owned(with_brand),
                Box::new(crate::store::now_ms()),
            ],
            Invalidation::Connections,
        )
        .await?;
        Ok(())
    }

    async fn unshare_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<bool, StoreError> {
        Ok(self
            .change_and_invalidate(
                statements::UNSHARE_CONNECTION.pg,
                vec![owned(owner_brand), owned(connector), owned(with_brand)],
                Invalidation::Connections,
            )
            .await?
            == 1)
    }

    async fn shared_with(
        &self,
        with_brand: &str,
        connector: &str,
    ) -> Result<Vec<String>, StoreError> {
        let shared = self.shared.clone();
        let (w, c) = (
            pg_text(with_brand).into_owned(),
            pg_text(connector).into_owned(),
        );
        self.run(async move {
            let client = shared.pool.get().await?;
            let statement = client.prepare_cached(statements::SHARED_WITH.pg).await?;
            Ok(client
                .query(&statement, &[&w, &c])
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect())
        })
        .await
    }
}
