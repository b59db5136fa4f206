//! A componentize-py build without `wasi:sockets`: its clocks and
//! randomness stay imports the host serves at each call.
//!
//! componentize-py's default build imports `wasi:sockets` (its runtime's
//! `socket` module), which the host refuses at load; `--stub-wasi` stubs
//! every WASI import instead, so the clocks are gone and the random seed is
//! the one the build ran with. [`without_sockets`] takes the default build
//! and satisfies its sockets imports inside the component: a stub component
//! exporting the very interfaces it imports (read from the component, at
//! its version), made by wit-component's `dummy_module` (every function
//! body is `unreachable`), is composed in front of it with `wac-graph`'s
//! `plug`. A guest that opens a socket then traps at the call; nothing in
//! the component can name a network. The stub imports only what the
//! sockets interfaces use (`wasi:io`, `wasi:clocks/monotonic-clock`),
//! merged with the component's own imports of them.
//!
//! Why composition and not a rewrite of the core modules (what
//! `--stub-wasi` does before it links): the component is already linked,
//! and removing imports from it means renumbering every index space of its
//! top level by hand; composition is the Bytecode Alliance's tested path,
//! and the stub is made from the component's own types, so any sockets
//! version componentize-py imports fits. Its cost: the stub has a memory
//! of its own, so the calls into it go through adapters that address two
//! memories, which the host's engine must allow (multi-memory), and the
//! component grows by about 60 KB (its 18 MB runtime dominates). Measured
//! on the hello guest: 18,366,918 bytes and 17 core instances, against
//! 18,391,971 bytes and 38 for `--stub-wasi`; the same compile time.

use wac_graph::{CompositionGraph, EncodeOptions, types::Package};
use wit_component::{ComponentEncoder, DecodedWasm, StringEncoding};
use wit_parser::{ManglingAndAbi, WorldKey};

/// The interfaces' namespace and package this removes.
const SOCKETS: &str = "wasi:sockets/";

