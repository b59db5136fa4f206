//! The Railway connector: five read tools and two switched write tools over
//! Railway's public GraphQL API (`POST /graphql/v2`).
//!
//! Every request goes through the host's HTTP capability, which is bound to
//! the Railway API origin and adds the token; this code never sees a secret.
//!
//! Each tool sends one fixed GraphQL document, written below as a constant:
//! the read tools' documents are queries (never a mutation), and only the
//! arguments travel, as JSON `variables`, after they are validated (Railway
//! ids are UUIDs). No text an agent supplies is ever spliced into a document.
//!
//! - `variable-names` reads the same `variables` field as `reveal-variables`
//!   but keeps only the keys: the values are never deserialised into
//!   strings, and never returned.
//! - `reveal-variables` changes nothing upstream; it is a write tool because
//!   it hands secrets to the agent, so it exists only when the operator
//!   switch RAILWAY_ALLOW_VARIABLE_VALUES is on and each call is approved.
//! - `redeploy` sends `deploymentRedeploy(id:)` and nothing else.
//!
//! GraphQL reports errors with HTTP 200 and an `errors` array; those become
//! tool errors (`not-found` when Railway says something was not found,
//! otherwise `upstream`), never a success.
//!
//! What Railway answers was written from its documentation and never
//! observed (RAILWAY_UNVERIFIED.live_calls).

scout_sdk::bindings!();

use bindings::exports::scout::railway::read_tools::{
    self, Deployment, LogLine, Named, ProjectDetails, Workspace,
};
use bindings::exports::scout::railway::write_tools::{self, Variable};
use scout_sdk::graphql;
use scout_sdk::{Http, Method, ToolError, UpstreamError};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The one path every tool posts to.
const ENDPOINT: &str = "/graphql/v2";
/// Deployments listed when no limit is given.
const DEFAULT_DEPLOYMENTS: u8 = 10;
/// Most deployments listed.
const MAX_DEPLOYMENTS: u8 = 50;
/// Log lines read when no limit is given.
const DEFAULT_LOG_LINES: u16 = 100;
/// Most log lines read.
const MAX_LOG_LINES: u16 = 500;
/// Longest log filter accepted.
const MAX_FILTER: usize = 200;

// ---------------------------------------------------------------------------
// The fixed GraphQL documents
// ---------------------------------------------------------------------------

/// The workspaces the token can see, and their projects.
const WORKSPACES_QUERY: &str =
    "query workspaces { me { workspaces { id name projects { edges { node { id name } } } } } }";
/// One project, its environments and services.
const PROJECT_QUERY: &str = "query project($id: String!) { project(id: $id) { id name description environments { edges { node { id name } } } services { edges { node { id name } } } } }";
/// A service's deployments in one environment.
const DEPLOYMENTS_QUERY: &str = "query deployments($input: DeploymentListInput!, $first: Int) { deployments(input: $input, first: $first) { edges { node { id status createdAt staticUrl } } } }";
/// A service's (or an environment's shared) variables, names and values.
const VARIABLES_QUERY: &str = "query variables($projectId: String!, $environmentId: String!, $serviceId: String) { variables(projectId: $projectId, environmentId: $environmentId, serviceId: $serviceId) }";
/// A deployment's runtime log.
const LOGS_QUERY: &str = "query deploymentLogs($deploymentId: String!, $limit: Int, $filter: String) { deploymentLogs(deploymentId: $deploymentId, limit: $limit, filter: $filter) { timestamp message severity } }";
/// The only mutation this connector sends.
const REDEPLOY_MUTATION: &str = "mutation deploymentRedeploy($id: String!) { deploymentRedeploy(id: $id) { id status createdAt staticUrl } }";

