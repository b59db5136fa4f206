//! Finding a secret in what an upstream sent back, in any form an encoder
//! could have turned it into.
//!
//! An upstream that reflects request headers (a debugging endpoint, an error
//! page quoting the request) hands the injected credential to the guest. The
//! host decodes every content encoding itself, then looks for the secret
//! written character by character in any mix of the forms that JSON and URL
//! encoders produce: the raw byte, `\uXXXX` (either case), the short JSON
//! escapes (`\/`, `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`), `%XX` (either
//! case) and `+` for a space. Base64 of any text containing the secret is
//! found too, at each of the three alignments, in the standard and the
//! URL-safe alphabet, and so is its hex (either case). Each match is
//! replaced by `[REDACTED]`.
//!
//! A base64 form is redacted whole: at an offset that is not a multiple of
//! three, the character before the secret's own characters carries its
//! first 2 or 4 bits (mixed with the byte before it), and where the secret
//! does not end on a group the character after carries its last 2 or 4
//! bits (mixed with the next byte, or with padding). Those edge characters
//! and any `=` padding right after go too, so no character that carries a
//! bit of the secret is left beside `[REDACTED]`. Hex, `%XX` and `\uXXXX`
//! forms are byte-aligned: a match covers exactly the secret's characters.
//!
//! A response is read twice at most, whatever the number of secrets: one
//! pass finds where any secret's escape forms begin (one `memchr3`, or a
//! byte table when the secrets begin with more than one byte), one
//! Aho-Corasick pass finds every base64 form. The automaton and the table
//! are built when a secret is added, never per response.
//!
//! This catches encodings, not arbitrary transformations: an upstream that
//! reverses or encrypts what it echoes is outside what a scrub can see. The
//! secret never enters the guest's request in the first place, so what is
//! caught here is always a reflection by the upstream.

/// Replaces the secret wherever it would be shown.
pub const REDACTED: &str = "[REDACTED]";

/// Shortest literal (base64) form worth matching: shorter ones would redact
/// ordinary text.
const MIN_LITERAL: usize = 8;

/// The forms of one or more secrets to remove.
#[derive(Default, Clone)]
pub struct Scrubber {
    /// Secrets matched character by character through the escape forms.
    secrets: Vec<Vec<u8>>,
    /// Forms matched literally (base64 at each alignment, hex), each with
    /// the edge characters that carry part of the secret.
    literals: Vec<Literal>,
    /// Every literal at once; `None` when there is none.
    literal_matcher: Option<std::sync::Arc<aho_corasick::AhoCorasick>>,
    /// The bytes an escape form of some secret can begin with.
    starts: StartBytes,
}

/// A form matched literally: the characters that only the secret's bits
/// decide, and which neighbouring characters carry some of them too.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Literal {
    form: Vec<u8>,
    /// The base64 character just before the form carries the secret's
    /// first bits (its offset in the encoded data is not a multiple of 3).
    left: bool,
    /// The base64 character just after carries its last bits (it does not
    /// end on a 3-byte group); `=` padding after it is redacted with it.
    right: bool,
}

/// Whether `b` is a character of the standard or the URL-safe base64
/// alphabet.
fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_')
}

impl Literal {
    /// `start..end` (where the form matched in `h`) widened to every
    /// character that carries a bit of the secret, and the padding after.
    fn whole(&self, h: &[u8], start: usize, end: usize) -> (usize, usize) {
        let mut start = start;
        let mut end = end;
        if self.left && start > 0 && is_base64(h[start - 1]) {
            start -= 1;
        }
        if self.right {
            if h.get(end).copied().is_some_and(is_base64) {
                end += 1;
            }
            while h.get(end) == Some(&b'=') {
                end += 1;
            }
        }
        (start, end)
    }
}

/// The bytes a match of some secret's escape forms can begin with.
#[derive(Clone)]
enum StartBytes {
    /// Three bytes at most (one secret: its first byte, `\\` and `%`).
    Few([u8; 3]),
    /// Any number, as a table.
    Table(Box<[bool; 256]>),
}

