//! Builds connector and test components for `wasm32-wasip2` from source.
//!
//! Called from `scout-tests`' build script, so that building the demo or
//! running the tests always compiles every component from the workspace's
//! source (no `.wasm` is ever committed). The nested `cargo build` uses its
//! own target directory: the outer build holds the lock on the outer one.
//!
//! Components are small: the nested build uses the workspace's `component`
//! profile (`opt-level = "z"`, LTO, one codegen unit, stripped) and asks
//! the linker for the core module only; [`componentize`] then runs
//! `wasm-opt -Oz` on it when binaryen is installed (`.ci/run` installs it)
//! and makes the component with wit-component. Optimising the core module
//! before componentising is what brings a connector like the template
//! under 100 KB (about 130 KB without `wasm-opt`).

use std::path::{Path, PathBuf};
use std::process::Command;

pub mod sockets;
pub use sockets::without_sockets;

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
/// `OUT_DIR`), from the layout cargo gives it:
/// `TARGET_DIR[/TRIPLE]/PROFILE/build/PACKAGE-HASH/out`, where `TRIPLE`
/// (`target`, cargo's `TARGET`) is there when the build names a target.
/// It does not look for cargo's `CACHEDIR.TAG`: a target directory that
/// existed before cargo used it (a container build's cache mount) has none.
pub fn target_root_of(out_dir: &Path, target: Option<&str>) -> Option<PathBuf> {
    let build = out_dir.parent()?.parent()?;
    if build.file_name()? != "build" {
        return None;
    }
    let above_profile = build.parent()?.parent()?;
    match target {
        Some(triple) if above_profile.file_name().is_some_and(|n| n == triple) => {
            above_profile.parent().map(Path::to_path_buf)
        }
        _ => Some(above_profile.to_path_buf()),
    }
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
pub fn build(
    workspace_root: &Path,
    target_root: &Path,
    specs: &[Spec],
) -> Result<Vec<PathBuf>, String> {
    let wasm_target_dir = target_root.join("wasm-build");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace_root)
        .arg("build")
        .arg("--profile")
        .arg(PROFILE)
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
    cmd.env(CORE_ONLY_FLAGS.0, CORE_ONLY_FLAGS.1);
    let status = cmd.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building components for {TARGET} failed ({status}); is the target installed? `rustup toolchain install` reads rust-toolchain.toml"
        ));
    }
    let mut out = Vec::new();
    for spec in specs {
        let built = wasm_target_dir
            .join(TARGET)
            .join(PROFILE)
            .join(format!("{}.wasm", spec.package.replace('-', "_")));
        let dest = artifact_path(target_root, spec);
        std::fs::create_dir_all(dest.parent().expect("artifact has a folder"))
            .map_err(|e| e.to_string())?;
        let tmp = dest.with_extension(format!("wasm.tmp{}", std::process::id()));
        let core = std::fs::read(&built).map_err(|e| format!("read {}: {e}", built.display()))?;
        let (component, _optimised) =
            componentize(&core, &wasm_target_dir).map_err(|e| format!("{}: {e}", spec.name))?;
        std::fs::write(&tmp, component).map_err(|e| format!("write {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &dest).map_err(|e| format!("rename {}: {e}", dest.display()))?;
        out.push(dest);
    }
    Ok(out)
}

/// The cargo profile components are built with (the workspace's `component`).
pub const PROFILE: &str = "component";

/// Makes `wasm-component-ld` stop at the core module, so that it can be
/// optimised before it becomes a component.
pub const CORE_ONLY_FLAGS: (&str, &str) = (
    "CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS",
    "-C link-arg=--skip-wit-component",
);

/// The features Rust 1.97 enables for wasm32-wasip2, which `wasm-opt` must
/// be told (it reads no target-features section from a stripped module).
const WASM_FEATURES: &[&str] = &[
    "--enable-bulk-memory",
    "--enable-sign-ext",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
    "--enable-multivalue",
    "--enable-reference-types",
];

/// Optimises a core module with `wasm-opt -Oz` (binaryen; `$WASM_OPT` or
/// `wasm-opt` on PATH) when it is installed, then makes it a component with
/// wit-component, from the WIT worlds embedded in the module. Returns the
/// component and whether `wasm-opt` ran. `scratch` holds the temporary files.
pub fn componentize(core: &[u8], scratch: &Path) -> Result<(Vec<u8>, bool), String> {
    let (module, optimised) = match wasm_opt(core, scratch)? {
        Some(smaller) => (smaller, true),
        None => (core.to_vec(), false),
    };
    // No debug names: the core module is stripped already, and the
    // component's own name section would be some 5 KB of a 100 KB budget.
    let component = wit_component::ComponentEncoder::default()
        .module(&module)
        .and_then(|e| e.validate(true).debug_names(false).encode())
        .map_err(|e| format!("cannot make a component of the core module: {e:#}"))?;
    Ok((
        without_custom_section(&component, "component-name")?,
        optimised,
    ))
}

fn leb_u32(bytes: &[u8], at: &mut usize) -> Result<u32, String> {
    let (mut value, mut shift) = (0u32, 0);
    loop {
        let byte = *bytes.get(*at).ok_or("truncated LEB128")?;
        *at += 1;
        value |= u32::from(byte & 0x7f)
            .checked_shl(shift)
            .ok_or("LEB128 too long")?;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
        if shift > 28 {
            return Err("LEB128 too long".to_string());
        }
    }
}

/// Drops the top-level custom sections called `name` from a component (the
/// debug names wit-component always writes, in its `component-name`
/// section). Nested modules are copied untouched.
pub fn without_custom_section(component: &[u8], name: &str) -> Result<Vec<u8>, String> {
    if component.len() < 8 {
        return Err("not a component".to_string());
    }
    let mut out = component[..8].to_vec();
    let mut at = 8;
    while at < component.len() {
        let start = at;
        let id = component[at];
        at += 1;
        let size = leb_u32(component, &mut at)? as usize;
        let end = at
            .checked_add(size)
            .filter(|&e| e <= component.len())
            .ok_or("section runs past the end")?;
        let drop = id == 0 && {
            let mut p = at;
            let len = leb_u32(component, &mut p)? as usize;
            component.get(p..p + len) == Some(name.as_bytes())
        };
        if !drop {
            out.extend_from_slice(&component[start..end]);
        }
        at = end;
    }
    Ok(out)
}

/// A component with one top-level custom section `name` holding `payload`:
/// any earlier section of that name is dropped, the new one appended. How
/// `scout-host manifest` puts a connector's manifest into a component that
/// another language's componentizer built (a custom section may follow any
/// other section of a component).
pub fn with_custom_section(
    component: &[u8],
    name: &str,
    payload: &[u8],
) -> Result<Vec<u8>, String> {
    let mut out = without_custom_section(component, name)?;
    let mut body = Vec::with_capacity(name.len() + payload.len() + 10);
    write_leb_u32(
        &mut body,
        u32::try_from(name.len()).map_err(|_| "name too long")?,
    );
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(payload);
    out.push(0);
    write_leb_u32(
        &mut out,
        u32::try_from(body.len()).map_err(|_| "section too large")?,
    );
    out.extend(body);
    Ok(out)
}

fn write_leb_u32(out: &mut Vec<u8>, mut value: u32) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn wasm_opt(core: &[u8], scratch: &Path) -> Result<Option<Vec<u8>>, String> {
    let program = std::env::var("WASM_OPT").unwrap_or_else(|_| "wasm-opt".to_string());
    if Command::new(&program)
        .arg("--version")
        .output()
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        return Ok(None);
    }
    std::fs::create_dir_all(scratch).map_err(|e| e.to_string())?;
    let n = std::process::id();
    let unique = format!(
        "{n}-{:x}",
        core.len()
            ^ core
                .iter()
                .take(4096)
                .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(*b as usize))
    );
    let (input, output) = (
        scratch.join(format!("core-{unique}.wasm")),
        scratch.join(format!("core-{unique}.opt.wasm")),
    );
    std::fs::write(&input, core).map_err(|e| e.to_string())?;
    let status = Command::new(&program)
        .arg("-Oz")
        .arg("--strip-debug")
        .args(WASM_FEATURES)
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let _ = std::fs::remove_file(&input);
    if !status.success() {
        return Err(format!("{program} failed ({status})"));
    }
    let smaller = std::fs::read(&output).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&output);
    Ok(Some(smaller))
}

