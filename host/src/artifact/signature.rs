//! Signatures over an artifact's manifest digest, in cosign's key-based
//! layout (`cosign sign --key` writes it, `cosign verify --key` reads it):
//! beside the component, at tag `sha256-HEX.sig` of the same repository, an
//! OCI manifest whose layers are each one signature: a simple-signing
//! payload naming the repository and the digest, its signature (base64) in
//! the `dev.cosignproject.cosign/signature` annotation. The keys and the
//! signing are the sigstore crate's; verification is offline, against the
//! public keys an operator configured, before anything is cached or
//! compiled.
//!
//! Why the digest and not the bytes: the manifest digest names the layer's
//! digest, which names the bytes; one signature covers all of it, and the
//! same digest is what hosts record and reviews bind to.

use super::registry::Session;
use super::{ArtifactError, ArtifactRef, MAX_MANIFEST_BYTES, sha256_digest};
use oci_client::Reference;
use oci_client::client::{Config, ImageLayer};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciImageManifest};
use sigstore::crypto::{CosignVerificationKey, SigStoreSigner, Signature, SigningScheme};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A signature layer's media type.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation holding a layer's signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// What a simple-signing payload says it is.
const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The config cosign gives a signature manifest.
const SIGNATURE_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// The largest signature payload read.
const MAX_PAYLOAD_BYTES: u64 = 64 << 10;
/// At most this many signatures are read per digest.
const MAX_SIGNATURES: usize = 32;

/// The public keys an operator trusts, by the file each came from.
#[derive(Clone)]
pub struct TrustedKeys {
    keys: Vec<(String, CosignVerificationKey)>,
}

impl std::fmt::Debug for TrustedKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|(name, _)| name))
            .finish()
    }
}

impl TrustedKeys {
    /// Reads each PEM public key (`cosign.pub`); at least one.
    pub fn load(files: &[PathBuf]) -> Result<TrustedKeys, ArtifactError> {
        if files.is_empty() {
            return Err(ArtifactError::Keys(
                "a signature is required but no public key is configured: list the signers' keys in `signature_keys`".into(),
            ));
        }
        let mut keys = Vec::new();
        for file in files {
            let pem = std::fs::read(file).map_err(|source| ArtifactError::Read {
                path: file.display().to_string(),
                source,
            })?;
            let key = CosignVerificationKey::try_from_pem(&pem).map_err(|e| {
                ArtifactError::Keys(format!("{}: not a public key: {e}", file.display()))
            })?;
            keys.push((file.display().to_string(), key));
        }
        Ok(TrustedKeys { keys })
    }
}

/// A private key to sign with: a cosign key file (`ENCRYPTED SIGSTORE
/// PRIVATE KEY` or `ENCRYPTED COSIGN PRIVATE KEY`, opened with `password`)
/// or a PKCS#8 PEM key.
pub fn signer(file: &Path, password: Option<&str>) -> Result<SigStoreSigner, ArtifactError> {
    use sigstore::crypto::signing_key::SigStoreKeyPair;
    let pem = std::fs::read(file).map_err(|source| ArtifactError::Read {
        path: file.display().to_string(),
        source,
    })?;
    let refused = |why: String| ArtifactError::Keys(format!("{}: {why}", file.display()));
    let encrypted = String::from_utf8_lossy(&pem).contains("ENCRYPTED");
    let pair = if encrypted {
        let password = password.ok_or_else(|| {
            refused("an encrypted key: set COSIGN_PASSWORD to its password".into())
        })?;
        SigStoreKeyPair::from_encrypted_pem(&pem, password.as_bytes())
    } else {
        SigStoreKeyPair::from_pem(&pem)
    }
    .map_err(|e| refused(format!("cannot open the key: {e}")))?;
    let scheme = match &pair {
        SigStoreKeyPair::ECDSA(_) => SigningScheme::ECDSA_P256_SHA256_ASN1,
        SigStoreKeyPair::ED25519(_) => SigningScheme::ED25519,
        SigStoreKeyPair::RSA(_) => SigningScheme::RSA_PKCS1_SHA256(0),
    };
    pair.to_sigstore_signer(&scheme)
        .map_err(|e| refused(format!("cannot sign with it: {e}")))
}