impl Default for StartBytes {
    fn default() -> Self {
        StartBytes::Table(Box::new([false; 256]))
    }
}

impl StartBytes {
    fn of(secrets: &[Vec<u8>]) -> StartBytes {
        let mut bytes = vec![b'\\', b'%'];
        for secret in secrets {
            bytes.extend(secret.first().copied());
            if secret.first() == Some(&b' ') {
                bytes.push(b'+');
            }
        }
        bytes.sort_unstable();
        bytes.dedup();
        match bytes[..] {
            [a, b] => StartBytes::Few([a, b, b]),
            [a, b, c] => StartBytes::Few([a, b, c]),
            _ => {
                let mut table = Box::new([false; 256]);
                for b in bytes {
                    table[b as usize] = true;
                }
                StartBytes::Table(table)
            }
        }
    }

    /// The first position at or after `from` where a match may begin.
    fn next(&self, haystack: &[u8], from: usize) -> Option<usize> {
        let rest = haystack.get(from..)?;
        let found = match self {
            StartBytes::Few([a, b, c]) => memchr::memchr3(*a, *b, *c, rest),
            StartBytes::Table(table) => rest.iter().position(|&x| table[x as usize]),
        };
        found.map(|at| from + at)
    }
}

impl std::fmt::Debug for Scrubber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Scrubber({} secrets)", self.secrets.len())
    }
}

impl Scrubber {
    /// A scrubber for `secret`; `also` are further literal forms (for
    /// instance `base64(user:secret)` of basic authentication).
    pub fn new(secret: &str, also: impl IntoIterator<Item = String>) -> Scrubber {
        let mut scrubber = Scrubber::default();
        scrubber.add(secret);
        for form in also {
            scrubber.add(&form);
        }
        scrubber
    }

