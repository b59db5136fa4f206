//! A component's shape: the same component with every core module cut down
//! to its imports, exports and declarations, each exported function's body
//! `unreachable` and every other function, data and element segment gone.
//!
//! Why: the surface a host serves (tools, schemas, the import check, the
//! link against the contract, the pool slots a call takes) is read from a
//! compiled `Component`'s types, and wasmtime has no types-only mode; a
//! connector's real compile (Cranelift over thousands of functions) takes
//! 100-300 ms. The shape compiles in a few milliseconds and has the same
//! component-level types, imports, exports, memories and tables, so start
//! reads the surface from it and compiles the real component in the
//! background ([`super::compile`]). It never runs: nothing of it is kept
//! but its types.
//!
//! Anything this rewrite does not expect (a `ref.func` in a constant
//! expression, a section it does not know) gives `None`, and the caller
//! compiles the real component instead: the shape only saves time.

use wasmparser::{BinaryReader, Operator, TableInit, TypeRef};

const MODULE_VERSION: [u8; 4] = [0x01, 0x00, 0x00, 0x00];
const COMPONENT_VERSION: [u8; 4] = [0x0d, 0x00, 0x01, 0x00];

/// The shape of component `bytes`, or `None` where it cannot be made.
pub(super) fn of(bytes: &[u8]) -> Option<Vec<u8>> {
    if bytes.get(4..8) != Some(&COMPONENT_VERSION[..]) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 8);
    component(bytes, &mut out).ok()?;
    Some(out)
}

/// Why a shape could not be made (the caller only needs to know it failed).
struct Unshaped;

impl From<wasmparser::BinaryReaderError> for Unshaped {
    fn from(_: wasmparser::BinaryReaderError) -> Unshaped {
        Unshaped
    }
}

/// The sections of a binary after its 8-byte header: `(id, contents)`.
fn sections(bytes: &[u8]) -> Result<Vec<(u8, &[u8])>, Unshaped> {
    let mut reader = BinaryReader::new(bytes.get(8..).ok_or(Unshaped)?, 8);
    let mut out = Vec::new();
    while !reader.eof() {
        let id = reader.read_u8()?;
        let len = reader.read_var_u32()? as usize;
        out.push((id, reader.read_bytes(len)?));
    }
    Ok(out)
}

fn component(bytes: &[u8], out: &mut Vec<u8>) -> Result<(), Unshaped> {
    out.extend_from_slice(&bytes[..8]);
    for (id, data) in sections(bytes)? {
        match id {
            // Custom sections: the manifest is read from the real bytes.
            0 => {}
            // A core module, cut down.
            1 => {
                if data.get(4..8) != Some(&MODULE_VERSION[..]) {
                    return Err(Unshaped);
                }
                let mut inner = Vec::new();
                module(data, &mut inner)?;
                section(out, 1, &inner);
            }
            // A nested component, shaped in turn.
            4 => {
                if data.get(4..8) != Some(&COMPONENT_VERSION[..]) {
                    return Err(Unshaped);
                }
                let mut inner = Vec::new();
                component(data, &mut inner)?;
                section(out, 4, &inner);
            }
            // Instances, types, aliases, canonical functions, imports,
            // exports: the component's shape itself, kept as they are.
            2 | 3 | 5..=11 => section(out, id, data),
            _ => return Err(Unshaped),
        }
    }
    Ok(())
}

