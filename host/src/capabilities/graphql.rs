//! GraphQL documents, parsed to tell a query from a mutation (DESIGN D13).
//!
//! Shopify's Admin GraphQL tool is also its read path: a query runs freely,
//! a mutation needs an operator switch and a person's approval. A string
//! search for `mutation` is fooled by comments, aliases and string values,
//! so the host parses the document with a spec-compliant parser, bounded in
//! recursion and tokens so that a hostile document cannot exhaust the host,
//! and refuses anything it cannot read: a parse error, a type-system
//! definition, an empty document, a batch.

use apollo_parser::{Parser, cst};

/// Nesting the parser follows before it gives up (Shopify queries are shallow).
const RECURSION_LIMIT: usize = 64;
/// Tokens the parser reads before it gives up.
const TOKEN_LIMIT: usize = 50_000;

/// The kinds of operation a document holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Operations {
    pub queries: usize,
    pub mutations: usize,
    pub subscriptions: usize,
}

impl Operations {
    /// Only queries.
    pub(crate) fn is_read_only(&self) -> bool {
        self.mutations == 0 && self.subscriptions == 0
    }
}

/// Parses an executable GraphQL document and counts its operations by kind.
/// Every operation counts, whichever `operationName` would select: a
/// document that holds a mutation is treated as one.
pub fn operations(document: &str) -> Result<Operations, String> {
    let tree = Parser::new(document)
        .recursion_limit(RECURSION_LIMIT)
        .token_limit(TOKEN_LIMIT)
        .parse();
    if let Some(e) = tree.errors().next() {
        return Err(format!(
            "the GraphQL document does not parse: {}",
            e.message()
        ));
    }
    let mut ops = Operations::default();
    for definition in tree.document().definitions() {
        match definition {
            cst::Definition::OperationDefinition(op) => match op.operation_type() {
                None => ops.queries += 1,
                Some(t) if t.query_token().is_some() => ops.queries += 1,
                Some(t) if t.mutation_token().is_some() => ops.mutations += 1,
                Some(t) if t.subscription_token().is_some() => ops.subscriptions += 1,
                Some(_) => {
                    return Err(
                        "the GraphQL document has an operation of no known type".to_string()
                    );
                }
            },
            cst::Definition::FragmentDefinition(_) => {}
            _ => return Err(
                "the GraphQL document holds a definition that is not an operation or a fragment"
                    .to_string(),
            ),
        }
    }
    if ops == Operations::default() {
        return Err("the GraphQL document holds no operation".to_string());
    }
    Ok(ops)
}

/// Whether the GraphQL document in a tool's `query` argument holds anything
/// but queries (the gate of a tool that tells reads from mutations), or why
/// it cannot be read: no `query` string, or a document that does not parse.
pub fn argument_mutates(arguments: &serde_json::Value) -> Result<bool, String> {
    let document = arguments
        .get("query")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| "the tool's `query` argument must be the GraphQL document".to_string())?;
    operations(document).map(|ops| !ops.is_read_only())
}

/// The operations of a GraphQL-over-HTTP request body: one JSON object
/// whose `query` is the document. A batch (a JSON array) is refused: the host
/// checks one document per request.
pub(crate) fn body_operations(body: &[u8]) -> Result<Operations, String> {
    let value: serde_json::Value = serde_json::from_slice(body)
        .map_err(|_| "the GraphQL request body is not JSON".to_string())?;
    let Some(object) = value.as_object() else {
        return Err(
            "the GraphQL request body must be one JSON object (batches are refused)".to_string(),
        );
    };
    let Some(document) = object.get("query").and_then(|q| q.as_str()) else {
        return Err("the GraphQL request body has no `query` string".to_string());
    };
    operations(document)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_queries_from_mutations_by_parsing() {
        let read = |d: &str| operations(d).map(|o| o.is_read_only());
        assert_eq!(read("{ shop { name } }"), Ok(true));
        assert_eq!(
            read("query Q($n: Int) { products(first: $n) { nodes { id } } }"),
            Ok(true)
        );
        // The word appears, but only in a comment, an alias, an argument and a string.
        assert_eq!(
            read(
                "# mutation { productDelete }\nquery { mutation: shop { name } products(query: \"mutation\") { nodes { id } } }"
            ),
            Ok(true)
        );
        assert_eq!(
            read(
                "mutation { productDelete(input: {id: \"gid://shopify/Product/1\"}) { deletedProductId } }"
            ),
            Ok(false)
        );
        // No keyword in lower case on its own line, still a mutation.
        assert_eq!(
            read(
                "query A { shop { name } }\nmutation\tB { tagsAdd(id: \"x\", tags: [\"a\"]) { node { id } } }"
            ),
            Ok(false)
        );
        assert_eq!(read("subscription { orders { id } }"), Ok(false));
        assert_eq!(
            read("fragment F on Shop { name }\nquery { shop { ...F } }"),
            Ok(true)
        );
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        for bad in [
            "",
            "# only a comment",
            "fragment F on Shop { name }",
            "type Shop { name: String }",
            "mutation { unclosed(",
            "query { a } garbage",
        ] {
            assert!(operations(bad).is_err(), "{bad:?} must be refused");
        }
        let deep = format!("query {}{}", "{ a ".repeat(5000), "}".repeat(5000));
        assert!(
            operations(&deep).is_err(),
            "a document nested past the limit is refused, not followed"
        );
        let wide = format!("query {{ {} }}", "a ".repeat(60_000));
        assert!(
            operations(&wide).is_err(),
            "a document past the token limit is refused"
        );
    }

    #[test]
    fn reads_a_request_body() {
        assert_eq!(
            body_operations(br#"{"query": "{ shop { name } }", "variables": {}}"#)
                .map(|o| o.is_read_only()),
            Ok(true)
        );
        assert_eq!(
            body_operations(br#"{"query": "mutation { a }"}"#).map(|o| o.mutations),
            Ok(1)
        );
        for bad in [
            &br#"[{"query": "{ a }"}]"#[..],
            br#"{"q": "{ a }"}"#,
            b"not json",
            br#"{"query": 1}"#,
        ] {
            assert!(body_operations(bad).is_err());
        }
    }
}
