//! Saved profiles in PostgreSQL ([`ProfileStore`]).

use super::*;

#[async_trait::async_trait]
impl ProfileStore for PgStore {
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
        self.change_and_invalidate(
            statements::SAVE_PROFILE.pg,
            vec![
                owned(brand),
                owned(&profile.name),
                owned(kind.as_str()),
                owned(&body),
                Box::new(crate::store::now_ms()),
            ],
            Invalidation::Profiles,
        )
        .await?;
        Ok(())
    }

    async fn load_profile(
        &self,
        brand: &str,
        name: &str,
    ) -> Result<Option<SavedProfile>, StoreError> {
        let shared = self.shared.clone();
        let (b, n) = (pg_text(brand).into_owned(), pg_text(name).into_owned());
        let row: Option<(String, String)> = self
            .run(async move {
                let client = shared.pool.get().await?;
                Ok(client
                    .query_opt(statements::LOAD_PROFILE.pg, &[&b, &n])
                    .await?
                    .map(|r| (r.get(0), r.get(1))))
            })
            .await?;
        row.map(|(kind, body)| crate::store::decode_profile(&kind, &body))
            .transpose()
    }

    async fn list_profiles(&self, brand: &str) -> Result<Vec<SavedProfile>, StoreError> {
        let shared = self.shared.clone();
        let b = pg_text(brand).into_owned();
        let rows: Vec<(String, String)> = self
            .run(async move {
                let client = shared.pool.get().await?;
                Ok(client
                    .query(statements::LIST_PROFILES.pg, &[&b])
                    .await?
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect())
            })
            .await?;
        rows.iter()
            .map(|(kind, body)| crate::store::decode_profile(kind, body))
            .collect()
    }

    async fn delete_profile(&self, brand: &str, name: &str) -> Result<bool, StoreError> {
        Ok(self
            .change_and_invalidate(
                statements::DELETE_PROFILE.pg,
                vec![owned(brand), owned(name)],
                Invalidation::Profiles,
            )
            .await?
            == 1)
    }
}
