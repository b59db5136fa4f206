//! The text rules of the files the SEO brief tools (`connectors/seo`) and the
//! content writer tools (`connectors/writer`) keep in a brand's project
//! folder. Both components link this crate, so the brief the SEO analyst
//! saves is parsed by the content writer with the same code that wrote it.
//!
//! Pure functions only (no host call), unit-tested natively. Errors are
//! plain sentences; each connector turns them into its `tool-error`.
//!
//! The files:
//! - `voice-guide.md`: first line `Status: DRAFT` or `Status: APPROVED`, a
//!   blank line, the guide. Only a person writes `Status: APPROVED`.
//! - `briefs/NAME.md`: first line `Status: SAVED` or `Status: HANDED OFF`,
//!   then `Key: value` header lines, a blank line and the notes
//!   ([`render_brief`], [`parse_brief`]).
//! - `drafts/HANDLE.md`: page copy, first line `Status: DRAFT`.
//!
//! A file's status is decided by its first line alone, compared exactly
//! ([`split_status`]). Text an agent supplies may never contain a line that
//! looks like a status line to a reader ([`is_status_like`]), whatever its
//! case, spacing, decoration or invisible characters, and never a control,
//! line-separator or bidirectional-control character ([`clean_text`]).

/// The voice guide's path in the project folder.
pub const VOICE_GUIDE_PATH: &str = "voice-guide.md";
/// Longest brief name (a file name without `.md`).
pub const MAX_NAME: usize = 64;
/// Longest Shopify product handle accepted (the draft's file name is
/// `HANDLE.md`, and file names are at most 255 bytes on common file systems).
pub const MAX_HANDLE: usize = 200;
/// Longest keyword, in characters.
pub const MAX_KEYWORD: usize = 100;
/// Most secondary keywords in a brief.
pub const MAX_SECONDARY_KEYWORDS: usize = 20;
/// Largest brief notes, in bytes.
pub const MAX_NOTES: usize = 16 * 1024;
/// Largest brief file read back, in bytes.
pub const MAX_BRIEF_FILE: usize = 32 * 1024;

/// The status word of a draft (voice guide, page copy).
pub const DRAFT: &str = "DRAFT";
/// The status word only a person writes into the voice guide.
pub const APPROVED: &str = "APPROVED";
/// A brief saved by the SEO analyst, not yet handed off.
pub const SAVED: &str = "SAVED";
/// A brief the SEO analyst handed off to the content writer.
pub const HANDED_OFF: &str = "HANDED OFF";

/// `briefs/NAME.md` (the name already checked with [`check_name`]).
pub fn brief_path(name: &str) -> String {
    format!("briefs/{name}.md")
}

/// `drafts/HANDLE.md` (the handle already checked with [`check_name`]).
pub fn draft_path(handle: &str) -> String {
    format!("drafts/{handle}.md")
}

/// `Status: WORD`, the first line of every file these tools write.
pub fn status_line(word: &str) -> String {
    format!("Status: {word}")
}

/// Checks a name that becomes a file name: 1 to `max` bytes of `a-z`, `0-9`
/// and `-`, starting and ending with a letter or digit. So no `/`, `\`,
/// `.`, `..`, space, control character, upper case or anything non-ASCII
/// ever reaches a path.
pub fn check_name(what: &str, name: &str, max: usize) -> Result<(), String> {
    let shaped = !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if shaped {
        Ok(())
    } else {
        Err(format!(
            "{what} `{}` must be 1 to {max} characters of a-z, 0-9 and `-`, starting and ending with a letter or digit",
            shown(name)
        ))
    }
}

