//! The Shopify connector: three read tools and the Admin GraphQL tool over
//! Shopify's GraphQL Admin API, version 2026-10
//! (`POST /admin/api/2026-10/graphql.json`).
//!
//! Every request goes through the host's HTTP capability, which is bound to
//! one shop's origin (`https://{shop}.myshopify.com`) and adds the access
//! token as `X-Shopify-Access-Token`; this code never sees a secret.
//!
//! - The read tools each send one fixed query document, written below as a
//!   constant. Their arguments are checked, then travel only as GraphQL
//!   `variables`: a product search string is the `$query` variable of
//!   `products(first:, query:)`, never text spliced into a document. Their
//!   routes are `(graphql-query: ROOT)`, so the host also parses each body and
//!   sends it only if it is one query selecting that root field.
//! - `admin-graphql` sends the agent's document as given. The host, not
//!   this code, parses the `query` argument to decide whether it is a query
//!   (runs) or a mutation (needs SHOPIFY_ALLOW_WRITES and a person's
//!   approval), and checks the body sent against that decision. This code
//!   only checks that `variables` is a JSON object.
//!
//! GraphQL answers errors with HTTP 200 and an `errors` array; those are
//! tool errors (throttling and access denials `upstream`, a document
//! Shopify rejects `invalid-input`), never a success. The one exception is
//! `admin-graphql`'s partial data (some top-level fields answered): it comes
//! back with the errors listed beside it, so that an agent does not retry a
//! mutation that ran. A mutation's `userErrors` are returned, listed, with
//! the data. `errors` may be an array, a string (401) or an object (400).
//!
//! What Shopify answers was written from its documentation and never
//! observed (the fixtures are UNVERIFIED).

// The tools' bodies run only in the component; natively only the tests call them.
#![cfg_attr(not(target_family = "wasm"), allow(dead_code))]

scout_sdk::bindings!();

use bindings::exports::scout::shopify::read_tools::{
    self, Money, Order, OrderStatus, Product, Shop,
};
use bindings::exports::scout::shopify::write_tools::{self, GraphqlAnswer, QueryCost, UserError};
use scout_sdk::args::bounded;
use scout_sdk::errors::status_error_with;
use scout_sdk::graphql;
use scout_sdk::{ErrorFormat, Http, Method, ToolError, UpstreamError, cut_message, parse_json};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The one path every tool posts to (Admin API version 2026-10).
const ENDPOINT: &str = "/admin/api/2026-10/graphql.json";
/// Products or orders listed when no limit is given.
const DEFAULT_LIMIT: u8 = 10;
/// Most products or orders listed.
const MAX_LIMIT: u8 = 50;
/// Longest product search string accepted.
const MAX_SEARCH: usize = 500;
/// Longest GraphQL document accepted by `admin-graphql`.
const MAX_DOCUMENT: usize = 65_536;
/// Longest `variables` text accepted by `admin-graphql`.
const MAX_VARIABLES: usize = 1_048_576;

// ---------------------------------------------------------------------------
// The fixed GraphQL documents of the read tools
// ---------------------------------------------------------------------------

/// The shop's general settings.
const SHOP_QUERY: &str = "query shopInfo { shop { id name myshopifyDomain primaryDomain { url } contactEmail currencyCode ianaTimezone plan { publicDisplayName shopifyPlus partnerDevelopment } } }";
/// Products matching a search string (Shopify search syntax), as a variable.
const PRODUCTS_QUERY: &str = "query searchProducts($first: Int!, $query: String) { products(first: $first, query: $query) { nodes { id title handle status vendor productType totalInventory onlineStoreUrl updatedAt priceRangeV2 { minVariantPrice { amount currencyCode } maxVariantPrice { amount currencyCode } } } } }";
/// The most recently processed orders, optionally filtered by status.
const ORDERS_QUERY: &str = "query recentOrders($first: Int!, $query: String) { orders(first: $first, query: $query, sortKey: PROCESSED_AT, reverse: true) { nodes { id name processedAt displayFinancialStatus displayFulfillmentStatus totalPriceSet { shopMoney { amount currencyCode } } currentSubtotalLineItemsQuantity closed cancelledAt } } }";