/// The read tools' documents: each must be a query.
#[cfg(test)]
const READ_DOCUMENTS: [&str; 5] = [
    WORKSPACES_QUERY,
    PROJECT_QUERY,
    DEPLOYMENTS_QUERY,
    VARIABLES_QUERY,
    LOGS_QUERY,
];

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// Checks a Railway id: a UUID, 8-4-4-4-12 hexadecimal digits.
fn validate_id(what: &str, id: &str) -> Result<(), ToolError> {
    if id.is_empty() {
        return Err(ToolError::invalid(format!("{what} is empty")));
    }
    let groups: Vec<&str> = id.split('-').collect();
    let shaped = groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()));
    if !shaped {
        return Err(ToolError::invalid(format!(
            "{what} `{id}` is not a Railway id (a UUID such as 3f2b8c1e-0a4d-4e6f-9b7a-1c2d3e4f5a6b)"
        )));
    }
    Ok(())
}

fn validate_optional_id(what: &str, id: &Option<String>) -> Result<(), ToolError> {
    match id {
        Some(id) => validate_id(what, id),
        None => Ok(()),
    }
}

fn deployments_first(limit: Option<u8>) -> Result<u8, ToolError> {
    match limit {
        None => Ok(DEFAULT_DEPLOYMENTS),
        Some(0) => Err(ToolError::invalid("limit must be at least 1")),
        Some(n) => Ok(n.min(MAX_DEPLOYMENTS)),
    }
}

fn log_limit(limit: Option<u16>) -> Result<u16, ToolError> {
    match limit {
        None => Ok(DEFAULT_LOG_LINES),
        Some(0) => Err(ToolError::invalid("limit must be at least 1")),
        Some(n) => Ok(n.min(MAX_LOG_LINES)),
    }
}

/// An empty filter is no filter; a long or multi-line one is refused.
fn log_filter(filter: Option<String>) -> Result<Option<String>, ToolError> {
    let Some(filter) = filter else {
        return Ok(None);
    };
    let filter = filter.trim().to_string();
    if filter.is_empty() {
        return Ok(None);
    }
    if filter.len() > MAX_FILTER {
        return Err(ToolError::invalid(format!(
            "filter is longer than {MAX_FILTER} bytes"
        )));
    }
    if filter.chars().any(|c| c.is_control()) {
        return Err(ToolError::invalid("filter contains a control character"));
    }
    Ok(Some(filter))
}

// ---------------------------------------------------------------------------
// Request bodies (the variables of each document)
// ---------------------------------------------------------------------------

#[derive(Serialize)]
struct NoVariables {}

#[derive(Serialize)]
struct IdVariables<'a> {
    id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeploymentListInput<'a> {
    project_id: &'a str,
    environment_id: &'a str,
    service_id: &'a str,
}

#[derive(Serialize)]
struct DeploymentsVariables<'a> {
    input: DeploymentListInput<'a>,
    first: u8,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VariablesVariables<'a> {
    project_id: &'a str,
    environment_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    service_id: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct LogsVariables<'a> {
    deployment_id: &'a str,
    limit: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    filter: Option<&'a str>,
}

// ---------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------

/// Turns Railway's answer into the document's `data`, or a tool error, by
/// the SDK's [`graphql::data`]: a non-2xx status is `not-found` (404) or
/// `upstream`; `errors` under a 2xx are an error whatever `data` holds (a
/// field that failed is null there, which `T` may not allow), `not-found`
/// when Railway says something was not found, otherwise `upstream`; then
/// missing or unreadable data is `bad-response`.
fn interpret<T: DeserializeOwned>(status: u16, body: &[u8]) -> Result<T, ToolError> {
    let not_found = |e: ToolError| match e {
        ToolError::Upstream(UpstreamError { status, message })
            if (200..300).contains(&status)
                && message.to_ascii_lowercase().contains("not found") =>
        {
            ToolError::NotFound(message)
        }
        other => other,
    };
    graphql::data::<IgnoredAny>(status, body).map_err(not_found)?;
    graphql::data(status, body)
}

/// A GraphQL connection: `{ edges: [{ node: T }] }`.
#[derive(Deserialize)]
struct Connection<T> {
    #[serde(default = "Vec::new")]
    edges: Vec<Edge<T>>,
}

