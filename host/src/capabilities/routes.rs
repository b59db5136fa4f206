//! Declared routes, enforced at the `http` handle (DESIGN D13).
//!
//! A tool's manifest lists the requests it may make (`GET
//! /repos/{owner}/{repo}`). The host matches every request of a call against
//! the routes of the tool being called, after the path has passed the
//! capability's own checks (so a template's `{name}` can only ever match a
//! plain, percent-encoded segment), and refuses anything else with nothing
//! sent. Templates use matchit's syntax, the router axum is built on.

use scout_manifest::{Route, RouteMethod};

use super::http::Method;

/// The routes of one tool, ready to match.
pub struct RouteSet {
    routes: Vec<(RouteMethod, matchit::Router<()>, String)>,
}

impl std::fmt::Debug for RouteSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.routes.iter().map(|(m, _, p)| format!("{} {p}", m.as_str()))).finish()
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
pub fn method_name(method: Method) -> &'static str {
    route_method(method).as_str()
}

impl RouteSet {
    /// Compiles a tool's declared routes; a template matchit cannot read is
    /// an error naming it.
    pub fn new(routes: &[Route]) -> Result<RouteSet, String> {
        let mut out = Vec::with_capacity(routes.len());
        for route in routes {
            let mut router = matchit::Router::new();
            router.insert(route.path.clone(), ()).map_err(|e| format!("route `{route}`: {e}"))?;
            out.push((route.method, router, route.path.clone()));
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

    /// Whether `method path` (a path already checked by the capability,
    /// without its query) matches one of the routes.
    pub fn allows(&self, method: Method, path: &str) -> bool {
        let method = route_method(method);
        self.routes.iter().any(|(m, router, _)| *m == method && router.at(path).is_ok())
    }

    /// The routes, as `METHOD /template`, for error messages.
    pub fn describe(&self) -> String {
        if self.routes.is_empty() {
            return "no route".to_string();
        }
        self.routes.iter().map(|(m, _, p)| format!("{} {p}", m.as_str())).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(routes: &[(&str, &str)]) -> RouteSet {
        let routes: Vec<Route> = routes
            .iter()
            .map(|(m, p)| Route {
                method: serde_json::from_value(serde_json::Value::String(m.to_string())).unwrap(),
                path: p.to_string(),
                read_only: false,
            })
            .collect();
        RouteSet::new(&routes).unwrap()
    }

    #[test]
    fn matches_segments_and_the_rest() {
        let s = set(&[("GET", "/repos/{owner}/{repo}"), ("GET", "/repos/{owner}/{repo}/contents/{*path}"), ("POST", "/repos/{owner}/{repo}/git/refs")]);
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
}
