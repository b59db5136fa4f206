//! The content writer's tools beside Shopify (`mcp__writer__writer_*`).
//!
//! Four of the five tools read and write only the brand's project folder,
//! the `folder` the host grants as `project`:
//!
//! - `voice-guide.md`: the brand's voice guide. Its first line is its status,
//!   decided by [`text::split_status`] alone and exactly: `Status: APPROVED`
//!   (usable) is written only by a person; `writer_save_voice_guide` always
//!   writes `Status: DRAFT`, drops a status line the text begins with and
//!   refuses one anywhere else, in any disguise ([`text::is_status_like`]:
//!   case, spacing, markdown, BOM, zero-width characters, CRLF). It never
//!   replaces a guide that is not a draft (an approved one above all).
//! - `briefs/NAME.md`: SEO briefs, written by the SEO brief tools in the
//!   format of `scout_project_text`; `writer_read_brief` reads only those
//!   handed off (`Status: HANDED OFF`).
//! - `drafts/HANDLE.md`: page copy, `Status: DRAFT`. `writer_save_draft` is
//!   where the voice guide is *used*: it refuses unless the guide is
//!   approved (and a named brief is handed off, for the same page). It
//!   replaces an existing draft only when asked to.
//!
//! Every name that becomes a path is checked to a-z, 0-9 and `-` first, so
//! no argument reaches another directory; the host's folder also refuses
//! `..`, absolute paths and links, and a read-only grant refuses every write.
//!
//! `writer_page_content` reads one product page's copy from Shopify: one
//! fixed GraphQL query document (`productByIdentifier` by handle, Admin API
//! 2026-10) posted to the `shopify` destination, the Shopify connector's own
//! origin and credential, which the host hands over only when Shopify is
//! live in the session (`Reads-from: shopify`, `(graphql-query)`: the host
//! parses the body and sends only queries). Only the handle travels, as a
//! GraphQL variable. Nothing is ever written to the store.
//!
//! What Shopify answers was written from shopify.dev and never observed.

scout_sdk::bindings!();

use bindings::exports::scout::writer::read_tools::{
    self, Brief, GuideStatus, ProductPage, SavedDraft, SavedGuide, SearchIntent, VoiceGuide,
};
use scout_project_text as text;
use scout_sdk::errors::status_error_with;
use scout_sdk::graphql;
use scout_sdk::{Http, Method, ToolError, folder};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::json;

/// The folder the host grants these tools.
const FOLDER: &str = "project";
/// The Shopify destination: the Shopify connector's origin and credential.
const SHOPIFY: &str = "shopify";
/// The Admin GraphQL endpoint the route declares.
const ENDPOINT: &str = "/admin/api/2026-10/graphql.json";
/// The one document `page-content` sends: a query, never a mutation.
const PAGE_QUERY: &str = "query writerPageContent($identifier: ProductIdentifierInput!) { productByIdentifier(identifier: $identifier) { id handle title descriptionHtml seo { title description } productType vendor tags status onlineStoreUrl updatedAt } }";

/// Largest voice guide saved, in bytes.
const MAX_GUIDE: usize = 64 * 1024;
/// Largest voice guide file read back (a person may have written more).
const MAX_GUIDE_FILE: usize = 256 * 1024;
/// Largest product description saved, in bytes.
const MAX_DESCRIPTION: usize = 64 * 1024;
/// Longest product title (Shopify's limit on a product title).
const MAX_TITLE: usize = 255;
/// Longest SEO title.
const MAX_SEO_TITLE: usize = 70;
/// Longest SEO (meta) description.
const MAX_SEO_DESCRIPTION: usize = 320;

fn invalid(message: String) -> ToolError {
    ToolError::InvalidInput(message)
}

// ---------------------------------------------------------------------------
// The voice guide (pure, unit-tested below)
// ---------------------------------------------------------------------------

