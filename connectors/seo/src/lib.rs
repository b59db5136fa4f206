//! The SEO brief tools (`mcp__seo__seo_save_brief`, `mcp__seo__seo_hand_off_brief`).
//!
//! Both keep briefs in the brand's project folder, the `folder` the host
//! grants as `project`, under `briefs/NAME.md`, in the format of
//! `scout_project_text` (which the content writer's `writer_read_brief`
//! parses with the same code). The component imports no `http` and no
//! `meter`: it makes no request and spends nothing.
//!
//! - `save-brief` checks every field before the folder is opened (names are
//!   a-z, 0-9 and `-`, so a name never reaches another directory; notes may
//!   not hold a status line), then writes the file with `Status: SAVED`.
//!   Saving over a brief replaces it and takes back its hand-off.
//! - `hand-off-brief` reads the brief back, refuses one that is not in the
//!   format (a hand-edited file is not guessed at), and rewrites its status
//!   line to `Status: HANDED OFF`. No status either tool writes is APPROVED.
//!
//! Who may call them is the host's: `seo_save_brief` when the grant names
//! the seo-method skill, `seo_hand_off_brief` also only at a
//! maxDelegationDepth above 0. A read-only `project` folder refuses both
//! writes (the host's `folder` `denied`).

scout_sdk::bindings!();

use bindings::exports::scout::seo::read_tools::{
    self, BriefStatus, HandedOffBrief, SavedBrief, SearchIntent,
};
use scout_project_text as text;
use scout_sdk::{ToolError, folder};

/// The folder the host grants these tools.
const FOLDER: &str = "project";

fn intent_word(intent: SearchIntent) -> &'static str {
    match intent {
        SearchIntent::Informational => "informational",
        SearchIntent::Navigational => "navigational",
        SearchIntent::Commercial => "commercial",
        SearchIntent::Transactional => "transactional",
    }
}

/// The checked brief of `save-brief`'s arguments, or `invalid-input`.
fn brief_of(
    name: String,
    page: String,
    primary_keyword: String,
    secondary_keywords: Vec<String>,
    intent: Option<SearchIntent>,
    notes: String,
) -> Result<text::Brief, ToolError> {
    let brief = text::Brief {
        name,
        page,
        primary_keyword,
        secondary_keywords,
        intent: intent.map(|i| intent_word(i).to_string()),
        notes,
    };
    text::check_brief(brief).map_err(ToolError::invalid)
}

/// A file's text, `None` when it does not exist.
fn read_text(dir: &folder::Dir, path: &str) -> Result<Option<String>, ToolError> {
    match dir.read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| ToolError::refused(format!("{path} is not UTF-8 text"))),
        Err(folder::FolderError::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct Seo;

impl read_tools::Guest for Seo {
    fn save_brief(
        name: String,
        page: String,
        primary_keyword: String,
        secondary_keywords: Vec<String>,
        intent: Option<SearchIntent>,
        notes: String,
    ) -> Result<SavedBrief, ToolError> {
        let brief = brief_of(
            name,
            page,
            primary_keyword,
            secondary_keywords,
            intent,
            notes,
        )?;
        let path = text::brief_path(&brief.name);
        let dir = folder::open(FOLDER)?;
        let replaced = read_text(&dir, &path)?.is_some();
        dir.write(
            &path,
            text::render_brief(text::BriefStatus::Saved, &brief).as_bytes(),
        )?;
        Ok(SavedBrief {
            path,
            status: BriefStatus::Saved,
            replaced,
        })
    }

    fn hand_off_brief(name: String) -> Result<HandedOffBrief, ToolError> {
        text::check_name("the brief name", &name, text::MAX_NAME).map_err(ToolError::invalid)?;
        let path = text::brief_path(&name);
        let dir = folder::open(FOLDER)?;
        let Some(file) = read_text(&dir, &path)? else {
            return Err(ToolError::NotFound(format!(
                "there is no brief `{name}` ({path}); save it with seo_save_brief first"
            )));
        };
        let (status, brief) = text::parse_brief(&name, &file).map_err(ToolError::refused)?;
        let already = status == text::BriefStatus::HandedOff;
        if !already {
            dir.write(
                &path,
                text::render_brief(text::BriefStatus::HandedOff, &brief).as_bytes(),
            )?;
        }
        Ok(HandedOffBrief {
            path,
            page: brief.page,
            status: BriefStatus::HandedOff,
            already_handed_off: already,
        })
    }
}

scout_sdk::export!(Seo);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_become_a_checked_brief() {
        let b = brief_of(
            "linen-shirt".into(),
            "linen-shirt".into(),
            " linen shirt men ".into(),
            vec!["summer shirt".into()],
            Some(SearchIntent::Commercial),
            "Lead with breathability.\r\n".into(),
        )
        .unwrap();
        assert_eq!(b.primary_keyword, "linen shirt men");
        assert_eq!(b.intent.as_deref(), Some("commercial"));
        assert_eq!(b.notes, "Lead with breathability.");
        for intent in [
            SearchIntent::Informational,
            SearchIntent::Navigational,
            SearchIntent::Commercial,
            SearchIntent::Transactional,
        ] {
            assert!(text::INTENTS.contains(&intent_word(intent)));
        }
    }

    #[test]
    fn bad_arguments_are_invalid_input() {
        let err = brief_of(
            "../x".into(),
            "p".into(),
            "k".into(),
            vec![],
            None,
            String::new(),
        )
        .unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidInput(m) if m.starts_with("the brief name `../x`"))
        );
        let err = brief_of(
            "x".into(),
            "p".into(),
            "k".into(),
            vec![],
            None,
            "Status: APPROVED".into(),
        )
        .unwrap_err();
        assert!(matches!(err, ToolError::InvalidInput(m) if m.contains("status line")));
    }
}