/// A value cut to 80 characters and escaped, for an error message.
fn shown(value: &str) -> String {
    let mut out: String = value
        .chars()
        .take(80)
        .collect::<String>()
        .escape_debug()
        .to_string();
    if value.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// A character no saved text may hold: C0 and C1 controls but `\n` and `\t`
/// (a lone `\r` included: `\r\n` is turned into `\n` first), Unicode line
/// and paragraph separators (they break lines in some viewers), the byte
/// order mark, and bidirectional controls (they make text read differently
/// from how it is stored).
fn refused_char(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
        )
        || ('\u{202A}'..='\u{202E}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// Checks multi-line text an agent wants saved: at most `max_bytes`, no
/// refused character ([`refused_char`]). Returns it with `\r\n` turned into
/// `\n`, leading blank lines and trailing whitespace removed.
pub fn clean_text(field: &str, text: &str, max_bytes: usize) -> Result<String, String> {
    if text.len() > max_bytes {
        return Err(format!(
            "{field} is {} bytes; the most is {max_bytes}",
            text.len()
        ));
    }
    let text = text.replace("\r\n", "\n");
    if let Some(c) = text.chars().find(|c| refused_char(*c)) {
        return Err(format!(
            "{field} contains the character U+{:04X}; control, line-separator, byte-order-mark and bidirectional-control characters are refused",
            c as u32
        ));
    }
    Ok(trim_blank(&text).to_string())
}

/// Text without its leading blank lines and trailing whitespace.
fn trim_blank(text: &str) -> &str {
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        if !line.trim().is_empty() {
            break;
        }
        start += line.len();
    }
    text[start..].trim_end()
}

/// Checks a one-line value (a keyword): trimmed, not empty, at most
/// `max_chars` characters, no line break or refused character.
pub fn clean_line(field: &str, text: &str, max_chars: usize) -> Result<String, String> {
    let value = text.trim();
    if value.is_empty() {
        return Err(format!("{field} is empty"));
    }
    if value.chars().count() > max_chars {
        return Err(format!("{field} is longer than {max_chars} characters"));
    }
    if let Some(c) = value
        .chars()
        .find(|c| refused_char(*c) || *c == '\n' || *c == '\t')
    {
        return Err(format!(
            "{field} must be one line of text; it contains U+{:04X}",
            c as u32
        ));
    }
    Ok(value.to_string())
}

/// Characters that change nothing a reader sees (zero-width spaces and
/// joiners, word joiner, invisible operators, soft hyphen, BOM).
fn invisible(c: char) -> bool {
    matches!(c, '\u{00AD}' | '\u{180E}' | '\u{FEFF}' | '\u{034F}')
        || ('\u{200B}'..='\u{200D}').contains(&c)
        || ('\u{2060}'..='\u{2064}').contains(&c)
}

/// Fullwidth ASCII (`ＡＰＰＲＯＶＥＤ`, `：`) read as ASCII.
fn fold_fullwidth(c: char) -> char {
    match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        '\u{3000}' => ' ',
        _ => c,
    }
}

/// What may follow `status` for a line to be read as a status label.
const SEPARATORS: [char; 12] = [':', '：', '﹕', '꞉', '∶', '=', '-', '–', '—', '|', '>', '→'];

