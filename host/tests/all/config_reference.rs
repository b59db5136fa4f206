//! The configuration reference (`docs/configuration.md`) cannot drift from
//! the configuration's types: it is regenerated here and compared with the
//! committed page, and every top-level key of `ServeConfig` must be in it.

use scout_host::docs::config_reference::{configuration_page, top_level_keys};
use std::path::{Path, PathBuf};

fn committed_page() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md")
}

#[test]
fn the_committed_reference_is_what_the_types_generate() {
    let generated = configuration_page()
        .unwrap_or_else(|missing| panic!("the generator refused: {}", missing.join("; ")));
    let committed =
        std::fs::read_to_string(committed_page()).expect("docs/configuration.md is committed");
    assert!(
        committed == generated,
        "docs/configuration.md is stale: run `cargo run -p scout-host -- config reference`"
    );
}

#[test]
fn every_top_level_key_is_in_the_reference() {
    let page = configuration_page().unwrap_or_else(|missing| panic!("{}", missing.join("; ")));
    let keys = top_level_keys();
    assert!(keys.len() > 30, "ServeConfig's keys: {keys:?}");
    for key in keys {
        let as_key = format!("### `{key}`\n");
        let as_table = format!("## `[{key}]`\n");
        let as_entries = format!("## `[{key}.");
        assert!(
            page.contains(&as_key) || page.contains(&as_table) || page.contains(&as_entries),
            "`{key}` is not in the configuration reference"
        );
    }
    for secret in [
        "`admin_token_env`",
        "`store_key_env`",
        "`[store] url_env`",
        "`[token_broker] secret_env`",
    ] {
        let entry = page
            .split("### ")
            .find(|entry| entry.starts_with(secret))
            .unwrap_or_else(|| panic!("{secret} is not in the reference"));
        assert!(
            entry.contains("(names an environment variable)"),
            "{secret} does not say it names an environment variable: {entry}"
        );
    }
    assert!(
        page.contains("- `\"process_crash\"`: "),
        "enum values are listed with their descriptions"
    );
}
