//! Building a manifest from WIT source, at the connector's compile time.

use crate::policy::{
    TOOL_KEYS, WORLD_KEYS, parse_tool_lines, parse_world_lines, split_policy_lines,
};
use crate::{Effect, FORMAT, Manifest, ManifestError, TypeDoc, parse_world_docs, split_parameters};
use std::path::Path;
use wit_parser::{Resolve, Type, TypeDefKind, WorldItem, WorldKey};

/// Whether values of `ty` (or of what an option or alias holds) are numbers.
fn is_number(resolve: &Resolve, ty: &Type) -> bool {
    match ty {
        Type::U8
        | Type::U16
        | Type::U32
        | Type::U64
        | Type::S8
        | Type::S16
        | Type::S32
        | Type::S64
        | Type::F32
        | Type::F64 => true,
        Type::Id(id) => match &resolve.types[*id].kind {
            TypeDefKind::Option(t) | TypeDefKind::Type(t) => is_number(resolve, t),
            _ => false,
        },
        _ => false,
    }
}

/// Where the doc comment line reading `line` (trimmed, without `///`)
/// above the item at `span` is, as `file.wit:LINE`; the item's own line
/// when the source cannot be read back.
fn doc_line_location(resolve: &Resolve, span: wit_parser::Span, line: &str) -> String {
    let at = resolve.render_location(span);
    let mut parts = at.rsplitn(3, ':');
    let (_column, item_line, file) = (parts.next(), parts.next(), parts.next());
    let (Some(file), Some(item_line)) = (file, item_line.and_then(|l| l.parse::<usize>().ok()))
    else {
        return at;
    };
    let Ok(source) = std::fs::read_to_string(file) else {
        return format!("{file}:{item_line}");
    };
    let lines: Vec<&str> = source.lines().collect();
    let above = item_line.saturating_sub(1).min(lines.len());
    for index in (0..above).rev() {
        let Some(doc) = lines[index].trim().strip_prefix("///") else {
            if lines[index].trim().is_empty() {
                continue;
            }
            break;
        };
        if doc.trim() == line {
            return format!("{file}:{}", index + 1);
        }
    }
    format!("{file}:{item_line}")
}

/// Whether `def` is the contract's `json` type: `type json = string` in
/// `scout:connector/types`, whatever the package's version.
fn is_contract_json(resolve: &Resolve, def: &wit_parser::TypeDef) -> bool {
    if def.name.as_deref() != Some("json") {
        return false;
    }
    let wit_parser::TypeOwner::Interface(owner) = def.owner else {
        return false;
    };
    let interface = &resolve.interfaces[owner];
    let package = interface.package.map(|p| &resolve.packages[p].name);
    interface.name.as_deref() == Some("types")
        && package.is_some_and(|p| p.namespace == "scout" && p.name == "connector")
}

/// The doc comments `ty` carries, `doc` (a parameter's or field's own)
/// first, else the named type's.
fn type_doc(resolve: &Resolve, ty: &Type, doc: &str) -> TypeDoc {
    let mut out = TypeDoc {
        description: doc.trim().to_string(),
        ..TypeDoc::default()
    };
    let Type::Id(id) = ty else {
        return out;
    };
    let def = &resolve.types[*id];
    if out.description.is_empty() {
        out.description = def
            .docs
            .contents
            .as_deref()
            .unwrap_or("")
            .trim()
            .to_string();
    }
    let doc_of = |d: &wit_parser::Docs| d.contents.as_deref().unwrap_or("").trim().to_string();
    let keep = |d: TypeDoc| (!d.is_empty()).then_some(d);
    match &def.kind {
        TypeDefKind::Record(r) => {
            for f in &r.fields {
                if let Some(d) = keep(type_doc(resolve, &f.ty, &doc_of(&f.docs))) {
                    out.fields.insert(f.name.clone(), d);
                }
            }
        }
        TypeDefKind::Enum(e) => {
            for c in &e.cases {
                if let Some(d) = keep(TypeDoc {
                    description: doc_of(&c.docs),
                    ..TypeDoc::default()
                }) {
                    out.cases.insert(c.name.clone(), d);
                }
            }
        }
        TypeDefKind::Flags(f) => {
            for c in &f.flags {
                if let Some(d) = keep(TypeDoc {
                    description: doc_of(&c.docs),
                    ..TypeDoc::default()
                }) {
                    out.cases.insert(c.name.clone(), d);
                }
            }
        }
        TypeDefKind::Variant(v) => {
            for c in &v.cases {
                let d = match &c.ty {
                    Some(t) => type_doc(resolve, t, &doc_of(&c.docs)),
                    None => TypeDoc {
                        description: doc_of(&c.docs),
                        ..TypeDoc::default()
                    },
                };
                if let Some(d) = keep(d) {
                    out.cases.insert(c.name.clone(), d);
                }
            }
        }
        // An option, or a type alias, is documented as what it holds; the
        // contract's `json` alias also marks the value as JSON.
        TypeDefKind::Option(t) | TypeDefKind::Type(t) => {
            let mut inner = type_doc(resolve, t, &out.description);
            inner.json |= is_contract_json(resolve, def);
            return inner;
        }
        TypeDefKind::List(t) | TypeDefKind::FixedLengthList(t, _) => {
            out.items = keep(type_doc(resolve, t, "")).map(Box::new);
        }
        _ => {}
    }
    out
}

