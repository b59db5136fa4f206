//! `scout-host new NAME [--lang rust|ts|python]`: a connector scaffolded
//! from the SDK's template for its language (Rust here; TypeScript and
//! Python in their own modules, which share the name checks and the file
//! writing below), so that an author starts from something that builds, passes
//! `scout-host test` and shows every rule (imports, docs, WITHHELD list).
//!
//! The template and the contract are embedded in the binary (`include_str!`),
//! so `new` works wherever the binary goes. The template's names are
//! substituted where they occur (package, WIT package and world, Rust module
//! path and type, prose), never by copying today's file contents, so the
//! scaffold follows the template as it changes. The template's
//! `wit/deps/scout-connector` is a symlink to the contract; the scaffold gets
//! copies of the contract's `.wit` files instead.
//!
//! The SDK is vendored too (`vendor/scout-sdk`, embedded by `build.rs`,
//! with the settings it inherits from this workspace written out), so a
//! scaffold builds on any machine, offline once its registry crates are
//! fetched, and never refers to the checkout the binary was built in.
//! `--sdk-path` or `--sdk-git` point it elsewhere instead.

use super::lang::Language;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// The template, as `sdk/template/` has it.
pub const TEMPLATE_CARGO: &str = include_str!("../../../sdk/template/Cargo.toml");
pub const TEMPLATE_LIB: &str = include_str!("../../../sdk/template/src/lib.rs");
pub const TEMPLATE_WIT: &str = include_str!("../../../sdk/template/wit/example.wit");
/// The toolchain the SDK needs (Rust version and the wasm32-wasip2 target).
pub const TOOLCHAIN: &str = include_str!("../../../rust-toolchain.toml");
/// The contract's files, copied to `wit/deps/scout-connector/`.
pub const CONTRACT: &[(&str, &str)] = &[
    ("types.wit", include_str!("../../../wit/types.wit")),
    ("http.wit", include_str!("../../../wit/http.wit")),
    ("meter.wit", include_str!("../../../wit/meter.wit")),
    ("folder.wit", include_str!("../../../wit/folder.wit")),
    ("log.wit", include_str!("../../../wit/log.wit")),
];
include!(concat!(env!("OUT_DIR"), "/sdk_files.rs"));

/// Where a scaffold's vendored SDK lives, relative to it.
pub const VENDORED_SDK: &str = "vendor/scout-sdk";

/// Starter cases for the template's tools (`__TOOL__` is the wire-name
/// prefix; [`starter_cases`] fills it in), the same in every language.
pub const STARTER_CASES: &str = r#"[
  {
    "name": "get-item reads an item",
    "tool": "__TOOL___get_item",
    "arguments": {"id": "42"},
    "fixtures": ["items.json"],
    "expect": {"ok": {"id": "42", "title": "Fix the roof", "priority": "high", "tags": ["roof", "before-winter"], "description": "The north side leaks."}}
  },
  {
    "name": "get-item: an unknown id is not-found",
    "tool": "__TOOL___get_item",
    "arguments": {"id": "7"},
    "fixtures": ["items.json"],
    "expect": {"err": {"not-found": "no such item"}}
  },
  {
    "name": "get-item refuses an empty id before sending",
    "tool": "__TOOL___get_item",
    "arguments": {"id": ""},
    "fixtures": [],
    "expect": {"err": {"invalid-input": "the item id is empty"}}
  },
  {
    "name": "create-note adds a note",
    "tool": "__TOOL___create_note",
    "arguments": {"item-id": "42", "body": "Booked a roofer."},
    "fixtures": ["items.json"],
    "expect": {"ok": {"id": "n-1", "item-id": "42", "body": "Booked a roofer."}}
  }
]
"#;