fn module(bytes: &[u8], out: &mut Vec<u8>) -> Result<(), Unshaped> {
    let sections = sections(bytes)?;
    // Function indices: the imported ones first, then the defined ones.
    let mut imported_funcs = 0u32;
    let mut defined_types: Vec<u32> = Vec::new();
    let mut exported: Vec<u32> = Vec::new();
    for (id, data) in &sections {
        let reader = BinaryReader::new(data, 0);
        match id {
            2 => {
                for import in wasmparser::ImportSectionReader::new(reader)?.into_imports() {
                    if let TypeRef::Func(_) | TypeRef::FuncExact(_) = import?.ty {
                        imported_funcs += 1;
                    }
                }
            }
            3 => {
                for ty in wasmparser::FunctionSectionReader::new(reader)? {
                    defined_types.push(ty?);
                }
            }
            4 => {
                for table in wasmparser::TableSectionReader::new(reader)? {
                    if let TableInit::Expr(expr) = table?.init {
                        no_ref_func(&expr)?;
                    }
                }
            }
            6 => {
                for global in wasmparser::GlobalSectionReader::new(reader)? {
                    no_ref_func(&global?.init_expr)?;
                }
            }
            7 => {
                for export in wasmparser::ExportSectionReader::new(reader)? {
                    let export = export?;
                    if is_func(export.kind) && export.index >= imported_funcs {
                        exported.push(export.index);
                    }
                }
            }
            _ => {}
        }
    }
    exported.sort_unstable();
    exported.dedup();
    // Old index of a kept defined function -> its new index.
    let renumber = |index: u32| -> Result<u32, Unshaped> {
        if index < imported_funcs {
            return Ok(index);
        }
        let at = exported.binary_search(&index).map_err(|_| Unshaped)?;
        Ok(imported_funcs + at as u32)
    };
    out.extend_from_slice(&bytes[..8]);
    for (id, data) in &sections {
        match id {
            // Custom sections (names, producers), the start function,
            // element, data-count and data segments: nothing a shape needs.
            0 | 8 | 9 | 11 | 12 => {}
            1 | 2 | 4 | 5 | 6 | 13 => section(out, *id, data),
            3 => {
                let mut body = Vec::new();
                leb(&mut body, exported.len() as u32);
                for index in &exported {
                    let ty = defined_types
                        .get((index - imported_funcs) as usize)
                        .ok_or(Unshaped)?;
                    leb(&mut body, *ty);
                }
                section(out, 3, &body);
            }
            7 => {
                let mut body = Vec::new();
                let reader = wasmparser::ExportSectionReader::new(BinaryReader::new(data, 0))?;
                leb(&mut body, reader.count());
                for export in reader {
                    let export = export?;
                    let index = if is_func(export.kind) {
                        renumber(export.index)?
                    } else {
                        export.index
                    };
                    leb(&mut body, export.name.len() as u32);
                    body.extend_from_slice(export.name.as_bytes());
                    body.push(external_kind(export.kind));
                    leb(&mut body, index);
                }
                section(out, 7, &body);
            }
            10 => {
                let mut body = Vec::new();
                leb(&mut body, exported.len() as u32);
                for _ in &exported {
                    // Size 3: no locals, `unreachable`, `end`.
                    body.extend_from_slice(&[0x03, 0x00, 0x00, 0x0b]);
                }
                section(out, 10, &body);
            }
            _ => return Err(Unshaped),
        }
    }
    Ok(())
}

fn is_func(kind: wasmparser::ExternalKind) -> bool {
    matches!(
        kind,
        wasmparser::ExternalKind::Func | wasmparser::ExternalKind::FuncExact
    )
}

/// The binary encoding of an export's kind.
fn external_kind(kind: wasmparser::ExternalKind) -> u8 {
    use wasmparser::ExternalKind as K;
    match kind {
        K::Func => 0x00,
        K::Table => 0x01,
        K::Memory => 0x02,
        K::Global => 0x03,
        K::Tag => 0x04,
        K::FuncExact => 0x20,
    }
}

/// A constant expression that names no function (which the shape renumbers).
fn no_ref_func(expr: &wasmparser::ConstExpr<'_>) -> Result<(), Unshaped> {
    let mut ops = expr.get_operators_reader();
    while !ops.eof() {
        if let Operator::RefFunc { .. } = ops.read()? {
            return Err(Unshaped);
        }
    }
    Ok(())
}

fn section(out: &mut Vec<u8>, id: u8, data: &[u8]) {
    out.push(id);
    leb(out, data.len() as u32);
    out.extend_from_slice(data);
}

fn leb(out: &mut Vec<u8>, mut value: u32) {
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
