//! The compile cache: a component compiled once, kept on disk under the
//! hash of its bytes and the engine's configuration.

use super::*;

impl Runtime {
    /// The component compiled: from the cache when it holds it, else
    /// compiled now and put there.
    pub(super) fn compile(&self, bytes: &[u8]) -> Result<Component, LoadError> {
        let path = self.cache_path(bytes);
        if let Some(component) = path.as_deref().and_then(|p| self.cached_at(p)) {
            return Ok(component);
        }
        self.compile_into(bytes, path.as_deref())
    }

    /// Where the cache keeps this component compiled; `None` without a cache.
    pub(super) fn cache_path(&self, bytes: &[u8]) -> Option<PathBuf> {
        let dir = self.inner.config.cache_dir.as_ref()?;
        Some(dir.join(format!("{}.cwasm", self.cache_key(bytes))))
    }

    /// The compiled component the cache holds at `path`, if it holds a
    /// usable one (an unusable entry is removed).
    // The one `unsafe` of the host's crates (the workspace denies it).
    #[allow(unsafe_code)]
    pub(super) fn cached_at(&self, path: &Path) -> Option<Component> {
        // Read into memory rather than mapped: a mapped file that someone
        // truncates under us would crash the host with SIGBUS.
        let cached = std::fs::read(path).ok()?;
        // SAFETY: the cache directory is the host's own; entries are
        // written only by `Component::serialize` below, keyed by the
        // component's hash and this engine's configuration, and
        // `deserialize` still checks that they match this engine.
        match unsafe { Component::deserialize(&self.inner.engine, &cached) } {
            Ok(component) => Some(component),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %format!("{e:#}"), "dropping unusable cache entry");
                let _ = std::fs::remove_file(path);
                None
            }
        }
    }

    /// Compiles the component, and keeps it at `path` in the cache.
    pub(super) fn compile_into(
        &self,
        bytes: &[u8],
        path: Option<&Path>,
    ) -> Result<Component, LoadError> {
        let component = Component::new(&self.inner.engine, bytes).map_err(LoadError::Compile)?;
        if let Some(path) = path
            && let Ok(serialized) = component.serialize()
            && path
                .parent()
                .is_some_and(|dir| std::fs::create_dir_all(dir).is_ok())
        {
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            if std::fs::write(&tmp, serialized).is_ok() {
                let _ = std::fs::rename(&tmp, path);
            }
        }
        Ok(component)
    }

    /// The cache key: the component's hash and the engine's configuration.
    pub fn cache_key(&self, bytes: &[u8]) -> String {
        use std::hash::Hash;
        let mut hasher = ShaHasher(Sha256::new());
        self.inner
            .engine
            .precompile_compatibility_hash()
            .hash(&mut hasher);
        let engine_hash = hasher.0.finalize();
        let mut key = Sha256::new();
        key.update(bytes);
        key.update(engine_hash);
        hex::encode(&key.finalize()[..20])
    }
}

/// Feeds `std::hash::Hash` output into SHA-256, for a stable cache key.
struct ShaHasher(Sha256);

impl std::hash::Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// Path helpers for the default cache location.
pub fn default_cache_dir() -> Option<PathBuf> {
    std::env::var_os("SCOUT_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .map(|p| p.join("scout-host").join("components"))
        })
}