/// The file `writer_save_voice_guide` writes for `text`, and the status line
/// dropped from the text's start, if any. The file's first line is always
/// `Status: DRAFT`; any other status-like line in the text is refused.
fn voice_guide_file(guide: &str) -> Result<(String, Option<String>), ToolError> {
    let cleaned = text::clean_text("the voice guide", guide, MAX_GUIDE).map_err(invalid)?;
    let first = cleaned.lines().next().unwrap_or_default();
    let dropped = text::is_status_like(first).then(|| first.trim().to_string());
    let skip = usize::from(dropped.is_some());
    if let Some((n, line)) = cleaned
        .lines()
        .enumerate()
        .skip(skip)
        .find(|(_, l)| text::is_status_like(l))
    {
        return Err(invalid(format!(
            "line {} of the voice guide reads as a status line (`{}`); the tool writes the guide's only status line, `Status: DRAFT`, and only a person approves the guide",
            n + 1,
            line.trim().escape_debug()
        )));
    }
    let body = match dropped {
        Some(_) => text::clean_text(
            "the voice guide",
            cleaned.split_once('\n').map_or("", |(_, rest)| rest),
            MAX_GUIDE,
        )
        .map_err(invalid)?,
        None => cleaned,
    };
    if body.is_empty() {
        return Err(invalid("the voice guide is empty".into()));
    }
    Ok((
        format!("{}\n\n{body}\n", text::status_line(text::DRAFT)),
        dropped,
    ))
}

/// Reads a voice guide file: its status by the first line alone.
fn guide_of(file: &str) -> VoiceGuide {
    let (word, rest) = text::split_status(file);
    let (status, body) = match word {
        Some(w) if w == text::APPROVED => (GuideStatus::Approved, rest),
        Some(w) if w == text::DRAFT => (GuideStatus::Draft, rest),
        _ => (GuideStatus::Unmarked, file),
    };
    VoiceGuide {
        path: text::VOICE_GUIDE_PATH.to_string(),
        approved: status == GuideStatus::Approved,
        status,
        text: body.replace("\r\n", "\n").trim_end().to_string(),
    }
}

/// Why a guide that is not approved cannot be used.
fn unusable(guide: &VoiceGuide) -> Option<String> {
    let what = match guide.status {
        GuideStatus::Approved => return None,
        GuideStatus::Draft => "is a draft (`Status: DRAFT`)",
        GuideStatus::Unmarked => "has no status line",
    };
    Some(format!(
        "the voice guide {what}, not approved: copy is written only with an approved guide, and only a person approves it by changing its first line to `Status: APPROVED`"
    ))
}

// ---------------------------------------------------------------------------
// Page copy drafts (pure, unit-tested below)
// ---------------------------------------------------------------------------

/// The checked fields of a draft.
#[derive(Debug, PartialEq)]
struct Draft {
    handle: String,
    title: String,
    description: String,
    seo_title: Option<String>,
    seo_description: Option<String>,
    brief: Option<String>,
}

/// A one-line field that stands on a line of its own in the file.
fn line_field(field: &str, value: &str, max: usize) -> Result<String, ToolError> {
    let value = text::clean_line(field, value, max).map_err(invalid)?;
    text::refuse_status_lines(field, &value).map_err(invalid)?;
    Ok(value)
}

fn check_draft(
    handle: String,
    title: String,
    description: String,
    seo_title: Option<String>,
    seo_description: Option<String>,
    brief: Option<String>,
) -> Result<Draft, ToolError> {
    text::check_name("the product handle", &handle, text::MAX_HANDLE).map_err(invalid)?;
    if let Some(b) = &brief {
        text::check_name("the brief name", b, text::MAX_NAME).map_err(invalid)?;
    }
    let title = line_field("the title", &title, MAX_TITLE)?;
    let seo_title = seo_title
        .map(|t| line_field("the SEO title", &t, MAX_SEO_TITLE))
        .transpose()?;
    let seo_description = seo_description
        .map(|d| line_field("the SEO description", &d, MAX_SEO_DESCRIPTION))
        .transpose()?;
    let description =
        text::clean_text("the description", &description, MAX_DESCRIPTION).map_err(invalid)?;
    if description.is_empty() {
        return Err(invalid("the description is empty".into()));
    }
    text::refuse_status_lines("the description", &description).map_err(invalid)?;
    Ok(Draft {
        handle,
        title,
        description,
        seo_title,
        seo_description,
        brief,
    })
}

