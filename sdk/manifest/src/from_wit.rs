//! Building a manifest from WIT source, at the connector's compile time.

use crate::policy::{
    TOOL_KEYS, WORLD_KEYS, parse_tool_lines, parse_world_lines, split_policy_lines,
};
use crate::{Effect, FORMAT, Manifest, ManifestError, parse_world_docs};
use std::path::Path;
use wit_parser::{Resolve, WorldItem, WorldKey};

impl Manifest {
    /// Reads the connector package in `dir` (a `wit/` folder with its
    /// `deps/`) and builds its manifest from the world's doc comments.
    ///
    /// The package must hold exactly one world. That world exports
    /// `read-tools` and/or `write-tools`, interfaces of its own package, and
    /// every function in them has a doc comment.
    pub fn from_wit_dir(dir: &Path) -> Result<Manifest, ManifestError> {
        let mut resolve = Resolve::default();
        let (package, _files) = resolve
            .push_dir(dir)
            .map_err(|e| ManifestError::Wit(format!("{e:#}")))?;
        let pkg = &resolve.packages[package];
        let world_id = match pkg.worlds.len() {
            1 => *pkg.worlds.values().next().expect("one world"),
            n => {
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
        let (description, withheld) = parse_world_docs(&world_docs)?;
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
