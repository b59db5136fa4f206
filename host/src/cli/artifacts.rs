//! `scout-host push`, `pull`, `sign` and `keygen`: components as OCI
//! artifacts, published, fetched with every byte checked, and signed in
//! cosign's layout, so a fleet runs what was reviewed.

use anyhow::{Context, Result};
use scout_host::artifact::{ArtifactCache, ArtifactRef, RegistryOptions};
use std::path::PathBuf;

/// `scout-host push FILE REFERENCE`
#[derive(clap::Args)]
pub struct PushArgs {
    /// The component (`.wasm`).
    file: PathBuf,
    /// Where: `oci://REGISTRY/REPOSITORY:TAG`.
    reference: String,
    /// Reach the registry over plain HTTP (loopback or internal only).
    #[arg(long)]
    plain_http: bool,
    /// The registry may be on loopback or a private network.
    #[arg(long)]
    allow_private_network: bool,
}

/// `scout-host pull REFERENCE --output FILE`
#[derive(clap::Args)]
pub struct PullArgs {
    /// `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST`.
    reference: String,
    /// Where to write the component.
    #[arg(long)]
    output: PathBuf,
    /// Require a signature over the manifest digest by this public key
    /// (PEM, `cosign.pub`; repeat for several: any one will do).
    #[arg(long = "key")]
    keys: Vec<PathBuf>,
    /// Reach the registry over plain HTTP (loopback or internal only).
    #[arg(long)]
    plain_http: bool,
    /// The registry may be on loopback or a private network.
    #[arg(long)]
    allow_private_network: bool,
}

/// `scout-host sign REFERENCE --key FILE`
#[derive(clap::Args)]
pub struct SignArgs {
    /// `oci://REGISTRY/REPOSITORY:TAG` or `…@sha256:DIGEST`.
    reference: String,
    /// The private key (`cosign.key`, or a PKCS#8 PEM key).
    #[arg(long)]
    key: PathBuf,
    /// Reach the registry over plain HTTP (loopback or internal only).
    #[arg(long)]
    plain_http: bool,
    /// The registry may be on loopback or a private network.
    #[arg(long)]
    allow_private_network: bool,
}

/// `scout-host keygen --output PREFIX`
#[derive(clap::Args)]
pub struct KeygenArgs {
    /// Where to write PREFIX.key and PREFIX.pub.
    #[arg(long)]
    output: PathBuf,
}

/// `--plain-http` and `--allow-private-network`: for this reference's
/// registry, and only it.
pub fn registry_options(
    reference: &ArtifactRef,
    plain_http: bool,
    allow_private_network: bool,
) -> RegistryOptions {
    let only = |yes: bool| {
        if yes {
            vec![reference.registry().to_string()]
        } else {
            Vec::new()
        }
    };
    RegistryOptions {
        plain_http: only(plain_http),
        private_network: only(allow_private_network),
    }
}

/// Publishes the component; prints the reference pinned at its digest as JSON.
pub fn push(args: PushArgs) -> Result<()> {
    let reference = ArtifactRef::parse(&args.reference)?;
    let options = registry_options(&reference, args.plain_http, args.allow_private_network);
    let rt = tokio::runtime::Runtime::new()?;
    let pushed = rt.block_on(scout_host::artifact::push(
        &args.file,
        &reference,
        &options,
        &ArtifactCache::default_location(),
    ))?;
    println!(
        "{}",
        serde_json::json!({
            "reference": reference.to_string(),
            "pinned": pushed.pinned.to_string(),
            "digest": pushed.digest,
            "layer": pushed.layer,
        })
    );
    Ok(())
}

/// Pulls into the cache, checked, and copies to `--output`; prints the
/// reference pinned at its digest as JSON.
pub fn pull(args: PullArgs) -> Result<()> {
    use scout_host::artifact::signature::TrustedKeys;
    let reference = ArtifactRef::parse(&args.reference)?;
    let options = registry_options(&reference, args.plain_http, args.allow_private_network);
    let trust = if args.keys.is_empty() {
        None
    } else {
        Some(TrustedKeys::load(&args.keys)?)
    };
    let rt = tokio::runtime::Runtime::new()?;
    let pulled = rt.block_on(scout_host::artifact::pull(
        &reference,
        &options,
        &ArtifactCache::default_location(),
        trust.as_ref(),
    ))?;
    std::fs::copy(&pulled.path, &args.output)
        .with_context(|| format!("writing {}", args.output.display()))?;
    println!(
        "{}",
        serde_json::json!({
            "reference": reference.to_string(),
            "pinned": pulled.pinned.to_string(),
            "digest": pulled.digest,
            "layer": pulled.layer,
            "cached": pulled.cached,
            "signed_by": pulled.signed_by,
        })
    );
    Ok(())
}

/// Signs the manifest digest and writes the signature beside it; prints
/// what was signed as JSON.
pub fn sign(args: SignArgs) -> Result<()> {
    use scout_host::artifact::signature::{sign, signer};
    let reference = ArtifactRef::parse(&args.reference)?;
    let options = registry_options(&reference, args.plain_http, args.allow_private_network);
    let password = std::env::var("COSIGN_PASSWORD").ok();
    let signer = signer(&args.key, password.as_deref())?;
    let rt = tokio::runtime::Runtime::new()?;
    let signed = rt.block_on(sign(&reference, &signer, &options))?;
    println!(
        "{}",
        serde_json::json!({
            "reference": reference.to_string(),
            "digest": signed.digest,
            "signature": signed.signature,
        })
    );
    Ok(())
}

/// Writes PREFIX.key (encrypted, its owner's alone) and PREFIX.pub,
/// overwriting neither.
pub fn keygen(args: KeygenArgs) -> Result<()> {
    let output = args.output;
    let password = std::env::var("COSIGN_PASSWORD").map_err(|_| {
        anyhow::anyhow!("set COSIGN_PASSWORD: the private key is written encrypted with it")
    })?;
    let (private, public) = scout_host::artifact::signature::generate_key_pair(&password)?;
    let key = output.with_extension("key");
    let public_file = output.with_extension("pub");
    for file in [&key, &public_file] {
        if file.exists() {
            anyhow::bail!("{} exists: not overwritten", file.display());
        }
    }
    {
        // The private key is readable by its owner alone.
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&key)
            .and_then(|mut f| f.write_all(private.as_bytes()))
            .with_context(|| format!("writing {}", key.display()))?;
    }
    std::fs::write(&public_file, public)
        .with_context(|| format!("writing {}", public_file.display()))?;
    println!("wrote {} and {}", key.display(), public_file.display());
    Ok(())
}
