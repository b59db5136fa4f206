//! The language a connector is written in, named on the command line
//! (`--lang`) or recognised from the files in its folder, so that `build`
//! and `new` dispatch to the right toolchain while the rest of the author's
//! loop (`test`, `call`, `inspect`) stays the same for every language: it
//! works on the component, whatever made it.

use anyhow::Result;
use std::path::Path;

/// A language `scout-host build` and `new` know how to handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Language {
    /// A Rust crate using `scout-sdk` (`Cargo.toml`).
    Rust,
    /// TypeScript bundled by esbuild and componentized by componentize-js
    /// (`package.json` or `src/index.ts`).
    #[value(name = "ts", alias = "typescript")]
    TypeScript,
    /// Python componentized by componentize-py (`pyproject.toml` or `app.py`).
    #[value(alias = "py")]
    Python,
}

impl Language {
    /// The language of the connector in `dir`, from the files that mark
    /// each: `Cargo.toml` (Rust), `package.json` or `src/index.ts`
    /// (TypeScript), `pyproject.toml` or `app.py` (Python). Rust is tried
    /// first, then TypeScript, then Python.
    pub fn detect(dir: &Path) -> Result<Language> {
        let has = |file: &str| dir.join(file).is_file();
        if has("Cargo.toml") {
            Ok(Language::Rust)
        } else if has("package.json") || has("src/index.ts") {
            Ok(Language::TypeScript)
        } else if has("pyproject.toml") || has("app.py") {
            Ok(Language::Python)
        } else {
            anyhow::bail!(
                "{} holds no connector: found none of Cargo.toml (Rust), package.json or src/index.ts (TypeScript), pyproject.toml or app.py (Python); pass --dir to the connector's folder, --lang rust|ts|python, or start one with `scout-host new NAME --lang ...`",
                dir.display()
            )
        }
    }

    /// How the language is named to the author.
    pub fn label(self) -> &'static str {
        match self {
            Language::Rust => "Rust",
            Language::TypeScript => "TypeScript",
            Language::Python => "Python",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Language;
    use clap::ValueEnum;

    fn dir_with(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temporary directory");
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("its folder");
            std::fs::write(&path, "").expect("the file");
        }
        dir
    }

    #[test]
    fn each_language_is_recognised_by_its_marker_files() {
        for (files, language) in [
            (&["Cargo.toml"][..], Language::Rust),
            (&["package.json"][..], Language::TypeScript),
            (&["src/index.ts"][..], Language::TypeScript),
            (&["pyproject.toml"][..], Language::Python),
            (&["app.py"][..], Language::Python),
        ] {
            let dir = dir_with(files);
            assert_eq!(
                Language::detect(dir.path()).expect("detected"),
                language,
                "{files:?}"
            );
        }
    }

    #[test]
    fn a_rust_crate_with_a_package_json_is_rust() {
        let dir = dir_with(&["Cargo.toml", "package.json"]);
        assert_eq!(
            Language::detect(dir.path()).expect("detected"),
            Language::Rust
        );
    }

    #[test]
    fn a_folder_with_no_connector_names_the_three_languages() {
        let dir = dir_with(&["README.md"]);
        let error = format!("{:#}", Language::detect(dir.path()).expect_err("refused"));
        for marker in [
            "Cargo.toml (Rust)",
            "(TypeScript)",
            "(Python)",
            "--lang rust|ts|python",
        ] {
            assert!(error.contains(marker), "{marker} in {error}");
        }
    }

    #[test]
    fn the_command_line_names_and_aliases_parse() {
        for (name, language) in [
            ("rust", Language::Rust),
            ("ts", Language::TypeScript),
            ("typescript", Language::TypeScript),
            ("python", Language::Python),
            ("py", Language::Python),
        ] {
            assert_eq!(
                Language::from_str(name, false).expect("parsed"),
                language,
                "{name}"
            );
        }
        assert!(Language::from_str("go", false).is_err());
    }
}
