//! Text shown to a person who decides: distinct values look distinct.
//!
//! A person approves what they read, and a call runs with the characters
//! it holds. A right-to-left override (U+202E) makes `docs-\u{202E}gnp.tset`
//! read as `docs-test.png`; a zero-width space makes `oc\u{200B}to` read as
//! `octo`; a Cyrillic `о` (U+043E) makes `оcto` read as `octo`. So before
//! anything a person approves is shown (the elicitation text here, the
//! approvals console in `console/console.js`, which follows the same rule),
//! each character of the following kinds is replaced by a visible marker,
//! `⟦U+202E RIGHT-TO-LEFT OVERRIDE⟧`: the code point and its name, or its
//! kind where no name is listed.
//!
//! - control characters: C0, DEL and C1 (`char::is_control`);
//! - bidirectional controls: U+061C, U+200E, U+200F, U+202A–U+202E,
//!   U+2066–U+2069;
//! - invisible, zero-width and format characters: U+00AD, U+034F, U+115F,
//!   U+1160, U+17B4, U+17B5, U+180B–U+180F, U+200B–U+200D, U+2060–U+2064,
//!   U+206A–U+206F, U+2800, U+3164, U+FEFF, U+FFA0, the variation selectors
//!   (U+FE00–U+FE0F, U+E0100–U+E01EF), the tags (U+E0000–U+E007F), the
//!   other format characters of [`FORMAT`] and the private use areas;
//! - whitespace other than the space U+0020 (`char::is_whitespace`, and
//!   U+00A0, U+2000–U+200A, U+202F, U+205F, U+3000 by name);
//! - look-alikes: the fullwidth forms of ASCII (U+FF01–U+FF5E) and the
//!   mathematical alphanumerics (U+1D400–U+1D7FF) always; and, in a string
//!   that also holds an ASCII letter or digit (mixed script), every
//!   non-ASCII letter or number (`char::is_alphanumeric`) that is not in
//!   the Latin ranges of [`LATIN`]: Greek, Cyrillic, Armenian, Cherokee and
//!   any other script. The rule is per string (a JSON key or string value),
//!   so `"оcto"` is marked, a Cyrillic-only `"привет"` is not, and an
//!   accented Latin `"café"` is not.
//! - the marker's own brackets `⟦` and `⟧`, so a string cannot spell a
//!   marker it does not hold.
//!
//! Every other character stands for itself, so the shown text decodes to
//! exactly one original: two different values never show alike. Whether
//! anything was marked is returned with the text, so the caller can warn.
//!
//! In JSON text ([`json_text`]) tab, line feed and carriage return are not
//! marked: JSON shows them as the escapes `\t`, `\n` and `\r`, already
//! visible (a file's content holds them and warrants no warning).

use serde_json::Value;
use std::fmt::Write as _;

/// What a person is shown of a value, and whether any character of it was
/// made visible by a marker (then the caller warns).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shown {
    pub text: String,
    pub marked: bool,
}

/// The marker's brackets (themselves always marked).
const OPEN: char = '\u{27E6}';
const CLOSE: char = '\u{27E7}';

/// Latin beyond ASCII: Latin-1's letters (with the ordinal indicators),
/// Latin Extended-A and -B, IPA extensions, Latin Extended Additional, -C,
/// -D, -E and the Latin ligatures. A letter outside these and outside ASCII
/// is of another script.
const LATIN: &[(u32, u32)] = &[
    (0x00AA, 0x00AA),
    (0x00BA, 0x00BA),
    (0x00C0, 0x00D6),
    (0x00D8, 0x00F6),
    (0x00F8, 0x02AF),
    (0x1E00, 0x1EFF),
    (0x2C60, 0x2C7F),
    (0xA720, 0xA7FF),
    (0xAB30, 0xAB6F),
    (0xFB00, 0xFB06),
];

/// Format characters beyond those named in [`NAMES`]: invisible, or
/// changing how their neighbours show.
const FORMAT: &[(u32, u32)] = &[
    (0x0600, 0x0605),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x08E2, 0x08E2),
    (0x206A, 0x206F),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
];