/// The read tools' documents: each must be a query.
#[cfg(test)]
const READ_DOCUMENTS: [&str; 3] = [SHOP_QUERY, PRODUCTS_QUERY, ORDERS_QUERY];

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// `limit`: default 10; 1 to 50, or `invalid-input`.
fn list_limit(limit: Option<u8>) -> Result<u8, ToolError> {
    bounded("limit", limit, DEFAULT_LIMIT, 1, MAX_LIMIT)
}

/// A product search string: trimmed; empty means no filter; long or
/// multi-line text is refused.
fn search_string(query: &str) -> Result<Option<String>, ToolError> {
    let query = query.trim();
    if query.is_empty() {
        return Ok(None);
    }
    if query.len() > MAX_SEARCH {
        return Err(ToolError::invalid(format!(
            "query is longer than {MAX_SEARCH} bytes"
        )));
    }
    if query.chars().any(char::is_control) {
        return Err(ToolError::invalid("query contains a control character"));
    }
    Ok(Some(query.to_string()))
}

/// The orders search filter for a status (Shopify's `status:` filter).
fn status_filter(status: Option<OrderStatus>) -> Option<&'static str> {
    status.map(|s| match s {
        OrderStatus::Open => "status:open",
        OrderStatus::Closed => "status:closed",
        OrderStatus::Cancelled => "status:cancelled",
    })
}

/// `admin-graphql`'s document: not empty, not too long. It is sent as given.
fn check_document(query: &str) -> Result<(), ToolError> {
    if query.trim().is_empty() {
        return Err(ToolError::invalid(
            "query is empty: give a GraphQL document such as `query { shop { name } }`",
        ));
    }
    if query.len() > MAX_DOCUMENT {
        return Err(ToolError::invalid(format!(
            "query is longer than {MAX_DOCUMENT} bytes"
        )));
    }
    Ok(())
}

/// `admin-graphql`'s variables: JSON object text; absent or blank is `{}`.
fn parse_variables(variables: Option<&str>) -> Result<Map<String, Value>, ToolError> {
    let Some(text) = variables.filter(|t| !t.trim().is_empty()) else {
        return Ok(Map::new());
    };
    if text.len() > MAX_VARIABLES {
        return Err(ToolError::invalid(format!(
            "variables is longer than {MAX_VARIABLES} bytes"
        )));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ToolError::invalid(
            "variables must be a JSON object, such as {\"id\": \"gid://shopify/Product/1\"}",
        )),
        Err(e) => Err(ToolError::invalid(format!("variables is not JSON: {e}"))),
    }
}

// ---------------------------------------------------------------------------
// Request bodies
// ---------------------------------------------------------------------------

#[derive(Serialize)]
struct NoVariables {}

/// `$first` and an optional `$query` search string (omitted when none).
#[derive(Serialize)]
struct ListVariables<'a> {
    first: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    query: Option<&'a str>,
}

// ---------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------

/// `extensions.cost`, as Shopify reports it.
#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
struct ApiCost {
    requested_query_cost: f64,
    #[serde(default)]
    actual_query_cost: Option<f64>,
    throttle_status: ApiThrottle,
}

#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
struct ApiThrottle {
    maximum_available: f64,
    currently_available: f64,
    restore_rate: f64,
}

fn points(v: f64) -> u32 {
    if v.is_finite() && v > 0.0 {
        v.round().min(u32::MAX as f64) as u32
    } else {
        0
    }
}

impl From<ApiCost> for QueryCost {
    fn from(c: ApiCost) -> QueryCost {
        QueryCost {
            requested: points(c.requested_query_cost),
            actual: c.actual_query_cost.map(points),
            currently_available: c.throttle_status.currently_available,
            maximum_available: c.throttle_status.maximum_available,
            restore_rate: c.throttle_status.restore_rate,
        }
    }
}

/// One entry of a GraphQL `errors` array (or the whole of a string or
/// object `errors`, which Shopify sends on 401 and 400).
#[derive(Debug, Clone, PartialEq)]
struct GraphqlError {
    message: String,
    code: Option<String>,
}

/// A parsed answer: `data` (its text, as Shopify wrote it), `errors` and
/// the cost.
#[derive(Debug)]
struct Answer {
    data: Option<Box<RawValue>>,
    errors: Vec<GraphqlError>,
    cost: Option<ApiCost>,
}

