//! The componentizers a connector in TypeScript or Python is built with,
//! pinned by this binary and provisioned once on the author's machine with
//! the machine's own `npm` and `python3 -m venv`, so that an author installs
//! Node.js or Python and nothing else, and every build of one release of
//! `scout-host` uses the same tools (the versions the host's tests pass with).
//!
//! They live in a cache directory: `$SCOUT_TOOLCHAINS` if set, else
//! `$XDG_CACHE_HOME/scout-host/toolchains`, else
//! `~/.cache/scout-host/toolchains`. One folder per set of tools, named by
//! the tools (not their versions), with a stamp file naming exactly what it
//! was made for: a binary that pins other versions re-provisions the folder
//! in place. Two builds at once take turns on a lock file beside the folder;
//! the stamp is written last, so a provisioning that was interrupted is
//! redone rather than trusted.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file in each toolchain folder naming what it was provisioned for.
const STAMP: &str = "provisioned-for";

/// The cache directory toolchains are provisioned into.
pub fn root() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("SCOUT_TOOLCHAINS").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    if let Some(cache) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(cache).join("scout-host/toolchains"));
    }
    let home = std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .context("no cache directory for the componentizers: set SCOUT_TOOLCHAINS (or XDG_CACHE_HOME or HOME) to a writable folder")?;
    Ok(PathBuf::from(home).join(".cache/scout-host/toolchains"))
}

/// The npm packages `packages` (each `name@version`) installed together
/// into one folder of the cache; returns that folder (its commands are in
/// `node_modules/.bin/`). Provisioned once; later calls only read the stamp.
pub fn npm_tools(packages: &[&str]) -> Result<PathBuf> {
    let wanted = packages.join("\n");
    provision("npm", packages, &wanted, |dir| {
        run(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(dir)
                .args(packages),
            "npm install",
            "install Node.js 20+ and npm (https://nodejs.org/), then build again",
        )
    })
}

/// A Python virtual environment with `requirements` (pip requirement
/// specifiers, `name==version`) installed; returns the environment's
/// folder (its commands are in `bin/`). Provisioned once; later calls only
/// read the stamp.
pub fn python_venv(requirements: &[&str]) -> Result<PathBuf> {
    let wanted = requirements.join("\n");
    provision("venv", requirements, &wanted, |dir| {
        run(
            Command::new("python3").arg("-m").arg("venv").arg(dir),
            "python3 -m venv",
            "install Python 3.10+ with its venv module (on Debian or Ubuntu: apt-get install python3-venv), then build again",
        )?;
        run(
            Command::new(dir.join("bin/python"))
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(requirements),
            "pip install",
            "check that PyPI is reachable (or configure pip's index), then build again",
        )
    })
}

/// The folder for `tools` under [`root`], provisioned by `install` unless
/// its stamp already says `wanted`.
fn provision(
    kind: &str,
    tools: &[&str],
    wanted: &str,
    install: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let root = root()?;
    std::fs::create_dir_all(&root)
        .with_context(|| format!("creating the toolchain cache {}", root.display()))?;
    let name = folder_name(kind, tools);
    let dir = root.join(&name);
    let stamp = dir.join(STAMP);
    if stamped(&stamp, wanted) {
        return Ok(dir);
    }
    let lock_path = root.join(format!("{name}.lock"));
    let lock = std::fs::File::create(&lock_path)
        .with_context(|| format!("creating the lock {}", lock_path.display()))?;
    lock.lock()
        .with_context(|| format!("waiting for the lock {}", lock_path.display()))?;
    // Another build may have provisioned it while this one waited.
    if stamped(&stamp, wanted) {
        return Ok(dir);
    }
    eprintln!(
        "provisioning {} into {} (once for this version of scout-host)",
        tools.join(", "),
        dir.display()
    );
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("removing the outdated toolchain {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    install(&dir).with_context(|| format!("provisioning {}", tools.join(", ")))?;
    std::fs::write(&stamp, wanted).with_context(|| format!("writing {}", stamp.display()))?;
    Ok(dir)
}

fn stamped(stamp: &Path, wanted: &str) -> bool {
    std::fs::read_to_string(stamp).ok().as_deref() == Some(wanted)
}

/// `KIND-tool+tool`: the tools' names without their versions, as a file
/// name (`npm-bytecodealliance-componentize-js+esbuild`).
fn folder_name(kind: &str, tools: &[&str]) -> String {
    let mut names: Vec<String> = tools
        .iter()
        .map(|tool| {
            // `@scope/name@1.2.3`, `name==1.2.3`, `name>=1`: the name only.
            let unscoped = tool.strip_prefix('@').unwrap_or(tool);
            let name = unscoped
                .split(['@', '=', '<', '>', '~', '!', ' ', '['])
                .next()
                .unwrap_or(unscoped);
            name.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect()
        })
        .collect();
    names.sort();
    format!("{kind}-{}", names.join("+"))
}

/// Runs `command`; when it cannot start or fails, an error that says what
/// to do (`remedy`) and keeps the tool's own output.
fn run(command: &mut Command, what: &str, remedy: &str) -> Result<()> {
    let program = command.get_program().to_string_lossy().into_owned();
    let out = command
        .output()
        .with_context(|| format!("{what}: cannot start `{program}`; {remedy}"))?;
    if out.status.success() {
        return Ok(());
    }
    anyhow::bail!(
        "{what} failed ({}); {remedy}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[cfg(test)]
mod tests {
    use super::folder_name;

    #[test]
    fn a_folder_is_named_by_its_tools_not_their_versions() {
        assert_eq!(
            folder_name(
                "npm",
                &["esbuild@0.28.2", "@bytecodealliance/componentize-js@0.23.0"]
            ),
            "npm-bytecodealliance-componentize-js+esbuild"
        );
        assert_eq!(
            folder_name("venv", &["componentize-py==0.25.1"]),
            "venv-componentize-py"
        );
    }
}
