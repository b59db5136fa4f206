//! Sealed connections and their shares in SQLite ([`ConnectionStore`]).

use super::*;

#[async_trait::async_trait]
impl ConnectionStore for SqliteStore {
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
        self.write_tx(|tx| {
            tx.execute(
                statements::PUT_CONNECTION.lite,
                params![brand, connector, nonce, ciphertext, crate::store::now_ms()],
            )?;
            Ok(())
        })
    }

    async fn get_connection(
        &self,
        brand: &str,
        connector: &str,
        key: &[u8; 32],
    ) -> Result<Option<String>, StoreError> {
        let row: Option<(Vec<u8>, Vec<u8>, bool)> = {
            let conn = self.read();
            conn.query_row(
                statements::SEALED_CONNECTION.lite,
                [brand, connector],
                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
            )
            .optional()?
        };
        crate::store::rules::connection_secret(brand, connector, key, row)
    }

    async fn disable_connection(&self, brand: &str, connector: &str) -> Result<bool, StoreError> {
        self.write_tx(|tx| {
            let changed = tx.execute(
                statements::DISABLE_CONNECTION.lite,
                params![crate::store::now_ms(), brand, connector],
            )?;
            Ok(changed == 1)
        })
    }

    async fn share_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<(), StoreError> {
        self.write_tx(|tx| {
            tx.execute(
                statements::SHARE_CONNECTION.lite,
                params![owner_brand, connector, with_brand, crate::store::now_ms()],
            )?;
            Ok(())
        })
    }

    async fn unshare_connection(
        &self,
        owner_brand: &str,
        connector: &str,
        with_brand: &str,
    ) -> Result<bool, StoreError> {
        self.write_tx(|tx| {
            let changed = tx.execute(
                statements::UNSHARE_CONNECTION.lite,
                params![owner_brand, connector, with_brand],
            )?;
            Ok(changed == 1)
        })
    }

    async fn shared_with(
        &self,
        with_brand: &str,
        connector: &str,
    ) -> Result<Vec<String>, StoreError> {
        let conn = self.read();
        let mut stmt = conn.prepare_cached(statements::SHARED_WITH.lite)?;
        let rows = stmt.query_map([with_brand, connector], |row| row.get::<_, String>(0))?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }
}
