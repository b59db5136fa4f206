//! Embeds the SDK's sources, so that `scout-host new` can vendor the SDK
//! into a scaffold wherever the binary goes (a path to this checkout would
//! break on every other machine). Every file under `sdk/` that a build of
//! the SDK reads is listed; the template, the guide's links and `target/`
//! are not.

use std::path::{Path, PathBuf};

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest_dir.join("..");
    let mut files = Vec::new();
    for file in ["Cargo.toml", "sdk/Cargo.toml", "sdk/README.md"] {
        files.push(PathBuf::from(file));
    }
    for dir in ["sdk/src", "sdk/macros", "sdk/manifest"] {
        collect(&root, Path::new(dir), &mut files);
        println!("cargo:rerun-if-changed=../{dir}");
    }
    println!("cargo:rerun-if-changed=../Cargo.toml");
    println!("cargo:rerun-if-changed=../sdk/Cargo.toml");
    println!("cargo:rerun-if-changed=../sdk/README.md");
    files.sort();
    let mut out = String::from(
        "/// The SDK's files, by path from the repository's root (`Cargo.toml` is\n/// the workspace's, for the settings the SDK inherits).\npub const SDK_FILES: &[(&str, &str)] = &[\n",
    );
    for file in &files {
        let abs = root.join(file).canonicalize().expect("an SDK file");
        out.push_str(&format!(
            "    ({:?}, include_str!({:?})),\n",
            file.to_str().expect("UTF-8 path"),
            abs.to_str().expect("UTF-8 path")
        ));
    }
    out.push_str("];\n");
    let dest =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("sdk_files.rs");
    std::fs::write(dest, out).expect("write sdk_files.rs");
}

/// Every file under `root/dir` but `target/` and hidden ones, by relative path.
fn collect(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        let rel = dir.join(&*name);
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            collect(root, &rel, files);
        } else if kind.is_file() {
            files.push(rel);
        }
    }
}