/// The top level of a GraphQL answer; `data` is kept as text so that
/// `admin-graphql` hands it back with Shopify's own field order and numbers.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    data: Option<Box<RawValue>>,
    #[serde(default)]
    errors: Option<Value>,
    #[serde(default)]
    extensions: Option<Value>,
}

/// `errors` in any of the shapes Shopify uses: a GraphQL array of
/// `{message, extensions: {code}}`, a string (`"[API] Invalid API key or
/// access token ..."`), or an object (`{"query": "Required parameter
/// missing or invalid"}`).
fn errors_of(value: Option<&Value>) -> Vec<GraphqlError> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|e| GraphqlError {
                message: match e.get("message") {
                    Some(Value::String(m)) => m.trim().to_string(),
                    _ => e.to_string(),
                },
                code: e
                    .pointer("/extensions/code")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
            .collect(),
        Some(Value::String(s)) => vec![GraphqlError {
            message: s.trim().to_string(),
            code: None,
        }],
        Some(Value::Object(map)) => vec![GraphqlError {
            message: map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => format!("{k}: {s}"),
                    other => format!("{k}: {other}"),
                })
                .collect::<Vec<_>>()
                .join("; "),
            code: None,
        }],
        Some(other) => vec![GraphqlError {
            message: other.to_string(),
            code: None,
        }],
    }
}

/// The errors as one message: each with its code, joined, cut.
fn message_of(errors: &[GraphqlError]) -> String {
    let text = errors
        .iter()
        .map(|e| match &e.code {
            Some(code) => format!("{} ({code})", e.message),
            None => e.message.clone(),
        })
        .collect::<Vec<_>>()
        .join("; ");
    cut_message(text)
}

/// Codes that say something about the shop or the token, not the document.
const NOT_THE_DOCUMENT: [&str; 4] = [
    "THROTTLED",
    "ACCESS_DENIED",
    "SHOP_INACTIVE",
    "INTERNAL_SERVER_ERROR",
];

/// The tool error for an answer whose `errors` mean it did not run.
///
/// Throttling, access denials, an inactive shop and Shopify's own failures
/// are `upstream`. Anything else is Shopify rejecting the document: for the
/// agent's own document (`admin-graphql`) that is `invalid-input`; for a
/// read tool's fixed document it is `upstream` (a schema change upstream).
fn refusal(
    status: u16,
    errors: &[GraphqlError],
    cost: Option<&ApiCost>,
    agents_document: bool,
) -> ToolError {
    let mut message = message_of(errors);
    let has = |code: &str| errors.iter().any(|e| e.code.as_deref() == Some(code));
    if has("THROTTLED") {
        if let Some(c) = cost {
            message = cut_message(format!(
                "{message}: the document costs {} points and {} of {} are available, restoring {} per second",
                points(c.requested_query_cost),
                c.throttle_status.currently_available,
                c.throttle_status.maximum_available,
                c.throttle_status.restore_rate
            ));
        }
        return ToolError::Upstream(UpstreamError { status, message });
    }
    let about_the_shop = errors.iter().any(|e| {
        e.code
            .as_deref()
            .is_some_and(|c| NOT_THE_DOCUMENT.contains(&c))
    });
    if agents_document && !about_the_shop && (200..300).contains(&status) {
        return ToolError::invalid(cut_message(format!(
            "Shopify rejected the document: {message}"
        )));
    }
    ToolError::Upstream(UpstreamError { status, message })
}

/// The answer's cost, when it reports one.
fn cost_of(envelope: &Envelope) -> Option<ApiCost> {
    envelope
        .extensions
        .as_ref()
        .and_then(|x| x.get("cost"))
        .and_then(|c| serde_json::from_value::<ApiCost>(c.clone()).ok())
}

