//! `scout-host build` and `new` for a connector in Python: componentize-py
//! builds the module `app` against the connector's WIT, and the shared step
//! ([`super::build::finish_component`]) embeds the manifest made from that
//! WIT and checks the component loads, so a Python connector is held to the
//! same boundary as a Rust one and every later command (`test`, `call`,
//! `inspect`, `serve`) treats it the same.
//!
//! componentize-py is pinned ([`COMPONENTIZE_PY`], the release the host's
//! tests pass with) and provisioned once in a virtual environment by
//! [`super::toolchain::python_venv`]. Its default build imports
//! `wasi:sockets` (the runtime's `socket` module), which the host refuses
//! at load; [`scout_build::without_sockets`] satisfies those imports inside
//! the component with functions that trap, so nothing in it can name a
//! network while its clocks and randomness stay the host's inert imports,
//! fresh at each call. (`--stub-wasi` would also remove the sockets, but
//! it makes the clocks trap and fixes the random seed at build time.)
//!
//! The Python SDK (`sdk/python/scout_sdk`) and the template
//! (`sdk/template-py/`) are embedded in the binary, so `new` works wherever
//! the binary goes: the scaffold vendors the SDK into `vendor/scout_sdk/`,
//! and `build` puts `vendor/` on the Python path (a connector without one
//! is built with the embedded copy, written under its target folder).

