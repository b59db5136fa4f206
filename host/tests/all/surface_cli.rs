//! `scout-host surface --brand NAME --config FILE`: the surface a session of
//! that brand would get, from the connections in `serve`'s own store.

use scout_host::store::SqliteStore;
use scout_host::store::prelude::*;
use scout_tests::TempDb;
use std::process::Command;

const KEY_HEX: &str = "4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a4a";

fn surface(config: &std::path::Path, role: &str, brand: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_scout-host"))
        .args(["surface", "--role", role, "--brand", brand, "--config"])
        .arg(config)
        .env("SCOUT_ADMIN_TOKEN", "surface-cli-admin-token-0123456789")
        .env("SCOUT_STORE_KEY", KEY_HEX)
        .output()
        .expect("run scout-host surface");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_surface_of_a_brand_comes_from_its_stored_connections() {
    let db = TempDb::new("surface-cli");
    let key: [u8; 32] = hex::decode(KEY_HEX).unwrap().try_into().unwrap();
    scout_host::store::block(SqliteStore::open(&db).unwrap().put_connection(
        "acme",
        "github",
        "ghp_surface_cli_token",
        &key,
    ))
    .unwrap();
    let config = db.path().with_extension("toml");
    let component = std::path::Path::new(scout_tests::components::GITHUB)
        .canonicalize()
        .unwrap();
    std::fs::write(
        &config,
        format!(
            "database = {:?}\n[connectors.github]\ncomponent = {:?}\norigin = \"https://api.github.com\"\n",
            db.path().display().to_string(),
            component.display().to_string()
        ),
    )
    .unwrap();

    let acme = surface(&config, "person-chat", "acme");
    assert!(
        acme.lines().any(|l| l == "mcp__github__github_read_file"),
        "{acme}"
    );
    assert!(
        acme.lines()
            .any(|l| l == "mcp__github__github_create_branch"),
        "{acme}"
    );
    let globex = surface(&config, "person-chat", "globex");
    assert!(
        !globex.contains("mcp__github__"),
        "a brand without the connection gets no GitHub tool: {globex}"
    );
    assert!(
        globex.lines().any(|l| l == "Read"),
        "the built-ins are still there: {globex}"
    );
    let read_only = surface(&config, "read-only", "acme");
    assert!(
        !read_only.contains("mcp__github__"),
        "a read-only route is handed no credential: {read_only}"
    );
    let _ = std::fs::remove_file(&config);
}