    /// Adds one more secret (and its base64 forms).
    pub fn add(&mut self, secret: &str) {
        if secret.is_empty() {
            return;
        }
        self.secrets.push(secret.as_bytes().to_vec());
        for engine in [
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            self.literals.extend(
                base64_alignments(secret.as_bytes(), engine)
                    .into_iter()
                    .filter(|l| l.form.len() >= MIN_LITERAL),
            );
        }
        for form in [hex::encode(secret), hex::encode_upper(secret)] {
            if form.len() >= MIN_LITERAL {
                self.literals.push(Literal {
                    form: form.into_bytes(),
                    left: false,
                    right: false,
                });
            }
        }
        self.secrets.sort();
        self.secrets.dedup();
        // One entry per form, widened as far as any of its origins needs.
        self.literals.sort();
        self.literals.dedup_by(|later, kept| {
            let same = later.form == kept.form;
            if same {
                kept.left |= later.left;
                kept.right |= later.right;
            }
            same
        });
        // Longest first, so a form that contains another is replaced whole.
        self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        self.literals
            .sort_by_key(|l| std::cmp::Reverse(l.form.len()));
        self.starts = StartBytes::of(&self.secrets);
        // Built from patterns of at least MIN_LITERAL bytes, so it cannot
        // fail; if it ever did, every literal is still matched one by one.
        self.literal_matcher = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::Standard)
            .build(self.literals.iter().map(|l| &l.form))
            .ok()
            .filter(|_| !self.literals.is_empty())
            .map(std::sync::Arc::new);
    }

    /// Whether there is nothing to scrub.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// [`Scrubber::scrub`] of a body the caller owns: returned as it came,
    /// with no copy, when it holds no secret (the common case).
    pub fn scrub_owned(&self, bytes: Vec<u8>) -> Vec<u8> {
        match self.scrubbed(&bytes) {
            None => bytes,
            Some(clean) => clean.into_owned(),
        }
    }

    /// `bytes` with every form of every secret replaced by `[REDACTED]`.
    pub fn scrub(&self, bytes: &[u8]) -> Vec<u8> {
        self.scrubbed(bytes)
            .map_or_else(|| bytes.to_vec(), std::borrow::Cow::into_owned)
    }

    /// The scrubbed bytes, or `None` when nothing was found: the common case
    /// copies nothing.
    fn scrubbed<'a>(&self, bytes: &'a [u8]) -> Option<std::borrow::Cow<'a, [u8]>> {
        if self.secrets.is_empty() {
            return None;
        }
        let mut found = self.encoded_matches(bytes);
        match &self.literal_matcher {
            // One pass over clean text, reporting every occurrence of every
            // form, overlapping ones included: where two forms match at one
            // place (a secret whose base64 repeats itself, such as a run of
            // one character), each is widened by its own edges.
            Some(matcher) => {
                for m in matcher.find_overlapping_iter(bytes) {
                    let literal = &self.literals[m.pattern().as_usize()];
                    found.push(literal.whole(bytes, m.start(), m.end()));
                }
            }
            None => {
                for literal in &self.literals {
                    found.extend(
                        memchr::memmem::find_iter(bytes, &literal.form)
                            .map(|at| literal.whole(bytes, at, at + literal.form.len())),
                    );
                }
            }
        }
        if found.is_empty() {
            return None;
        }
        Some(std::borrow::Cow::Owned(redact(bytes, found)))
    }

    /// Where any secret is written in any mix of raw bytes and escape
    /// forms, one scan of `bytes`. Every start is tried, inside an earlier
    /// match too: two secrets that overlap are redacted as one, with no
    /// tail of the second left after the first.
    fn encoded_matches(&self, bytes: &[u8]) -> Vec<(usize, usize)> {
        let mut found = Vec::new();
        let mut at = 0;
        while let Some(start) = self.starts.next(bytes, at) {
            found.extend(
                self.secrets
                    .iter()
                    .filter_map(|secret| match_at(bytes, start, secret))
                    .max()
                    .map(|end| (start, end)),
            );
            at = start + 1;
        }
        found
    }

    /// [`Scrubber::scrub`] for text.
    pub(crate) fn scrub_text(&self, text: &str) -> String {
        match self.scrubbed(text.as_bytes()) {
            None => text.to_string(),
            Some(clean) => String::from_utf8_lossy(&clean).into_owned(),
        }
    }

    /// Scrubs every string (keys included) inside a JSON value.
    pub(crate) fn scrub_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if let Some(clean) = self.scrubbed(s.as_bytes()) {
                    *s = String::from_utf8_lossy(&clean).into_owned();
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_json(v)),
            Value::Object(map) => {
                map.values_mut().for_each(|v| self.scrub_json(v));
                // Keys are rebuilt only when one of them holds a secret.
                if map.keys().any(|k| self.scrubbed(k.as_bytes()).is_some()) {
                    let entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
                    for (key, v) in entries {
                        map.insert(self.scrub_text(&key), v);
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether any form of a secret occurs in `bytes`.
    pub fn finds(&self, bytes: &[u8]) -> bool {
        self.scrubbed(bytes).is_some()
    }

    /// How many bytes at the end of `bytes` are the beginning of some form
    /// of a secret (raw, escaped, percent-encoded or base64) without being a
    /// whole one: what a cut there would leave of a secret. 0 when none is.
    pub(crate) fn partial_tail(&self, bytes: &[u8]) -> usize {
        let mut longest = 0;
        for secret in &self.secrets {
            // Each character of a secret takes at most six bytes (`\uXXXX`).
            let window = (6 * secret.len()).min(bytes.len());
            let first = bytes.len() - window;
            if let Some(start) =
                (first..bytes.len()).find(|&start| ends_inside_a_form(bytes, start, secret))
            {
                longest = longest.max(bytes.len() - start);
            }
        }
        for literal in &self.literals {
            let form = &literal.form;
            let most = (form.len() - 1).min(bytes.len());
            if let Some(k) = (1..=most).rev().find(|&k| bytes.ends_with(&form[..k])) {
                // The character before carries the secret's first bits.
                let edge = literal.left && bytes.len() > k && is_base64(bytes[bytes.len() - k - 1]);
                longest = longest.max(k + usize::from(edge));
            }
        }
        longest
    }
}

/// Text already scrubbed by `scrubbers`, cut to at most `cap` bytes; then,
/// where it was cut (here or, with `already_cut`, before it arrived), the
/// beginning of any secret's form at its end dropped too. Returns the text
/// and how many bytes were dropped.
pub(crate) fn cut_scrubbed(
    scrubbed: String,
    cap: usize,
    already_cut: bool,
    scrubbers: &[&Scrubber],
) -> (String, u64) {
    let before = scrubbed.len();
    let (mut out, cut) = cut_at(scrubbed, cap);
    if cut || already_cut {
        // Dropping one secret's beginning may uncover another's.
        while let Some(tail) = scrubbers
            .iter()
            .map(|s| s.partial_tail(out.as_bytes()))
            .filter(|&n| n > 0)
            .max()
        {
            let keep = floor_char_boundary(&out, out.len() - tail);
            out.truncate(keep);
        }
    }
    let dropped = (before - out.len()) as u64;
    (out, dropped)
}

/// `text` cut to at most `cap` bytes on a character boundary, and whether
/// anything was cut. For text that carries no secret (what a client sent);
/// anything else goes through [`cut_scrubbed`] after a scrub.
pub(crate) fn cut_at(mut text: String, cap: usize) -> (String, bool) {
    if text.len() <= cap {
        return (text, false);
    }
    let end = floor_char_boundary(&text, cap);
    text.truncate(end);
    (text, true)
}

/// The largest character boundary of `text` at or below `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut end = at.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// The base64 text that encodes `secret` wherever it sits in a longer input:
/// for each offset modulo 3, the characters determined by the secret's bytes
/// alone, and whether the characters either side carry some of its bits.
fn base64_alignments(secret: &[u8], engine: &impl base64::Engine) -> Vec<Literal> {
    let mut forms = Vec::new();
    for offset in 0..3usize {
        let mut input = vec![0u8; offset];
        input.extend_from_slice(secret);
        let encoded = engine.encode(&input).into_bytes();
        let start = (4 * offset).div_ceil(3);
        let end = (4 * (offset + secret.len())) / 3;
        if end > start && end <= encoded.len() {
            forms.push(Literal {
                form: encoded[start..end].to_vec(),
                left: !offset.is_multiple_of(3),
                right: !(offset + secret.len()).is_multiple_of(3),
            });
        }
    }
    forms
}

/// `haystack` with every range in `found` replaced by `[REDACTED]`; ranges
/// that overlap or touch are redacted as one.
fn redact(haystack: &[u8], mut found: Vec<(usize, usize)>) -> Vec<u8> {
    found.sort_unstable();
    let mut out = Vec::with_capacity(haystack.len());
    let mut last = 0;
    let mut ranges = found.into_iter().peekable();
    while let Some((start, mut end)) = ranges.next() {
        while let Some(&(next_start, next_end)) = ranges.peek() {
            if next_start > end {
                break;
            }
            end = end.max(next_end);
            ranges.next();
        }
        out.extend_from_slice(&haystack[last..start]);
        out.extend_from_slice(REDACTED.as_bytes());
        last = end;
    }
    out.extend_from_slice(&haystack[last..]);
    out
}

/// The end of the longest encoding of `secret` starting at `start`.
///
/// A small NFA walk: the set of positions reachable after each character of
/// the secret, over every form that character may take.
fn match_at(haystack: &[u8], start: usize, secret: &[u8]) -> Option<usize> {
    // Most candidates (a `%` or `\\` of ordinary text) fail at once: no
    // allocation for them.
    char_forms(haystack, start, *secret.first()?).next()?;
    let mut positions: Vec<usize> = vec![start];
    let mut next: Vec<usize> = Vec::with_capacity(4);
    for &c in secret {
        next.clear();
        for &p in &positions {
            for end in char_forms(haystack, p, c) {
                if !next.contains(&end) {
                    next.push(end);
                }
            }
        }
        if next.is_empty() {
            return None;
        }
        std::mem::swap(&mut positions, &mut next);
    }
    positions.into_iter().max()
}

/// The ends of every form of character `c` found at `p`.
fn char_forms(h: &[u8], p: usize, c: u8) -> impl Iterator<Item = usize> {
    let at = |i: usize| h.get(p + i).copied();
    let hex = |i: usize| at(i).and_then(|b| (b as char).to_digit(16));
    let hex2 = |i: usize| Some(hex(i)? * 16 + hex(i + 1)?);
    let mut ends = [None; 4];
    if at(0) == Some(c) {
        ends[0] = Some(p + 1);
    }
    if at(0) == Some(b'%') && hex2(1) == Some(c as u32) {
        ends[1] = Some(p + 3);
    }
    if c == b' ' && at(0) == Some(b'+') {
        ends[2] = Some(p + 1);
    }
    if at(0) == Some(b'\\') {
        let short = match c {
            b'/' => Some(b'/'),
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            0x08 => Some(b'b'),
            0x0c => Some(b'f'),
            b'\n' => Some(b'n'),
            b'\r' => Some(b'r'),
            b'\t' => Some(b't'),
            _ => None,
        };
        if short.is_some() && at(1) == short {
            ends[3] = Some(p + 2);
        } else if at(1) == Some(b'u')
            && let (Some(high), Some(low)) = (hex2(2), hex2(4))
            && high * 256 + low == c as u32
        {
            ends[3] = Some(p + 6);
        }
    }
    ends.into_iter().flatten()
}

/// Whether a match of `secret` starting at `start` runs into the end of
/// `haystack` before the secret is complete: the text from `start` on is the
/// beginning of one of its forms.
fn ends_inside_a_form(haystack: &[u8], start: usize, secret: &[u8]) -> bool {
    let mut positions: Vec<usize> = vec![start];
    let mut next: Vec<usize> = Vec::with_capacity(4);
    for &c in secret {
        next.clear();
        for &p in &positions {
            if p == haystack.len() || char_form_runs_out(haystack, p, c) {
                return true;
            }
            for end in char_forms(haystack, p, c) {
                if !next.contains(&end) {
                    next.push(end);
                }
            }
        }
        if next.is_empty() {
            return false;
        }
        std::mem::swap(&mut positions, &mut next);
    }
    false
}

/// Whether the bytes from `p` to the end are a proper beginning of a
/// multi-byte form of character `c` (`%` or `%4`, `\`, `\u00`).
fn char_form_runs_out(h: &[u8], p: usize, c: u8) -> bool {
    let rest = &h[p..];
    let hex_prefix = |digits: &[u8], want: &str| {
        digits
            .iter()
            .zip(want.bytes())
            .all(|(d, w)| d.eq_ignore_ascii_case(&w))
    };
    match rest {
        [b'%', digits @ ..] if digits.len() < 2 => hex_prefix(digits, &format!("{c:02x}")),
        [b'\\'] => true,
        [b'\\', b'u', digits @ ..] if digits.len() < 4 => {
            hex_prefix(digits, &format!("{:04x}", c as u32))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    const SECRET: &str = "s3cr3t/tok+en";

    fn scrubbed(text: &str) -> String {
        Scrubber::new(SECRET, []).scrub_text(text)
    }

    fn scrub_and_cut(s: &Scrubber, text: &str, cap: usize, already_cut: bool) -> (String, u64) {
        cut_scrubbed(s.scrub_text(text), cap, already_cut, &[s])
    }

    #[test]
    fn several_secrets_are_found_in_one_pass_each_in_every_form() {
        let others = [
            "Bearer-xyz-4471",
            " leading-space-secret",
            "zz9-plural-z-alpha",
        ];
        let mut scrubber = Scrubber::new(SECRET, []);
        for other in others {
            scrubber.add(other);
        }
        // More start bytes than `memchr3` takes: the table path.
        assert!(matches!(scrubber.starts, StartBytes::Table(_)));
        let b64 = base64::engine::general_purpose::STANDARD_NO_PAD;
        let text = format!(
            "a={} b={} c={} d={} e={}",
            SECRET,
            others[0].replace('-', "%2D"),
            others[1].replace(' ', "+"),
            b64.encode(format!("user:{}", others[2])),
            "nothing here % \\ +",
        );
        let out = scrubber.scrub_text(&text);
        assert_eq!(out.matches(REDACTED).count(), 4, "{out}");
        assert!(!scrubber.finds(out.as_bytes()), "a secret left in {out}");
        assert!(out.ends_with("e=nothing here % \\ +"), "{out}");
    }

    #[test]
    fn secrets_that_overlap_leave_no_tail() {
        let mut s = Scrubber::new("abc123", []);
        s.add("123xyz");
        assert_eq!(s.scrub_text("<abc123xyz>"), "<[REDACTED]>");
        assert_eq!(s.scrub_text("<abc%31%323xyz>"), "<[REDACTED]>");
        // Two base64 forms that overlap, one of each secret's.
        let b64 = base64::engine::general_purpose::STANDARD_NO_PAD;
        let both = b64.encode("abc123xyz");
        let out = s.scrub_text(&format!("<{both}>"));
        assert!(!s.finds(out.as_bytes()), "{out}");
        assert_eq!(out.matches(REDACTED).count(), 1, "{out}");
    }

    #[test]
    fn overlapping_forms_are_redacted_as_one() {
        // The raw secret followed by a base64 form that begins inside it.
        let b64 = base64::engine::general_purpose::STANDARD_NO_PAD.encode(SECRET);
        let text = format!("x{SECRET}{b64}y");
        let s = Scrubber::new(SECRET, []);
        let out = s.scrub_text(&text);
        assert!(!s.finds(out.as_bytes()), "{out}");
        assert!(out.starts_with('x') && out.ends_with('y'), "{out}");
        let ranges = vec![(1, 5), (3, 8), (8, 9), (12, 13)];
        assert_eq!(
            redact(b"0123456789abcdef", ranges),
            b"0[REDACTED]9ab[REDACTED]def".to_vec()
        );
    }

    #[test]
    fn every_escape_form_and_mixes_of_them_are_found() {
        let unicode: String = SECRET.bytes().map(|b| format!("\\u{:04x}", b)).collect();
        let unicode_upper: String = SECRET.bytes().map(|b| format!("\\u{:04X}", b)).collect();
        let percent: String = SECRET.bytes().map(|b| format!("%{:02x}", b)).collect();
        let mixed = "s\\u0033c%72\\u0033t\\/tok%2Ben";
        for form in [
            SECRET.to_string(),
            "s3cr3t\\/tok+en".to_string(),
            "s3cr3t%2Ftok%2Ben".to_string(),
            unicode,
            unicode_upper,
            percent,
            mixed.to_string(),
        ] {
            let text = format!("{{\"authorization\":\"Bearer {form}\"}}");
            let out = scrubbed(&text);
            assert_eq!(
                out,
                format!("{{\"authorization\":\"Bearer {REDACTED}\"}}"),
                "form {form}"
            );
        }
    }

    #[test]
    fn base64_of_text_containing_the_secret_is_found_at_every_offset() {
        let s = Scrubber::new(SECRET, []);
        for prefix in ["", "a", "ab", "abc", "authorization: Bearer "] {
            for engine in [
                &base64::engine::general_purpose::STANDARD,
                &base64::engine::general_purpose::URL_SAFE,
            ] {
                let encoded = engine.encode(format!("{prefix}{SECRET}\ntrailer"));
                assert!(s.finds(encoded.as_bytes()), "prefix {prefix:?}: {encoded}");
            }
        }
    }

    /// `out` is `encoded` with one span replaced by `[REDACTED]`, and no
    /// character left on either side carries a bit of the secret, which
    /// sat at bytes `at..at + len` of what was encoded.
    fn assert_no_bit_of_the_secret_left(encoded: &str, out: &str, at: usize, len: usize) {
        assert_eq!(out.matches(REDACTED).count(), 1, "{encoded} -> {out}");
        let (before, after) = out.split_once(REDACTED).unwrap();
        assert!(
            encoded.starts_with(before) && encoded.ends_with(after),
            "{encoded} -> {out}"
        );
        // Character `i` carries bits `6i..6i+6` of the data; the secret's are
        // `8at..8(at+len)`.
        assert!(
            6 * before.len() <= 8 * at,
            "{encoded} -> {out}: `{}` before the redaction carries the secret's first bits",
            &before[before.len().saturating_sub(1)..]
        );
        let first_after = encoded.len() - after.len();
        assert!(
            6 * first_after >= 8 * (at + len),
            "{encoded} -> {out}: `{}` after the redaction carries the secret's last bits",
            &after[..after.len().min(2)]
        );
    }

    #[test]
    fn base64_leaves_no_character_carrying_a_bit_of_the_secret() {
        use base64::engine::general_purpose::{
            STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD,
        };
        // Lengths 0, 1 and 2 modulo 3, and bytes that take `+`, `/`, `-`, `_`;
        // then secrets whose base64 repeats itself, where the forms of two
        // alignments match at one place, one longer and without the other's
        // edge (found by the fuzz target `scrub_encoded`).
        let run = "w".repeat(34);
        for secret in [
            SECRET,
            "s3cr3t/tok+e",
            "s3cr3t/tok+enX",
            "\u{fb}\u{ff}secret?>~",
            run.as_str(),
            "VVVVVVVVVVVVVVVVVVVV",
            "abcabcabcabcabcabc",
        ] {
            let s = Scrubber::new(secret, []);
            for prefix in ["", "a", "ab", "abc", "VVVV", "Bearer ", "Bearer x"] {
                for suffix in ["", "\n", "\nx", "\nxy", "VVV|", "bc", "\u{ff}\u{ff}"] {
                    let text = format!("{prefix}{secret}{suffix}");
                    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
                        let encoded = engine.encode(&text);
                        let out = s.scrub_text(&encoded);
                        assert_no_bit_of_the_secret_left(
                            &encoded,
                            &out,
                            prefix.len(),
                            secret.len(),
                        );
                        // Inside other text, as an echo would put it.
                        let quoted = s.scrub_text(&format!("{{\"echo\":\"{encoded}\"}}"));
                        let inner = quoted
                            .strip_prefix("{\"echo\":\"")
                            .and_then(|q| q.strip_suffix("\"}"))
                            .unwrap_or_else(|| panic!("{quoted}"));
                        assert_no_bit_of_the_secret_left(
                            &encoded,
                            inner,
                            prefix.len(),
                            secret.len(),
                        );
                    }
                }
            }
        }
        // The echo: the final quantum `Q=` went with the rest.
        let s = Scrubber::new("s3cr3t!", []);
        assert!(STANDARD.encode("s3cr3t!").ends_with("Q=="));
        assert_eq!(s.scrub_text(&STANDARD.encode("s3cr3t!")), REDACTED);
    }

    #[test]
    fn a_cut_inside_base64_leaves_no_character_of_the_secret_either() {
        use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
        let s = Scrubber::new(SECRET, []);
        for prefix in ["", "a", "ab"] {
            for engine in [&STANDARD, &URL_SAFE_NO_PAD] {
                let encoded = engine.encode(format!("{prefix}{SECRET} and more"));
                // The characters carrying any bit of the secret.
                let first = (4 * prefix.len()) / 3;
                let past = (4 * (prefix.len() + SECRET.len())).div_ceil(3);
                // A cut after the edge character alone keeps at most its 4
                // bits, and nothing shows it is the secret's; from one more
                // character on, the cut drops the edge with the rest.
                for cut in first + 2..past {
                    let (out, _) = scrub_and_cut(&s, &encoded[..cut], usize::MAX, true);
                    // Cut past the whole form, it is redacted as any other.
                    let kept = out.strip_suffix(REDACTED).unwrap_or(&out);
                    assert!(
                        kept.len() <= first && encoded.starts_with(kept),
                        "{encoded} cut at {cut}: {out}"
                    );
                }
            }
        }
    }

    #[test]
    fn hex_of_the_secret_is_found_in_either_case_and_whole() {
        let s = Scrubber::new(SECRET, []);
        for form in [hex::encode(SECRET), hex::encode_upper(SECRET)] {
            for prefix in ["", "0", "ab", "zz"] {
                let out = s.scrub_text(&format!("{prefix}{form}9f"));
                assert_eq!(out, format!("{prefix}{REDACTED}9f"), "{form}");
            }
        }
        // A cut inside the hex form leaves nothing of it.
        let form = hex::encode(SECRET);
        let text = format!("..{form}");
        let (out, _) = scrub_and_cut(&s, &text[..text.len() - 1], usize::MAX, true);
        assert_eq!(out, "..");
    }

    #[test]
    fn ordinary_text_is_left_alone() {
        let text = "{\"path\":\"/repos/octo/hello\",\"percent\":\"100%\",\"escape\":\"\\\\u0041\"}";
        assert_eq!(scrubbed(text), text);
        assert_eq!(
            scrubbed("s3cr3t/tok"),
            "s3cr3t/tok",
            "a prefix of the secret is not the secret"
        );
    }

    #[test]
    fn a_cut_never_leaves_the_beginning_of_a_secret() {
        // Twelve bytes: its base64 is whole groups, every character of which
        // the secret alone decides.
        const TWELVE: &str = "s3cr3t/tok+e";
        let s = Scrubber::new(TWELVE, []);
        let unicode: String = TWELVE.bytes().map(|b| format!("\\u{:04x}", b)).collect();
        let percent: String = TWELVE.bytes().map(|b| format!("%{:02X}", b)).collect();
        let mixed = "s\\u0033c%72\\u0033t\\/tok%2Be".to_string();
        let standard = base64::engine::general_purpose::STANDARD.encode(TWELVE);
        let url_safe = base64::engine::general_purpose::URL_SAFE.encode(TWELVE);
        for form in [
            TWELVE.to_string(),
            unicode,
            percent,
            mixed,
            standard,
            url_safe,
        ] {
            for cap in [0, 1, 7, 32, 80] {
                for offset in 0..=cap + 1 {
                    let text = format!("{}{form}{}", ".".repeat(offset), ".".repeat(8));
                    let (out, _) = scrub_and_cut(&s, &text, cap, false);
                    assert!(out.len() <= cap, "{out:?} is longer than {cap}");
                    assert_only_dots_and_redactions(&out, &form, offset, cap);
                    // A stream that kept only its first `cap` bytes.
                    let kept = &text[..cap.min(text.len())];
                    let (out, _) = scrub_and_cut(&s, kept, usize::MAX, true);
                    assert_only_dots_and_redactions(&out, &form, offset, cap);
                }
            }
        }
        let (whole, dropped) = scrub_and_cut(&s, "short and whole", 64, false);
        assert_eq!((whole.as_str(), dropped), ("short and whole", 0));
        let (cut, dropped) = scrub_and_cut(&s, "héllo", 2, false);
        assert_eq!(
            (cut.as_str(), dropped),
            ("h", 5),
            "cut on a character boundary"
        );
    }

    /// `out` holds nothing but the filler, `[REDACTED]` and, at the very
    /// end, a beginning of `[REDACTED]`.
    fn assert_only_dots_and_redactions(out: &str, form: &str, offset: usize, cap: usize) {
        let mut rest = out.replace(REDACTED, "");
        if let Some(at) = rest.find('[') {
            assert!(REDACTED.starts_with(&rest[at..]), "{out:?}");
            rest.truncate(at);
        }
        assert!(
            rest.bytes().all(|b| b == b'.'),
            "form {form:?} at offset {offset} under cap {cap} left {out:?}"
        );
    }

    #[test]
    fn json_values_are_scrubbed_in_keys_and_strings() {
        let mut v = serde_json::json!({"a": [SECRET, 1], SECRET: {"b": "x s3cr3t%2Ftok%2Ben y"}});
        Scrubber::new(SECRET, []).scrub_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": [REDACTED, 1], REDACTED: {"b": format!("x {REDACTED} y")}})
        );
    }
}