/// Reads Shopify's answer. A non-2xx status is the SDK's error for it
/// (`not-found` for a 404, else `upstream`), its message Shopify's errors
/// with their codes when the body has any (the SDK's
/// [`ErrorFormat::GraphQl`] reads neither the codes nor a string or object
/// `errors`), else the body's text; a THROTTLED one carries the cost. A
/// 2xx body that is not JSON is `bad-response`.
fn parse_answer(status: u16, body: &[u8]) -> Result<Answer, ToolError> {
    let envelope = serde_json::from_slice::<Envelope>(body);
    if let Some(error) = ErrorFormat::GraphQl.status_error(status, body) {
        let Ok(envelope) = envelope else {
            return Err(error);
        };
        let errors = errors_of(envelope.errors.as_ref());
        if errors.is_empty() {
            return Err(error);
        }
        if errors
            .iter()
            .any(|e| e.code.as_deref() == Some("THROTTLED"))
        {
            return Err(refusal(status, &errors, cost_of(&envelope).as_ref(), false));
        }
        return Err(status_error_with(status, message_of(&errors)));
    }
    let envelope = envelope
        .map_err(|e| ToolError::BadResponse(format!("response is not a JSON object: {e}")))?;
    let errors = errors_of(envelope.errors.as_ref());
    let cost = cost_of(&envelope);
    let data = envelope.data.filter(|d| d.get().trim() != "null");
    Ok(Answer { data, errors, cost })
}

/// A read tool's answer: any error is a tool error, then the data as `T`.
fn read_answer<T: DeserializeOwned>(status: u16, body: &[u8]) -> Result<T, ToolError> {
    let answer = parse_answer(status, body)?;
    if !answer.errors.is_empty() {
        return Err(refusal(status, &answer.errors, answer.cost.as_ref(), false));
    }
    let data = answer
        .data
        .ok_or_else(|| ToolError::BadResponse("the answer has neither data nor errors".into()))?;
    parse_json(data.get().as_bytes())
}

