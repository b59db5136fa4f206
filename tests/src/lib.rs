//! Fixtures for the workspace's integration tests, the demo and the benches:
//! the paths of the components built from source, and fake upstream servers
//! that speak real wire formats over loopback.

/// Paths of the components built by this crate's build script.
pub mod components {
    include!(concat!(env!("OUT_DIR"), "/components.rs"));
}

pub mod fake_github;
pub mod upstream;