/// Scripts with letters that pass for Latin ones, by name in the marker.
const SCRIPTS: &[(u32, u32, &str)] = &[
    (0x0370, 0x03FF, "GREEK"),
    (0x1F00, 0x1FFF, "GREEK"),
    (0x0400, 0x052F, "CYRILLIC"),
    (0x1C80, 0x1C8F, "CYRILLIC"),
    (0x2DE0, 0x2DFF, "CYRILLIC"),
    (0xA640, 0xA69F, "CYRILLIC"),
    (0x0530, 0x058F, "ARMENIAN"),
    (0x0590, 0x05FF, "HEBREW"),
    (0x0600, 0x06FF, "ARABIC"),
    (0x13A0, 0x13FF, "CHEROKEE"),
    (0xAB70, 0xABBF, "CHEROKEE"),
];

/// The characters marked by name.
const NAMES: &[(u32, &str)] = &[
    (0x00A0, "NO-BREAK SPACE"),
    (0x00AD, "SOFT HYPHEN"),
    (0x034F, "COMBINING GRAPHEME JOINER"),
    (0x061C, "ARABIC LETTER MARK"),
    (0x115F, "HANGUL CHOSEONG FILLER"),
    (0x1160, "HANGUL JUNGSEONG FILLER"),
    (0x17B4, "KHMER VOWEL INHERENT AQ"),
    (0x17B5, "KHMER VOWEL INHERENT AA"),
    (0x180B, "MONGOLIAN FREE VARIATION SELECTOR ONE"),
    (0x180C, "MONGOLIAN FREE VARIATION SELECTOR TWO"),
    (0x180D, "MONGOLIAN FREE VARIATION SELECTOR THREE"),
    (0x180E, "MONGOLIAN VOWEL SEPARATOR"),
    (0x180F, "MONGOLIAN FREE VARIATION SELECTOR FOUR"),
    (0x200B, "ZERO WIDTH SPACE"),
    (0x200C, "ZERO WIDTH NON-JOINER"),
    (0x200D, "ZERO WIDTH JOINER"),
    (0x200E, "LEFT-TO-RIGHT MARK"),
    (0x200F, "RIGHT-TO-LEFT MARK"),
    (0x2028, "LINE SEPARATOR"),
    (0x2029, "PARAGRAPH SEPARATOR"),
    (0x202A, "LEFT-TO-RIGHT EMBEDDING"),
    (0x202B, "RIGHT-TO-LEFT EMBEDDING"),
    (0x202C, "POP DIRECTIONAL FORMATTING"),
    (0x202D, "LEFT-TO-RIGHT OVERRIDE"),
    (0x202E, "RIGHT-TO-LEFT OVERRIDE"),
    (0x202F, "NARROW NO-BREAK SPACE"),
    (0x205F, "MEDIUM MATHEMATICAL SPACE"),
    (0x2060, "WORD JOINER"),
    (0x2061, "FUNCTION APPLICATION"),
    (0x2062, "INVISIBLE TIMES"),
    (0x2063, "INVISIBLE SEPARATOR"),
    (0x2064, "INVISIBLE PLUS"),
    (0x2066, "LEFT-TO-RIGHT ISOLATE"),
    (0x2067, "RIGHT-TO-LEFT ISOLATE"),
    (0x2068, "FIRST STRONG ISOLATE"),
    (0x2069, "POP DIRECTIONAL ISOLATE"),
    (0x27E6, "MATHEMATICAL LEFT WHITE SQUARE BRACKET"),
    (0x27E7, "MATHEMATICAL RIGHT WHITE SQUARE BRACKET"),
    (0x2800, "BRAILLE PATTERN BLANK"),
    (0x3000, "IDEOGRAPHIC SPACE"),
    (0x3164, "HANGUL FILLER"),
    (0xFEFF, "ZERO WIDTH NO-BREAK SPACE"),
    (0xFFA0, "HALFWIDTH HANGUL FILLER"),
];

fn within(ranges: &[(u32, u32)], cp: u32) -> bool {
    ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&cp))
}