#[derive(Deserialize)]
struct Edge<T> {
    node: T,
}

impl<T> Connection<T> {
    fn nodes(self) -> Vec<T> {
        self.edges.into_iter().map(|e| e.node).collect()
    }
}

#[derive(Deserialize)]
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct ApiNamed {
    id: String,
    name: String,
}

impl From<ApiNamed> for Named {
    fn from(n: ApiNamed) -> Named {
        Named {
            id: n.id,
            name: n.name,
        }
    }
}

fn named(c: Option<Connection<ApiNamed>>) -> Vec<Named> {
    c.map(Connection::nodes)
        .unwrap_or_default()
        .into_iter()
        .map(Named::from)
        .collect()
}

#[derive(Deserialize)]
struct MeData {
    me: Me,
}

#[derive(Deserialize)]
struct Me {
    #[serde(default)]
    workspaces: Vec<ApiWorkspace>,
}

#[derive(Deserialize)]
struct ApiWorkspace {
    id: String,
    name: String,
    #[serde(default)]
    projects: Option<Connection<ApiNamed>>,
}

#[derive(Deserialize)]
struct ProjectData {
    project: Option<ApiProject>,
}

#[derive(Deserialize)]
struct ApiProject {
    id: String,
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    environments: Option<Connection<ApiNamed>>,
    #[serde(default)]
    services: Option<Connection<ApiNamed>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct ApiDeployment {
    id: String,
    status: String,
    created_at: String,
    #[serde(default)]
    static_url: Option<String>,
}

impl From<ApiDeployment> for Deployment {
    fn from(d: ApiDeployment) -> Deployment {
        Deployment {
            id: d.id,
            status: d.status,
            created_at: d.created_at,
            static_url: d.static_url,
        }
    }
}

#[derive(Deserialize)]
struct DeploymentsData {
    deployments: Connection<ApiDeployment>,
}

/// `variables` for the names: each value is skipped, never read into a string.
#[derive(Deserialize)]
struct VariableNamesData {
    variables: BTreeMap<String, IgnoredAny>,
}

#[derive(Deserialize)]
struct VariableValuesData {
    variables: BTreeMap<String, Option<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogsData {
    deployment_logs: Vec<ApiLog>,
}

#[derive(Deserialize)]
struct ApiLog {
    timestamp: String,
    message: String,
    #[serde(default)]
    severity: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RedeployData {
    deployment_redeploy: ApiDeployment,
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// Sends one fixed document with its variables to `POST /graphql/v2`.
fn graphql<V: Serialize, T: DeserializeOwned>(
    query: &'static str,
    variables: &V,
) -> Result<T, ToolError> {
    let body = graphql::request(query, variables)?;
    let http = Http::connect()?
        .with_header("accept", "application/json")
        .with_header("user-agent", "scout-connector-railway");
    let response = http.send(Method::Post, ENDPOINT, &[], Some(body))?;
    interpret(response.status, &response.body)
}

fn variables_of<'a>(
    project_id: &'a str,
    environment_id: &'a str,
    service_id: &'a Option<String>,
) -> Result<VariablesVariables<'a>, ToolError> {
    validate_id("project-id", project_id)?;
    validate_id("environment-id", environment_id)?;
    validate_optional_id("service-id", service_id)?;
    Ok(VariablesVariables {
        project_id,
        environment_id,
        service_id: service_id.as_deref(),
    })
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct Railway;

impl read_tools::Guest for Railway {
    fn workspaces() -> Result<Vec<Workspace>, ToolError> {
        let data: MeData = graphql(WORKSPACES_QUERY, &NoVariables {})?;
        Ok(data
            .me
            .workspaces
            .into_iter()
            .map(|w| Workspace {
                id: w.id,
                name: w.name,
                projects: named(w.projects),
            })
            .collect())
    }