/// The userErrors of each top-level field of `data` (each mutation's payload).
fn user_errors(data: &Value) -> Vec<UserError> {
    let Some(fields) = data.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (operation, payload) in fields {
        let Some(list) = payload.get("userErrors").and_then(Value::as_array) else {
            continue;
        };
        for e in list {
            let field = e.get("field").and_then(Value::as_array).map(|parts| {
                parts
                    .iter()
                    .map(|p| match p {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(".")
            });
            out.push(UserError {
                operation: operation.clone(),
                field: field.filter(|f| !f.is_empty()),
                message: e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                code: e.get("code").and_then(Value::as_str).map(str::to_string),
            });
        }
    }
    out
}

/// `admin-graphql`'s answer: errors without data (no `data`, or every
/// top-level field null: nothing ran) are a tool error; data comes back as
/// JSON text with any partial errors, userErrors and the cost.
fn admin_answer(status: u16, body: &[u8]) -> Result<GraphqlAnswer, ToolError> {
    let answer = parse_answer(status, body)?;
    let ran = match &answer.data {
        Some(raw) => {
            let parsed: Value = serde_json::from_str(raw.get())
                .map_err(|e| ToolError::BadResponse(format!("data is not JSON: {e}")))?;
            let all_null = parsed
                .as_object()
                .is_some_and(|fields| fields.values().all(Value::is_null));
            (answer.errors.is_empty() || !all_null).then_some((raw, parsed))
        }
        None => None,
    };
    let Some((data, parsed)) = ran else {
        if answer.errors.is_empty() {
            return Err(ToolError::BadResponse(
                "the answer has neither data nor errors".into(),
            ));
        }
        return Err(refusal(status, &answer.errors, answer.cost.as_ref(), true));
    };
    Ok(GraphqlAnswer {
        data_json: data.get().to_string(),
        errors: answer
            .errors
            .iter()
            .map(|e| message_of(std::slice::from_ref(e)))
            .collect(),
        user_errors: user_errors(&parsed),
        cost: answer.cost.map(QueryCost::from),
    })
}

// ---------------------------------------------------------------------------
// Shopify's shapes
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiMoney {
    amount: String,
    currency_code: String,
}

impl From<ApiMoney> for Money {
    fn from(m: ApiMoney) -> Money {
        Money {
            amount: m.amount,
            currency_code: m.currency_code,
        }
    }
}

#[derive(Deserialize)]
struct ShopData {
    shop: ApiShop,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiShop {
    id: String,
    name: String,
    myshopify_domain: String,
    primary_domain: ApiDomain,
    contact_email: String,
    currency_code: String,
    iana_timezone: String,
    plan: ApiPlan,
}

#[derive(Deserialize)]
struct ApiDomain {
    url: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiPlan {
    public_display_name: String,
    shopify_plus: bool,
    partner_development: bool,
}

impl From<ApiShop> for Shop {
    fn from(s: ApiShop) -> Shop {
        Shop {
            id: s.id,
            name: s.name,
            myshopify_domain: s.myshopify_domain,
            primary_domain_url: s.primary_domain.url,
            contact_email: s.contact_email,
            currency_code: s.currency_code,
            iana_timezone: s.iana_timezone,
            plan: s.plan.public_display_name,
            shopify_plus: s.plan.shopify_plus,
            partner_development: s.plan.partner_development,
        }
    }
}

#[derive(Deserialize)]
struct Nodes<T> {
    nodes: Vec<T>,
}

#[derive(Deserialize)]
struct ProductsData {
    products: Nodes<ApiProduct>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiProduct {
    id: String,
    title: String,
    handle: String,
    status: String,
    vendor: String,
    product_type: String,
    total_inventory: i32,
    #[serde(default)]
    online_store_url: Option<String>,
    updated_at: String,
    price_range_v2: ApiPriceRange,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiPriceRange {
    min_variant_price: ApiMoney,
    max_variant_price: ApiMoney,
}

impl From<ApiProduct> for Product {
    fn from(p: ApiProduct) -> Product {
        Product {
            id: p.id,
            title: p.title,
            handle: p.handle,
            status: p.status,
            vendor: p.vendor,
            product_type: p.product_type,
            total_inventory: p.total_inventory,
            min_price: p.price_range_v2.min_variant_price.into(),
            max_price: p.price_range_v2.max_variant_price.into(),
            online_store_url: p.online_store_url,
            updated_at: p.updated_at,
        }
    }
}

#[derive(Deserialize)]
struct OrdersData {
    orders: Nodes<ApiOrder>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiOrder {
    id: String,
    name: String,
    processed_at: String,
    #[serde(default)]
    display_financial_status: Option<String>,
    display_fulfillment_status: String,
    total_price_set: ApiMoneyBag,
    current_subtotal_line_items_quantity: i32,
    closed: bool,
    #[serde(default)]
    cancelled_at: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiMoneyBag {
    shop_money: ApiMoney,
}

impl From<ApiOrder> for Order {
    fn from(o: ApiOrder) -> Order {
        Order {
            id: o.id,
            name: o.name,
            processed_at: o.processed_at,
            financial_status: o.display_financial_status,
            fulfillment_status: o.display_fulfillment_status,
            total: o.total_price_set.shop_money.into(),
            item_count: o.current_subtotal_line_items_quantity,
            closed: o.closed,
            cancelled_at: o.cancelled_at,
        }
    }
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// POSTs one GraphQL body to the Admin API and returns status and body.
fn post(body: Vec<u8>) -> Result<(u16, Vec<u8>), ToolError> {
    let http = Http::connect()?
        .with_header("accept", "application/json")
        .with_header("user-agent", "scout-connector-shopify");
    let response = http.send(Method::Post, ENDPOINT, &[], Some(body))?;
    Ok((response.status, response.body))
}

/// Sends a read tool's fixed document with its variables.
fn read<V: Serialize, T: DeserializeOwned>(
    query: &'static str,
    variables: &V,
) -> Result<T, ToolError> {
    let (status, body) = post(graphql::request(query, variables)?)?;
    read_answer(status, &body)
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

struct Shopify;

impl read_tools::Guest for Shopify {
    fn shop_info() -> Result<Shop, ToolError> {
        let data: ShopData = read(SHOP_QUERY, &NoVariables {})?;
        Ok(data.shop.into())
    }

    fn search_products(query: String, limit: Option<u8>) -> Result<Vec<Product>, ToolError> {
        let first = list_limit(limit)?;
        let search = search_string(&query)?;
        let data: ProductsData = read(
            PRODUCTS_QUERY,
            &ListVariables {
                first,
                query: search.as_deref(),
            },
        )?;
        Ok(data.products.nodes.into_iter().map(Product::from).collect())
    }

    fn recent_orders(
        limit: Option<u8>,
        status: Option<OrderStatus>,
    ) -> Result<Vec<Order>, ToolError> {
        let first = list_limit(limit)?;
        let data: OrdersData = read(
            ORDERS_QUERY,
            &ListVariables {
                first,
                query: status_filter(status),
            },
        )?;
        Ok(data.orders.nodes.into_iter().map(Order::from).collect())
    }
}

impl write_tools::Guest for Shopify {
    fn admin_graphql(query: String, variables: Option<String>) -> Result<GraphqlAnswer, ToolError> {
        check_document(&query)?;
        let variables = parse_variables(variables.as_deref())?;
        let (status, body) = post(graphql::request(&query, &variables)?)?;
        admin_answer(status, &body)
    }
}

scout_sdk::export!(Shopify);

#[cfg(test)]
mod tests {
    use super::*;
    use scout_sdk::testing::fails;

    fn json(bytes: &[u8]) -> Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn read_documents_are_fixed_queries() {
        for doc in READ_DOCUMENTS {
            assert!(doc.starts_with("query "), "{doc}");
            assert!(!doc.to_ascii_lowercase().contains("mutation"), "{doc}");
            assert_eq!(doc.matches('{').count(), doc.matches('}').count(), "{doc}");
        }
        assert!(ENDPOINT.starts_with("/admin/api/2026-10/"));
    }

    #[test]
    fn limits() {
        assert_eq!(list_limit(None).unwrap(), 10);
        assert_eq!(list_limit(Some(1)).unwrap(), 1);
        assert_eq!(list_limit(Some(50)).unwrap(), 50);
        for bad in [0, 51, 255] {
            assert!(
                matches!(fails(list_limit(Some(bad))), ToolError::InvalidInput(ref m) if *m == format!("limit must be between 1 and 50, not {bad}"))
            );
        }
    }

    #[test]
    fn search_strings_travel_as_variables() {
        assert_eq!(search_string("  ").unwrap(), None);
        assert_eq!(
            search_string(" hoodie ").unwrap().as_deref(),
            Some("hoodie")
        );
        assert!(search_string("a\nb").is_err());
        assert!(search_string(&"a".repeat(501)).is_err());
        // A search string that looks like GraphQL stays a variable's value.
        let hostile = search_string(
            "x\") { id } } mutation { productDelete(input: {id: \"1\"}) { deletedProductId",
        )
        .unwrap();
        let body = json(
            &graphql::request(
                PRODUCTS_QUERY,
                &ListVariables {
                    first: 5,
                    query: hostile.as_deref(),
                },
            )
            .unwrap(),
        );
        assert_eq!(body["query"], PRODUCTS_QUERY);
        assert_eq!(body["variables"]["first"], 5);
        assert!(
            body["variables"]["query"]
                .as_str()
                .unwrap()
                .contains("productDelete")
        );
        // No search string: the variable is omitted.
        let body = json(
            &graphql::request(
                PRODUCTS_QUERY,
                &ListVariables {
                    first: 10,
                    query: None,
                },
            )
            .unwrap(),
        );
        assert_eq!(body["variables"], serde_json::json!({"first": 10}));
    }

    #[test]
    fn order_status_filters() {
        assert_eq!(status_filter(None), None);
        assert_eq!(status_filter(Some(OrderStatus::Open)), Some("status:open"));
        assert_eq!(
            status_filter(Some(OrderStatus::Closed)),
            Some("status:closed")
        );
        assert_eq!(
            status_filter(Some(OrderStatus::Cancelled)),
            Some("status:cancelled")
        );
    }

    #[test]
    fn documents_and_variables() {
        assert!(check_document("{ shop { name } }").is_ok());
        assert!(check_document("  \n ").is_err());
        assert!(check_document(&"a".repeat(MAX_DOCUMENT + 1)).is_err());
        assert!(parse_variables(None).unwrap().is_empty());
        assert!(parse_variables(Some("  ")).unwrap().is_empty());
        assert_eq!(
            parse_variables(Some(r#"{"id": "gid://shopify/Product/1"}"#)).unwrap()["id"],
            "gid://shopify/Product/1"
        );
        for bad in ["[1]", "\"x\"", "3", "null", "{", "{\"a\":}"] {
            assert!(
                matches!(
                    fails(parse_variables(Some(bad))),
                    ToolError::InvalidInput(_)
                ),
                "{bad}"
            );
        }
        // The document is sent exactly as given.
        let doc =
            "mutation m($id: ID!) {\n  productDelete(input: {id: $id}) { deletedProductId }\n}";
        let vars = parse_variables(Some(r#"{"id":"gid://shopify/Product/1"}"#)).unwrap();
        let body = json(&graphql::request(doc, &vars).unwrap());
        assert_eq!(
            body,
            serde_json::json!({"query": doc, "variables": {"id": "gid://shopify/Product/1"}})
        );
    }

    #[test]
    fn errors_in_every_shape() {
        let e = fails(read_answer::<ShopData>(401, br#"{"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}"#));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 401 && u.message.starts_with("[API] Invalid API key")),
            "{e}"
        );
        let e = fails(read_answer::<ShopData>(
            400,
            br#"{"errors":{"query":"Required parameter missing or invalid"}}"#,
        ));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 400 && u.message == "query: Required parameter missing or invalid"),
            "{e}"
        );
        let e = fails(read_answer::<ShopData>(404, br#"{"errors":"Not Found"}"#));
        assert!(
            matches!(e, ToolError::NotFound(ref m) if m == "Not Found"),
            "{e}"
        );
        let e = fails(read_answer::<ShopData>(502, b"<html>Bad Gateway</html>"));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 502),
            "{e}"
        );
        let e = fails(read_answer::<ShopData>(200, b"<html>"));
        assert!(matches!(e, ToolError::BadResponse(_)), "{e}");
        let e = fails(read_answer::<ShopData>(200, br#"{"data":null}"#));
        assert!(matches!(e, ToolError::BadResponse(_)), "{e}");
        let e = fails(read_answer::<ShopData>(
            200,
            br#"{"data":{"shop":{"id":1}}}"#,
        ));
        assert!(matches!(e, ToolError::BadResponse(_)), "{e}");
    }

    const THROTTLED: &[u8] = br#"{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED","documentation":"https://shopify.dev/api/usage/rate-limits"}}],"extensions":{"cost":{"requestedQueryCost":752,"actualQueryCost":null,"throttleStatus":{"maximumAvailable":2000.0,"currentlyAvailable":666,"restoreRate":100.0}}}}"#;

    #[test]
    fn throttling_is_upstream_with_the_cost() {
        let expect = "Throttled (THROTTLED): the document costs 752 points and 666 of 2000 are available, restoring 100 per second";
        for agents in [false, true] {
            let answer = parse_answer(200, THROTTLED).unwrap();
            let e = refusal(200, &answer.errors, answer.cost.as_ref(), agents);
            assert!(
                matches!(e, ToolError::Upstream(ref u) if u.status == 200 && u.message == expect),
                "{e}"
            );
        }
        let e = fails(admin_answer(200, THROTTLED));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.message == expect),
            "{e}"
        );
        let e = fails(read_answer::<ShopData>(429, THROTTLED));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 429 && u.message == expect),
            "{e}"
        );
    }

    #[test]
    fn a_rejected_document_is_invalid_input_only_when_it_is_the_agents() {
        let body = br#"{"errors":[{"message":"Field 'nope' doesn't exist on type 'Shop'","locations":[{"line":1,"column":10}],"path":["query","shop","nope"],"extensions":{"code":"undefinedField","typeName":"Shop","fieldName":"nope"}}]}"#;
        let e = fails(admin_answer(200, body));
        assert!(
            matches!(e, ToolError::InvalidInput(ref m) if m == "Shopify rejected the document: Field 'nope' doesn't exist on type 'Shop' (undefinedField)"),
            "{e}"
        );
        let e = fails(read_answer::<ShopData>(200, body));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 200),
            "{e}"
        );
        let denied = br#"{"errors":[{"message":"Access denied for orders field.","extensions":{"code":"ACCESS_DENIED"}}],"data":null}"#;
        let e = fails(admin_answer(200, denied));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.message == "Access denied for orders field. (ACCESS_DENIED)"),
            "{e}"
        );
    }

    #[test]
    fn admin_answers_keep_data_user_errors_and_cost() {
        let body = br#"{"data":{"productUpdate":{"product":null,"userErrors":[{"field":["input","title"],"message":"Title can't be blank","code":"BLANK"}]},"other":{"userErrors":[]}},"extensions":{"cost":{"requestedQueryCost":10,"actualQueryCost":10,"throttleStatus":{"maximumAvailable":2000.0,"currentlyAvailable":1990,"restoreRate":100.0}}}}"#;
        let a = admin_answer(200, body).unwrap();
        assert_eq!(
            json(a.data_json.as_bytes())["productUpdate"]["product"],
            Value::Null
        );
        assert_eq!(a.user_errors.len(), 1);
        let u = &a.user_errors[0];
        assert_eq!(
            (
                u.operation.as_str(),
                u.field.as_deref(),
                u.message.as_str(),
                u.code.as_deref()
            ),
            (
                "productUpdate",
                Some("input.title"),
                "Title can't be blank",
                Some("BLANK")
            )
        );
        let c = a.cost.unwrap();
        assert_eq!(
            (c.requested, c.actual, c.currently_available),
            (10, Some(10), 1990.0)
        );
        assert!(a.errors.is_empty());
        // Partial data: the errors come back beside it.
        let a = admin_answer(200, br#"{"data":{"shop":{"name":"x"},"order":null},"errors":[{"message":"Access denied for order field.","extensions":{"code":"ACCESS_DENIED"}}]}"#).unwrap();
        assert_eq!(a.errors, ["Access denied for order field. (ACCESS_DENIED)"]);
        assert!(a.cost.is_none());
        // Errors and every field null: nothing ran.
        let e = fails(admin_answer(200, br#"{"data":{"customerDelete":null},"errors":[{"message":"Access denied for customerDelete field.","extensions":{"code":"ACCESS_DENIED"}}]}"#));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.message == "Access denied for customerDelete field. (ACCESS_DENIED)"),
            "{e}"
        );
        // Every field null without errors is an answer (nothing found).
        let a = admin_answer(200, br#"{"data":{"product":null}}"#).unwrap();
        assert_eq!(a.data_json, r#"{"product":null}"#);
        let e = fails(admin_answer(200, br#"{}"#));
        assert!(matches!(e, ToolError::BadResponse(_)), "{e}");
    }

    #[test]
    fn maps_shopify_shapes_to_records() {
        let shop: ShopData = read_answer(200, br#"{"data":{"shop":{"id":"gid://shopify/Shop/1","name":"Lumen","myshopifyDomain":"lumen.myshopify.com","primaryDomain":{"url":"https://lumen.example"},"contactEmail":"hi@lumen.example","currencyCode":"EUR","ianaTimezone":"Europe/Paris","plan":{"publicDisplayName":"Grow","shopifyPlus":false,"partnerDevelopment":true}}}}"#).unwrap();
        let shop = Shop::from(shop.shop);
        assert_eq!(
            (
                shop.primary_domain_url.as_str(),
                shop.plan.as_str(),
                shop.partner_development
            ),
            ("https://lumen.example", "Grow", true)
        );
        let products: ProductsData = read_answer(200, br#"{"data":{"products":{"nodes":[{"id":"gid://shopify/Product/1","title":"T","handle":"t","status":"DRAFT","vendor":"","productType":"","totalInventory":-3,"onlineStoreUrl":null,"updatedAt":"2026-11-30T11:17:40Z","priceRangeV2":{"minVariantPrice":{"amount":"1.00","currencyCode":"EUR"},"maxVariantPrice":{"amount":"2.50","currencyCode":"EUR"}}}]}}}"#).unwrap();
        let p = Product::from(products.products.nodes.into_iter().next().unwrap());
        assert_eq!(
            (
                p.total_inventory,
                p.online_store_url,
                p.max_price.amount.as_str()
            ),
            (-3, None, "2.50")
        );
        let orders: OrdersData = read_answer(200, br##"{"data":{"orders":{"nodes":[{"id":"gid://shopify/Order/1","name":"#1001","processedAt":"2026-12-01T14:51:07Z","displayFinancialStatus":null,"displayFulfillmentStatus":"UNFULFILLED","totalPriceSet":{"shopMoney":{"amount":"64.30","currencyCode":"EUR"}},"currentSubtotalLineItemsQuantity":2,"closed":false,"cancelledAt":null}]}}}"##).unwrap();
        let o = Order::from(orders.orders.nodes.into_iter().next().unwrap());
        assert_eq!(
            (
                o.name.as_str(),
                o.financial_status,
                o.total.currency_code.as_str(),
                o.item_count
            ),
            ("#1001", None, "EUR", 2)
        );
    }

    #[test]
    fn long_messages_are_cut() {
        let long = format!(r#"{{"errors":[{{"message":"{}"}}]}}"#, "é".repeat(400));
        let e = fails(read_answer::<ShopData>(200, long.as_bytes()));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.message.len() <= scout_sdk::errors::MAX_MESSAGE)
        );
    }
}
