//! Fixtures for the workspace's integration tests, the demo and the benches:
//! the paths of the components built from source, and fake upstream servers
//! that speak real wire formats over loopback.

/// Paths of the components built by this crate's build script.
pub mod components {
    include!(concat!(env!("OUT_DIR"), "/components.rs"));
}

pub mod fake_github;
pub mod upstream;

/// Replaces every `from` in `bytes` by `to` (same length, so a component
/// stays a valid binary): how tests tamper with a built component.
pub fn patch_bytes(bytes: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len(), "a patch keeps the length");
    let mut out = bytes.to_vec();
    let mut found = false;
    let mut at = 0;
    while let Some(pos) = out[at..].windows(from.len()).position(|w| w == from) {
        out[at + pos..at + pos + to.len()].copy_from_slice(to);
        at += pos + to.len();
        found = true;
    }
    assert!(found, "pattern present");
    out
}
