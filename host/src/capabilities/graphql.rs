//! GraphQL documents, parsed to tell a query from a mutation (DESIGN D13).
//!
//! Shopify's Admin GraphQL tool is also its read path: a query runs freely,
//! a mutation needs an operator switch and a person's approval. A string
//! search for `mutation` is fooled by comments, aliases and string values,
//! so the host parses the document with a spec-compliant parser, bounded in
//! recursion and tokens so that a hostile document cannot exhaust the host,
//! and refuses anything it cannot read: a parse error, a type-system
//! definition, an empty document, a batch.
//!
//! A route that names its root fields (`(graphql: commentCreate)`) is held
//! to them: the host reads which root fields each operation selects, by
//! name and never by alias, through fragment spreads and inline fragments
//! at the root, so that a document approved as "a comment" cannot delete
//! an issue.

use apollo_parser::cst::CstNode;
use apollo_parser::{Parser, cst};
use std::collections::{BTreeMap, BTreeSet};

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

/// An operation's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationKind {
    Query,
    Mutation,
    Subscription,
}

impl OperationKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            OperationKind::Query => "query",
            OperationKind::Mutation => "mutation",
            OperationKind::Subscription => "subscription",
        }
    }
}

/// One operation of a document: its type, and the root fields it selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    pub kind: OperationKind,
    /// By field name (an alias hides nothing), through the fragments
    /// spread and inlined at the root.
    pub root_fields: BTreeSet<String>,
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fields: Vec<&str> = self.root_fields.iter().map(String::as_str).collect();
        write!(f, "{} {}", self.kind.as_str(), fields.join(", "))
    }
}

