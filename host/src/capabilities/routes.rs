//! Declared routes, enforced at the `http` handle (DESIGN D13).
//!
//! A tool's manifest lists the requests it may make (`GET
//! /repos/{owner}/{repo}`). The host matches every request of a call against
//! the routes of the tool being called, after the path has passed the
//! capability's own checks (so a template's `{name}` can only ever match a
//! plain, percent-encoded segment), and refuses anything else with nothing
//! sent. Templates use matchit's syntax, the router axum is built on.

use scout_manifest::{Affix, GraphqlBody, Route, RouteMethod};

use super::bindings::http::Method;

/// One declared route, compiled.
struct Compiled {
    destination: Option<String>,
    method: RouteMethod,
    router: matchit::Router<()>,
    template: String,
    encoded: Vec<usize>,
    affixes: Vec<Affix>,
    graphql: Option<GraphqlBody>,
    graphql_fields: Vec<String>,
}

/// The route a request matched: what else the host checks before sending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// Segments (0 = first after `/`) that may hold percent-encoded `/`.
    pub encoded: Vec<usize>,
    /// The body is a GraphQL request to check.
    pub graphql: Option<GraphqlBody>,
    /// The root fields its one operation may select (empty: any).
    pub graphql_fields: Vec<String>,
    /// The route, as `[destination] METHOD /template`.
    pub route: String,
}

/// The routes of one tool, ready to match.
pub struct RouteSet {
    routes: Vec<Compiled>,
}

impl std::fmt::Debug for RouteSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.routes.iter().map(describe_one))
            .finish()
    }
}

fn describe_one(c: &Compiled) -> String {
    match &c.destination {
        Some(d) => format!("{d} {} {}", c.method.as_str(), c.template),
        None => format!("{} {}", c.method.as_str(), c.template),
    }
}

fn route_method(method: Method) -> RouteMethod {
    match method {
        Method::Get => RouteMethod::Get,
        Method::Head => RouteMethod::Head,
        Method::Post => RouteMethod::Post,
        Method::Put => RouteMethod::Put,
        Method::Patch => RouteMethod::Patch,
        Method::Delete => RouteMethod::Delete,
    }
}

/// `GET`, `POST`, ...: how the trace and refusals name a method.
pub(crate) fn method_name(method: Method) -> &'static str {
    route_method(method).as_str()
}

impl RouteSet {
    /// Compiles a tool's declared routes; a template matchit cannot read is
    /// an error naming it.
    pub fn new(routes: &[Route]) -> Result<RouteSet, String> {
        let mut out = Vec::with_capacity(routes.len());
        for route in routes {
            let mut router = matchit::Router::new();
            router
                .insert(route.matchit_path(), ())
                .map_err(|e| format!("route `{route}`: {e}"))?;
            out.push(Compiled {
                destination: route.destination.clone(),
                method: route.method,
                router,
                template: route.path.clone(),
                encoded: route.encoded_segments(),
                affixes: route.affixes(),
                graphql: route.graphql,
                graphql_fields: route.graphql_fields.clone(),
            });
        }
        Ok(RouteSet { routes: out })
    }

    /// The empty set: every request refused.
    pub fn none() -> RouteSet {
        RouteSet { routes: Vec::new() }
    }

    /// No route: the tool may not use its `http` handle at all.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Whether some route goes to `destination` (`None`: the connector's own origin).
    pub(crate) fn names_destination(&self, destination: Option<&str>) -> bool {
        self.routes
            .iter()
            .any(|c| c.destination.as_deref() == destination)
    }

    /// The route `method path` (without its query) to `destination` matches, if any.
    pub fn find(&self, destination: Option<&str>, method: Method, path: &str) -> Option<Matched> {
        let method = route_method(method);
        self.routes
            .iter()
            .find(|c| {
                c.destination.as_deref() == destination
                    && c.method == method
                    && c.router.at(path).is_ok()
                    && c.affixes.iter().all(|affix| {
                        path.trim_start_matches('/')
                            .split('/')
                            .nth(affix.segment)
                            .is_some_and(|s| affix.fits(s))
                    })
            })
            .map(|c| Matched {
                encoded: c.encoded.clone(),
                graphql: c.graphql,
                graphql_fields: c.graphql_fields.clone(),
                route: describe_one(c),
            })
    }

    /// Whether `method path` to the connector's own origin matches a route.
    pub fn allows(&self, method: Method, path: &str) -> bool {
        self.find(None, method, path).is_some()
    }