impl Manifest {
    /// Reads the connector package in `dir` (a `wit/` folder with its
    /// `deps/`) and builds its manifest from the world's doc comments.
    ///
    /// The package must hold exactly one world. That world exports
    /// `read-tools` and/or `write-tools`, interfaces of its own package, and
    /// every function in them has a doc comment.
    pub fn from_wit_dir(dir: &Path) -> Result<Manifest, ManifestError> {
        Manifest::from_wit(dir, None)
    }

    /// The one way a manifest is made, whatever the connector's language:
    /// the Rust SDK's `export!` and `scout-host manifest` (for a component
    /// built by componentize-js or componentize-py) both call this.
    ///
    /// Reads the connector package in `dir` as [`Manifest::from_wit_dir`]
    /// does; `world` names the connector's world when the package defines
    /// more than one (otherwise its only world is taken).
    pub fn from_wit(dir: &Path, world: Option<&str>) -> Result<Manifest, ManifestError> {
        let mut resolve = Resolve::default();
        let (package, _files) = resolve
            .push_dir(dir)
            .map_err(|e| ManifestError::Wit(format!("{e:#}")))?;
        let pkg = &resolve.packages[package];
        let world_id = match (world, pkg.worlds.len()) {
            (Some(name), _) => *pkg.worlds.get(name).ok_or_else(|| {
                let names: Vec<&str> = pkg.worlds.keys().map(String::as_str).collect();
                ManifestError::Rule(format!(
                    "connector package `{}` has no world `{name}`; its worlds: {}",
                    pkg.name,
                    names.join(", ")
                ))
            })?,
            (None, 1) => *pkg.worlds.values().next().expect("one world"),
            (None, n) => {
                return Err(ManifestError::Rule(format!(
                    "connector package `{}` must define exactly one world, found {n}",
                    pkg.name
                )));
            }
        };
        let world = &resolve.worlds[world_id];
        let (world_docs, world_lines) =
            split_policy_lines(world.docs.contents.as_deref().unwrap_or(""), &WORLD_KEYS);
        let billing = parse_world_lines(&world_lines)?;
        let (description, withheld) = parse_world_docs(&world_docs).map_err(|e| match &e {
            ManifestError::Withheld { line, .. } => ManifestError::At {
                location: doc_line_location(&resolve, world.span, line),
                source: Box::new(e),
            },
            _ => e,
        })?;
        if description.is_empty() {
            return Err(ManifestError::Rule(format!(
                "world `{}` needs a doc comment describing the connector",
                world.name
            )));
        }

        let mut tools = Vec::new();
        for effect in [Effect::Read, Effect::Write] {
            for (key, item) in &world.exports {
                let WorldItem::Interface { id, .. } = item else {
                    return Err(ManifestError::Rule(format!(
                        "world `{}` exports `{}`: a connector exports only interfaces",
                        world.name,
                        resolve.name_world_key(key)
                    )));
                };
                let iface = &resolve.interfaces[*id];
                let name = match (key, &iface.name) {
                    (WorldKey::Interface(_), Some(name)) if iface.package == Some(package) => {
                        name.as_str()
                    }
                    _ => {
                        return Err(ManifestError::Rule(format!(
                            "world `{}` exports `{}`: a connector exports only its own `read-tools` and `write-tools`",
                            world.name,
                            resolve.name_world_key(key)
                        )));
                    }
                };
                match Effect::of_interface(name) {
                    Some(e) if e == effect => {}
                    Some(_) => continue,
                    None => {
                        return Err(ManifestError::Rule(format!(
                            "world `{}` exports `{name}`: a connector exports only `read-tools` and `write-tools`",
                            world.name
                        )));
                    }
                }
                for (fname, func) in &iface.functions {
                    let (description, lines) =
                        split_policy_lines(func.docs.contents.as_deref().unwrap_or(""), &TOOL_KEYS);
                    if description.is_empty() {
                        return Err(ManifestError::Rule(format!(
                            "tool `{name}.{fname}` needs a doc comment"
                        )));
                    }
                    let mut doc = parse_tool_lines(fname, effect, &lines)?;
                    let (description, described) = split_parameters(&description)?;
                    for (i, entry) in described.iter().enumerate() {
                        let param = &entry.name;
                        let Some(wit_param) = func.params.iter().find(|p| &p.name == param) else {
                            return Err(ManifestError::Rule(format!(
                                "tool `{name}.{fname}` describes parameter `{param}`, which it does not have"
                            )));
                        };
                        if entry.bounds.range().is_some() && !is_number(&resolve, &wit_param.ty) {
                            return Err(ManifestError::Rule(format!(
                                "tool `{name}.{fname}` gives parameter `{param}` a range, but it is not a number"
                            )));
                        }
                        if described[..i].iter().any(|p| &p.name == param) {
                            return Err(ManifestError::Rule(format!(
                                "tool `{name}.{fname}` describes parameter `{param}` twice"
                            )));
                        }
                    }
                    for p in &func.params {
                        let own = described.iter().find(|e| e.name == p.name);
                        let mut d = type_doc(&resolve, &p.ty, own.map_or("", |e| e.text.as_str()));
                        if let Some(own) = own {
                            d.bounds = own.bounds.clone();
                        }
                        if !d.is_empty() {
                            doc.params.insert(p.name.clone(), d);
                        }
                    }
                    if let Some(Type::Id(id)) = &func.result
                        && let TypeDefKind::Result(r) = &resolve.types[*id].kind
                        && let Some(ok) = &r.ok
                    {
                        doc.result = type_doc(&resolve, ok, "");
                    }
                    if description.is_empty() {
                        return Err(ManifestError::Rule(format!(
                            "tool `{name}.{fname}` needs a doc comment besides its parameters"
                        )));
                    }
                    doc.description = description;
                    tools.push(doc);
                }
            }
        }
        if tools.is_empty() {
            return Err(ManifestError::Rule(format!(
                "world `{}` exports no tools",
                world.name
            )));
        }
        let manifest = Manifest {
            format: FORMAT,
            connector: pkg.name.name.clone(),
            namespace: pkg.name.namespace.clone(),
            version: pkg
                .name
                .version
                .as_ref()
                .map(|v| v.to_string())
                .unwrap_or_default(),
            description,
            tools,
            withheld,
            billing,
        };
        manifest.validate()?;
        Ok(manifest)
    }
}