/// The starter fixture those cases replay (its `source` names `src/lib.rs`,
/// the Rust template; another language's scaffold names its own file).
pub const STARTER_FIXTURE: &str = r#"{
  "provenance": "UNVERIFIED",
  "source": "src/lib.rs: the made-up API the template describes. Replace these exchanges with ones that follow your service's documentation (and name it here), or record real ones with `scout-host call --record`.",
  "exchanges": [
    {
      "request": {"method": "GET", "path": "/items/42"},
      "response": {"status": 200, "headers": [["content-type", "application/json"]],
                   "json": {"id": "42", "title": "Fix the roof", "priority": "urgent", "tags": ["roof", "before-winter"], "description": "The north side leaks."}}
    },
    {
      "request": {"method": "GET", "path": "/items/7"},
      "response": {"status": 404, "json": {"message": "no such item"}}
    },
    {
      "request": {"method": "POST", "path": "/items/42/notes", "json": {"body": "Booked a roofer."}},
      "response": {"status": 201, "json": {"id": "n-1", "item_id": "42", "body": "Booked a roofer."}}
    }
  ]
}
"#;

const GITIGNORE: &str = "/target\n";

/// `scout-host new NAME [--lang L] [--dir PATH] [--sdk-path P | --sdk-git URL]`
#[derive(clap::Args)]
pub struct NewArgs {
    /// The connector's name: a WIT identifier in kebab case (`my-shop`); tools become `my_shop_get_item`.
    pub name: String,
    /// The language to write it in.
    #[arg(long, value_enum, default_value = "rust")]
    pub lang: Language,
    /// Where to create it (default: ./NAME); must not exist or be empty.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The WIT package namespace (`NAMESPACE:NAME`); default: NAME.
    #[arg(long)]
    pub namespace: Option<String>,
    /// Rust: the `scout-sdk` crate to depend on by path (default: a copy vendored into `vendor/scout-sdk`).
    #[arg(long, conflicts_with = "sdk_git")]
    pub sdk_path: Option<PathBuf>,
    /// Rust: depend on `scout-sdk` from this git repository instead.
    #[arg(long)]
    pub sdk_git: Option<String>,
}

/// WIT and Rust keywords: a name that is one cannot be a package, world or module.
const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "bool",
    "borrow",
    "char",
    "constructor",
    "enum",
    "error-context",
    "export",
    "f32",
    "f64",
    "flags",
    "float32",
    "float64",
    "from",
    "func",
    "future",
    "import",
    "include",
    "interface",
    "list",
    "option",
    "own",
    "package",
    "record",
    "resource",
    "result",
    "s16",
    "s32",
    "s64",
    "s8",
    "static",
    "stream",
    "string",
    "tuple",
    "type",
    "u16",
    "u32",
    "u64",
    "u8",
    "use",
    "variant",
    "with",
    "world",
    "abstract",
    "become",
    "box",
    "break",
    "const",
    "continue",
    "crate",
    "do",
    "dyn",
    "else",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "pub",
    "ref",
    "return",
    "self",
    "super",
    "trait",
    "true",
    "typeof",
    "unsafe",
    "unsized",
    "virtual",
    "where",
    "while",
    "yield",
    "try",
    "read-tools",
    "write-tools",
    "bindings",
    "std",
    "core",
];