/// The draft file:
///
/// ```text
/// Status: DRAFT
/// Product: HANDLE
/// Brief: NAME                 (when named)
///
/// # Title
///
/// ...                         (then `# SEO title`, `# SEO description` when given)
///
/// # Description
///
/// ...
/// ```
fn draft_file(d: &Draft) -> String {
    let mut out = format!(
        "{}\nProduct: {}\n",
        text::status_line(text::DRAFT),
        d.handle
    );
    if let Some(b) = &d.brief {
        out.push_str(&format!("Brief: {b}\n"));
    }
    out.push_str(&format!("\n# Title\n\n{}\n", d.title));
    if let Some(t) = &d.seo_title {
        out.push_str(&format!("\n# SEO title\n\n{t}\n"));
    }
    if let Some(t) = &d.seo_description {
        out.push_str(&format!("\n# SEO description\n\n{t}\n"));
    }
    out.push_str(&format!("\n# Description\n\n{}\n", d.description));
    out
}

// ---------------------------------------------------------------------------
// Briefs
// ---------------------------------------------------------------------------

fn intent_of(word: &str) -> Option<SearchIntent> {
    Some(match word {
        "informational" => SearchIntent::Informational,
        "navigational" => SearchIntent::Navigational,
        "commercial" => SearchIntent::Commercial,
        "transactional" => SearchIntent::Transactional,
        _ => return None,
    })
}

/// A brief file as the content writer may read it: handed off, or refused.
fn handed_off_brief(name: &str, file: &str) -> Result<Brief, ToolError> {
    let (status, b) = text::parse_brief(name, file).map_err(ToolError::refused)?;
    if status != text::BriefStatus::HandedOff {
        return Err(ToolError::refused(format!(
            "the brief `{name}` is saved but not handed off; the SEO analyst hands it off with seo_hand_off_brief"
        )));
    }
    Ok(Brief {
        intent: b.intent.as_deref().and_then(intent_of),
        name: b.name,
        page: b.page,
        primary_keyword: b.primary_keyword,
        secondary_keywords: b.secondary_keywords,
        notes: b.notes,
    })
}

// ---------------------------------------------------------------------------
// The folder
// ---------------------------------------------------------------------------