#[cfg(test)]
mod tests {
    use crate::Manifest;
    use std::path::{Path, PathBuf};

    /// A package in a fresh directory named `name`, `source` its WIT, with
    /// the contract as its dependency.
    fn package(name: &str, source: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("scout-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("deps")).unwrap();
        let contract = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit");
        std::fs::create_dir_all(dir.join("deps/scout-connector")).unwrap();
        for entry in std::fs::read_dir(&contract).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(
                &path,
                dir.join("deps/scout-connector")
                    .join(path.file_name().unwrap()),
            )
            .unwrap();
        }
        std::fs::write(dir.join(format!("{name}.wit")), source).unwrap();
        dir
    }

    /// A package of two worlds (as a JS or Python connector's WIT may hold
    /// beside a test world).
    fn two_worlds() -> PathBuf {
        package(
            "two-worlds",
            "package acme:two@0.1.0;\n\
             /// Read tools.\n\
             interface read-tools {\n\
                 use scout:connector/types@0.2.0.{tool-error};\n\
                 /// Says hello.\n\
                 ///\n\
                 /// Grantable: yes\n\
                 hello: func() -> result<string, tool-error>;\n\
             }\n\
             /// The connector.\n\
             world two {\n\
                 include scout:connector/base@0.2.0;\n\
                 export read-tools;\n\
             }\n\
             /// Another world of the same package.\n\
             world other {\n\
                 include scout:connector/base@0.2.0;\n\
                 export read-tools;\n\
             }\n",
        )
    }

