//! Compile-time half of `scout-sdk`.
//!
//! `embed_manifest!()` reads the connector's `wit/` folder (next to its
//! `Cargo.toml`), builds the manifest from the WIT doc comments, and emits it
//! as a custom section of the component. Connector authors reach it through
//! `scout_sdk::export!`, not directly.

use proc_macro::TokenStream;
use quote::quote;
use scout_manifest::{Manifest, SECTION};
use std::path::PathBuf;

/// Embeds the manifest of the WIT package in `wit/` (or the folder given as a
/// string literal, relative to the crate) as a custom section.
#[proc_macro]
pub fn embed_manifest(input: TokenStream) -> TokenStream {
    let rel = match parse_optional_path(input) {
        Ok(rel) => rel,
        Err(msg) => return compile_error(&msg),
    };
    let Ok(manifest_dir) = std::env::var("CARGO_MANIFEST_DIR") else {
        return compile_error("CARGO_MANIFEST_DIR is not set");
    };
    let dir = PathBuf::from(manifest_dir).join(rel);
    let manifest = match Manifest::from_wit_dir(&dir) {
        Ok(m) => m,
        Err(e) => return compile_error(&format!("scout connector WIT in {}: {e}", dir.display())),
    };
    let json = manifest.to_json();
    let bytes = proc_macro2::Literal::byte_string(json.as_bytes());
    let len = json.len();
    // Rebuild when the WIT changes.
    let tracked: Vec<String> = wit_files(&dir)
        .into_iter()
        .map(|p| p.display().to_string())
        .collect();
    quote! {
        #[cfg(target_family = "wasm")]
        #[unsafe(link_section = #SECTION)]
        #[used]
        static __SCOUT_CONNECTOR_MANIFEST: [u8; #len] = *#bytes;
        #( const _: &[u8] = include_bytes!(#tracked); )*
    }
    .into()
}

fn parse_optional_path(input: TokenStream) -> Result<String, String> {
    let tokens: Vec<_> = input.into_iter().collect();
    match tokens.as_slice() {
        [] => Ok("wit".to_string()),
        [proc_macro::TokenTree::Literal(lit)] => {
            let s = lit.to_string();
            s.strip_prefix('"')
                .and_then(|s| s.strip_suffix('"'))
                .map(str::to_string)
                .ok_or_else(|| format!("expected a string literal path, found {s}"))
        }
        [proc_macro::TokenTree::Group(g)] if g.delimiter() == proc_macro::Delimiter::None => {
            parse_optional_path(g.stream())
        }
        _ => Err("expected nothing or a string literal path to the WIT folder".to_string()),
    }
}

fn wit_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "wit") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn compile_error(msg: &str) -> TokenStream {
    quote! { compile_error!(#msg); }.into()
}