    fn project(project_id: String) -> Result<ProjectDetails, ToolError> {
        validate_id("project-id", &project_id)?;
        let data: ProjectData = graphql(PROJECT_QUERY, &IdVariables { id: &project_id })?;
        let p = data
            .project
            .ok_or_else(|| ToolError::NotFound(format!("project {project_id}")))?;
        Ok(ProjectDetails {
            id: p.id,
            name: p.name,
            description: p.description.filter(|d| !d.is_empty()),
            environments: named(p.environments),
            services: named(p.services),
        })
    }

    fn deployments(
        project_id: String,
        environment_id: String,
        service_id: String,
        limit: Option<u8>,
    ) -> Result<Vec<Deployment>, ToolError> {
        validate_id("project-id", &project_id)?;
        validate_id("environment-id", &environment_id)?;
        validate_id("service-id", &service_id)?;
        let first = deployments_first(limit)?;
        let variables = DeploymentsVariables {
            input: DeploymentListInput {
                project_id: &project_id,
                environment_id: &environment_id,
                service_id: &service_id,
            },
            first,
        };
        let data: DeploymentsData = graphql(DEPLOYMENTS_QUERY, &variables)?;
        Ok(data
            .deployments
            .nodes()
            .into_iter()
            .map(Deployment::from)
            .collect())
    }

    fn variable_names(
        project_id: String,
        environment_id: String,
        service_id: Option<String>,
    ) -> Result<Vec<String>, ToolError> {
        let variables = variables_of(&project_id, &environment_id, &service_id)?;
        let data: VariableNamesData = graphql(VARIABLES_QUERY, &variables)?;
        Ok(data.variables.into_keys().collect())
    }

    fn logs(
        deployment_id: String,
        limit: Option<u16>,
        filter: Option<String>,
    ) -> Result<Vec<LogLine>, ToolError> {
        validate_id("deployment-id", &deployment_id)?;
        let limit = log_limit(limit)?;
        let filter = log_filter(filter)?;
        let variables = LogsVariables {
            deployment_id: &deployment_id,
            limit,
            filter: filter.as_deref(),
        };
        let data: LogsData = graphql(LOGS_QUERY, &variables)?;
        Ok(data
            .deployment_logs
            .into_iter()
            .map(|l| LogLine {
                timestamp: l.timestamp,
                severity: l.severity,
                message: l.message,
            })
            .collect())
    }
}

impl write_tools::Guest for Railway {
    fn reveal_variables(
        project_id: String,
        environment_id: String,
        service_id: Option<String>,
    ) -> Result<Vec<Variable>, ToolError> {
        let variables = variables_of(&project_id, &environment_id, &service_id)?;
        let data: VariableValuesData = graphql(VARIABLES_QUERY, &variables)?;
        Ok(data
            .variables
            .into_iter()
            .map(|(name, value)| Variable {
                name,
                value: value.unwrap_or_default(),
            })
            .collect())
    }

    fn redeploy(deployment_id: String) -> Result<Deployment, ToolError> {
        validate_id("deployment-id", &deployment_id)?;
        let data: RedeployData = graphql(REDEPLOY_MUTATION, &IdVariables { id: &deployment_id })?;
        Ok(data.deployment_redeploy.into())
    }
}

scout_sdk::export!(Railway);

#[cfg(test)]
mod tests {
    use super::*;
    use scout_sdk::testing::fails;

    const P: &str = "3f2b8c1e-0a4d-4e6f-9b7a-1c2d3e4f5a6b";
    const E: &str = "5d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6";