use super::build::{BuildArgs, connector_world, finish_component, out_path, target_dir};
use super::new::{CONTRACT, Names, NewArgs, STARTER_FIXTURE, TEMPLATE_WIT, starter_cases};
use super::{EXIT_ERROR, EXIT_OK};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The componentize-py release `build` uses (as the host's tests do).
pub const COMPONENTIZE_PY: &str = "componentize-py==0.25.1";

/// The module componentize-py builds: `app.py` in the connector's folder.
const MODULE: &str = "app";

/// Where a scaffold's vendored SDK lives (it holds `scout_sdk/`).
pub const VENDORED_SDK: &str = "vendor";

const TEMPLATE_APP: &str = include_str!("../../../sdk/template-py/app.py");
const TEMPLATE_PYPROJECT: &str = include_str!("../../../sdk/template-py/pyproject.toml");
const TEMPLATE_GITIGNORE: &str = include_str!("../../../sdk/template-py/.gitignore");

/// The Python SDK's files (`sdk/python/scout_sdk/`); a unit test keeps the
/// list equal to the folder.
pub const SDK: &[(&str, &str)] = &[
    (
        "__init__.py",
        include_str!("../../../sdk/python/scout_sdk/__init__.py"),
    ),
    (
        "args.py",
        include_str!("../../../sdk/python/scout_sdk/args.py"),
    ),
    (
        "billing.py",
        include_str!("../../../sdk/python/scout_sdk/billing.py"),
    ),
    (
        "errors.py",
        include_str!("../../../sdk/python/scout_sdk/errors.py"),
    ),
    (
        "folder.py",
        include_str!("../../../sdk/python/scout_sdk/folder.py"),
    ),
    (
        "graphql.py",
        include_str!("../../../sdk/python/scout_sdk/graphql.py"),
    ),
    (
        "http_client.py",
        include_str!("../../../sdk/python/scout_sdk/http_client.py"),
    ),
    (
        "log.py",
        include_str!("../../../sdk/python/scout_sdk/log.py"),
    ),
    (
        "meter.py",
        include_str!("../../../sdk/python/scout_sdk/meter.py"),
    ),
    (
        "pages.py",
        include_str!("../../../sdk/python/scout_sdk/pages.py"),
    ),
    (
        "tools.py",
        include_str!("../../../sdk/python/scout_sdk/tools.py"),
    ),
];

/// What the build's summary says made the component.
const HOW: &str = "componentize-py 0.25.1, its sockets trapping";

/// Builds the Python connector in `args.dir`: exit 0 with the component
/// written and loadable, 2 when componentize-py or the host refuses it.
pub fn build(args: &BuildArgs) -> Result<i32> {
    let dir = args
        .dir
        .canonicalize()
        .with_context(|| format!("the connector's folder {}", args.dir.display()))?;
    if !dir.join(format!("{MODULE}.py")).is_file() {
        anyhow::bail!(
            "{} has no {MODULE}.py: a Python connector's tools are the classes ReadTools and WriteTools of the module `{MODULE}` (start one with `scout-host new NAME --lang python`)",
            dir.display()
        );
    }
    let wit = dir.join("wit");
    let world = connector_world(&wit)?;
    let target = absolute(&target_dir(args))?;
    let scratch = target.join("scout");
    std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let sdk = sdk_path(&dir, &scratch)?;
    let venv = super::toolchain::python_venv(&[COMPONENTIZE_PY])?;
    let built = scratch.join(format!("{world}.componentize-py.wasm"));
    let without = scratch.join(format!("{world}.without-sockets.wasm"));
    let started = std::time::Instant::now();
    let output = Command::new(venv.join("bin/componentize-py"))
        .current_dir(&dir)
        .arg("--wit-path")
        .arg(&wit)
        .args(["--world", &world, "componentize"])
        .arg("--python-path")
        .arg(&dir)
        .arg("--python-path")
        .arg(&sdk)
        .arg(MODULE)
        .arg("--output")
        .arg(&built)
        // componentize-py's own backtrace says nothing about the author's code.
        .env("RUST_BACKTRACE", "0")
        .env("RUST_LIB_BACKTRACE", "0")
        .output()
        .with_context(|| {
            format!(
                "running componentize-py from {}; delete that folder to provision it again",
                venv.display()
            )
        })?;
    if !output.status.success() {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        eprintln!(
            "error: componentize-py could not build {} ({}):\n{}",
            dir.join(format!("{MODULE}.py")).display(),
            output.status,
            readable_failure(&text, &[&dir, &sdk])
        );
        return Ok(EXIT_ERROR);
    }
    let component =
        std::fs::read(&built).with_context(|| format!("reading {}", built.display()))?;
    let component = scout_build::without_sockets(&component)
        .map_err(anyhow::Error::msg)
        .with_context(|| {
            format!(
                "removing the sockets of componentize-py's runtime from {}",
                built.display()
            )
        })?;
    std::fs::write(&without, component)
        .with_context(|| format!("writing {}", without.display()))?;
    // componentize-py's output (some 18 MB) is not the component.
    let _ = std::fs::remove_file(&built);
    let seconds = started.elapsed().as_secs_f64();
    let out = absolute(&out_path(args, &world))?;
    let code = finish_component(
        &without,
        &wit,
        Some(&world),
        &out,
        &format!("{HOW}, {seconds:.1} s"),
    )?;
    let _ = std::fs::remove_file(&without);
    Ok(code)
}

/// `path` made absolute against the current directory.
fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(std::env::current_dir()
        .context("reading the current directory")?
        .join(path))
}

