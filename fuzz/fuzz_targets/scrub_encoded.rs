//! The scrubber (`capabilities::scrub`) on base64 text holding a secret at
//! any offset, in either alphabet, padded or not, between arbitrary bytes.
//!
//! Checked: the secret is found (`finds`) and redacted; no base64 character
//! that carries a bit of the secret survives: what is left before the first
//! `[REDACTED]` is a prefix of the encoding that ends at or before the first
//! character holding a secret bit, and what is left after the last one is a
//! suffix that starts at or after the character holding its last bit (a
//! partial quantum at either edge, such as the `Q` of `[REDACTED]Q=`, is up
//! to 4 bits of the secret); scrubbing the output again changes nothing.

#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use libfuzzer_sys::fuzz_target;
use scout_host::capabilities::scrub::{REDACTED, Scrubber};

#[derive(Debug)]
struct Input {
    secret: String,
    before: Vec<u8>,
    after: Vec<u8>,
    alphabet: u8,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Input> {
        // A credential as issued: printable ASCII, long enough that its
        // base64 forms are matched (shorter ones would redact ordinary text).
        let n = u.int_in_range(12..=48)?;
        let secret = (0..n)
            .map(|_| Ok(char::from(u.int_in_range(0x21u8..=0x7e)?)))
            .collect::<Result<String>>()?;
        let before_len = u.int_in_range(0..=40)?;
        let before = u.bytes(before_len)?.to_vec();
        let after_len = u.int_in_range(0..=40)?;
        let after = u.bytes(after_len)?.to_vec();
        Ok(Input {
            secret,
            before,
            after,
            alphabet: u.arbitrary()?,
        })
    }
}

fuzz_target!(|input: Input| {
    let Input {
        secret,
        before,
        after,
        alphabet,
    } = input;
    let engine = match alphabet % 4 {
        0 => &STANDARD,
        1 => &STANDARD_NO_PAD,
        2 => &URL_SAFE,
        _ => &URL_SAFE_NO_PAD,
    };
    let mut plain = before.clone();
    plain.extend_from_slice(secret.as_bytes());
    plain.extend_from_slice(&after);
    let encoded = engine.encode(&plain).into_bytes();
    // Character i of base64 carries bits 6i..6i+5 of the input.
    let first_bit = 8 * before.len();
    let end_bit = 8 * (before.len() + secret.len());
    let first_char = first_bit / 6; // the first character holding a secret bit
    let end_char = end_bit.div_ceil(6); // one past the last such character

    let scrubber = Scrubber::new(&secret, []);
    assert!(
        scrubber.finds(&encoded),
        "found: the base64 of a secret at offset {} is not found",
        before.len()
    );
    let out = scrubber.scrub(&encoded);
    let text = String::from_utf8(out.clone()).expect("base64 and [REDACTED] are ASCII");
    let first = text
        .find(REDACTED)
        .expect("redacted: the secret's base64 was not replaced");
    let last = text.rfind(REDACTED).expect("redacted") + REDACTED.len();
    let head = &text.as_bytes()[..first];
    let tail = &text.as_bytes()[last..];
    assert!(
        encoded.starts_with(head) && head.len() <= first_char,
        "whole: {} character(s) before [REDACTED] carry secret bits ({text})",
        head.len().saturating_sub(first_char)
    );
    let tail_start = encoded.len() - tail.len();
    assert!(
        encoded.ends_with(tail) && tail_start >= end_char,
        "whole: {} character(s) after [REDACTED] carry secret bits ({text})",
        end_char.saturating_sub(tail_start)
    );
});