/// Checks a WIT identifier in kebab case: lowercase words of letters and
/// digits, each starting with a letter, joined by single `-`.
pub fn validate_name(name: &str, what: &str) -> Result<()> {
    let words_ok = !name.is_empty()
        && name.split('-').all(|w| {
            w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    if !words_ok {
        anyhow::bail!(
            "{what} `{name}` is not a WIT identifier in kebab case: lowercase words of letters and digits, each starting with a letter, joined by `-` (e.g. `my-shop`)"
        );
    }
    if name.len() > 64 {
        anyhow::bail!("{what} `{name}` is longer than 64 characters");
    }
    if KEYWORDS.contains(&name) {
        anyhow::bail!(
            "{what} `{name}` is a WIT or Rust keyword (or a name the template uses); choose another"
        );
    }
    Ok(())
}

/// [`STARTER_CASES`] for the scaffold named `names`.
pub fn starter_cases(names: &Names) -> String {
    STARTER_CASES.replace("__TOOL__", &Names::snake(&names.name))
}

/// `my-shop` as `MyShop`.
pub fn camel(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Replaces whole-word `from` (ASCII identifier boundaries) with `to`.
fn replace_word(text: &str, from: &str, to: &str) -> String {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + from.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(is_ident) || after.is_some_and(is_ident) {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

/// The names of one scaffold.
pub struct Names {
    /// `my-shop`
    pub name: String,
    /// `my-shop` (or `--namespace`)
    pub namespace: String,
}

impl Names {
    /// `my-shop` as `my_shop`.
    pub fn snake(s: &str) -> String {
        s.replace('-', "_")
    }

    /// The template's names replaced in `text`.
    pub fn substitute(&self, text: &str) -> String {
        let (name, ns) = (&self.name, &self.namespace);
        // Every template name becomes a placeholder first and a real name
        // last, so a new name that contains a template word (`acme-notes`)
        // is never substituted a second time.
        let real = [
            format!("scout-connector-{name}"),
            format!("{ns}:{name}"),
            format!("{}::{}", Names::snake(ns), Names::snake(name)),
            format!("world {name}"),
            format!("{}_", Names::snake(name)),
            camel(name),
            ns.clone(),
        ];
        let hole = |i: usize| format!("\u{E000}{i}\u{E000}");
        let mut t = text.replace("scout-connector-example", &hole(0));
        t = t.replace("acme:example", &hole(1));
        t = t.replace("acme::example", &hole(2));
        t = t.replace("world example", &hole(3));
        // Tool wire names, should the template mention them.
        t = t.replace("example_", &hole(4));
        t = replace_word(&t, "Example", &hole(5));
        t = replace_word(&t, "acme", &hole(6));
        for (i, name) in real.iter().enumerate() {
            t = t.replace(&hole(i), name);
        }
        t
    }
}

/// What the scaffold's `scout-sdk` dependency line says.
fn sdk_dependency(args: &NewArgs) -> Result<String> {
    if let Some(url) = &args.sdk_git {
        if url.trim().is_empty() {
            anyhow::bail!("--sdk-git needs a URL");
        }
        return Ok(format!("scout-sdk = {{ git = {} }}", toml_string(url)));
    }
    let Some(path) = &args.sdk_path else {
        return Ok(format!(
            "scout-sdk = {{ path = {} }}",
            toml_string(VENDORED_SDK)
        ));
    };
    let abs = path
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("--sdk-path {}: {e}", path.display()))?;
    if !abs.join("Cargo.toml").is_file() {
        anyhow::bail!(
            "{} has no Cargo.toml: not the scout-sdk crate",
            abs.display()
        );
    }
    Ok(format!(
        "scout-sdk = {{ path = {} }}",
        toml_string(&abs.display().to_string())
    ))
}

/// The SDK's files as a scaffold vendors them, under [`VENDORED_SDK`]: its
/// sources as they are, its manifests with what they inherit from this
/// workspace written out, and the contract it is generated from.
pub fn vendored_sdk() -> Result<Vec<(PathBuf, String)>> {
    let workspace = SDK_FILES
        .iter()
        .find(|(path, _)| *path == "Cargo.toml")
        .map(|(_, text)| *text)
        .context("the embedded SDK lacks the workspace's Cargo.toml")?;
    let mut files = Vec::new();
    for (path, text) in SDK_FILES {
        let Some(rel) = path.strip_prefix("sdk/") else {
            continue;
        };
        let text = if rel.ends_with("Cargo.toml") {
            standalone_manifest(text, workspace).with_context(|| format!("vendoring {path}"))?
        } else {
            text.to_string()
        };
        files.push((Path::new(VENDORED_SDK).join(rel), text));
    }
    for (file, text) in CONTRACT {
        files.push((
            Path::new(VENDORED_SDK).join("wit").join(file),
            text.to_string(),
        ));
    }
    Ok(files)
}

/// A member's `Cargo.toml` with every `workspace = true` replaced by what
/// the workspace says, and no dev-dependencies (the SDK's own tests are not
/// vendored).
fn standalone_manifest(member: &str, workspace: &str) -> Result<String> {
    let mut member: toml::Table = member.parse().context("not TOML")?;
    let workspace: toml::Table = workspace.parse().context("the workspace's is not TOML")?;
    let ws = workspace
        .get("workspace")
        .and_then(toml::Value::as_table)
        .context("no [workspace]")?;
    let empty = toml::Table::new();
    let ws_package = ws
        .get("package")
        .and_then(toml::Value::as_table)
        .unwrap_or(&empty);
    let ws_deps = ws
        .get("dependencies")
        .and_then(toml::Value::as_table)
        .unwrap_or(&empty);
    let inherited = |v: &toml::Value| {
        v.as_table()
            .and_then(|t| t.get("workspace"))
            .and_then(toml::Value::as_bool)
            == Some(true)
    };
    if let Some(package) = member
        .get_mut("package")
        .and_then(toml::Value::as_table_mut)
    {
        for (key, value) in package.iter_mut() {
            if inherited(value) {
                *value = ws_package
                    .get(key)
                    .cloned()
                    .with_context(|| format!("the workspace has no package.{key}"))?;
            }
        }
    }
    member.remove("dev-dependencies");
    member.remove("lints");
    for section in ["dependencies", "build-dependencies"] {
        let Some(deps) = member.get_mut(section).and_then(toml::Value::as_table_mut) else {
            continue;
        };
        for (name, value) in deps.iter_mut() {
            if !inherited(value) {
                continue;
            }
            let mut merged = match ws_deps.get(name) {
                Some(toml::Value::String(version)) => {
                    let mut t = toml::Table::new();
                    t.insert("version".into(), toml::Value::String(version.clone()));
                    t
                }
                Some(toml::Value::Table(t)) => t.clone(),
                _ => anyhow::bail!("the workspace does not declare dependency `{name}`"),
            };
            for (key, extra) in value.as_table().into_iter().flatten() {
                match key.as_str() {
                    "workspace" => {}
                    "features" => {
                        let mut features = merged
                            .get("features")
                            .and_then(toml::Value::as_array)
                            .cloned()
                            .unwrap_or_default();
                        for f in extra.as_array().into_iter().flatten() {
                            if !features.contains(f) {
                                features.push(f.clone());
                            }
                        }
                        merged.insert("features".into(), toml::Value::Array(features));
                    }
                    _ => {
                        merged.insert(key.clone(), extra.clone());
                    }
                }
            }
            *value = toml::Value::Table(merged);
        }
    }
    Ok(format!(
        "# Vendored by `scout-host new` from scout-sdk {}; update it by scaffolding\n# again, or depend on the SDK by git or path instead.\n{}",
        env!("CARGO_PKG_VERSION"),
        toml::to_string(&member).context("writing TOML")?
    ))
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The files of the scaffold, relative to its directory.
pub fn files(names: &Names, sdk_line: &str) -> Result<Vec<(PathBuf, String)>> {
    let mut cargo = String::new();
    let mut replaced = false;
    for line in names.substitute(TEMPLATE_CARGO).lines() {
        let t = line.trim_start();
        if !replaced && t.starts_with("scout-sdk") && t[9..].trim_start().starts_with('=') {
            cargo.push_str(sdk_line);
            replaced = true;
        } else {
            cargo.push_str(line);
        }
        cargo.push('\n');
    }
    if !replaced {
        anyhow::bail!(
            "the embedded template's Cargo.toml has no `scout-sdk = ...` line to point at the SDK"
        );
    }
    let tool = Names::snake(&names.name);
    let mut files = vec![
        (PathBuf::from("Cargo.toml"), cargo),
        (PathBuf::from("rust-toolchain.toml"), TOOLCHAIN.to_string()),
        (PathBuf::from(".gitignore"), GITIGNORE.to_string()),
        (PathBuf::from("src/lib.rs"), names.substitute(TEMPLATE_LIB)),
        (
            PathBuf::from(format!("wit/{}.wit", names.name)),
            names.substitute(TEMPLATE_WIT),
        ),
        (
            PathBuf::from("fixtures/cases.json"),
            STARTER_CASES.replace("__TOOL__", &tool),
        ),
        (
            PathBuf::from("fixtures/items.json"),
            STARTER_FIXTURE.to_string(),
        ),
    ];
    for (file, text) in CONTRACT {
        files.push((
            Path::new("wit/deps/scout-connector").join(file),
            text.to_string(),
        ));
    }
    if sdk_line.contains(&format!("path = {}", toml_string(VENDORED_SDK))) {
        files.extend(vendored_sdk()?);
    }
    Ok(files)
}

/// Runs the command: checks the names and the folder, then scaffolds in
/// the language `--lang` names.
pub fn run(args: NewArgs) -> Result<i32> {
    validate_name(&args.name, "NAME")?;
    let namespace = args.namespace.clone().unwrap_or_else(|| args.name.clone());
    validate_name(&namespace, "--namespace")?;
    let names = Names {
        name: args.name.clone(),
        namespace,
    };
    if args.lang != Language::Rust && (args.sdk_path.is_some() || args.sdk_git.is_some()) {
        anyhow::bail!(
            "--sdk-path and --sdk-git point a Rust crate at scout-sdk; a {} scaffold carries its SDK",
            args.lang.label()
        );
    }
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&names.name));
    if dir.exists() {
        let empty = dir.is_dir()
            && std::fs::read_dir(&dir)
                .with_context(|| format!("reading {}", dir.display()))?
                .next()
                .is_none();
        if !empty {
            anyhow::bail!(
                "{} exists and is not an empty directory; refusing to write into it",
                dir.display()
            );
        }
    }
    match args.lang {
        Language::Rust => scaffold_rust(&args, &names, &dir),
        Language::TypeScript => super::typescript::scaffold(&args, &names, &dir),
        Language::Python => super::python::scaffold(&args, &names, &dir),
    }
}

/// Writes a scaffold's `files` (paths relative to `dir`).
pub fn write_files(dir: &Path, files: &[(PathBuf, String)]) -> Result<()> {
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// A Rust crate from `sdk/template/`.
fn scaffold_rust(args: &NewArgs, names: &Names, dir: &Path) -> Result<i32> {
    // A name the template already uses for something else would clash.
    let camel_name = camel(&names.name);
    for text in [TEMPLATE_LIB, TEMPLATE_WIT] {
        if camel_name != "Example" && replace_word(text, &camel_name, "\u{0}") != text {
            anyhow::bail!(
                "NAME `{}` would clash with `{camel_name}`, which the template already uses; choose another",
                names.name
            );
        }
    }
    let sdk_line = sdk_dependency(args)?;
    let files = files(names, &sdk_line)?;
    write_files(dir, &files)?;
    let wasm = format!("target/scout/{}.wasm", names.name);
    println!(
        "created connector `{}` in {} ({} files)",
        names.name,
        dir.display(),
        files.len()
    );
    println!("next:");
    println!("  cd {}", dir.display());
    println!("  cargo test                                      # unit tests, native");
    println!(
        "  scout-host build                                # -> {wasm} (small; or cargo build --release --target wasm32-wasip2)"
    );
    println!("  scout-host test {wasm} --fixtures fixtures");
    Ok(super::EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::Names;

    #[test]
    fn a_name_containing_a_template_word_is_substituted_once() {
        let names = Names {
            name: "acme-notes".into(),
            namespace: "acme-notes".into(),
        };
        let text = "name = \"scout-connector-example\"\npackage acme:example@0.1.0;\nuse bindings::exports::acme::example::read_tools;\nworld example {\nstruct Example;";
        assert_eq!(
            names.substitute(text),
            "name = \"scout-connector-acme-notes\"\npackage acme-notes:acme-notes@0.1.0;\nuse bindings::exports::acme_notes::acme_notes::read_tools;\nworld acme-notes {\nstruct AcmeNotes;"
        );
    }
}
