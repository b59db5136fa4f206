//! Connectors as OCI artifacts (issue 33): a component published to a
//! registry in the WebAssembly layout the ecosystem reads and writes (`wkg`,
//! Wassette: config `application/vnd.wasm.config.v0+json`, one
//! `application/wasm` layer), pulled into a content-addressed cache that
//! every command shares, and served from the bytes whose digest was
//! resolved once and recorded.
//!
//! Why a digest and not a tag: a tag moves; two hosts that resolve it at
//! different times could run different bytes under one review. A pull
//! answers with the manifest's digest, every byte is checked against the
//! digest that names it before anything is cached, and nothing that failed
//! a check is kept.

mod registry;
mod resolve;
pub mod signature;

pub use resolve::PullError;
pub(crate) use resolve::{blocking, pull_within};

use oci_client::Reference;
use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use registry::Session;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The config media type of a WebAssembly artifact (CNCF TAG Runtime's
/// layout, as `wkg` and Wassette write it).
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The media type of its one layer: the component's bytes.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The largest component the host pulls or pushes.
pub const MAX_COMPONENT_BYTES: u64 = 64 << 20;
/// The largest manifest or config the host reads.
pub(crate) const MAX_MANIFEST_BYTES: u64 = 256 << 10;
/// The scheme of an artifact reference in a configuration or a command.
pub const SCHEME: &str = "oci://";

/// Why an artifact could not be had. Each says what failed; none carries a
/// registry credential.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error(
        "`{0}` is not an artifact reference: write oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:DIGEST"
    )]
    Reference(String),
    #[error("{reference}: the registry answered: {message}")]
    Registry { reference: String, message: String },
    #[error("{reference}: not a WebAssembly component artifact: {why}")]
    Layout { reference: String, why: String },
    #[error(
        "{reference}: the {what} does not match its digest (expected {expected}, got {actual}): the artifact was changed after it was named; nothing was cached"
    )]
    Tampered {
        reference: String,
        what: &'static str,
        expected: String,
        actual: String,
    },
    #[error("{reference}: signature refused: {why}; nothing was cached")]
    Signature { reference: String, why: String },
    #[error(
        "registry {registry}: {why}: a registry on loopback or a private network is reached only where allowed (`[registries.\"{registry}\"] allow_private_network = true`, or `--allow-private-network`)"
    )]
    Refused { registry: String, why: String },
    #[error(
        "{reference}: the registry pointed the host to {to}, which it refuses: {why}. A registry's redirects, token endpoint and upload locations are followed at most {max} hops, never from https down to plain http, and only to public addresses unless that HOST:PORT is allowed a private network (`[registries.\"HOST:PORT\"] allow_private_network = true`); nothing was cached",
        max = registry::MAX_REDIRECTS
    )]
    Redirect {
        reference: String,
        to: String,
        why: String,
    },
    #[error(
        "{reference}: the {what} is past the host's limit of {limit} bytes; the rest was not read and nothing was cached"
    )]
    TooLarge {
        reference: String,
        what: &'static str,
        limit: u64,
    },
    #[error("signing keys: {0}")]
    Keys(String),
    #[error("{0}: not a WebAssembly component (build it with `scout-host build`)")]
    NotAComponent(String),
    #[error("the artifact cache at {path}: {source}")]
    Cache {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST`: always naming its
/// registry (never Docker Hub by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRef {
    reference: Reference,
}

impl ArtifactRef {
    /// Parses `text`, with or without the `oci://` scheme.
    pub fn parse(text: &str) -> Result<ArtifactRef, ArtifactError> {
        let bare = text.strip_prefix(SCHEME).unwrap_or(text);
        let refused = || ArtifactError::Reference(text.to_string());
        // The registry is the part before the first `/`, and it must look
        // like a host (a dot, a port or `localhost`): `library/x` is not one.
        let (registry, rest) = bare.split_once('/').ok_or_else(refused)?;
        if rest.is_empty()
            || !(registry.contains('.') || registry.contains(':') || registry == "localhost")
            || bare.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(refused());
        }
        let reference = Reference::try_from(bare).map_err(|_| refused())?;
        if reference.registry() != registry {
            return Err(refused());
        }
        if let Some(digest) = reference.digest()
            && !is_sha256(digest)
        {
            return Err(refused());
        }
        Ok(ArtifactRef { reference })
    }

    /// Whether `text` names an artifact rather than a file.
    pub fn is_artifact(text: &str) -> bool {
        text.starts_with(SCHEME)
    }

    /// The registry (`HOST[:PORT]`).
    pub fn registry(&self) -> &str {
        self.reference.registry()
    }

    /// The digest it pins, if it pins one.
    pub fn digest(&self) -> Option<&str> {
        self.reference.digest()
    }

    /// The same repository pinned at `digest`.
    pub fn pinned(&self, digest: &str) -> ArtifactRef {
        ArtifactRef {
            reference: Reference::with_digest(
                self.reference.registry().to_string(),
                self.reference.repository().to_string(),
                digest.to_string(),
            ),
        }
    }
}