/// The marker's label for `c` whatever the string around it, if `c` is
/// always marked.
fn always(c: char) -> Option<String> {
    let cp = u32::from(c);
    if let Some((_, name)) = NAMES.iter().find(|(n, _)| *n == cp) {
        return Some((*name).to_string());
    }
    let label = if c.is_control() {
        "CONTROL".to_string()
    } else if (0x2000..=0x200A).contains(&cp) || (c.is_whitespace() && c != ' ') {
        "SPACE".to_string()
    } else if (0xFE00..=0xFE0F).contains(&cp) {
        format!("VARIATION SELECTOR-{}", cp - 0xFE00 + 1)
    } else if (0xE0100..=0xE01EF).contains(&cp) {
        format!("VARIATION SELECTOR-{}", cp - 0xE0100 + 17)
    } else if (0xE0000..=0xE007F).contains(&cp) {
        "TAG".to_string()
    } else if within(FORMAT, cp) {
        "FORMAT".to_string()
    } else if (0xE000..=0xF8FF).contains(&cp) || cp >= 0xF0000 {
        "PRIVATE USE".to_string()
    } else if (0xFF01..=0xFF5E).contains(&cp) {
        "FULLWIDTH".to_string()
    } else if (0x1D400..=0x1D7FF).contains(&cp) {
        "MATHEMATICAL ALPHANUMERIC".to_string()
    } else {
        return None;
    };
    Some(label)
}

/// The marker's label for `c` in a string that also holds ASCII letters or
/// digits, if `c` is a letter or number of a script other than Latin.
fn other_script(c: char) -> Option<String> {
    let cp = u32::from(c);
    if c.is_ascii() || !c.is_alphanumeric() || within(LATIN, cp) {
        return None;
    }
    let script = SCRIPTS
        .iter()
        .find(|&&(lo, hi, _)| (lo..=hi).contains(&cp))
        .map_or("NON-LATIN", |&(_, _, name)| name);
    let kind = if c.is_alphabetic() {
        "LETTER"
    } else {
        "NUMBER"
    };
    Some(format!("{script} {kind}"))
}

/// Renders `s`; `json` leaves tab, line feed and carriage return as they
/// are (JSON escapes them visibly).
fn render(s: &str, json: bool) -> Shown {
    let mixed = s.chars().any(|c| c.is_ascii_alphanumeric());
    let mut text = String::with_capacity(s.len());
    let mut marked = false;
    for c in s.chars() {
        let label = if json && matches!(c, '\t' | '\n' | '\r') {
            None
        } else {
            always(c).or_else(|| if mixed { other_script(c) } else { None })
        };
        match label {
            Some(label) => {
                marked = true;
                let _ = write!(text, "{OPEN}U+{:04X} {label}{CLOSE}", u32::from(c));
            }
            None => text.push(c),
        }
    }
    Shown { text, marked }
}

/// `s` as a person is shown it.
pub(crate) fn text(s: &str) -> Shown {
    render(s, false)
}

/// `value` as JSON text for a person: its canonical text (keys sorted, no
/// spaces, as `crate::store::canonical_args_text` writes it, the text the
/// approval's digest is of), each object key and string value rendered.
/// The console renders `arguments_text` to this same text.
pub(crate) fn json_text(value: &Value) -> Shown {
    let mut shown = Shown {
        text: String::new(),
        marked: false,
    };
    write_json(value, &mut shown);
    shown
}

fn write_string(s: &str, out: &mut Shown) {
    let rendered = render(s, true);
    out.marked |= rendered.marked;
    out.text
        .push_str(&serde_json::to_string(&rendered.text).unwrap_or_default());
}

