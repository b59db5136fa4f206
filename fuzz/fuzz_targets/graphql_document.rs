//! The GraphQL operation parser (`capabilities::graphql::document`), on
//! arbitrary documents built from the pieces that have fooled such checks
//! (aliases, fragments spread and inlined at the root, nested and cyclic
//! fragments, several operations, comments, strings holding keywords) or
//! raw text.
//!
//! Checked: it never panics and always answers; an answer holds at least
//! one operation; counting by kind (`operations`) agrees with it; the root
//! fields a route names admit exactly the documents whose one operation
//! selects only those (`outside_fields`), so a root field the route does
//! not name is never let through, under an alias or behind a fragment; and
//! the same document parsed twice gives the same answer.

#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use scout_host::capabilities::graphql::{count, document, operations, outside_fields};

/// Pieces a document is assembled from.
const PIECES: &[&str] = &[
    "query", "mutation", "subscription", "fragment", "on", "Mutation", "Query", "{", "}", "(", ")", ":", "...",
    "... on Mutation", "@include(if: true)", "commentCreate", "issueDelete", "__typename", "a", "b", "F", "G",
    "$x", "\"mutation { issueDelete }\"", "# mutation\n", "\n", " ", ",", "input: {}", "id: \"1\"", "[", "]", "=",
    "!", "String", "\"\"\"block\"\"\"", "\\u0000", "é",
];

#[derive(Debug)]
struct Input {
    text: String,
    allowed: Vec<String>,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Input> {
        let text = if u.arbitrary::<bool>()? {
            let n = u.int_in_range(0..=64)?;
            let mut text = String::new();
            for _ in 0..n {
                text.push_str(u.choose(PIECES)?);
                if u.arbitrary::<bool>()? {
                    text.push(' ');
                }
            }
            text
        } else {
            u.arbitrary::<String>()?
        };
        let allowed = u
            .choose(&[
                &[][..],
                &["commentCreate"][..],
                &["commentCreate", "a"][..],
                &["a", "b", "__typename"][..],
            ])?
            .iter()
            .map(|s| s.to_string())
            .collect();
        Ok(Input { text, allowed })
    }
}

fuzz_target!(|input: Input| {
    let answer = document(&input.text);
    // Deterministic.
    assert_eq!(answer, document(&input.text), "deterministic:");
    let counted = operations(&input.text);
    match &answer {
        Err(_) => assert!(counted.is_err(), "consistent: counting accepted a refused document"),
        Ok(ops) => {
            assert!(!ops.is_empty(), "nonempty: an answer holds an operation");
            let c = count(ops);
            assert_eq!(Ok(c), counted, "consistent:");
            assert_eq!(c.queries + c.mutations + c.subscriptions, ops.len(), "consistent:");
            let verdict = outside_fields(ops, &input.allowed);
            if input.allowed.is_empty() {
                assert_eq!(verdict, None, "pinned: nothing named admits anything");
            } else {
                let fits = ops.len() == 1
                    && ops[0]
                        .root_fields
                        .iter()
                        .all(|f| f == "__typename" || input.allowed.contains(f));
                assert_eq!(verdict.is_none(), fits, "pinned: {:?} {:?}", ops, input.allowed);
            }
        }
    }
});
