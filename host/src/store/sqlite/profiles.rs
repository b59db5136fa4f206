//! Saved profiles in SQLite ([`ProfileStore`]).

use super::*;

#[async_trait::async_trait]
impl ProfileStore for SqliteStore {
    async fn save_profile(
        &self,
        brand: &str,
        profile: &Profile,
        kind: ProfileKind,
        catalog: &Catalog,
    ) -> Result<(), SaveProfileError> {
        kind.validate(profile, catalog)?;
        let body =
            serde_json::to_string(profile).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.write_tx(|tx| {
            tx.execute(
                statements::SAVE_PROFILE.lite,
                params![
                    brand,
                    profile.name,
                    kind.as_str(),
                    body,
                    crate::store::now_ms()
                ],
            )
            .map_err(StoreError::from)?;
            Ok(())
        })
    }

    async fn load_profile(
        &self,
        brand: &str,
        name: &str,
    ) -> Result<Option<SavedProfile>, StoreError> {
        let row: Option<(String, String)> = {
            let conn = self.read();
            conn.query_row(statements::LOAD_PROFILE.lite, [brand, name], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?
        };
        row.map(|(kind, body)| crate::store::decode_profile(&kind, &body))
            .transpose()
    }

    async fn list_profiles(&self, brand: &str) -> Result<Vec<SavedProfile>, StoreError> {
        let rows: Vec<(String, String)> = {
            let conn = self.read();
            let mut stmt = conn.prepare_cached(statements::LIST_PROFILES.lite)?;
            let rows = stmt.query_map([brand], |row| Ok((row.get(0)?, row.get(1)?)))?;
            rows.collect::<Result<Vec<_>, _>>()?
        };
        rows.iter()
            .map(|(kind, body)| crate::store::decode_profile(kind, body))
            .collect()
    }

    async fn delete_profile(&self, brand: &str, name: &str) -> Result<bool, StoreError> {
        self.write_tx(|tx| {
            let changed = tx.execute(statements::DELETE_PROFILE.lite, [brand, name])?;
            Ok(changed == 1)
        })
    }
}