/// A new ECDSA P-256 key pair: the private key encrypted with `password`
/// (cosign's format), and the public key, both PEM.
pub fn generate_key_pair(password: &str) -> Result<(String, String), ArtifactError> {
    use sigstore::crypto::signing_key::SigStoreKeyPair;
    use sigstore::crypto::signing_key::ecdsa::{ECDSAKeys, EllipticCurve};
    let failed = |e: sigstore::errors::SigstoreError| ArtifactError::Keys(e.to_string());
    let pair = SigStoreKeyPair::ECDSA(ECDSAKeys::new(EllipticCurve::P256).map_err(failed)?);
    let private = pair
        .private_key_to_encrypted_pem(password.as_bytes())
        .map_err(failed)?;
    let public = pair.public_key_to_pem().map_err(failed)?;
    Ok((private.to_string(), public))
}

/// The simple-signing payload for `repository` (`REGISTRY/REPO`) at
/// `digest`, as cosign writes it.
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "critical": {
            "identity": {"docker-reference": repository},
            "image": {"docker-manifest-digest": digest},
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    }))
    .expect("a JSON value serialises")
}

/// Where the signatures of `reference`'s manifest `digest` live.
fn signature_reference(reference: &ArtifactRef, digest: &str) -> Reference {
    Reference::with_tag(
        reference.reference.registry().to_string(),
        reference.reference.repository().to_string(),
        format!("{}.sig", digest.replace(':', "-")),
    )
}

fn repository(reference: &ArtifactRef) -> String {
    format!(
        "{}/{}",
        reference.reference.registry(),
        reference.reference.repository()
    )
}

/// Checks that one of `keys` signed `reference`'s manifest `digest`;
/// returns the file of the key that did. Nothing here is cached.
pub(super) async fn verify(
    session: &Session,
    reference: &ArtifactRef,
    digest: &str,
    keys: &TrustedKeys,
) -> Result<String, ArtifactError> {
    let shown = reference.to_string();
    let refused = |why: String| ArtifactError::Signature {
        reference: shown.clone(),
        why,
    };
    let at = signature_reference(reference, digest);
    // A registry that cannot be asked, or hands over too much, is said
    // as such; only a missing signature is "unsigned".
    let (manifest, _) = session
        .manifest(
            &at,
            OCI_IMAGE_MEDIA_TYPE,
            MAX_MANIFEST_BYTES,
            "signature manifest",
        )
        .await?
        .ok_or_else(|| {
            refused(format!(
                "unsigned: no signature for {digest} at tag {}",
                at.tag().unwrap_or_default()
            ))
        })?;
    let manifest: OciImageManifest = serde_json::from_slice(&manifest)
        .map_err(|e| refused(format!("its signature manifest is unreadable: {e}")))?;
    let repository = repository(reference);
    let mut over_this_digest = 0;
    for layer in manifest
        .layers
        .iter()
        .filter(|l| l.media_type == SIMPLE_SIGNING_MEDIA_TYPE)
        .take(MAX_SIGNATURES)
    {
        let Some(signature) = layer
            .annotations
            .as_ref()
            .and_then(|a| a.get(SIGNATURE_ANNOTATION))
        else {
            continue;
        };
        if layer.size < 0 || layer.size as u64 > MAX_PAYLOAD_BYTES {
            continue;
        }
        // Read no further than the size the manifest declares.
        let Ok(payload) = session
            .blob(&at, &layer.digest, layer.size as u64, "signature payload")
            .await
        else {
            continue;
        };
        if sha256_digest(&payload) != layer.digest {
            continue;
        }
        let Ok(said) = serde_json::from_slice::<serde_json::Value>(&payload) else {
            continue;
        };
        let critical = &said["critical"];
        if critical["type"] != PAYLOAD_TYPE
            || critical["image"]["docker-manifest-digest"] != digest
            || critical["identity"]["docker-reference"] != repository.as_str()
        {
            continue;
        }
        over_this_digest += 1;
        for (name, key) in &keys.keys {
            if key
                .verify_signature(Signature::Base64Encoded(signature.as_bytes()), &payload)
                .is_ok()
            {
                return Ok(name.clone());
            }
        }
    }
    Err(refused(if over_this_digest == 0 {
        format!("unsigned: no signature over {digest} for {repository}")
    } else {
        format!(
            "signed ({over_this_digest} signature(s) over {digest}), but by none of the configured keys"
        )
    }))
}

