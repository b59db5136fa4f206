//! Builds connector and test components for `wasm32-wasip2` from source.
//!
//! Called from `scout-tests`' build script, so that building the demo or
//! running the tests always compiles every component from the workspace's
//! source (no `.wasm` is ever committed). The nested `cargo build` uses its
//! own target directory: the outer build holds the lock on the outer one.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What a component is for; decides the folder it is copied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A real connector: `target/connectors/NAME.wasm`.
    Connector,
    /// A test guest: `target/test-guests/NAME.wasm`.
    TestGuest,
}

/// One component to build.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Short name, the file stem of the copied component.
    pub name: &'static str,
    /// Cargo package name.
    pub package: &'static str,
    /// Folder of the crate, relative to the workspace root.
    pub dir: &'static str,
    /// Connector or test guest.
    pub kind: Kind,
}

/// The WebAssembly target every component is built for.
pub const TARGET: &str = "wasm32-wasip2";

/// Finds the cargo target directory that holds `out_dir` (a build script's
/// `OUT_DIR`): the nearest ancestor with cargo's `CACHEDIR.TAG`.
pub fn target_root_of(out_dir: &Path) -> Option<PathBuf> {
    out_dir.ancestors().find(|p| p.join("CACHEDIR.TAG").is_file()).map(Path::to_path_buf)
}

/// Where a built component is copied to under `target_root`.
pub fn artifact_path(target_root: &Path, spec: &Spec) -> PathBuf {
    let folder = match spec.kind {
        Kind::Connector => "connectors",
        Kind::TestGuest => "test-guests",
    };
    target_root.join(folder).join(format!("{}.wasm", spec.name))
}

/// Builds every spec in one nested `cargo build --release --target
/// wasm32-wasip2` and copies each component to [`artifact_path`].
pub fn build(workspace_root: &Path, target_root: &Path, specs: &[Spec]) -> Result<Vec<PathBuf>, String> {
    let wasm_target_dir = target_root.join("wasm-build");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root)
        .arg("build")
        .arg("--release")
        .arg("--target")
        .arg(TARGET)
        .arg("--target-dir")
        .arg(&wasm_target_dir);
    for spec in specs {
        cmd.arg("-p").arg(spec.package);
    }
    // The outer build's settings are for the host target; keep them out.
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if key.starts_with("CARGO_FEATURE_")
            || key.starts_with("CARGO_CFG_")
            || matches!(
                key,
                "CARGO_TARGET_DIR"
                    | "CARGO_BUILD_TARGET"
                    | "RUSTFLAGS"
                    | "CARGO_ENCODED_RUSTFLAGS"
                    | "CARGO_BUILD_RUSTFLAGS"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_PKG_NAME"
                    | "OUT_DIR"
                    | "TARGET"
                    | "HOST"
                    | "PROFILE"
                    | "OPT_LEVEL"
                    | "DEBUG"
                    | "RUSTC_WORKSPACE_WRAPPER"
                    | "CARGO_PROFILE_RELEASE_DEBUG"
            )
        {
            cmd.env_remove(key);
        }
    }
    let status = cmd.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building components for {TARGET} failed ({status}); is the target installed? `rustup toolchain install` reads rust-toolchain.toml"
        ));
    }
    let mut out = Vec::new();
    for spec in specs {
        let built = wasm_target_dir.join(TARGET).join("release").join(format!("{}.wasm", spec.package.replace('-', "_")));
        let dest = artifact_path(target_root, spec);
        std::fs::create_dir_all(dest.parent().expect("artifact has a folder")).map_err(|e| e.to_string())?;
        let tmp = dest.with_extension(format!("wasm.tmp{}", std::process::id()));
        std::fs::copy(&built, &tmp).map_err(|e| format!("copy {} -> {}: {e}", built.display(), tmp.display()))?;
        std::fs::rename(&tmp, &dest).map_err(|e| format!("rename {}: {e}", dest.display()))?;
        out.push(dest);
    }
    Ok(out)
}