    fn json(bytes: &[u8]) -> serde_json::Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn ids_are_uuids() {
        assert!(validate_id("id", P).is_ok());
        assert!(validate_id("id", &P.to_uppercase()).is_ok());
        for bad in [
            "",
            "prod",
            "3f2b8c1e0a4d4e6f9b7a1c2d3e4f5a6b",
            "3f2b8c1e-0a4d-4e6f-9b7a-1c2d3e4f5a6",
            "3f2b8c1e-0a4d-4e6f-9b7a-1c2d3e4f5a6bb",
            "3f2b8c1e-0a4d-4e6f-9b7a-1c2d3e4f5a6g",
            "3f2b8c1e-0a4d-4e6f-9b7a-1c2d3e4f5a6b\n",
            "3f2b8c1e-0a4d-4e6f-9b7a-1c2d3e4f5a-b",
            "\") { mutation",
            "../3f2b8c1e-0a4d-4e6f-9b7a-1c2d3e4f5a6b",
        ] {
            assert!(validate_id("id", bad).is_err(), "{bad:?} should be refused");
        }
        assert!(validate_optional_id("id", &None).is_ok());
        assert!(validate_optional_id("id", &Some("x".into())).is_err());
    }

    #[test]
    fn read_documents_are_queries_and_the_mutation_is_redeploy_only() {
        for doc in READ_DOCUMENTS {
            assert!(doc.starts_with("query "), "{doc}");
            assert!(!doc.to_ascii_lowercase().contains("mutation"), "{doc}");
            assert!(
                !doc.contains("variableCollectionUpsert") && !doc.contains("Upsert"),
                "{doc}"
            );
        }
        assert!(REDEPLOY_MUTATION.starts_with("mutation deploymentRedeploy("));
        assert_eq!(
            REDEPLOY_MUTATION.matches('{').count(),
            REDEPLOY_MUTATION.matches('}').count()
        );
    }

    #[test]
    fn request_bodies_carry_the_fixed_document_and_variables() {
        let body = graphql::request(WORKSPACES_QUERY, &NoVariables {}).unwrap();
        assert_eq!(
            json(&body),
            serde_json::json!({"query": WORKSPACES_QUERY, "variables": {}})
        );

        let v = DeploymentsVariables {
            input: DeploymentListInput {
                project_id: P,
                environment_id: E,
                service_id: P,
            },
            first: deployments_first(None).unwrap(),
        };
        assert_eq!(
            json(&graphql::request(DEPLOYMENTS_QUERY, &v).unwrap())["variables"],
            serde_json::json!({"input": {"projectId": P, "environmentId": E, "serviceId": P}, "first": 10})
        );

        let none = None;
        let v = variables_of(P, E, &none).unwrap();
        assert_eq!(
            json(&graphql::request(VARIABLES_QUERY, &v).unwrap())["variables"],
            serde_json::json!({"projectId": P, "environmentId": E})
        );
        let some = Some(P.to_string());
        let v = variables_of(P, E, &some).unwrap();
        assert_eq!(
            json(&graphql::request(VARIABLES_QUERY, &v).unwrap())["variables"],
            serde_json::json!({"projectId": P, "environmentId": E, "serviceId": P})
        );
        assert!(variables_of("nope", E, &none).is_err());

        // An agent's filter travels as a variable, never inside the document.
        let filter = log_filter(Some(" @level:error \") { x }".into())).unwrap();
        let v = LogsVariables {
            deployment_id: P,
            limit: log_limit(None).unwrap(),
            filter: filter.as_deref(),
        };
        let body = json(&graphql::request(LOGS_QUERY, &v).unwrap());
        assert_eq!(body["query"], LOGS_QUERY);
        assert_eq!(
            body["variables"],
            serde_json::json!({"deploymentId": P, "limit": 100, "filter": "@level:error \") { x }"})
        );
    }

    #[test]
    fn limits_and_filters() {
        assert_eq!(deployments_first(None).unwrap(), 10);
        assert_eq!(deployments_first(Some(255)).unwrap(), 50);
        assert!(deployments_first(Some(0)).is_err());
        assert_eq!(log_limit(None).unwrap(), 100);
        assert_eq!(log_limit(Some(9999)).unwrap(), 500);
        assert!(log_limit(Some(0)).is_err());
        assert_eq!(log_filter(None).unwrap(), None);
        assert_eq!(log_filter(Some("  ".into())).unwrap(), None);
        assert!(log_filter(Some("a\nb".into())).is_err());
        assert!(log_filter(Some("a".repeat(201))).is_err());
    }