    /// The routes to `destination`, as `METHOD /template`, for error messages.
    pub(crate) fn describe_for(&self, destination: Option<&str>) -> String {
        let routes: Vec<String> = self
            .routes
            .iter()
            .filter(|c| c.destination.as_deref() == destination)
            .map(describe_one)
            .collect();
        if routes.is_empty() {
            "no route".to_string()
        } else {
            routes.join(", ")
        }
    }

    /// Every route, as `[destination] METHOD /template`, for error messages.
    pub fn describe(&self) -> String {
        if self.routes.is_empty() {
            return "no route".to_string();
        }
        self.routes
            .iter()
            .map(describe_one)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(routes: &[(&str, &str)]) -> RouteSet {
        let routes: Vec<Route> = routes
            .iter()
            .map(|(m, p)| {
                Route::new(
                    serde_json::from_value(serde_json::Value::String(m.to_string())).unwrap(),
                    *p,
                )
            })
            .collect();
        RouteSet::new(&routes).unwrap()
    }

    #[test]
    fn matches_segments_and_the_rest() {
        let s = set(&[
            ("GET", "/repos/{owner}/{repo}"),
            ("GET", "/repos/{owner}/{repo}/contents/{*path}"),
            ("POST", "/repos/{owner}/{repo}/git/refs"),
        ]);
        assert!(s.allows(Method::Get, "/repos/octo/hello"));
        assert!(s.allows(Method::Get, "/repos/octo/hello/contents/src/lib.rs"));
        assert!(s.allows(Method::Post, "/repos/octo/hello/git/refs"));
        for (m, p) in [
            (Method::Get, "/repos/octo"),
            (Method::Get, "/repos/octo/hello/issues"),
            (Method::Get, "/repos/octo/hello/contents"),
            (Method::Post, "/repos/octo/hello"),
            (Method::Delete, "/repos/octo/hello"),
            (Method::Head, "/repos/octo/hello"),
            (Method::Get, "/user"),
            (Method::Get, "/repos/octo/hello/"),
        ] {
            assert!(!s.allows(m, p), "{m:?} {p} must not match");
        }
        assert!(!set(&[]).allows(Method::Get, "/"));
    }

    #[test]
    fn destinations_are_matched_apart() {
        let mut drive = Route::new(RouteMethod::Get, "/drive/v3/files");
        drive.destination = Some("drive".into());
        let site = Route::new(RouteMethod::Post, "/sites/{site:encoded}/query");
        let s = RouteSet::new(&[drive, site]).unwrap();
        assert!(
            s.find(Some("drive"), Method::Get, "/drive/v3/files")
                .is_some()
        );
        assert!(
            s.find(None, Method::Get, "/drive/v3/files").is_none(),
            "a route to `drive` does not open the main origin"
        );
        assert!(
            s.find(Some("other"), Method::Get, "/drive/v3/files")
                .is_none()
        );
        assert_eq!(
            s.find(
                None,
                Method::Post,
                "/sites/https%3A%2F%2Fa.example%2F/query"
            )
            .map(|m| m.encoded),
            Some(vec![1])
        );
        assert!(
            s.names_destination(Some("drive"))
                && s.names_destination(None)
                && !s.names_destination(Some("x"))
        );
        assert_eq!(s.describe_for(Some("drive")), "drive GET /drive/v3/files");
        let verb = RouteSet::new(&[Route::new(
            RouteMethod::Post,
            "/v1beta/properties/{property}:runReport",
        )])
        .unwrap();
        assert!(verb.allows(Method::Post, "/v1beta/properties/123:runReport"));
        for p in [
            "/v1beta/properties/123:runPivotReport",
            "/v1beta/properties/123",
            "/v1beta/properties/:runReport",
            "/v1beta/properties/123:runReportX",
        ] {
            assert!(!verb.allows(Method::Post, p), "{p} must not match");
        }
        // Firebase's and Open Library's `{id}.json`: the suffix is literal.
        let suffixed = set(&[("GET", "/v0/item/{id}.json"), ("GET", "/v{n}/user")]);
        assert!(suffixed.allows(Method::Get, "/v0/item/8863.json"));
        assert!(suffixed.allows(Method::Get, "/v2/user"));
        for p in [
            "/v0/item/8863",
            "/v0/item/.json",
            "/v0/item/8863.jsonx",
            "/v0/item/8863.json/more",
            "/v/user",
            "/x2/user",
        ] {
            assert!(!suffixed.allows(Method::Get, p), "{p} must not match");
        }
    }
}