    /// A bad line under `Withheld:` is reported at its line in the WIT.
    #[test]
    fn a_withheld_error_points_at_its_wit_line() {
        let dir = package(
            "bad-withheld",
            "package acme:bad@0.1.0;\n\
             /// Read tools.\n\
             interface read-tools {\n\
                 use scout:connector/types@0.2.0.{tool-error};\n\
                 /// Says hello.\n\
                 hello: func() -> result<string, tool-error>;\n\
             }\n\
             /// The connector.\n\
             ///\n\
             /// Withheld:\n\
             /// - delete: never\n\
             /// - archiving, for good\n\
             world bad {\n\
                 include scout:connector/base@0.2.0;\n\
                 export read-tools;\n\
             }\n",
        );
        let error = Manifest::from_wit_dir(&dir).unwrap_err();
        let text = error.to_string();
        assert!(
            text.ends_with(
                "bad-withheld.wit:12: withheld entry `archiving, for good` is not `- effect: reason`"
            ),
            "{text}"
        );
        assert!(std::error::Error::source(&error).is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The contract's `json` type marks a parameter (or what an option
    /// holds) as JSON; a string of another name is not.
    #[test]
    fn the_contract_json_type_marks_its_parameters() {
        let dir = package(
            "json-param",
            "package acme:finder@0.1.0;\n\
             /// Read tools.\n\
             interface read-tools {\n\
                 use scout:connector/types@0.2.0.{tool-error, json};\n\
                 /// A string, not JSON.\n\
                 type text = string;\n\
                 /// Finds things.\n\
                 ///\n\
                 /// Parameters:\n\
                 /// - filter: what to match, as the upstream's JSON filter\n\
                 /// - sorts: how to order them\n\
                 /// - title: a title\n\
                 ///\n\
                 /// Grantable: yes\n\
                 find: func(filter: json, sorts: option<json>, title: text) -> result<string, tool-error>;\n\
             }\n\
             /// The connector.\n\
             world finder {\n\
                 include scout:connector/base@0.2.0;\n\
                 export read-tools;\n\
             }\n",
        );
        let manifest = Manifest::from_wit_dir(&dir).unwrap();
        let params = &manifest.tools[0].params;
        assert!(params["filter"].json, "{params:?}");
        assert_eq!(
            params["filter"].description,
            "what to match, as the upstream's JSON filter"
        );
        assert!(params["sorts"].json, "{params:?}");
        assert!(!params["title"].json, "{params:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_named_world_is_read_and_an_unknown_or_unnamed_one_refused() {
        let dir = two_worlds();
        let manifest = Manifest::from_wit(&dir, Some("two")).unwrap();
        assert_eq!(manifest.connector, "two");
        assert_eq!(manifest.description, "The connector.");
        assert_eq!(manifest.tools[0].function, "hello");
        let unknown = Manifest::from_wit(&dir, Some("three"))
            .unwrap_err()
            .to_string();
        assert!(
            unknown.contains("no world `three`") && unknown.contains("two"),
            "{unknown}"
        );
        let unnamed = Manifest::from_wit_dir(&dir).unwrap_err().to_string();
        assert!(unnamed.contains("exactly one world, found 2"), "{unnamed}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