/// The folder holding `scout_sdk/` for the build: the connector's vendored
/// copy, or else this binary's copy written under `scratch`.
fn sdk_path(dir: &Path, scratch: &Path) -> Result<PathBuf> {
    let vendored = dir.join(VENDORED_SDK);
    if vendored.join("scout_sdk/__init__.py").is_file() {
        return Ok(vendored);
    }
    let embedded = scratch.join("python-sdk");
    for (file, text) in SDK {
        let path = embedded.join("scout_sdk").join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(embedded)
}

/// componentize-py's failure as the author needs it: the paths it maps its
/// Python path entries to (`/0/app.py`, `/1/scout_sdk/...`) written as the
/// author's files, and its own backtrace left out.
fn readable_failure(text: &str, python_path: &[&Path]) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("Stack backtrace:") {
            break;
        }
        let mut line = line.to_string();
        for (i, dir) in python_path.iter().enumerate() {
            line = line.replace(&format!("\"/{i}/"), &format!("\"{}/", dir.display()));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

/// The files of a Python scaffold named `names`, relative to its folder.
pub fn files(names: &Names) -> Vec<(PathBuf, String)> {
    let mut files = vec![
        (PathBuf::from("app.py"), names.substitute(TEMPLATE_APP)),
        (
            PathBuf::from("pyproject.toml"),
            names.substitute(TEMPLATE_PYPROJECT),
        ),
        (PathBuf::from(".gitignore"), TEMPLATE_GITIGNORE.to_string()),
        (
            PathBuf::from(format!("wit/{}.wit", names.name)),
            names.substitute(TEMPLATE_WIT),
        ),
        (PathBuf::from("fixtures/cases.json"), starter_cases(names)),
        (
            PathBuf::from("fixtures/items.json"),
            STARTER_FIXTURE.replace("src/lib.rs: ", "app.py: "),
        ),
    ];
    for (file, text) in CONTRACT {
        files.push((
            Path::new("wit/deps/scout-connector").join(file),
            text.to_string(),
        ));
    }
    for (file, text) in SDK {
        files.push((
            Path::new(VENDORED_SDK).join("scout_sdk").join(file),
            text.to_string(),
        ));
    }
    files
}

/// Scaffolds a Python connector named `names` into `dir` (checked by `new`
/// to be absent or empty).
pub fn scaffold(_args: &NewArgs, names: &Names, dir: &Path) -> Result<i32> {
    let files = files(names);
    super::new::write_files(dir, &files)?;
    let wasm = format!("target/scout/{}.wasm", names.name);
    println!(
        "created connector `{}` in Python in {} ({} files; the SDK in {VENDORED_SDK}/scout_sdk)",
        names.name,
        dir.display(),
        files.len()
    );
    println!("next:");
    println!("  cd {}", dir.display());
    println!(
        "  scout-host build                                # -> {wasm} (componentize-py, provisioned once)"
    );
    println!("  scout-host test {wasm} --fixtures fixtures");
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_sdk_is_every_file_of_sdk_python() {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk/python/scout_sdk");
        let mut on_disk: Vec<String> = std::fs::read_dir(&folder)
            .expect("sdk/python/scout_sdk")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".py"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = SDK.iter().map(|(name, _)| *name).collect();
        assert_eq!(on_disk, embedded, "add the new file to python::SDK");
        for (name, text) in SDK {
            let now = std::fs::read_to_string(folder.join(name)).expect("the file");
            assert_eq!(&now, text, "{name}");
        }
    }

    #[test]
    fn the_scaffold_is_named_and_carries_the_contract_and_the_sdk() {
        let names = Names {
            name: "acme-notes".into(),
            namespace: "acme-notes".into(),
        };
        let files = files(&names);
        let file = |p: &str| {
            files
                .iter()
                .find(|(path, _)| path == Path::new(p))
                .map(|(_, text)| text.as_str())
                .unwrap_or_else(|| panic!("{p} in the scaffold"))
        };
        assert!(file("wit/acme-notes.wit").contains("package acme-notes:acme-notes@0.1.0;"));
        assert!(file("wit/acme-notes.wit").contains("world acme-notes {"));
        assert!(file("pyproject.toml").contains("name = \"scout-connector-acme-notes\""));
        assert!(file("fixtures/cases.json").contains("\"acme_notes_get_item\""));
        assert!(file("fixtures/items.json").contains("\"source\": \"app.py: "));
        assert!(file("app.py").contains("class ReadTools(exports.ReadTools)"));
        file("wit/deps/scout-connector/types.wit");
        file("vendor/scout_sdk/__init__.py");
    }

    #[test]
    fn a_failure_names_the_authors_file_not_componentize_pys_mapping() {
        let text = "AssertionError:   File \"/0/app.py\", line 30\n    def broken(:\nSyntaxError: invalid syntax\n\nStack backtrace:\n   0: anyhow";
        let shown = readable_failure(text, &[Path::new("/work/conn"), Path::new("/work/sdk")]);
        assert!(
            shown.contains("File \"/work/conn/app.py\", line 30"),
            "{shown}"
        );
        assert!(!shown.contains("backtrace"), "{shown}");
    }
}