fn write_json(value: &Value, out: &mut Shown) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.text.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.text.push(',');
                }
                write_string(key, out);
                out.text.push(':');
                write_json(&map[key], out);
            }
            out.text.push('}');
        }
        Value::Array(items) => {
            out.text.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.text.push(',');
                }
                write_json(item, out);
            }
            out.text.push(']');
        }
        Value::String(s) => write_string(s, out),
        other => out
            .text
            .push_str(&serde_json::to_string(other).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_right_to_left_override_is_shown_not_obeyed() {
        let shown = text("docs-\u{202E}gnp.tset");
        assert_eq!(shown.text, "docs-⟦U+202E RIGHT-TO-LEFT OVERRIDE⟧gnp.tset");
        assert!(shown.marked);
        assert!(!shown.text.contains('\u{202E}'));
    }

    #[test]
    fn a_zero_width_space_is_shown() {
        let shown = text("oc\u{200B}to");
        assert_eq!(shown.text, "oc⟦U+200B ZERO WIDTH SPACE⟧to");
        assert!(shown.marked);
    }

    #[test]
    fn a_cyrillic_letter_among_latin_ones_is_shown() {
        let shown = text("\u{43e}cto");
        assert_eq!(shown.text, "⟦U+043E CYRILLIC LETTER⟧cto");
        assert!(shown.marked);
        // Greek omicron alike; a fullwidth form even alone.
        assert_eq!(text("\u{3bf}cto").text, "⟦U+03BF GREEK LETTER⟧cto");
        assert_eq!(text("\u{FF4F}").text, "⟦U+FF4F FULLWIDTH⟧");
    }

    #[test]
    fn plain_text_is_unchanged_and_warns_of_nothing() {
        for plain in [
            "octo/hello",
            "scout/console-approved",
            "café",
            "привет",
            "a b",
            "",
        ] {
            assert_eq!(
                text(plain),
                Shown {
                    text: plain.to_string(),
                    marked: false
                },
                "{plain}"
            );
        }
    }

    #[test]
    fn controls_spaces_and_the_markers_own_brackets_are_shown() {
        assert_eq!(text("a\u{1b}b").text, "a⟦U+001B CONTROL⟧b");
        assert_eq!(text("a\u{7f}").text, "a⟦U+007F CONTROL⟧");
        assert_eq!(text("a\u{85}").text, "a⟦U+0085 CONTROL⟧");
        assert_eq!(text("a\u{a0}b").text, "a⟦U+00A0 NO-BREAK SPACE⟧b");
        assert_eq!(text("a\u{2003}b").text, "a⟦U+2003 SPACE⟧b");
        assert_eq!(text("a\u{FE0F}").text, "a⟦U+FE0F VARIATION SELECTOR-16⟧");
        assert_eq!(text("a\u{E0041}").text, "a⟦U+E0041 TAG⟧");
        assert_eq!(text("a\nb").text, "a⟦U+000A CONTROL⟧b");
        // A string cannot spell a marker it does not hold.
        let forged = text("docs-⟦U+202E RIGHT-TO-LEFT OVERRIDE⟧gnp.tset");
        assert!(forged.marked);
        assert_ne!(forged.text, text("docs-\u{202E}gnp.tset").text);
    }

    #[test]
    fn distinct_values_never_show_alike() {
        let values = [
            "docs-test.png",
            "docs-\u{202E}gnp.tset",
            "docs-\u{202E}gnp.tset\u{202C}",
            "docs-⟦U+202E RIGHT-TO-LEFT OVERRIDE⟧gnp.tset",
            "octo",
            "oc\u{200B}to",
            "oc\u{200C}to",
            "\u{43e}cto",
            "\u{3bf}cto",
            "\u{FF4F}cto",
            "oc\u{00AD}to",
            "octo\u{FEFF}",
            "octo/hello",
            "octo/hello\n",
            "octo/hello\r\n",
        ];
        let mut seen = std::collections::HashMap::new();
        for v in values {
            for (shown, how) in [(text(v).text, "text"), (json_text(&json!(v)).text, "json")] {
                if let Some(other) = seen.insert((shown.clone(), how), v) {
                    panic!("{other:?} and {v:?} both show as {shown}");
                }
            }
        }
    }

    #[test]
    fn json_keys_and_values_are_shown_in_the_digests_canonical_order() {
        let args = json!({
            "repo": "hello",
            "owner": "\u{43e}cto",
            "branch": "docs-\u{202E}gnp.tset",
            "oc\u{200B}to": [1, 2.5, true, null, {"k": "a\u{200B}"}],
        });
        let shown = json_text(&args);
        assert!(shown.marked);
        assert_eq!(
            shown.text,
            "{\"branch\":\"docs-⟦U+202E RIGHT-TO-LEFT OVERRIDE⟧gnp.tset\",\
             \"oc⟦U+200B ZERO WIDTH SPACE⟧to\":[1,2.5,true,null,{\"k\":\"a⟦U+200B ZERO WIDTH SPACE⟧\"}],\
             \"owner\":\"⟦U+043E CYRILLIC LETTER⟧cto\",\"repo\":\"hello\"}"
        );
        // Nothing to mark: exactly the text the digest is of.
        let plain = json!({"repo": "hello", "owner": "octo", "n": 3, "body": "a\n\t\"b\"\\"});
        let shown = json_text(&plain);
        assert!(!shown.marked);
        assert_eq!(shown.text, crate::store::canonical_args_text(&plain));
        // Other controls are marked, not left to JSON's `\u001b`.
        assert_eq!(json_text(&json!("a\u{1b}")).text, "\"a⟦U+001B CONTROL⟧\"");
    }
}