#[cfg(test)]
mod tests {
    use super::{with_custom_section, without_custom_section};

    fn custom(name: &str, payload: &[u8]) -> Vec<u8> {
        let mut body = vec![name.len() as u8];
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(payload);
        let mut s = vec![0u8, body.len() as u8];
        s.extend(body);
        s
    }

    #[test]
    fn drops_only_the_named_top_level_custom_section() {
        let header = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        let other = [7u8, 3, 1, 2, 3];
        let mut bytes = header.to_vec();
        bytes.extend(custom("component-name", b"names"));
        bytes.extend(other);
        bytes.extend(custom("producers", b"p"));
        let out = without_custom_section(&bytes, "component-name").unwrap();
        let mut expected = header.to_vec();
        expected.extend(other);
        expected.extend(custom("producers", b"p"));
        assert_eq!(out, expected);
        let mut truncated = bytes.clone();
        truncated.truncate(bytes.len() - 1);
        assert!(without_custom_section(&truncated, "component-name").is_err());
    }

    #[test]
    fn a_custom_section_replaces_its_namesake_and_is_appended_last() {
        let header = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        let mut bytes = header.to_vec();
        bytes.extend(custom("scout-connector-manifest", b"old"));
        bytes.extend(custom("producers", b"p"));
        let payload = vec![b'x'; 300];
        let out = with_custom_section(&bytes, "scout-connector-manifest", &payload).unwrap();
        let mut expected = header.to_vec();
        expected.extend(custom("producers", b"p"));
        // 300 bytes of payload: the section's size (1 + 24 + 300) takes two LEB128 bytes.
        expected.extend([0u8, 0xc5, 0x02, 24]);
        expected.extend(b"scout-connector-manifest");
        expected.extend(&payload);
        assert_eq!(out, expected);
        assert!(with_custom_section(&header[..4], "x", b"").is_err());
    }
}

#[cfg(test)]
mod target_dir {
    use super::target_root_of;
    use std::path::Path;

    /// A target directory made before cargo used it (no `CACHEDIR.TAG`,
    /// as a container build's cache mount) is found from cargo's layout,
    /// with and without a named target.
    #[test]
    fn a_target_directory_without_cargos_tag_is_found() {
        let made =
            std::env::temp_dir().join(format!("scout-premade-target-{}", std::process::id()));
        let out = made.join("debug/build/scout-tests-0123abcd/out");
        std::fs::create_dir_all(&out).unwrap();
        assert!(!made.join("CACHEDIR.TAG").exists());
        assert_eq!(
            target_root_of(&out, Some("x86_64-unknown-linux-gnu")),
            Some(made.clone())
        );
        let crossed = made.join("wasm32-wasip2/release/build/p-1/out");
        assert_eq!(
            target_root_of(&crossed, Some("wasm32-wasip2")),
            Some(made.clone())
        );
        assert_eq!(target_root_of(Path::new("/elsewhere/out"), None), None);
        std::fs::remove_dir_all(&made).unwrap();
    }
}