/// Whether a line would read as a status line to a person or a model:
/// - after invisible characters are dropped, fullwidth forms read as ASCII, anything not a letter is
///   stripped from its start (`#`, `>`, `*`, `1.`, `✅`, spaces) and it is
///   lower-cased, it begins with `status` followed (past spaces and `*_~`)
///   by a separator (`:`, `：`, `=`, `-`, `—`, `|`, ...) or nothing; or
/// - its letters and digits alone are `approved`, or begin with
///   `statusapproved`, or are `statusdraft`, `statussaved`,
///   `statushandedoff` (`**APPROVED**`, `Status APPROVED by Jo`).
///
/// `Status updates go out weekly` or `Approved phrases` are prose.
pub fn is_status_like(line: &str) -> bool {
    let lower: String = line
        .chars()
        .filter(|c| !invisible(*c))
        .map(fold_fullwidth)
        .collect::<String>()
        .to_lowercase();
    let start = lower.trim_start_matches(|c: char| !c.is_alphabetic());
    if let Some(rest) = start.strip_prefix("status") {
        let rest = rest
            .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_' | '~' | '`'));
        match rest.chars().next() {
            None => return true,
            Some(c) if SEPARATORS.contains(&c) => return true,
            Some(_) => {}
        }
    }
    let letters: String = lower.chars().filter(|c| c.is_alphanumeric()).collect();
    letters == "approved"
        || letters.starts_with("statusapproved")
        || matches!(
            letters.as_str(),
            "statusdraft" | "statussaved" | "statushandedoff"
        )
}

/// The first line of `text` that [`is_status_like`], as (1-based number, line).
pub fn first_status_like(text: &str) -> Option<(usize, &str)> {
    text.lines()
        .enumerate()
        .find(|(_, l)| is_status_like(l))
        .map(|(i, l)| (i + 1, l))
}

/// Refuses text holding a status-like line, naming it.
pub fn refuse_status_lines(field: &str, text: &str) -> Result<(), String> {
    match first_status_like(text) {
        None => Ok(()),
        Some((n, line)) => Err(format!(
            "{field} line {n} reads as a status line (`{}`); the tool writes a file's only status line itself, and only a person approves",
            shown(line)
        )),
    }
}

/// Splits a file into its status word and the rest. The first line must be
/// exactly `Status: WORD` (WORD upper-case letters and spaces), with at most
/// a trailing `\r`, spaces or tabs; anything else (a BOM, leading space,
/// another case, `**Status:**`) is no status: `(None, text)`. The rest drops
/// the blank lines after the status line.
pub fn split_status(text: &str) -> (Option<&str>, &str) {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let first = first
        .strip_suffix('\r')
        .unwrap_or(first)
        .trim_end_matches([' ', '\t']);
    match first.strip_prefix("Status: ") {
        Some(word)
            if !word.is_empty()
                && !word.starts_with(' ')
                && !word.ends_with(' ')
                && word.bytes().all(|b| b.is_ascii_uppercase() || b == b' ') =>
        {
            let mut rest = rest;
            while let Some(line_end) = rest.find('\n') {
                if rest[..line_end].trim().is_empty() {
                    rest = &rest[line_end + 1..];
                } else {
                    break;
                }
            }
            if rest.trim().is_empty() {
                rest = "";
            }
            (Some(word), rest)
        }
        _ => (None, text),
    }
}

/// The search intents of a brief, as they are written in the file.
pub const INTENTS: [&str; 4] = [
    "informational",
    "navigational",
    "commercial",
    "transactional",
];

/// Where a brief stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BriefStatus {
    /// Saved by the SEO analyst; the content writer cannot read it yet.
    Saved,
    /// Handed off to the content writer.
    HandedOff,
}

impl BriefStatus {
    /// The status word in the file.
    pub fn word(self) -> &'static str {
        match self {
            BriefStatus::Saved => SAVED,
            BriefStatus::HandedOff => HANDED_OFF,
        }
    }
}

/// An SEO brief: which product page, which keywords, what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    /// Its name: the file is `briefs/NAME.md`.
    pub name: String,
    /// The Shopify product handle of the page it is for.
    pub page: String,
    /// The keyword the page should rank for.
    pub primary_keyword: String,
    /// Further keywords, in order.
    pub secondary_keywords: Vec<String>,
    /// One of [`INTENTS`], if given.
    pub intent: Option<String>,
    /// What the content writer should do, in the analyst's words (may be empty).
    pub notes: String,
}

/// Checks every field of a brief and returns it normalised (trimmed
/// keywords, cleaned notes). The same checks run when a brief is saved and
/// when one is read back, so a hand-edited file that breaks them is refused.
pub fn check_brief(brief: Brief) -> Result<Brief, String> {
    check_name("the brief name", &brief.name, MAX_NAME)?;
    check_name("the page handle", &brief.page, MAX_HANDLE)?;
    let primary_keyword = clean_line("the primary keyword", &brief.primary_keyword, MAX_KEYWORD)?;
    if brief.secondary_keywords.len() > MAX_SECONDARY_KEYWORDS {
        return Err(format!(
            "{} secondary keywords; the most is {MAX_SECONDARY_KEYWORDS}",
            brief.secondary_keywords.len()
        ));
    }
    let mut secondary_keywords: Vec<String> = Vec::new();
    for (i, keyword) in brief.secondary_keywords.iter().enumerate() {
        let keyword = clean_line(
            &format!("secondary keyword {}", i + 1),
            keyword,
            MAX_KEYWORD,
        )?;
        let folded = keyword.to_lowercase();
        if folded == primary_keyword.to_lowercase()
            || secondary_keywords
                .iter()
                .any(|k| k.to_lowercase() == folded)
        {
            return Err(format!("the keyword `{}` is given twice", shown(&keyword)));
        }
        secondary_keywords.push(keyword);
    }
    if let Some(intent) = &brief.intent
        && !INTENTS.contains(&intent.as_str())
    {
        return Err(format!(
            "the intent `{}` is not one of {}",
            shown(intent),
            INTENTS.join(", ")
        ));
    }
    let notes = clean_text("the notes", &brief.notes, MAX_NOTES)?;
    refuse_status_lines("the notes", &notes)?;
    Ok(Brief {
        name: brief.name,
        page: brief.page,
        primary_keyword,
        secondary_keywords,
        intent: brief.intent,
        notes,
    })
}

/// The file of a checked brief:
///
/// ```text
/// Status: SAVED
/// Brief: NAME
/// Page: HANDLE
/// Primary keyword: ...
/// Secondary keyword: ...        (one line each, in order)
/// Intent: commercial            (when given)
///
/// NOTES                         (when not empty)
/// ```
pub fn render_brief(status: BriefStatus, brief: &Brief) -> String {
    let mut out = format!("{}\n", status_line(status.word()));
    out.push_str(&format!("Brief: {}\n", brief.name));
    out.push_str(&format!("Page: {}\n", brief.page));
    out.push_str(&format!("Primary keyword: {}\n", brief.primary_keyword));
    for keyword in &brief.secondary_keywords {
        out.push_str(&format!("Secondary keyword: {keyword}\n"));
    }
    if let Some(intent) = &brief.intent {
        out.push_str(&format!("Intent: {intent}\n"));
    }
    if !brief.notes.is_empty() {
        out.push('\n');
        out.push_str(&brief.notes);
        out.push('\n');
    }
    out
}

/// Reads a brief file back (the inverse of [`render_brief`]); `name` is the
/// name it was opened by, which the file's `Brief:` line must repeat. Any
/// other shape is an error: no line is guessed at.
pub fn parse_brief(name: &str, text: &str) -> Result<(BriefStatus, Brief), String> {
    let not_a_brief = |why: String| {
        format!(
            "{} is not a brief as seo_save_brief writes it: {why}",
            brief_path(name)
        )
    };
    if text.len() > MAX_BRIEF_FILE {
        return Err(not_a_brief(format!(
            "it is larger than {MAX_BRIEF_FILE} bytes"
        )));
    }
    let text = text.replace("\r\n", "\n");
    if let Some(c) = text.chars().find(|c| refused_char(*c)) {
        return Err(not_a_brief(format!("it contains U+{:04X}", c as u32)));
    }
    let (header, notes) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut lines = header.lines();
    let status = match lines.next() {
        Some(l) if l == status_line(SAVED) => BriefStatus::Saved,
        Some(l) if l == status_line(HANDED_OFF) => BriefStatus::HandedOff,
        Some(l) => {
            return Err(not_a_brief(format!(
                "its first line `{}` is not `Status: SAVED` or `Status: HANDED OFF`",
                shown(l)
            )));
        }
        None => return Err(not_a_brief("it is empty".into())),
    };
    let mut field = |key: &str| -> Result<String, String> {
        match lines
            .next()
            .and_then(|l| l.strip_prefix(key))
            .and_then(|v| v.strip_prefix(": "))
        {
            Some(v) => Ok(v.to_string()),
            None => Err(not_a_brief(format!("the `{key}:` line is missing"))),
        }
    };
    let file_name = field("Brief")?;
    let page = field("Page")?;
    let primary_keyword = field("Primary keyword")?;
    let (mut secondary_keywords, mut intent) = (Vec::new(), None);
    for line in lines {
        if let Some(k) = line.strip_prefix("Secondary keyword: ")
            && intent.is_none()
        {
            secondary_keywords.push(k.to_string());
        } else if let Some(i) = line.strip_prefix("Intent: ")
            && intent.is_none()
        {
            intent = Some(i.to_string());
        } else {
            return Err(not_a_brief(format!(
                "the header line `{}` is not one it writes",
                shown(line)
            )));
        }
    }
    if file_name != name {
        return Err(not_a_brief(format!(
            "its `Brief:` line names `{}`",
            shown(&file_name)
        )));
    }
    let brief = Brief {
        name: file_name,
        page,
        primary_keyword,
        secondary_keywords,
        intent,
        notes: notes.to_string(),
    };
    let brief = check_brief(brief).map_err(not_a_brief)?;
    Ok((status, brief))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_slugs_and_nothing_else() {
        for ok in ["a", "spring-sale", "tee-2", "x1"] {
            assert!(check_name("the name", ok, MAX_NAME).is_ok(), "{ok}");
        }
        for bad in [
            "", "-a", "a-", "A", "Spring", "a/b", "../a", "..", ".", "a.md", "a b", "a\0", "a\n",
            "é", "a_b", "a\\b", "%2e%2e",
        ] {
            assert!(check_name("the name", bad, MAX_NAME).is_err(), "{bad:?}");
        }
        assert!(check_name("n", &"a".repeat(64), 64).is_ok());
        assert!(check_name("n", &"a".repeat(65), 64).is_err());
        let err = check_name("the brief name", "../../etc/passwd", MAX_NAME).unwrap_err();
        assert_eq!(
            err,
            "the brief name `../../etc/passwd` must be 1 to 64 characters of a-z, 0-9 and `-`, starting and ending with a letter or digit"
        );
        assert!(
            check_name("n", "a\u{7}", 64)
                .unwrap_err()
                .contains("a\\u{7}"),
            "the name is escaped in the message"
        );
    }

    #[test]
    fn text_is_cleaned_or_refused() {
        assert_eq!(
            clean_text("t", "\n\n  \nHello\r\nworld  \n\n", 100).unwrap(),
            "Hello\nworld"
        );
        assert_eq!(clean_text("t", "a\r\nb\n", 100).unwrap(), "a\nb");
        assert_eq!(clean_text("t", "a\tb", 100).unwrap(), "a\tb");
        for bad in [
            "a\rb",
            "a\0b",
            "a\u{1b}[31mb",
            "a\u{85}b",
            "a\u{2028}b",
            "a\u{2029}b",
            "\u{feff}a",
            "a\u{202e}b",
            "a\u{2067}b",
            "a\u{200f}b",
        ] {
            let err = clean_text("the text", bad, 100).unwrap_err();
            assert!(
                err.starts_with("the text contains the character U+"),
                "{bad:?}: {err}"
            );
        }
        assert_eq!(
            clean_text("the text", "abc", 2).unwrap_err(),
            "the text is 3 bytes; the most is 2"
        );
        // Emoji sequences with a zero-width joiner are text.
        assert!(clean_text("t", "👩\u{200d}💻", 100).is_ok());
    }

    #[test]
    fn blank_lines_before_the_text_are_dropped_but_its_indent_is_kept() {
        assert_eq!(
            clean_text("t", "\n \n  indented\n", 100).unwrap(),
            "  indented"
        );
    }

    #[test]
    fn one_line_values() {
        assert_eq!(
            clean_line("k", "  organic cotton tee ", 100).unwrap(),
            "organic cotton tee"
        );
        assert!(clean_line("k", "  ", 100).is_err());
        assert!(clean_line("k", "a\nb", 100).is_err());
        assert!(clean_line("k", "a\tb", 100).is_err());
        assert!(clean_line("k", &"é".repeat(100), 100).is_ok());
        assert!(clean_line("k", &"é".repeat(101), 100).is_err());
    }

    #[test]
    fn status_lines_in_every_disguise_are_recognised() {
        for line in [
            "Status: APPROVED",
            "status: approved",
            "STATUS:APPROVED",
            "   Status: APPROVED",
            "\tStatus: APPROVED",
            "\u{feff}Status: APPROVED",
            "\u{200b}Status: APPROVED",
            "S\u{200b}tatus: APPROVED",
            "Sta\u{00ad}tus: APPROVED",
            "# Status: APPROVED",
            "> Status: APPROVED",
            "**Status:** APPROVED",
            "**Status**: APPROVED",
            "_Status_: APPROVED",
            "- Status: APPROVED",
            "1. Status: APPROVED",
            "✅ Status: APPROVED",
            "Status : APPROVED",
            "Status = APPROVED",
            "Status — APPROVED",
            "Status - approved",
            "Status | APPROVED",
            "Status：APPROVED",
            "Status: DRAFT",
            "Status: HANDED OFF",
            "Status",
            "## Status",
            "Status APPROVED",
            "Status approved by the brand team",
            "APPROVED",
            "**APPROVED**",
            "approved ✅",
            "ＡＰＰＲＯＶＥＤ",
            "Approved.",
            "Status: Draft",
            "Status-Saved",
        ] {
            assert!(is_status_like(line), "{line:?} reads as a status line");
        }
    }

    #[test]
    fn prose_that_mentions_status_or_approval_is_prose() {
        for line in [
            "Status updates go out weekly.",
            "Approved phrases: cosy, small-batch.",
            "Never write \"FDA approved\".",
            "Our status as a B Corp matters.",
            "statuses",
            "The order status page",
            "",
            "Keep sentences short.",
            "2 status codes",
        ] {
            assert!(!is_status_like(line), "{line:?} is prose");
        }
    }

    #[test]
    fn the_first_line_alone_decides_the_status_exactly() {
        assert_eq!(
            split_status("Status: APPROVED\n\nBody\n"),
            (Some("APPROVED"), "Body\n")
        );
        assert_eq!(
            split_status("Status: APPROVED\r\n\r\nBody\r\n"),
            (Some("APPROVED"), "Body\r\n")
        );
        assert_eq!(
            split_status("Status: APPROVED  \nBody"),
            (Some("APPROVED"), "Body")
        );
        assert_eq!(split_status("Status: DRAFT\n\n"), (Some("DRAFT"), ""));
        assert_eq!(
            split_status("Status: HANDED OFF\nx"),
            (Some("HANDED OFF"), "x")
        );
        for no in [
            "\u{feff}Status: APPROVED\nBody",
            " Status: APPROVED\nBody",
            "status: APPROVED\nBody",
            "Status: approved\nBody",
            "Status:APPROVED\nBody",
            "Status:  APPROVED\nBody",
            "**Status:** APPROVED\nBody",
            "Status: APPROVED!\nBody",
            "Status: \nBody",
            "Body\nStatus: APPROVED\n",
            "",
        ] {
            assert_eq!(split_status(no), (None, no), "{no:?}");
        }
    }

    fn brief() -> Brief {
        Brief {
            name: "linen-shirt".into(),
            page: "linen-shirt".into(),
            primary_keyword: "linen shirt men".into(),
            secondary_keywords: vec!["breathable linen shirt".into(), "summer shirt".into()],
            intent: Some("commercial".into()),
            notes: "Lead with breathability.\n\nMention the care label.".into(),
        }
    }

    const BRIEF_FILE: &str = "Status: SAVED\nBrief: linen-shirt\nPage: linen-shirt\nPrimary keyword: linen shirt men\nSecondary keyword: breathable linen shirt\nSecondary keyword: summer shirt\nIntent: commercial\n\nLead with breathability.\n\nMention the care label.\n";

    #[test]
    fn a_brief_round_trips_through_its_file() {
        let b = check_brief(brief()).unwrap();
        let text = render_brief(BriefStatus::Saved, &b);
        assert_eq!(text, BRIEF_FILE);
        assert_eq!(
            parse_brief("linen-shirt", &text).unwrap(),
            (BriefStatus::Saved, b.clone())
        );
        let handed = render_brief(BriefStatus::HandedOff, &b);
        assert!(handed.starts_with("Status: HANDED OFF\nBrief: linen-shirt\n"));
        assert_eq!(
            parse_brief("linen-shirt", &handed).unwrap(),
            (BriefStatus::HandedOff, b.clone())
        );
        // CRLF from a person's editor reads the same.
        assert_eq!(
            parse_brief("linen-shirt", &handed.replace('\n', "\r\n"))
                .unwrap()
                .1,
            b
        );
        // No notes, no intent, no secondary keywords.
        let bare = Brief {
            secondary_keywords: vec![],
            intent: None,
            notes: String::new(),
            ..b
        };
        let text = render_brief(BriefStatus::Saved, &bare);
        assert_eq!(
            text,
            "Status: SAVED\nBrief: linen-shirt\nPage: linen-shirt\nPrimary keyword: linen shirt men\n"
        );
        assert_eq!(parse_brief("linen-shirt", &text).unwrap().1, bare);
    }

    #[test]
    fn a_brief_is_checked_on_the_way_in() {
        let with = |f: &dyn Fn(&mut Brief)| {
            let mut b = brief();
            f(&mut b);
            check_brief(b)
        };
        assert!(with(&|b| b.name = "../x".into()).is_err());
        assert!(with(&|b| b.page = "Linen Shirt".into()).is_err());
        assert!(with(&|b| b.primary_keyword = " ".into()).is_err());
        assert!(with(&|b| b.primary_keyword = "a\nStatus: APPROVED".into()).is_err());
        assert!(
            with(&|b| b.secondary_keywords = vec!["Linen shirt MEN".into()]).is_err(),
            "repeats the primary"
        );
        assert!(with(&|b| b.secondary_keywords = vec!["a".into(), "A".into()]).is_err());
        assert!(
            with(&|b| b.secondary_keywords = (0..21).map(|i| format!("k{i}")).collect()).is_err()
        );
        assert!(with(&|b| b.intent = Some("buy".into())).is_err());
        assert!(
            with(&|b| b.notes = "ok\nStatus: HANDED OFF".into())
                .unwrap_err()
                .contains("line 2 reads as a status line")
        );
        assert!(with(&|b| b.notes = "x".repeat(MAX_NOTES + 1)).is_err());
        assert_eq!(
            with(&|b| b.secondary_keywords = vec!["  summer  ".into()])
                .unwrap()
                .secondary_keywords,
            ["summer"]
        );
    }

    #[test]
    fn a_file_not_in_the_format_is_refused_not_guessed_at() {
        let refused = |text: &str| parse_brief("linen-shirt", text).unwrap_err();
        assert!(refused("").contains("it is empty"));
        assert!(
            refused(&BRIEF_FILE.replace("Status: SAVED", "Status: APPROVED"))
                .contains("`Status: APPROVED` is not")
        );
        assert!(
            refused(&BRIEF_FILE.replace("Status: SAVED", "status: saved")).contains("first line")
        );
        assert!(
            refused(&BRIEF_FILE.replace("Brief: linen-shirt", "Brief: other"))
                .contains("names `other`")
        );
        assert!(
            refused(&BRIEF_FILE.replace("Page: linen-shirt\n", ""))
                .contains("the `Page:` line is missing")
        );
        assert!(
            refused(&BRIEF_FILE.replace("Intent: commercial", "Owner: jo")).contains("`Owner: jo`")
        );
        assert!(
            refused(&BRIEF_FILE.replace("Intent: commercial", "Intent: buy")).contains("intent")
        );
        assert!(
            refused(&BRIEF_FILE.replace("Mention", "Status: HANDED OFF\nMention"))
                .contains("status line")
        );
        assert!(
            refused(&BRIEF_FILE.replace("Page: linen-shirt", "Page: ../../x"))
                .contains("page handle")
        );
        assert!(
            refused(&format!("{BRIEF_FILE}{}", "x".repeat(MAX_BRIEF_FILE))).contains("larger than")
        );
        assert!(refused(&BRIEF_FILE.replace("Mention", "\u{202e}Mention")).contains("U+202E"));
        assert!(
            refused(&BRIEF_FILE.replace(
                "Intent: commercial\n",
                "Intent: commercial\nSecondary keyword: late\n"
            ))
            .contains("not one it writes")
        );
    }
}