/// What a signing made.
#[derive(Debug, Clone)]
pub struct Signed {
    pub digest: String,
    /// Where the signature was written (`oci://…:sha256-HEX.sig`).
    pub signature: String,
}

/// Signs `reference`'s manifest digest with `signer` and writes the
/// signature beside it, keeping the signatures already there.
pub async fn sign(
    reference: &ArtifactRef,
    signer: &SigStoreSigner,
    options: &super::RegistryOptions,
) -> Result<Signed, ArtifactError> {
    let shown = reference.to_string();
    let session = Session::new(
        &reference.reference,
        &shown,
        options,
        super::registry_auth(reference.registry()),
    )?;
    let (manifest, digest) = super::manifest(&session, reference, &shown).await?;
    if let Some(pinned) = reference.digest()
        && pinned != digest
    {
        return Err(ArtifactError::Tampered {
            reference: shown,
            what: "manifest",
            expected: pinned.to_string(),
            actual: digest,
        });
    }
    super::wasm_layer(&manifest, &shown)?;
    let payload = payload(&repository(reference), &digest);
    let signature = signer
        .sign(&payload)
        .map_err(|e| ArtifactError::Keys(format!("cannot sign: {e}")))?;
    use base64::Engine;
    let signature = base64::engine::general_purpose::STANDARD.encode(signature);
    let at = signature_reference(reference, &digest);
    // The signatures already there stay (another signer's, an earlier one).
    let mut layers = existing_signatures(&session, &at).await?;
    let mut annotations = BTreeMap::new();
    annotations.insert(SIGNATURE_ANNOTATION.to_string(), signature);
    layers.push(ImageLayer::new(
        payload,
        SIMPLE_SIGNING_MEDIA_TYPE.to_string(),
        Some(annotations),
    ));
    let diff_ids: Vec<String> = layers.iter().map(|l| sha256_digest(&l.data)).collect();
    let config = Config::new(
        serde_json::to_vec(&serde_json::json!({
            "architecture": "",
            "config": {},
            "created": "0001-01-01T00:00:00Z",
            "history": [{"created": "0001-01-01T00:00:00Z"}],
            "os": "",
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
        }))
        .expect("a JSON value serialises"),
        SIGNATURE_CONFIG_MEDIA_TYPE.to_string(),
        None,
    );
    super::write_image(&session, &at, &layers, &config).await?;
    Ok(Signed {
        signature: format!(
            "{}{}/{}:{}",
            super::SCHEME,
            at.registry(),
            at.repository(),
            at.tag().unwrap_or_default()
        ),
        digest,
    })
}

/// The signature layers already at `at`, each read up to its declared size
/// and checked against its digest; none when there is no signature yet.
async fn existing_signatures(
    session: &Session,
    at: &Reference,
) -> Result<Vec<ImageLayer>, ArtifactError> {
    let Some((manifest, _)) = session
        .manifest(
            at,
            OCI_IMAGE_MEDIA_TYPE,
            MAX_MANIFEST_BYTES,
            "signature manifest",
        )
        .await?
    else {
        return Ok(Vec::new());
    };
    let Ok(manifest) = serde_json::from_slice::<OciImageManifest>(&manifest) else {
        return Ok(Vec::new());
    };
    let mut layers = Vec::new();
    for layer in manifest
        .layers
        .iter()
        .filter(|l| l.media_type == SIMPLE_SIGNING_MEDIA_TYPE)
        .filter(|l| l.size >= 0 && l.size as u64 <= MAX_PAYLOAD_BYTES)
        .take(MAX_SIGNATURES)
    {
        let payload = session
            .blob(at, &layer.digest, layer.size as u64, "signature payload")
            .await?;
        if sha256_digest(&payload) == layer.digest {
            layers.push(ImageLayer::new(
                payload,
                SIMPLE_SIGNING_MEDIA_TYPE.to_string(),
                layer.annotations.clone(),
            ));
        }
    }
    Ok(layers)
}