impl std::fmt::Display for ArtifactRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{SCHEME}{}/{}",
            self.reference.registry(),
            self.reference.repository()
        )?;
        if let Some(tag) = self.reference.tag() {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = self.reference.digest() {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

fn is_sha256(digest: &str) -> bool {
    digest.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// `sha256:HEX` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// How a registry is reached.
#[derive(Debug, Clone, Default)]
pub struct RegistryOptions {
    /// Registries (`HOST[:PORT]`) reached over plain HTTP: only those the
    /// caller names (`--plain-http`, or the configuration's `plain_http`).
    pub plain_http: Vec<String>,
    /// Registries that may be on loopback or a private network (an
    /// internal registry, a test's): only those the caller names
    /// (`--allow-private-network`, or the configuration's
    /// `allow_private_network`).
    pub private_network: Vec<String>,
}

/// The credential for `registry`: `SCOUT_REGISTRY_USERNAME` and
/// `SCOUT_REGISTRY_PASSWORD` from the environment, else the Docker-style
/// config file (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`,
/// its `auths` entry for the registry), else none.
pub fn registry_auth(registry: &str) -> RegistryAuth {
    if let (Ok(user), Ok(password)) = (
        std::env::var("SCOUT_REGISTRY_USERNAME"),
        std::env::var("SCOUT_REGISTRY_PASSWORD"),
    ) {
        return RegistryAuth::Basic(user, password);
    }
    let file = std::env::var_os("DOCKER_CONFIG")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker")))
        .map(|dir| dir.join("config.json"));
    file.and_then(|file| std::fs::read(file).ok())
        .and_then(|bytes| docker_config_auth(&bytes, registry))
        .unwrap_or(RegistryAuth::Anonymous)
}

/// The `auths.REGISTRY.auth` entry (base64 of `user:password`) of a Docker
/// config file.
fn docker_config_auth(config: &[u8], registry: &str) -> Option<RegistryAuth> {
    use base64::Engine;
    let config: serde_json::Value = serde_json::from_slice(config).ok()?;
    let auths = config.get("auths")?.as_object()?;
    let entry = auths.iter().find_map(|(key, entry)| {
        let host = key
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches('/');
        (host == registry).then_some(entry)
    })?;
    let encoded = entry.get("auth")?.as_str()?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let (user, password) = std::str::from_utf8(&decoded).ok()?.split_once(':')?;
    Some(RegistryAuth::Basic(user.to_string(), password.to_string()))
}

/// The content-addressed cache: `blobs/sha256/HEX` holds a component's
/// bytes, `manifests/sha256/HEX` the manifest that names them. An entry is
/// written only once its digest was checked, under a temporary name renamed
/// into place, and checked again when read.
#[derive(Debug, Clone)]
pub struct ArtifactCache {
    root: PathBuf,
}

impl ArtifactCache {
    pub fn new(root: impl Into<PathBuf>) -> ArtifactCache {
        ArtifactCache { root: root.into() }
    }

    /// `SCOUT_ARTIFACT_CACHE`, else `oci/` in the host's cache directory
    /// (`~/.cache/scout-host/oci`, beside its compiled components).
    pub fn default_location() -> ArtifactCache {
        match std::env::var_os("SCOUT_ARTIFACT_CACHE") {
            Some(dir) => ArtifactCache::new(dir),
            None => ArtifactCache::new(match crate::runtime::default_cache_dir() {
                Some(compiled) if compiled.ends_with("scout-host/components") => {
                    compiled.with_file_name("oci")
                }
                Some(other) => other.join("oci"),
                // Entries are checked against their digests when read, so a
                // shared temporary folder cannot hand over other bytes.
                None => std::env::temp_dir().join("scout-host-oci"),
            }),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, kind: &str, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        self.root.join(kind).join("sha256").join(hex)
    }

    /// The component that manifest `digest` names, if both are cached and
    /// still match their digests.
    pub fn component(&self, digest: &str) -> Option<(PathBuf, String)> {
        let manifest = std::fs::read(self.path("manifests", digest)).ok()?;
        if sha256_digest(&manifest) != digest {
            return None;
        }
        let layer = wasm_layer(&manifest, "").ok()?;
        let path = self.path("blobs", &layer);
        let bytes = std::fs::read(&path).ok()?;
        (sha256_digest(&bytes) == layer).then_some((path, layer))
    }

    fn put(&self, kind: &str, digest: &str, bytes: &[u8]) -> Result<PathBuf, ArtifactError> {
        let path = self.path(kind, digest);
        let failed = |source| ArtifactError::Cache {
            path: self.root.display().to_string(),
            source,
        };
        let dir = path.parent().expect("a cache path has a parent");
        std::fs::create_dir_all(dir).map_err(failed)?;
        let mut temporary = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
        std::io::Write::write_all(&mut temporary, bytes).map_err(failed)?;
        temporary.as_file().sync_all().map_err(failed)?;
        temporary.persist(&path).map_err(|e| failed(e.error))?;
        Ok(path)
    }
}

/// The digest of the one `application/wasm` layer `manifest` names, after
/// checking the layout.
fn wasm_layer(manifest: &[u8], reference: &str) -> Result<String, ArtifactError> {
    wasm_layer_sized(manifest, reference).map(|(digest, _)| digest)
}

/// [`wasm_layer`] and the layer's size as the manifest declares it (at most
/// [`MAX_COMPONENT_BYTES`]).
fn wasm_layer_sized(manifest: &[u8], reference: &str) -> Result<(String, u64), ArtifactError> {
    let layout = |why: String| ArtifactError::Layout {
        reference: reference.to_string(),
        why,
    };
    let manifest: OciImageManifest = serde_json::from_slice(manifest)
        .map_err(|e| layout(format!("its manifest is not an OCI image manifest: {e}")))?;
    if manifest.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(layout(format!(
            "its config is `{}`, not `{WASM_CONFIG_MEDIA_TYPE}`",
            manifest.config.media_type
        )));
    }
    let [layer] = manifest.layers.as_slice() else {
        return Err(layout(format!(
            "it has {} layers; a component artifact has one",
            manifest.layers.len()
        )));
    };
    if layer.media_type != WASM_LAYER_MEDIA_TYPE {
        return Err(layout(format!(
            "its layer is `{}`, not `{WASM_LAYER_MEDIA_TYPE}`",
            layer.media_type
        )));
    }
    if !is_sha256(&layer.digest) {
        return Err(layout(format!(
            "its layer's digest `{}` is not sha256",
            layer.digest
        )));
    }
    if layer.size < 0 || layer.size as u64 > MAX_COMPONENT_BYTES {
        return Err(layout(format!(
            "its layer is {} bytes, past the host's limit of {MAX_COMPONENT_BYTES}",
            layer.size
        )));
    }
    Ok((layer.digest.clone(), layer.size as u64))
}

/// A component had from a registry (or the cache).
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The reference pinned at the manifest's digest.
    pub pinned: ArtifactRef,
    /// The manifest's digest: what reviews and hosts agree on.
    pub digest: String,
    /// The component layer's digest.
    pub layer: String,
    /// The component's bytes, in the cache.
    pub path: PathBuf,
    /// Whether the component came from the cache.
    pub cached: bool,
    /// The key file whose signature was verified, where one was required.
    pub signed_by: Option<String>,
}

/// Pulls `reference` into `cache`: from the cache alone when it pins a
/// digest the cache holds; otherwise the manifest (its digest checked
/// against a pinned one), its layout, then the layer (checked against its
/// digest) before either is cached. With `trust`, the manifest digest must
/// carry a signature by one of its keys first, from the cache or not.
pub async fn pull(
    reference: &ArtifactRef,
    options: &RegistryOptions,
    cache: &ArtifactCache,
    trust: Option<&signature::TrustedKeys>,
) -> Result<Pulled, ArtifactError> {
    let shown = reference.to_string();
    let session = || {
        Session::new(
            &reference.reference,
            &shown,
            options,
            registry_auth(reference.registry()),
        )
    };
    if let Some(digest) = reference.digest()
        && let Some((path, layer)) = cache.component(digest)
    {
        // Only a signature to check asks the registry anything.
        let signed_by = match trust {
            Some(keys) => Some(signature::verify(&session()?, reference, digest, keys).await?),
            None => None,
        };
        return Ok(Pulled {
            pinned: reference.clone(),
            digest: digest.to_string(),
            layer,
            path,
            cached: true,
            signed_by,
        });
    }
    let session = session()?;
    let (manifest, digest) = manifest(&session, reference, &shown).await?;
    let expected = reference.digest().unwrap_or(&digest).to_string();
    if digest != expected {
        return Err(ArtifactError::Tampered {
            reference: shown,
            what: "manifest",
            expected,
            actual: digest,
        });
    }
    let (layer, size) = wasm_layer_sized(&manifest, &shown)?;
    let signed_by = match trust {
        Some(keys) => Some(signature::verify(&session, reference, &digest, keys).await?),
        None => None,
    };
    let pinned = reference.pinned(&digest);
    // No more is read than the manifest says the layer holds.
    let bytes = session
        .blob(
            &pinned.reference,
            &layer,
            size,
            "component layer (as large as its manifest declares)",
        )
        .await?;
    // What is cached is what its digest names.
    let actual = sha256_digest(&bytes);
    if actual != layer {
        return Err(ArtifactError::Tampered {
            reference: shown,
            what: "component layer",
            expected: layer,
            actual,
        });
    }
    if !is_component(&bytes) {
        return Err(ArtifactError::NotAComponent(shown));
    }
    let path = cache.put("blobs", &layer, &bytes)?;
    cache.put("manifests", &digest, &manifest)?;
    Ok(Pulled {
        pinned,
        digest,
        layer,
        path,
        cached: false,
        signed_by,
    })
}

/// The manifest `reference` names, read up to [`MAX_MANIFEST_BYTES`], and
/// its digest, checked against the one the registry says it has.
async fn manifest(
    session: &Session,
    reference: &ArtifactRef,
    shown: &str,
) -> Result<(Vec<u8>, String), ArtifactError> {
    let (manifest, said) = session
        .manifest(
            &reference.reference,
            OCI_IMAGE_MEDIA_TYPE,
            MAX_MANIFEST_BYTES,
            "manifest",
        )
        .await?
        .ok_or_else(|| ArtifactError::Registry {
            reference: shown.to_string(),
            message: "404 Not Found: no such manifest".into(),
        })?;
    let digest = sha256_digest(&manifest);
    if let Some(said) = said
        && said != digest
    {
        return Err(ArtifactError::Tampered {
            reference: shown.to_string(),
            what: "manifest",
            expected: said,
            actual: digest,
        });
    }
    Ok((manifest, digest))
}

/// What a push made.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub pinned: ArtifactRef,
    pub digest: String,
    pub layer: String,
}

/// Publishes the component at `file` as `reference` in the WebAssembly
/// artifact layout, and caches it.
pub async fn push(
    file: &Path,
    reference: &ArtifactRef,
    options: &RegistryOptions,
    cache: &ArtifactCache,
) -> Result<Pushed, ArtifactError> {
    let shown = reference.to_string();
    let bytes = std::fs::read(file).map_err(|source| ArtifactError::Read {
        path: file.display().to_string(),
        source,
    })?;
    if !is_component(&bytes) || bytes.len() as u64 > MAX_COMPONENT_BYTES {
        return Err(ArtifactError::NotAComponent(file.display().to_string()));
    }
    let layer = sha256_digest(&bytes);
    let config = serde_json::json!({
        "created": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer],
    });
    let config = Config::new(
        serde_json::to_vec(&config).expect("a JSON value serialises"),
        WASM_CONFIG_MEDIA_TYPE.to_string(),
        None,
    );
    let layers = [ImageLayer::new(
        bytes.clone(),
        WASM_LAYER_MEDIA_TYPE.to_string(),
        None,
    )];
    let session = Session::new(
        &reference.reference,
        &shown,
        options,
        registry_auth(reference.registry()),
    )?;
    write_image(&session, &reference.reference, &layers, &config).await?;
    // The digest as the registry holds it, and the manifest it names, cached.
    let (raw, digest) = manifest(&session, reference, &shown).await?;
    if wasm_layer(&raw, &shown)? != layer {
        return Err(ArtifactError::Tampered {
            reference: shown,
            what: "manifest",
            expected: layer,
            actual: wasm_layer(&raw, "")?,
        });
    }
    cache.put("blobs", &layer, &bytes)?;
    cache.put("manifests", &digest, &raw)?;
    Ok(Pushed {
        pinned: reference.pinned(&digest),
        digest,
        layer,
    })
}