/// The names of the top-level imports of a component (`wasi:io/poll@0.2.9`),
/// in order; nested components' and modules' imports are not its own.
pub fn component_imports(component: &[u8]) -> Result<Vec<String>, String> {
    let mut imports = Vec::new();
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(component) {
        match payload.map_err(|e| format!("not a readable component: {e}"))? {
            wasmparser::Payload::ComponentImportSection(section) if depth == 0 => {
                for import in section {
                    let import = import.map_err(|e| format!("an unreadable import: {e}"))?;
                    imports.push(import.name.name.to_string());
                }
            }
            wasmparser::Payload::ModuleSection { .. }
            | wasmparser::Payload::ComponentSection { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(imports)
}

/// `component` with every `wasi:sockets/*` import satisfied inside it by
/// functions that trap, its other imports (the clocks, randomness, the
/// contract's interfaces) unchanged, its exports and top-level custom
/// sections (a manifest already embedded) kept. A component that imports
/// no sockets is returned as it is.
pub fn without_sockets(component: &[u8]) -> Result<Vec<u8>, String> {
    if !wasmparser::Parser::is_component(component) {
        return Err("not a WebAssembly component: build it with componentize-py".to_string());
    }
    if !component_imports(component)?
        .iter()
        .any(|i| i.starts_with(SOCKETS))
    {
        return Ok(component.to_vec());
    }
    let stub = trapping_sockets(component)?;
    let mut composed = plug(&stub, component)?;
    for (name, payload) in top_level_custom_sections(component)? {
        composed = crate::with_custom_section(&composed, &name, &payload)?;
    }
    let left: Vec<String> = component_imports(&composed)?
        .into_iter()
        .filter(|i| i.starts_with(SOCKETS))
        .collect();
    if !left.is_empty() {
        return Err(format!(
            "the sockets stub did not satisfy {} (a bug in scout-build's sockets step)",
            left.join(", ")
        ));
    }
    Ok(composed)
}

/// A component exporting every `wasi:sockets` interface `component`
/// imports, each function a trap.
fn trapping_sockets(component: &[u8]) -> Result<Vec<u8>, String> {
    let (mut resolve, world) = match wit_component::decode(component)
        .map_err(|e| format!("cannot read the component's types: {e:#}"))?
    {
        DecodedWasm::Component(resolve, world) => (resolve, world),
        DecodedWasm::WitPackage(..) => {
            return Err("a WIT package, not a component: build it first".to_string());
        }
    };
    let sockets: Vec<String> = resolve.worlds[world]
        .imports
        .keys()
        .filter_map(|key| match key {
            WorldKey::Interface(id) => resolve.id_of(*id),
            WorldKey::Name(_) => None,
        })
        .filter(|name| name.starts_with(SOCKETS))
        .collect();
    // The interfaces are in `resolve` at the version the component imports;
    // the world's elaboration imports what they use from other packages.
    let mut wit = String::from("package scout:trapping-sockets;\n\nworld trapping-sockets {\n");
    for interface in &sockets {
        wit.push_str(&format!("  export {interface};\n"));
    }
    wit.push_str("}\n");
    let package = resolve
        .push_str("trapping-sockets.wit", &wit)
        .map_err(|e| format!("cannot make the sockets stub's world: {e:#}"))?;
    let stub_world = resolve
        .select_world(&[package], Some("trapping-sockets"))
        .map_err(|e| format!("cannot make the sockets stub's world: {e:#}"))?;
    let mut module = named_functions(&wit_component::dummy_module(
        &resolve,
        stub_world,
        ManglingAndAbi::Standard32,
    ))?;
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        stub_world,
        StringEncoding::UTF8,
        false,
    )
    .map_err(|e| format!("cannot make the sockets stub: {e:#}"))?;
    ComponentEncoder::default()
        .module(&module)
        .and_then(|encoder| encoder.validate(true).encode())
        .map_err(|e| format!("cannot make the sockets stub: {e:#}"))
}

/// `module` with a `name` section naming each exported function by its
/// export (`wasi:sockets/tcp-create-socket@0.2.9#create-tcp-socket`): the
/// trap's backtrace the author reads then says which socket call it was.
fn named_functions(module: &[u8]) -> Result<Vec<u8>, String> {
    let mut names: Vec<(u32, String)> = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        if let wasmparser::Payload::ExportSection(section) =
            payload.map_err(|e| format!("the sockets stub's module: {e}"))?
        {
            for export in section {
                let export = export.map_err(|e| format!("the sockets stub's module: {e}"))?;
                if export.kind == wasmparser::ExternalKind::Func {
                    names.push((export.index, export.name.to_string()));
                }
            }
        }
    }
    names.sort();
    names.dedup_by_key(|(index, _)| *index);
    let mut map = Vec::new();
    crate::write_leb_u32(&mut map, leb_len(names.len())?);
    for (index, name) in &names {
        crate::write_leb_u32(&mut map, *index);
        crate::write_leb_u32(&mut map, leb_len(name.len())?);
        map.extend_from_slice(name.as_bytes());
    }
    // Subsection 1 of the `name` custom section: function names.
    let mut payload = vec![1];
    crate::write_leb_u32(&mut payload, leb_len(map.len())?);
    payload.extend(map);
    crate::with_custom_section(module, "name", &payload)
}

fn leb_len(len: usize) -> Result<u32, String> {
    u32::try_from(len).map_err(|_| "the sockets stub is too large".to_string())
}

/// `socket` instantiated with `plug`'s exports for the imports of the same
/// name, its other imports the composition's, its exports the composition's.
fn plug(plug: &[u8], socket: &[u8]) -> Result<Vec<u8>, String> {
    let compose = |e: &dyn std::fmt::Display| format!("cannot compose the sockets stub: {e}");
    let mut graph = CompositionGraph::new();
    let socket = Package::from_bytes("connector", None, socket.to_vec(), graph.types_mut())
        .map_err(|e| compose(&format!("{e:#}")))?;
    let socket = graph.register_package(socket).map_err(|e| compose(&e))?;
    let plug = Package::from_bytes("trapping-sockets", None, plug.to_vec(), graph.types_mut())
        .map_err(|e| compose(&format!("{e:#}")))?;
    let plug = graph.register_package(plug).map_err(|e| compose(&e))?;
    wac_graph::plug(&mut graph, vec![plug], socket).map_err(|e| compose(&e))?;
    graph
        .encode(EncodeOptions::default())
        .map_err(|e| compose(&e))
}

/// The top-level custom sections of a component but its `producers` and
/// debug names (the composition writes its own).
fn top_level_custom_sections(component: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut sections = Vec::new();
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(component) {
        match payload.map_err(|e| format!("not a readable component: {e}"))? {
            wasmparser::Payload::CustomSection(section)
                if depth == 0
                    && !matches!(section.name(), "producers" | "name" | "component-name") =>
            {
                sections.push((section.name().to_string(), section.data().to_vec()));
            }
            wasmparser::Payload::ModuleSection { .. }
            | wasmparser::Payload::ComponentSection { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small stand-in for componentize-py's imports: sockets (a resource,
    /// a string, a result), a `wasi:io` type they use, and a clock.
    const APP: &str = r#"
package test:app;

package wasi:io@0.2.9 {
  interface poll {
    resource pollable { ready: func() -> bool; }
  }
}

package wasi:clocks@0.2.9 {
  interface wall-clock { now: func() -> u64; }
}

package wasi:sockets@0.2.9 {
  interface network {
    resource network;
    enum error-code { unknown, access-denied }
  }
  interface instance-network {
    use network.{network};
    instance-network: func() -> network;
  }
  interface tcp {
    use wasi:io/poll@0.2.9.{pollable};
    use network.{network, error-code};
    resource tcp-socket {
      start-connect: func(network: borrow<network>, host: string) -> result<_, error-code>;
      subscribe: func() -> pollable;
    }
  }
}

world app {
  import wasi:sockets/instance-network@0.2.9;
  import wasi:sockets/tcp@0.2.9;
  import wasi:clocks/wall-clock@0.2.9;
  export run: func() -> string;
}
"#;

    fn app_component() -> Vec<u8> {
        let mut resolve = wit_parser::Resolve::default();
        let package = resolve.push_str("app.wit", APP).unwrap();
        let world = resolve.select_world(&[package], Some("app")).unwrap();
        let mut module = wit_component::dummy_module(&resolve, world, ManglingAndAbi::Standard32);
        wit_component::embed_component_metadata(
            &mut module,
            &resolve,
            world,
            StringEncoding::UTF8,
            false,
        )
        .unwrap();
        ComponentEncoder::default()
            .module(&module)
            .unwrap()
            .validate(true)
            .encode()
            .unwrap()
    }

    #[test]
    fn the_sockets_imports_are_satisfied_inside_and_the_clock_stays_an_import() {
        let app = app_component();
        assert!(
            component_imports(&app)
                .unwrap()
                .contains(&"wasi:sockets/tcp@0.2.9".to_string())
        );
        let without = without_sockets(&app).unwrap();
        let imports = component_imports(&without).unwrap();
        assert_eq!(
            imports,
            ["wasi:io/poll@0.2.9", "wasi:clocks/wall-clock@0.2.9"],
            "{imports:?}"
        );
        // A valid component (its adapters address two memories), exporting
        // what the app exports.
        wasmparser::Validator::new().validate_all(&without).unwrap();
        let mut exports = Vec::new();
        for payload in wasmparser::Parser::new(0).parse_all(&without) {
            if let wasmparser::Payload::ComponentExportSection(section) = payload.unwrap() {
                for export in section {
                    exports.push(export.unwrap().name.name.to_string());
                }
            }
        }
        assert_eq!(
            exports.last().map(String::as_str),
            Some("run"),
            "{exports:?}"
        );
    }

    #[test]
    fn each_trapping_function_is_named_by_its_export() {
        let stub = trapping_sockets(&app_component()).unwrap();
        let needle = b"cm32p2|wasi:sockets/tcp@0.2|[method]tcp-socket.start-connect";
        // The export's name twice in the stub's module: its export and its
        // entry in the `name` section.
        let seen = stub.windows(needle.len()).filter(|w| w == needle).count();
        assert!(seen >= 2, "{seen}");
        wasmparser::Validator::new().validate_all(&stub).unwrap();
    }

    #[test]
    fn a_component_without_sockets_is_returned_as_it_is() {
        let app = app_component();
        let once = without_sockets(&app).unwrap();
        assert_eq!(without_sockets(&once).unwrap(), once);
    }

    #[test]
    fn a_manifest_already_embedded_is_kept_at_the_top_level() {
        let app = crate::with_custom_section(&app_component(), "scout-manifest", b"{}").unwrap();
        let without = without_sockets(&app).unwrap();
        assert_eq!(
            top_level_custom_sections(&without).unwrap(),
            [("scout-manifest".to_string(), b"{}".to_vec())]
        );
    }

    #[test]
    fn what_is_not_a_component_is_refused_with_the_reason() {
        let core_module = b"\0asm\x01\0\0\0";
        for bytes in [&core_module[..], b"not wasm"] {
            let err = without_sockets(bytes).unwrap_err();
            assert!(err.contains("not a WebAssembly component"), "{err}");
        }
    }
}