/// A file's text, `None` when it does not exist.
fn read_text(dir: &folder::Dir, path: &str, max: usize) -> Result<Option<String>, ToolError> {
    let bytes = match dir.read(path) {
        Ok(bytes) => bytes,
        Err(folder::FolderError::NotFound(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if bytes.len() > max {
        return Err(ToolError::refused(format!(
            "{path} is {} bytes; this tool reads at most {max}",
            bytes.len()
        )));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| ToolError::refused(format!("{path} is not UTF-8 text")))
}

fn read_guide(dir: &folder::Dir) -> Result<Option<VoiceGuide>, ToolError> {
    Ok(read_text(dir, text::VOICE_GUIDE_PATH, MAX_GUIDE_FILE)?.map(|f| guide_of(&f)))
}

fn no_guide() -> ToolError {
    ToolError::NotFound(format!(
        "there is no voice guide yet: {} is not in the project folder; save a draft with writer_save_voice_guide",
        text::VOICE_GUIDE_PATH
    ))
}

fn read_brief_file(dir: &folder::Dir, name: &str) -> Result<Brief, ToolError> {
    let path = text::brief_path(name);
    match read_text(dir, &path, text::MAX_BRIEF_FILE)? {
        Some(file) => handed_off_brief(name, &file),
        None => Err(ToolError::NotFound(format!(
            "there is no brief `{name}` ({path})"
        ))),
    }
}

// ---------------------------------------------------------------------------
// Shopify
// ---------------------------------------------------------------------------

/// The request body of `page-content`: the fixed query, the handle its one
/// variable.
fn page_request(handle: &str) -> Result<Vec<u8>, ToolError> {
    graphql::request(PAGE_QUERY, json!({"identifier": {"handle": handle}}))
}

/// Shopify's `errors` as a string (its 401 body), which the SDK's GraphQL
/// reading (a list of `{message}`) does not take.
#[derive(Deserialize)]
struct TextErrors {
    errors: String,
}

#[derive(Deserialize)]
struct PageData {
    #[serde(rename = "productByIdentifier")]
    product: Option<ApiProduct>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiProduct {
    id: String,
    handle: String,
    title: String,
    #[serde(default)]
    description_html: String,
    #[serde(default)]
    seo: Option<ApiSeo>,
    #[serde(default)]
    product_type: String,
    #[serde(default)]
    vendor: String,
    #[serde(default)]
    tags: Vec<String>,
    status: String,
    #[serde(default)]
    online_store_url: Option<String>,
    updated_at: String,
}

#[derive(Deserialize)]
struct ApiSeo {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

/// An empty SEO field is no SEO field.
fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.trim().is_empty())
}

/// Turns Shopify's answer into the page, or a tool error: a string `errors`
/// (whatever the status), then the SDK's [`graphql::data`] (a non-2xx status,
/// 404 `not-found`; `errors` under a 200 whatever `data` holds; no data),
/// then no product by that handle (`not-found`).
fn interpret_page(handle: &str, status: u16, body: &[u8]) -> Result<ProductPage, ToolError> {
    if let Ok(TextErrors { errors }) = serde_json::from_slice(body)
        && !errors.trim().is_empty()
    {
        // The one shape: `not-found` for a 404, `upstream` otherwise (a 200
        // included), the message cut.
        return Err(status_error_with(status, errors));
    }
    graphql::data::<IgnoredAny>(status, body)?;
    let data: PageData = graphql::data(status, body)?;
    let Some(p) = data.product else {
        return Err(ToolError::NotFound(format!(
            "the store has no product with the handle `{handle}`"
        )));
    };
    let (seo_title, seo_description) = match p.seo {
        Some(s) => (non_empty(s.title), non_empty(s.description)),
        None => (None, None),
    };
    Ok(ProductPage {
        id: p.id,
        handle: p.handle,
        title: p.title,
        description_html: p.description_html,
        seo_title,
        seo_description,
        product_type: p.product_type,
        vendor: p.vendor,
        tags: p.tags,
        status: p.status,
        online_store_url: p.online_store_url,
        updated_at: p.updated_at,
    })
}

// ---------------------------------------------------------------------------
// The tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct Writer;

impl read_tools::Guest for Writer {
    fn read_voice_guide() -> Result<VoiceGuide, ToolError> {
        let dir = folder::open(FOLDER)?;
        read_guide(&dir)?.ok_or_else(no_guide)
    }

    fn save_voice_guide(guide: String) -> Result<SavedGuide, ToolError> {
        let (file, dropped) = voice_guide_file(&guide)?;
        let dir = folder::open(FOLDER)?;
        let existing = read_guide(&dir)?;
        match &existing {
            Some(g) if g.status == GuideStatus::Approved => {
                return Err(ToolError::refused(
                    "the voice guide is approved; this tool never replaces an approved guide. A person changes it (or sets its first line back to `Status: DRAFT`)",
                ));
            }
            Some(g) if g.status == GuideStatus::Unmarked => {
                return Err(ToolError::refused(
                    "voice-guide.md has no status line, so a person wrote it; this tool replaces only a draft guide",
                ));
            }
            _ => {}
        }
        dir.write(text::VOICE_GUIDE_PATH, file.as_bytes())?;
        Ok(SavedGuide {
            path: text::VOICE_GUIDE_PATH.to_string(),
            status: GuideStatus::Draft,
            replaced: existing.is_some(),
            dropped_status_line: dropped,
        })
    }

    fn page_content(handle: String) -> Result<ProductPage, ToolError> {
        text::check_name("the product handle", &handle, text::MAX_HANDLE).map_err(invalid)?;
        let http = Http::connect_to(SHOPIFY)?.with_header("accept", "application/json");
        let response = http.send(Method::Post, ENDPOINT, &[], Some(page_request(&handle)?))?;
        interpret_page(&handle, response.status, &response.body)
    }

    fn read_brief(name: String) -> Result<Brief, ToolError> {
        text::check_name("the brief name", &name, text::MAX_NAME).map_err(invalid)?;
        let dir = folder::open(FOLDER)?;
        read_brief_file(&dir, &name)
    }

    fn save_draft(
        handle: String,
        title: String,
        description: String,
        seo_title: Option<String>,
        seo_description: Option<String>,
        brief: Option<String>,
        replace: Option<bool>,
    ) -> Result<SavedDraft, ToolError> {
        let draft = check_draft(
            handle,
            title,
            description,
            seo_title,
            seo_description,
            brief,
        )?;
        let dir = folder::open(FOLDER)?;
        let guide = read_guide(&dir)?.ok_or_else(|| {
            ToolError::refused(
                "there is no voice guide: copy is written only with an approved guide",
            )
        })?;
        if let Some(why) = unusable(&guide) {
            return Err(ToolError::refused(why));
        }
        if let Some(name) = &draft.brief {
            let b = read_brief_file(&dir, name)?;
            if b.page != draft.handle {
                return Err(ToolError::refused(format!(
                    "the brief `{name}` is for the page `{}`, not `{}`",
                    b.page, draft.handle
                )));
            }
        }
        let path = text::draft_path(&draft.handle);
        let exists = read_text(&dir, &path, MAX_GUIDE_FILE)?.is_some();
        if exists && replace != Some(true) {
            return Err(ToolError::refused(format!(
                "{path} exists; pass `replace: true` to replace it (a person may have edited it)"
            )));
        }
        dir.write(&path, draft_file(&draft).as_bytes())?;
        Ok(SavedDraft {
            path,
            replaced: exists,
        })
    }
}

scout_sdk::export!(Writer);

#[cfg(test)]
mod tests {
    use super::*;
    use scout_sdk::UpstreamError;
    use serde_json::Value;

    fn saved(text: &str) -> String {
        voice_guide_file(text).unwrap().0
    }

    #[test]
    fn a_saved_guide_is_always_a_draft() {
        assert_eq!(
            saved("Warm, plain, short.\n"),
            "Status: DRAFT\n\nWarm, plain, short.\n"
        );
        assert_eq!(
            saved("\r\n\r\nWarm.\r\nPlain.\r\n"),
            "Status: DRAFT\n\nWarm.\nPlain.\n"
        );
        let file = saved("# Voice\n\nWarm.");
        assert_eq!(guide_of(&file).status, GuideStatus::Draft);
        assert!(!guide_of(&file).approved);
    }

    #[test]
    fn a_smuggled_status_line_at_the_start_is_dropped() {
        for smuggled in [
            "Status: APPROVED",
            "status: approved",
            "  Status: APPROVED",
            "\u{200b}Status: APPROVED",
            "**Status:** APPROVED",
            "# Status: APPROVED",
            "APPROVED",
            "Status: DRAFT",
        ] {
            let (file, dropped) =
                voice_guide_file(&format!("{smuggled}\r\n\r\n# Voice\nWarm.")).unwrap();
            assert_eq!(file, "Status: DRAFT\n\n# Voice\nWarm.\n", "{smuggled:?}");
            assert_eq!(
                dropped.as_deref(),
                Some(smuggled.trim_start_matches(' ')),
                "{smuggled:?}"
            );
            assert_eq!(guide_of(&file).status, GuideStatus::Draft);
        }
        // A BOM is refused outright rather than dropped.
        assert!(voice_guide_file("\u{feff}Status: APPROVED\nWarm.").is_err());
    }

    #[test]
    fn a_status_line_anywhere_else_is_refused() {
        for text in [
            "# Voice\nWarm.\nStatus: APPROVED\n",
            "Status: APPROVED\nWarm.\nStatus: APPROVED",
            "Warm.\n\n> **Status**: approved",
            "Warm.\n   STATUS=APPROVED",
            "Warm.\n✅ APPROVED",
        ] {
            let err = voice_guide_file(text).unwrap_err();
            assert!(
                matches!(&err, ToolError::InvalidInput(m) if m.contains("reads as a status line")),
                "{text:?}: {err:?}"
            );
        }
        let err = voice_guide_file("Warm.\nPlain.\nStatus: APPROVED").unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidInput(m) if m.starts_with("line 3 of the voice guide"))
        );
        // A lone CR would let `Status: DRAFT\rStatus: APPROVED` look like two lines.
        assert!(voice_guide_file("Warm.\rStatus: APPROVED").is_err());
        assert!(
            voice_guide_file("Status: APPROVED\n\n").is_err(),
            "nothing but a status line is empty"
        );
        assert!(voice_guide_file(&"a".repeat(MAX_GUIDE + 1)).is_err());
    }

    #[test]
    fn only_an_exact_first_line_approves() {
        let g = guide_of("Status: APPROVED\n\n# Voice\nWarm.\n");
        assert_eq!(
            (g.status, g.approved, g.text.as_str()),
            (GuideStatus::Approved, true, "# Voice\nWarm.")
        );
        assert!(guide_of("Status: APPROVED\r\n\r\nWarm.\r\n").approved);
        for not in [
            "status: approved\nWarm.",
            " Status: APPROVED\nWarm.",
            "\u{feff}Status: APPROVED\nWarm.",
            "Status: Approved\nWarm.",
            "Status: DRAFT\nStatus: APPROVED\nWarm.",
            "Warm.\nStatus: APPROVED",
            "# Status: APPROVED\nWarm.",
        ] {
            let g = guide_of(not);
            assert!(!g.approved, "{not:?}");
            assert!(unusable(&g).is_some());
        }
        let g = guide_of("# Voice\nWarm.");
        assert_eq!(
            (g.status, g.text.as_str()),
            (GuideStatus::Unmarked, "# Voice\nWarm.")
        );
        assert!(unusable(&guide_of("Status: APPROVED\nx")).is_none());
    }

    fn draft() -> Result<Draft, ToolError> {
        check_draft(
            "linen-shirt".into(),
            "Linen Shirt".into(),
            "Cool in summer.\n\nMachine washable.".into(),
            Some("Linen Shirt for Men | Breathable".into()),
            None,
            Some("linen-shirt".into()),
        )
    }

    #[test]
    fn a_draft_file_is_a_draft() {
        assert_eq!(
            draft_file(&draft().unwrap()),
            "Status: DRAFT\nProduct: linen-shirt\nBrief: linen-shirt\n\n# Title\n\nLinen Shirt\n\n# SEO title\n\nLinen Shirt for Men | Breathable\n\n# Description\n\nCool in summer.\n\nMachine washable.\n"
        );
    }

    #[test]
    fn draft_fields_are_checked() {
        let with =
            |h: &str, t: &str, d: &str, st: Option<&str>, sd: Option<&str>, b: Option<&str>| {
                check_draft(
                    h.into(),
                    t.into(),
                    d.into(),
                    st.map(Into::into),
                    sd.map(Into::into),
                    b.map(Into::into),
                )
            };
        assert!(draft().is_ok());
        assert!(with("../x", "T", "D", None, None, None).is_err());
        assert!(with("x", "T", "D", None, None, Some("a/b")).is_err());
        assert!(with("x", "", "D", None, None, None).is_err());
        assert!(with("x", "T\nU", "D", None, None, None).is_err());
        assert!(with("x", "Status: APPROVED", "D", None, None, None).is_err());
        assert!(with("x", "T", "D\nStatus: APPROVED", None, None, None).is_err());
        assert!(with("x", "T", " \n ", None, None, None).is_err());
        assert!(with("x", "T", "D", Some(&"s".repeat(71)), None, None).is_err());
        assert!(with("x", "T", "D", Some(&"s".repeat(70)), None, None).is_ok());
        assert!(with("x", "T", "D", None, Some(&"s".repeat(321)), None).is_err());
        assert!(with("x", &"t".repeat(256), "D", None, None, None).is_err());
        assert!(with("x", "Status Quo Tee", "D", None, None, None).is_ok());
    }

    const HANDED_OFF: &str = "Status: HANDED OFF\nBrief: linen-shirt\nPage: linen-shirt\nPrimary keyword: linen shirt men\nSecondary keyword: summer shirt\nIntent: commercial\n\nLead with breathability.\n";

    #[test]
    fn only_handed_off_briefs_are_read() {
        let b = handed_off_brief("linen-shirt", HANDED_OFF).unwrap();
        assert_eq!(b.page, "linen-shirt");
        assert_eq!(b.secondary_keywords, ["summer shirt"]);
        assert_eq!(b.intent, Some(SearchIntent::Commercial));
        assert_eq!(b.notes, "Lead with breathability.");
        let saved = HANDED_OFF.replace("HANDED OFF", "SAVED");
        assert!(
            matches!(handed_off_brief("linen-shirt", &saved), Err(ToolError::Refused(m)) if m.contains("not handed off"))
        );
        let approved = HANDED_OFF.replace("HANDED OFF", "APPROVED");
        assert!(matches!(
            handed_off_brief("linen-shirt", &approved),
            Err(ToolError::Refused(_))
        ));
        for word in text::INTENTS {
            assert!(intent_of(word).is_some());
        }
    }

    fn page(status: u16, body: Value) -> Result<ProductPage, ToolError> {
        interpret_page("linen-shirt", status, body.to_string().as_bytes())
    }

    #[test]
    fn shopify_answers_map_to_the_page_or_an_error() {
        let ok = page(
            200,
            json!({"data": {"productByIdentifier": {"id": "gid://shopify/Product/1", "handle": "linen-shirt", "title": "Linen Shirt",
                "descriptionHtml": "<p>Cool.</p>", "seo": {"title": "", "description": null}, "productType": "Shirts", "vendor": "Acme",
                "tags": ["linen"], "status": "ACTIVE", "onlineStoreUrl": null, "updatedAt": "2026-10-01T12:00:00Z"}}}),
        )
        .unwrap();
        assert_eq!(
            (ok.seo_title, ok.seo_description),
            (None, None),
            "an empty SEO title is none"
        );
        assert!(
            matches!(page(200, json!({"data": {"productByIdentifier": null}})), Err(ToolError::NotFound(m)) if m.contains("`linen-shirt`"))
        );
        assert!(
            matches!(page(200, json!({"errors": [{"message": "Throttled", "extensions": {"code": "THROTTLED"}}]})),
            Err(ToolError::Upstream(UpstreamError { status: 200, message })) if message == "Throttled")
        );
        assert!(matches!(
            page(
                401,
                json!({"errors": "[API] Invalid API key or access token (unrecognized login or wrong password)"})
            ),
            Err(ToolError::Upstream(UpstreamError { status: 401, .. }))
        ));
        assert!(matches!(
            page(404, json!({"errors": "Not Found"})),
            Err(ToolError::NotFound(_))
        ));
        assert!(matches!(
            page(200, json!({"data": null})),
            Err(ToolError::BadResponse(_))
        ));
        assert!(matches!(
            page(200, json!({"data": {"productByIdentifier": {"id": 1}}})),
            Err(ToolError::BadResponse(_))
        ));
        assert!(
            matches!(page(200, json!({"data": {"productByIdentifier": {"id": 1}}, "errors": [{"message": "Access denied"}]})),
            Err(ToolError::Upstream(UpstreamError { status: 200, message })) if message == "Access denied"),
            "errors win whatever data holds"
        );
        assert!(matches!(
            page(401, json!({"errors": "x".repeat(2000)})),
            Err(ToolError::Upstream(UpstreamError { status: 401, message })) if message.len() == scout_sdk::errors::MAX_MESSAGE
        ));
        assert!(matches!(
            interpret_page("x", 503, b"upstream connect error"),
            Err(ToolError::Upstream(UpstreamError { status: 503, .. }))
        ));
    }

    #[test]
    fn the_page_query_is_one_fixed_query_and_only_the_handle_travels() {
        assert!(PAGE_QUERY.starts_with("query "));
        assert!(!PAGE_QUERY.to_lowercase().contains("mutation"));
        let body: Value = serde_json::from_slice(&page_request("linen-shirt").unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"query": PAGE_QUERY, "variables": {"identifier": {"handle": "linen-shirt"}}})
        );
    }
}