/// Uploads `layers` and `config` (those the registry lacks) and writes
/// their OCI image manifest at `at`'s tag.
async fn write_image(
    session: &Session,
    at: &Reference,
    layers: &[ImageLayer],
    config: &Config,
) -> Result<(), ArtifactError> {
    for layer in layers {
        session.put_blob(at, &layer.data).await?;
    }
    session.put_blob(at, &config.data).await?;
    let mut manifest = OciImageManifest::build(layers, config, None);
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_string());
    let manifest = serde_json::to_vec(&manifest).expect("a manifest serialises");
    session
        .put_manifest(at, manifest, OCI_IMAGE_MEDIA_TYPE)
        .await
}

/// A component's preamble: `\0asm`, then the component encoding's version
/// and layer (a core module has layer 0).
fn is_component(bytes: &[u8]) -> bool {
    bytes.len() > 8 && bytes[..4] == *b"\0asm" && bytes[6..8] == [0x01, 0x00]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_names_its_registry_and_pins_only_sha256() {
        let tagged = ArtifactRef::parse("oci://127.0.0.1:5000/connectors/github:1.2").unwrap();
        assert_eq!(tagged.registry(), "127.0.0.1:5000");
        assert_eq!(tagged.digest(), None);
        assert_eq!(
            tagged.to_string(),
            "oci://127.0.0.1:5000/connectors/github:1.2"
        );
        let digest = format!("sha256:{}", "ab".repeat(32));
        let pinned = ArtifactRef::parse(&format!("oci://ghcr.io/acme/github@{digest}")).unwrap();
        assert_eq!(pinned.digest(), Some(digest.as_str()));
        assert_eq!(
            tagged.pinned(&digest).to_string(),
            format!("oci://127.0.0.1:5000/connectors/github@{digest}")
        );
        for refused in [
            "oci://github:1",
            "oci://library/github:1",
            "oci://ghcr.io/",
            "oci://ghcr.io/acme/github@sha256:abc",
            "oci://ghcr.io/acme/git hub:1",
            "oci://ghcr.io/acme/github@md5:0123456789abcdef0123456789abcdef",
        ] {
            let e = ArtifactRef::parse(refused).unwrap_err();
            assert!(e.to_string().contains("oci://REGISTRY/"), "{refused}: {e}");
        }
    }

    #[test]
    fn a_docker_config_gives_the_registry_its_credential() {
        let config = br#"{"auths": {"https://registry.example:5000/": {"auth": "dXNlcjpwYXNz"}}}"#;
        assert!(matches!(
            docker_config_auth(config, "registry.example:5000"),
            Some(RegistryAuth::Basic(u, p)) if u == "user" && p == "pass"
        ));
        assert!(docker_config_auth(config, "other.example").is_none());
        assert!(docker_config_auth(b"not json", "registry.example:5000").is_none());
    }

    #[test]
    fn only_a_component_artifact_layout_is_accepted() {
        let layer = format!("sha256:{}", "cd".repeat(32));
        let manifest = |config: &str, layers: &str| {
            format!(
                r#"{{"schemaVersion":2,"config":{{"mediaType":"{config}","digest":"sha256:{}","size":2}},"layers":[{layers}]}}"#,
                "ef".repeat(32)
            )
        };
        let one = format!(r#"{{"mediaType":"application/wasm","digest":"{layer}","size":10}}"#);
        assert_eq!(
            wasm_layer(manifest(WASM_CONFIG_MEDIA_TYPE, &one).as_bytes(), "r").unwrap(),
            layer
        );
        let refused = [
            manifest("application/vnd.oci.image.config.v1+json", &one),
            manifest(WASM_CONFIG_MEDIA_TYPE, ""),
            manifest(WASM_CONFIG_MEDIA_TYPE, &format!("{one},{one}")),
            manifest(
                WASM_CONFIG_MEDIA_TYPE,
                &one.replace("application/wasm", "application/vnd.oci.image.layer.v1.tar"),
            ),
            manifest(WASM_CONFIG_MEDIA_TYPE, &one.replace("10}", "99999999999}")),
        ];
        for bad in refused {
            assert!(
                matches!(
                    wasm_layer(bad.as_bytes(), "r"),
                    Err(ArtifactError::Layout { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_cache_entry_that_no_longer_matches_its_digest_is_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ArtifactCache::new(dir.path());
        let component = b"\0asm\x0d\x00\x01\x00rest".to_vec();
        let layer = sha256_digest(&component);
        let manifest = format!(
            r#"{{"schemaVersion":2,"config":{{"mediaType":"{WASM_CONFIG_MEDIA_TYPE}","digest":"sha256:{}","size":2}},"layers":[{{"mediaType":"application/wasm","digest":"{layer}","size":{}}}]}}"#,
            "ef".repeat(32),
            component.len()
        );
        let digest = sha256_digest(manifest.as_bytes());
        let path = cache.put("blobs", &layer, &component).unwrap();
        cache
            .put("manifests", &digest, manifest.as_bytes())
            .unwrap();
        assert_eq!(cache.component(&digest), Some((path.clone(), layer)));
        std::fs::write(&path, b"\0asm\x0d\x00\x01\x00changed").unwrap();
        assert_eq!(cache.component(&digest), None);
    }
}