/// The operations of `ops` in words: `mutation commentCreate`, one
/// operation after another.
pub fn summary(ops: &[Operation]) -> String {
    ops.iter()
        .map(Operation::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Parses an executable GraphQL document: its operations, each with the
/// root fields it selects. Refuses a document that does not parse, holds
/// a type-system definition or no operation, spreads a fragment it does
/// not define, or spreads fragments in a cycle.
pub fn document(document: &str) -> Result<Vec<Operation>, String> {
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
    let mut operations = Vec::new();
    let mut fragments: BTreeMap<String, cst::SelectionSet> = BTreeMap::new();
    for definition in tree.document().definitions() {
        match definition {
            cst::Definition::OperationDefinition(op) => {
                let kind = match op.operation_type() {
                    None => OperationKind::Query,
                    Some(t) if t.query_token().is_some() => OperationKind::Query,
                    Some(t) if t.mutation_token().is_some() => OperationKind::Mutation,
                    Some(t) if t.subscription_token().is_some() => OperationKind::Subscription,
                    Some(_) => {
                        return Err(
                            "the GraphQL document has an operation of no known type".to_string()
                        );
                    }
                };
                operations.push((kind, op.selection_set()));
            }
            cst::Definition::FragmentDefinition(fragment) => {
                let name = name_of(fragment.fragment_name())
                    .ok_or("the GraphQL document has a fragment without a name")?;
                let Some(selection) = fragment.selection_set() else {
                    return Err(format!("fragment `{name}` selects nothing"));
                };
                if fragments.insert(name.clone(), selection).is_some() {
                    return Err(format!("fragment `{name}` is defined twice"));
                }
            }
            _ => return Err(
                "the GraphQL document holds a definition that is not an operation or a fragment"
                    .to_string(),
            ),
        }
    }
    if operations.is_empty() {
        return Err("the GraphQL document holds no operation".to_string());
    }
    operations
        .into_iter()
        .map(|(kind, selection)| {
            Ok(Operation {
                kind,
                root_fields: root_fields(selection, &fragments)?,
            })
        })
        .collect()
}

/// The field names `selection` selects at its own level, following
/// fragment spreads and inline fragments (each fragment once: a cycle is
/// refused, as the spec makes it invalid).
fn root_fields(
    selection: Option<cst::SelectionSet>,
    fragments: &BTreeMap<String, cst::SelectionSet>,
) -> Result<BTreeSet<String>, String> {
    let mut fields = BTreeSet::new();
    let mut pending: Vec<cst::SelectionSet> = selection.into_iter().collect();
    let mut spread: BTreeSet<String> = BTreeSet::new();
    while let Some(set) = pending.pop() {
        for item in set.selections() {
            match item {
                cst::Selection::Field(field) => {
                    let name = field
                        .name()
                        .map(|n| n.text().to_string())
                        .ok_or("the GraphQL document has a field without a name")?;
                    fields.insert(name);
                }
                cst::Selection::InlineFragment(inline) => {
                    pending.extend(inline.selection_set());
                }
                cst::Selection::FragmentSpread(spreading) => {
                    let name = name_of(spreading.fragment_name())
                        .ok_or("the GraphQL document spreads a fragment without a name")?;
                    let Some(target) = fragments.get(&name) else {
                        return Err(format!(
                            "the GraphQL document spreads fragment `{name}`, which it does not define"
                        ));
                    };
                    if !spread.insert(name.clone()) {
                        // Spread twice at the root, or a cycle: once is enough
                        // to know its fields; a cycle is invalid GraphQL.
                        if spreads_itself(&name, fragments) {
                            return Err(format!("fragment `{name}` spreads itself"));
                        }
                        continue;
                    }
                    pending.push(target.clone());
                }
            }
        }
    }
    Ok(fields)
}

/// A fragment's name, as written.
fn name_of(fragment: Option<cst::FragmentName>) -> Option<String> {
    fragment
        .and_then(|n| n.name())
        .map(|n| n.text().to_string())
}

/// Whether fragment `name` reaches itself through spreads at any depth.
fn spreads_itself(name: &str, fragments: &BTreeMap<String, cst::SelectionSet>) -> bool {
    let mut seen = BTreeSet::new();
    let mut pending: Vec<cst::SelectionSet> = fragments.get(name).cloned().into_iter().collect();
    while let Some(set) = pending.pop() {
        for node in set.syntax().descendants() {
            if let Some(spreading) = cst::FragmentSpread::cast(node) {
                let Some(target) = name_of(spreading.fragment_name()) else {
                    continue;
                };
                if target == name {
                    return true;
                }
                if seen.insert(target.clone())
                    && let Some(next) = fragments.get(&target)
                {
                    pending.push(next.clone());
                }
            }
        }
    }
    false
}

/// Parses an executable GraphQL document and counts its operations by kind.
/// Every operation counts, whichever `operationName` would select: a
/// document that holds a mutation is treated as one.
pub fn operations(text: &str) -> Result<Operations, String> {
    Ok(count(&document(text)?))
}

/// The operations of `ops`, counted by kind.
pub fn count(ops: &[Operation]) -> Operations {
    let mut counted = Operations::default();
    for op in ops {
        match op.kind {
            OperationKind::Query => counted.queries += 1,
            OperationKind::Mutation => counted.mutations += 1,
            OperationKind::Subscription => counted.subscriptions += 1,
        }
    }
    counted
}

/// Why a document's operations do not fit a route that names its root
/// fields: more than one operation, or a root field it does not name
/// (`__typename` always fits); `None` when they fit or none are named.
pub fn outside_fields(ops: &[Operation], allowed: &[String]) -> Option<String> {
    if allowed.is_empty() {
        return None;
    }
    if ops.len() != 1 {
        return Some(format!(
            "this route carries one GraphQL operation, and the body holds {}",
            ops.len()
        ));
    }
    let extra: Vec<&str> = ops[0]
        .root_fields
        .iter()
        .map(String::as_str)
        .filter(|f| *f != "__typename" && !allowed.iter().any(|a| a == f))
        .collect();
    if extra.is_empty() {
        return None;
    }
    Some(format!(
        "this route selects only {} at its root, and the body selects {}",
        allowed.join(", "),
        extra.join(", ")
    ))
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

/// Keys a GraphQL request body may hold: the document, which of its
/// operations to run, and the variables. Anything else could make an
/// upstream run a document the host never read: `extensions` (where
/// Apollo's persisted queries live), `documentId`, `doc_id`, `id`,
/// `queryId`. No route declares persisted documents, so none is sent.
const BODY_KEYS: [&str; 3] = ["query", "operationName", "variables"];

/// The operations of a GraphQL-over-HTTP request (each with its root
/// fields), judged as any upstream might read it. The document travels only as the `query` string of one
/// JSON object sent as `application/json`: a request that also carries URL
/// parameters (servers read `query`, `operationName`, `variables`,
/// `extensions` or a persisted id from there, some before the body), a
/// repeated key anywhere in the body (servers differ on which one they
/// keep), a key outside [`BODY_KEYS`], a batch, or another content type is
/// refused, so the document the host parsed is the only one there is.
pub(crate) fn request_document(
    url_query: &[(String, String)],
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Vec<Operation>, String> {
    if let Some((name, _)) = url_query.first() {
        return Err(format!(
            "a GraphQL request carries everything in its JSON body: URL parameter `{}` is refused",
            name.escape_debug()
        ));
    }
    for (name, value) in headers {
        let media = value.split(';').next().unwrap_or_default().trim();
        if name.eq_ignore_ascii_case("content-type")
            && !media.eq_ignore_ascii_case("application/json")
        {
            return Err(format!(
                "a GraphQL request body is sent as `application/json`, not `{}`",
                value.escape_debug()
            ));
        }
    }
    let value = serde_json::from_slice::<Unique>(body)
        .map_err(|e| format!("the GraphQL request body is not JSON with unique keys: {e}"))?
        .0;
    let Some(object) = value.as_object() else {
        return Err(
            "the GraphQL request body must be one JSON object (batches are refused)".to_string(),
        );
    };
    if let Some(key) = object.keys().find(|k| !BODY_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "the GraphQL request body may hold only `query`, `operationName` and `variables`, not `{}`",
            key.escape_debug()
        ));
    }
    let Some(document) = object.get("query").and_then(|q| q.as_str()) else {
        return Err("the GraphQL request body has no `query` string".to_string());
    };
    if !object
        .get("operationName")
        .is_none_or(|n| n.is_string() || n.is_null())
    {
        return Err("the GraphQL request's `operationName` must be a string".to_string());
    }
    self::document(document)
}

/// A JSON value whose objects were checked for repeated keys as it was
/// parsed (serde_json keeps the last of two; other servers the first).
struct Unique(serde_json::Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Unique, D::Error> {
        deserializer.deserialize_any(UniqueVisitor)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Unique;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Unique, E> {
        Ok(Unique(v.into()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Unique, E> {
        Ok(Unique(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Unique, E> {
        Ok(Unique(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Unique, E> {
        Ok(Unique(v.into()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Unique, E> {
        Ok(Unique(v.into()))
    }

    fn visit_unit<E>(self) -> Result<Unique, E> {
        Ok(Unique(serde_json::Value::Null))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Unique(items.into()))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{}` appears twice in one object",
                    key.escape_debug()
                )));
            }
            let Unique(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Unique(object.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request_operations(
        url_query: &[(String, String)],
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Operations, String> {
        request_document(url_query, headers, body).map(|ops| count(&ops))
    }

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
    fn reads_the_root_fields_through_aliases_and_fragments() {
        let fields = |d: &str| -> Vec<(String, Vec<String>)> {
            document(d)
                .unwrap()
                .into_iter()
                .map(|o| {
                    (
                        o.kind.as_str().to_string(),
                        o.root_fields.into_iter().collect(),
                    )
                })
                .collect()
        };
        let one = |kind: &str, f: &[&str]| {
            vec![(
                kind.to_string(),
                f.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            )]
        };
        assert_eq!(
            fields("mutation { commentCreate(input: {}) { success } }"),
            one("mutation", &["commentCreate"])
        );
        // An alias hides nothing.
        assert_eq!(
            fields("mutation { commentCreate: issueDelete(id: \"1\") { success } }"),
            one("mutation", &["issueDelete"])
        );
        // Fragments spread and inlined at the root, nested, spread twice.
        assert_eq!(
            fields(
                "fragment A on Mutation { issueDelete(id: \"1\") { success } ...B }\nfragment B on Mutation { teamDelete(id: \"t\") { success } }\nmutation { commentCreate(input: {}) { success } ...A ... on Mutation { userSuspend(id: \"u\") { success } } ...A }"
            ),
            one(
                "mutation",
                &["commentCreate", "issueDelete", "teamDelete", "userSuspend"]
            )
        );
        // A field deeper down is not a root field.
        assert_eq!(
            fields("query { issues { nodes { issueDelete: id } } }"),
            one("query", &["issues"])
        );
        assert_eq!(
            fields("{ __typename viewer { id } }"),
            one("query", &["__typename", "viewer"])
        );
        assert_eq!(
            summary(&document("query A { a } mutation B { b c }").unwrap()),
            "query a; mutation b, c"
        );
    }

    #[test]
    fn a_route_that_names_its_fields_carries_one_operation_of_those() {
        let allowed = ["commentCreate".to_string()];
        let check = |d: &str| outside_fields(&document(d).unwrap(), &allowed);
        assert_eq!(
            check("mutation { commentCreate(input: {}) { success } }"),
            None
        );
        assert_eq!(
            check("mutation { __typename commentCreate(input: {}) { success } }"),
            None
        );
        for (bad, says) in [
            (
                "mutation { issueDelete(id: \"1\") { success } }",
                "issueDelete",
            ),
            (
                "mutation { commentCreate: issueDelete(id: \"1\") { success } }",
                "issueDelete",
            ),
            (
                "fragment F on Mutation { issueDelete(id: \"1\") { success } }\nmutation { commentCreate(input: {}) { success } ...F }",
                "issueDelete",
            ),
            (
                "mutation A { commentCreate(input: {}) { success } }\nmutation B { issueDelete(id: \"1\") { success } }",
                "holds 2",
            ),
        ] {
            let why = check(bad).unwrap_or_else(|| panic!("{bad} must be refused"));
            assert!(why.contains(says), "{bad}: {why}");
        }
        // Nothing named: any root field (the document is the argument).
        assert_eq!(
            outside_fields(&document("mutation { a b }").unwrap(), &[]),
            None
        );
    }

    #[test]
    fn refuses_fragments_it_cannot_resolve() {
        for bad in [
            "query { ...Missing }",
            "fragment A on Query { ...B }\nfragment B on Query { ...A }\nquery { ...A }",
            "fragment A on Query { a }\nfragment A on Query { b }\nquery { ...A }",
        ] {
            assert!(document(bad).is_err(), "{bad:?} must be refused");
        }
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

    fn body(bytes: &[u8]) -> Result<Operations, String> {
        request_operations(&[], &[], bytes)
    }

    #[test]
    fn reads_a_request_body() {
        assert_eq!(
            body(br#"{"query": "{ shop { name } }", "variables": {}, "operationName": null}"#)
                .map(|o| o.is_read_only()),
            Ok(true)
        );
        assert_eq!(
            body(br#"{"query": "mutation { a }"}"#).map(|o| o.mutations),
            Ok(1)
        );
        for bad in [
            &br#"[{"query": "{ a }"}]"#[..],
            br#"{"q": "{ a }"}"#,
            b"not json",
            br#"{"query": 1}"#,
            br#"{"query": "{ a }", "operationName": 7}"#,
        ] {
            assert!(body(bad).is_err());
        }
    }

    #[test]
    fn a_request_is_judged_as_any_upstream_might_read_it() {
        let innocent = r#""query": "{ shop { name } }""#;
        for (bad, why) in [
            // Two `query` members: a server keeping the first runs the mutation.
            (
                format!(r#"{{"query": "mutation {{ a }}", {innocent}}}"#),
                "appears twice",
            ),
            // The same key spelled with an escape is the same key.
            (
                format!(r#"{{"query": "mutation {{ a }}", {innocent}}}"#),
                "appears twice",
            ),
            (
                format!(r#"{{{innocent}, "variables": {{"a": 1, "a": 2}}}}"#),
                "appears twice",
            ),
            // Persisted documents the host cannot read.
            (
                format!(r#"{{{innocent}, "documentId": "abc"}}"#),
                "documentId",
            ),
            (format!(r#"{{{innocent}, "doc_id": "123"}}"#), "doc_id"),
            (format!(r#"{{{innocent}, "id": "123"}}"#), "`id`"),
            (
                format!(
                    r#"{{{innocent}, "extensions": {{"persistedQuery": {{"version": 1, "sha256Hash": "ab"}}}}}}"#
                ),
                "extensions",
            ),
        ] {
            let err = body(bad.as_bytes()).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
        let ok_body = format!("{{{innocent}}}");
        for name in [
            "query",
            "operationName",
            "variables",
            "extensions",
            "documentId",
            "x",
        ] {
            let params = [(name.to_string(), "mutation { a }".to_string())];
            let err = request_operations(&params, &[], ok_body.as_bytes()).unwrap_err();
            assert!(err.contains("URL parameter"), "{name}: {err}");
        }
        for content_type in [
            "application/graphql",
            "application/x-www-form-urlencoded",
            "text/plain",
        ] {
            let headers = [("Content-Type".to_string(), content_type.to_string())];
            let err = request_operations(&[], &headers, ok_body.as_bytes()).unwrap_err();
            assert!(err.contains("application/json"), "{content_type}: {err}");
        }
        let json = [(
            "content-type".to_string(),
            "Application/JSON; charset=utf-8".to_string(),
        )];
        assert_eq!(
            request_operations(&[], &json, ok_body.as_bytes()).map(|o| o.is_read_only()),
            Ok(true)
        );
    }
}
