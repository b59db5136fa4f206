//! A starter Scout connector for a made-up "Example" JSON API:
//!
//! - `GET /items/{id}` answers `{"id", "title", "priority", "tags", "description"}`;
//! - `POST /items/{id}/notes` with `{"body"}` answers `{"id", "item_id", "body"}`.
//!
//! Every request goes through the host's `http` capability: the host picks
//! the origin and adds the credential, so this code never sees a secret.
//! Replace the API shapes below with your service's.

scout_sdk::bindings!();

use bindings::exports::acme::example::read_tools::{self, Item, Priority};
use bindings::exports::acme::example::write_tools::{self, Note};
use scout_sdk::{Http, ToolError, encode_segment};
use serde::{Deserialize, Serialize};

/// Longest item id accepted.
const MAX_ID: usize = 64;
/// Longest note accepted, in bytes.
const MAX_NOTE: usize = 10_000;

// ---------------------------------------------------------------------------
// Pure helpers: no host calls, so they are unit-tested natively (see below).
// ---------------------------------------------------------------------------

/// Checks an item id before it goes into a URL: 1 to 64 ASCII letters,
/// digits, `-` or `_`. The path is still built with `encode_segment`, so a
/// bad id could not change the request's path even without this check; the
/// check turns it into a clear `invalid-input` for the agent.
fn validate_id(id: &str) -> Result<(), ToolError> {
    if id.is_empty() {
        return Err(ToolError::invalid("the item id is empty"));
    }
    if id.len() > MAX_ID {
        return Err(ToolError::invalid(format!(
            "the item id is longer than {MAX_ID} characters"
        )));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(ToolError::invalid(format!(
            "item id `{id}` may contain only ASCII letters, digits, `-` and `_`"
        )));
    }
    Ok(())
}

/// Checks a note's text.
fn validate_note(body: &str) -> Result<(), ToolError> {
    if body.trim().is_empty() {
        return Err(ToolError::invalid("the note is empty"));
    }
    if body.len() > MAX_NOTE {
        return Err(ToolError::invalid(format!(
            "the note is longer than {MAX_NOTE} bytes"
        )));
    }
    Ok(())
}

/// The path of one item.
fn item_path(id: &str) -> String {
    format!("/items/{}", encode_segment(id))
}

/// Reads the service's priority string; anything unknown counts as normal.
fn priority_of(text: &str) -> Priority {
    match text {
        "low" => Priority::Low,
        "high" | "urgent" => Priority::High,
        _ => Priority::Normal,
    }
}

// ---------------------------------------------------------------------------
// The upstream API's JSON shapes.
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct ApiItem {
    id: String,
    title: String,
    #[serde(default)]
    priority: String,
    #[serde(default)]
    tags: Vec<String>,
    description: Option<String>,
}

#[derive(Serialize)]
struct ApiNewNote<'a> {
    body: &'a str,
}

#[derive(Deserialize)]
struct ApiNote {
    id: String,
    item_id: String,
    body: String,
}

fn client() -> Result<Http, ToolError> {
    Ok(Http::connect()?.with_header("accept", "application/json"))
}

// ---------------------------------------------------------------------------
// The tools.
// ---------------------------------------------------------------------------

// Only the exported functions use it, and they exist only on wasm (below).
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct Example;

impl read_tools::Guest for Example {
    fn get_item(id: String) -> Result<Item, ToolError> {
        validate_id(&id)?;
        // 404 becomes `not-found`, any other non-2xx `upstream`.
        let item: ApiItem = client()?.get(&item_path(&id), &[])?;
        Ok(Item {
            id: item.id,
            title: item.title,
            priority: priority_of(&item.priority),
            tags: item.tags,
            description: item.description.filter(|d| !d.is_empty()),
        })
    }
}

impl write_tools::Guest for Example {
    fn create_note(item_id: String, body: String) -> Result<Note, ToolError> {
        // Refuse before anything is sent.
        validate_id(&item_id)?;
        validate_note(&body)?;
        let path = format!("{}/notes", item_path(&item_id));
        let note: ApiNote = client()?.post(&path, &ApiNewNote { body: &body })?;
        scout_sdk::log::info(&format!("added note {} to item {}", note.id, note.item_id));
        Ok(Note {
            id: note.id,
            item_id: note.item_id,
            body: note.body,
        })
    }
}

// Exports the tools and embeds the manifest. `export!` applies itself only
// when building the component, so native `cargo test` links.
scout_sdk::export!(Example);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        for good in ["42", "abc-DEF_9", &"a".repeat(MAX_ID)] {
            assert!(validate_id(good).is_ok(), "{good} should be accepted");
        }
        for bad in [
            "",
            "a/b",
            "..",
            "a b",
            "a?b",
            "a%2fb",
            "ä",
            &"a".repeat(MAX_ID + 1),
        ] {
            assert!(
                matches!(validate_id(bad), Err(ToolError::InvalidInput(_))),
                "{bad:?} should be refused"
            );
        }
    }

    #[test]
    fn notes() {
        assert!(validate_note("looks good").is_ok());
        assert!(validate_note(" \n").is_err());
        assert!(validate_note(&"x".repeat(MAX_NOTE + 1)).is_err());
    }

    #[test]
    fn paths_are_encoded() {
        assert_eq!(item_path("42"), "/items/42");
        // Even an id that skipped validation stays one segment.
        assert_eq!(item_path("a/../b?c"), "/items/a%2F..%2Fb%3Fc");
    }

    #[test]
    fn priorities() {
        assert!(matches!(priority_of("urgent"), Priority::High));
        assert!(matches!(priority_of("low"), Priority::Low));
        assert!(matches!(priority_of(""), Priority::Normal));
    }
}