    #[test]
    fn graphql_errors_are_tool_errors() {
        let e = fails(interpret::<ProjectData>(
            200,
            br#"{"data":null,"errors":[{"message":"Project not found","path":["project"]}]}"#,
        ));
        assert!(
            matches!(e, ToolError::NotFound(ref m) if m == "Project not found"),
            "{e}"
        );
        let e = fails(interpret::<MeData>(
            200,
            br#"{"errors":[{"message":"Not Authorized"},{"message":"again"}],"data":{"me":null}}"#,
        ));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 200 && u.message == "Not Authorized; again"),
            "{e}"
        );
        let e = fails(interpret::<MeData>(
            400,
            br#"{"errors":[{"message":"Cannot query field \"x\""}]}"#,
        ));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 400),
            "{e}"
        );
        let e = fails(interpret::<MeData>(502, b"Bad Gateway"));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 502 && u.message == "Bad Gateway"),
            "{e}"
        );
        let e = fails(interpret::<MeData>(404, b"Not Found"));
        assert!(
            matches!(e, ToolError::NotFound(ref m) if m == "Not Found"),
            "{e}"
        );
        let e = fails(interpret::<MeData>(503, b"upstream not found"));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.status == 503),
            "{e}"
        );
        let e = fails(interpret::<MeData>(200, br#"{"data":null}"#));
        assert!(matches!(e, ToolError::BadResponse(_)), "{e}");
        let e = fails(interpret::<MeData>(
            200,
            br#"{"data":{"me":{"workspaces":"x"}}}"#,
        ));
        assert!(matches!(e, ToolError::BadResponse(_)), "{e}");
        // An empty `errors` array is no error.
        let ok =
            interpret::<MeData>(200, br#"{"errors":[],"data":{"me":{"workspaces":[]}}}"#).unwrap();
        assert!(ok.me.workspaces.is_empty());
        let long = format!(r#"{{"errors":[{{"message":"{}"}}]}}"#, "é".repeat(400));
        let e = fails(interpret::<MeData>(200, long.as_bytes()));
        assert!(
            matches!(e, ToolError::Upstream(ref u) if u.message.len() <= scout_sdk::errors::MAX_MESSAGE)
        );
    }

    #[test]
    fn variable_names_keep_no_value() {
        let body = br#"{"data":{"variables":{"PORT":"3000","DATABASE_URL":"postgres://u:hunter2@db:5432/app","EMPTY":null,"NESTED":{"x":1}}}}"#;
        let names: VariableNamesData = interpret(200, body).unwrap();
        let names: Vec<String> = names.variables.into_keys().collect();
        assert_eq!(names, ["DATABASE_URL", "EMPTY", "NESTED", "PORT"]);
        let joined = names.join(" ");
        assert!(!joined.contains("hunter2") && !joined.contains("3000"));
    }

    #[test]
    fn parses_answers() {
        let data: ProjectData = interpret(
            200,
            br#"{"data":{"project":{"id":"p","name":"shop","description":null,"environments":{"edges":[{"node":{"id":"e","name":"production"}}]},"services":{"edges":[]}}}}"#,
        )
        .unwrap();
        let p = data.project.unwrap();
        assert_eq!(named(p.environments)[0].name, "production");
        assert!(named(p.services).is_empty());
        let data: LogsData = interpret(
            200,
            br#"{"data":{"deploymentLogs":[{"timestamp":"t","message":"m","severity":null}]}}"#,
        )
        .unwrap();
        assert_eq!(data.deployment_logs[0].message, "m");
        let data: RedeployData =
            interpret(200, br#"{"data":{"deploymentRedeploy":{"id":"d","status":"INITIALIZING","createdAt":"t","staticUrl":null}}}"#).unwrap();
        assert_eq!(data.deployment_redeploy.status, "INITIALIZING");
    }
}
