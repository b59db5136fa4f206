//! The Figma connector: eight read tools over the Figma REST API (`/v1`),
//! and no write tools: no write scope is requested.
//!
//! Every request goes through the host's HTTP capability, which is bound to
//! the Figma API origin and adds the credential (a personal access token in
//! `X-Figma-Token`, or an OAuth bearer token: the operator's configuration
//! decides); this code never sees a secret.
//!
//! Arguments are validated before they are put in a URL (file keys, node
//! ids, team and project ids, depth, scale, how many ids), every path
//! segment is percent-encoded with the SDK's `encode_segment`, and query
//! parameters go as pairs. Outlines are bounded (at most 500 nodes), and an
//! export returns Figma's image URLs, never image bytes.
//!
//! Figma's error bodies carry their text in `err` (`{"status": 404, "err":
//! "Not found"}`), not `message`, so statuses are mapped here.

scout_sdk::bindings!();

use bindings::exports::scout::figma::read_tools::{
    self, Bounds, Comment, Component, FileSummary, ImageExport, ImageFormat, NodeDetail, NodesRead,
    Outline, OutlineNode, Project, ProjectListing, Published, Style, Team, User,
};
use scout_sdk::args::bounded;
use scout_sdk::errors::decoded_status_error;
use scout_sdk::{ErrorFormat, Http, Method, ToolError, encode_segment, parse_json};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::collections::{BTreeMap, BTreeSet};

/// Longest file key accepted (Figma's are 22 characters; branch keys too).
const MAX_FILE_KEY: usize = 64;
/// Longest node id accepted (instance sublayers chain ids: `I1:2;3:4`).
const MAX_NODE_ID: usize = 200;
/// Most node ids one call takes.
const MAX_NODE_IDS: usize = 50;
/// Longest team or project id accepted (they are decimal numbers).
const MAX_NUMERIC_ID: usize = 32;
/// Default and bounds of an outline's depth.
const DEFAULT_DEPTH: u32 = 2;
const MAX_DEPTH: u32 = 4;
/// Most nodes in one outline (or one node's descendants).
const MAX_OUTLINE_NODES: usize = 500;
/// Bounds of an export's scale.
const MIN_SCALE: f64 = 0.01;
const MAX_SCALE: f64 = 4.0;

// ---------------------------------------------------------------------------
// Validation (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// Checks a file key (the part after `/file/` or `/design/` in a file's
/// URL): 1 to 64 ASCII letters and digits.
fn validate_file_key(key: &str) -> Result<(), ToolError> {
    if key.is_empty() {
        return Err(ToolError::invalid(
            "file-key is empty; `project-files` lists a project's files with their keys",
        ));
    }
    if key.len() > MAX_FILE_KEY {
        return Err(ToolError::invalid(format!(
            "file-key is longer than {MAX_FILE_KEY} characters"
        )));
    }
    if !key.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(ToolError::invalid(format!(
            "file-key `{key}` is not a Figma file key (ASCII letters and digits, as in figma.com/design/KEY/...)"
        )));
    }
    Ok(())
}

/// One node id part: `digits:digits`.
fn is_id_part(part: &str) -> bool {
    let Some((a, b)) = part.split_once(':') else {
        return false;
    };
    !a.is_empty()
        && !b.is_empty()
        && a.bytes().all(|c| c.is_ascii_digit())
        && b.bytes().all(|c| c.is_ascii_digit())
}

/// A node id as Figma's API spells it: `1:2`, or an instance sublayer's
/// `I1:2;3:4`. The URL form (`1-2`, from `?node-id=1-2`) is turned into
/// `1:2`.
fn node_id(id: &str) -> Result<String, ToolError> {
    let refuse = || {
        ToolError::invalid(format!(
            "node id `{id}` is not a Figma node id (like `1:2`, or `I1:2;3:4` inside an instance)"
        ))
    };
    if id.is_empty() {
        return Err(ToolError::invalid(
            "a node id is empty; `file-outline` lists nodes with their ids",
        ));
    }
    if id.len() > MAX_NODE_ID {
        return Err(ToolError::invalid(format!(
            "a node id is longer than {MAX_NODE_ID} characters"
        )));
    }
    let id_norm = if id.contains(':') {
        id.to_string()
    } else {
        id.replace('-', ":")
    };
    let (body, instance) = match id_norm.strip_prefix('I') {
        Some(rest) => (rest, true),
        None => (id_norm.as_str(), false),
    };
    let parts: Vec<&str> = body.split(';').collect();
    if !parts.iter().all(|p| is_id_part(p)) || (!instance && parts.len() > 1) {
        return Err(refuse());
    }
    Ok(id_norm)
}

/// The node ids of a call: 1 to 50, each valid, none twice; returned in
/// Figma's form, in the order given.
fn node_ids(ids: &[String]) -> Result<Vec<String>, ToolError> {
    if ids.is_empty() {
        return Err(ToolError::invalid(
            "node-ids is empty; give at least one node id, like `1:2`",
        ));
    }
    if ids.len() > MAX_NODE_IDS {
        return Err(ToolError::invalid(format!(
            "node-ids has {} ids; at most {MAX_NODE_IDS} per call",
            ids.len()
        )));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let id = node_id(id)?;
        if !seen.insert(id.clone()) {
            return Err(ToolError::invalid(format!("node id `{id}` is given twice")));
        }
        out.push(id);
    }
    Ok(out)
}

/// A team or project id: 1 to 32 decimal digits.
fn validate_numeric_id(what: &str, id: &str) -> Result<(), ToolError> {
    if id.is_empty() {
        return Err(ToolError::invalid(format!("{what} is empty")));
    }
    if id.len() > MAX_NUMERIC_ID || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ToolError::invalid(format!(
            "{what} `{id}` is not a Figma id (decimal digits, as in a team or project URL)"
        )));
    }
    Ok(())
}

/// The depth: 1 to 4, default 2.
fn depth(depth: Option<u32>) -> Result<u32, ToolError> {
    bounded("depth", depth, DEFAULT_DEPTH, 1, MAX_DEPTH)
}

/// The scale as a query value: 0.01 to 4, default none (Figma's 1).
fn scale_param(scale: Option<f64>) -> Result<Option<String>, ToolError> {
    let Some(s) = scale else { return Ok(None) };
    Ok(Some(format!(
        "{}",
        bounded("scale", Some(s), s, MIN_SCALE, MAX_SCALE)?
    )))
}

fn format_param(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "png",
        ImageFormat::Jpg => "jpg",
        ImageFormat::Svg => "svg",
        ImageFormat::Pdf => "pdf",
    }
}

// ---------------------------------------------------------------------------
// Statuses and errors
// ---------------------------------------------------------------------------

/// Figma's error body: `{"status": 403, "err": "Invalid token"}`; some
/// endpoints send `message` instead (read by [`ErrorFormat::Message`]).
#[derive(Deserialize)]
struct ApiError {
    #[serde(default)]
    err: Option<String>,
}

/// Figma's `err`, else the `message` the SDK's [`ErrorFormat::Message`]
/// reads (no SDK format reads Figma's `err`); `None` when the body is
/// neither, and the SDK falls back to its text.
fn error_message(body: &[u8]) -> Option<String> {
    match serde_json::from_slice::<ApiError>(body) {
        Ok(ApiError { err: Some(m), .. }) if !m.trim().is_empty() => Some(m),
        _ => ErrorFormat::Message.decoder()(body),
    }
}

/// A 2xx body parsed as `T`; otherwise the SDK's error for the status with
/// Figma's message, a 404's naming `what`.
fn parse<T: DeserializeOwned>(status: u16, body: &[u8], what: &str) -> Result<T, ToolError> {
    match decoded_status_error(error_message, status, body) {
        None => parse_json(body),
        Some(ToolError::NotFound(m)) => Err(ToolError::NotFound(format!("{what}: {m}"))),
        Some(other) => Err(other),
    }
}

// ---------------------------------------------------------------------------
// Figma's wire format (only the fields used; extra fields are ignored)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct ApiUser {
    id: String,
    #[serde(default)]
    handle: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    img_url: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiBox {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiNode {
    id: String,
    #[serde(default)]
    name: String,
    #[serde(rename = "type")]
    node_type: String,
    #[serde(default)]
    children: Vec<ApiNode>,
    #[serde(default)]
    characters: Option<String>,
    #[serde(default)]
    absolute_bounding_box: Option<ApiBox>,
}

/// The nodes below `root`, depth first, at most 500; and whether it stopped
/// early. `root`'s children name `root_id` as their parent (none for the
/// document's pages).
fn outline(root: &ApiNode, root_id: Option<&str>) -> (Vec<OutlineNode>, bool) {
    let mut out = Vec::new();
    // (node, depth, parent id); a stack in reverse so children come out in order.
    let mut stack: Vec<(&ApiNode, u32, Option<&str>)> = Vec::new();
    for child in root.children.iter().rev() {
        stack.push((child, 1, root_id));
    }
    while let Some((node, depth, parent)) = stack.pop() {
        if out.len() == MAX_OUTLINE_NODES {
            return (out, true);
        }
        out.push(OutlineNode {
            id: node.id.clone(),
            name: node.name.clone(),
            node_type: node.node_type.clone(),
            depth,
            parent_id: parent.map(str::to_string),
            child_count: node.children.len() as u32,
        });
        for child in node.children.iter().rev() {
            stack.push((child, depth + 1, Some(node.id.as_str())));
        }
    }
    (out, false)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiFile {
    #[serde(default)]
    name: String,
    #[serde(default)]
    last_modified: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    thumbnail_url: Option<String>,
    #[serde(default)]
    editor_type: Option<String>,
    document: ApiNode,
}

impl ApiFile {
    fn into_outline(self) -> Outline {
        let (nodes, truncated) = outline(&self.document, None);
        Outline {
            name: self.name,
            last_modified: self.last_modified,
            version: self.version,
            thumbnail_url: self.thumbnail_url.filter(|u| !u.is_empty()),
            editor_type: self.editor_type.filter(|e| !e.is_empty()),
            nodes,
            truncated,
        }
    }
}

#[derive(Deserialize)]
struct ApiNodes {
    /// id -> the node, or null when the file has no such node.
    nodes: BTreeMap<String, Option<ApiNodeEntry>>,
}

#[derive(Deserialize)]
struct ApiNodeEntry {
    document: ApiNode,
}

fn node_detail(node: &ApiNode) -> NodeDetail {
    let (descendants, truncated) = outline(node, Some(node.id.as_str()));
    NodeDetail {
        id: node.id.clone(),
        name: node.name.clone(),
        node_type: node.node_type.clone(),
        characters: node.characters.clone(),
        bounds: node.absolute_bounding_box.as_ref().map(|b| Bounds {
            x: b.x,
            y: b.y,
            width: b.width,
            height: b.height,
        }),
        descendants,
        truncated,
    }
}

/// The nodes in the order asked for; ids absent or null in the answer are missing.
fn nodes_read(asked: &[String], mut answer: ApiNodes) -> NodesRead {
    let mut nodes = Vec::new();
    let mut missing = Vec::new();
    for id in asked {
        match answer.nodes.remove(id).flatten() {
            Some(entry) => nodes.push(node_detail(&entry.document)),
            None => missing.push(id.clone()),
        }
    }
    NodesRead { nodes, missing }
}

#[derive(Deserialize)]
struct ApiImages {
    /// Set when the render failed as a whole.
    #[serde(default)]
    err: Option<String>,
    #[serde(default)]
    images: BTreeMap<String, Option<String>>,
}

/// The URLs in the order asked for; a node Figma did not render has none.
fn image_exports(asked: &[String], mut answer: ApiImages) -> Result<Vec<ImageExport>, ToolError> {
    if let Some(err) = answer.err.filter(|e| !e.is_empty()) {
        return Err(ToolError::BadResponse(format!(
            "Figma could not render the images: {err}"
        )));
    }
    Ok(asked
        .iter()
        .map(|id| ImageExport {
            node_id: id.clone(),
            url: answer.images.remove(id).flatten().filter(|u| !u.is_empty()),
        })
        .collect())
}

#[derive(Deserialize)]
struct ApiComments {
    comments: Vec<ApiComment>,
}

#[derive(Deserialize)]
struct ApiCommentUser {
    #[serde(default)]
    id: String,
    #[serde(default)]
    handle: String,
}

#[derive(Deserialize)]
struct ApiClientMeta {
    #[serde(default)]
    node_id: Option<String>,
}

#[derive(Deserialize)]
struct ApiComment {
    id: String,
    #[serde(default)]
    message: String,
    user: ApiCommentUser,
    #[serde(default)]
    created_at: String,
    #[serde(default)]
    resolved_at: Option<String>,
    #[serde(default)]
    parent_id: Option<String>,
    #[serde(default)]
    client_meta: Option<ApiClientMeta>,
    #[serde(default)]
    order_id: Option<String>,
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

impl ApiComment {
    fn into_comment(self) -> Comment {
        Comment {
            id: self.id,
            message: self.message,
            author: self.user.handle,
            author_id: self.user.id,
            created_at: self.created_at,
            resolved_at: non_empty(self.resolved_at),
            parent_id: non_empty(self.parent_id),
            node_id: non_empty(self.client_meta.and_then(|m| m.node_id)),
            order_id: non_empty(self.order_id),
        }
    }
}

#[derive(Deserialize)]
struct ApiComponentsAnswer {
    meta: ApiComponentsMeta,
}

#[derive(Deserialize)]
struct ApiComponentsMeta {
    #[serde(default)]
    components: Vec<ApiComponent>,
}

#[derive(Deserialize)]
struct ApiFrame {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
struct ApiComponent {
    key: String,
    #[serde(default)]
    node_id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    containing_frame: Option<ApiFrame>,
    #[serde(default)]
    updated_at: String,
}

#[derive(Deserialize)]
struct ApiStylesAnswer {
    meta: ApiStylesMeta,
}

#[derive(Deserialize)]
struct ApiStylesMeta {
    #[serde(default)]
    styles: Vec<ApiStyle>,
}

#[derive(Deserialize)]
struct ApiStyle {
    key: String,
    #[serde(default)]
    node_id: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    style_type: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    updated_at: String,
}

#[derive(Deserialize)]
struct ApiTeamProjects {
    #[serde(default)]
    name: String,
    projects: Vec<ApiProject>,
}

/// Figma sends project ids as numbers in some answers and strings in others.
#[derive(Deserialize)]
#[serde(untagged)]
enum ApiId {
    Text(String),
    Number(u64),
}

impl ApiId {
    fn into_string(self) -> String {
        match self {
            ApiId::Text(s) => s,
            ApiId::Number(n) => n.to_string(),
        }
    }
}

#[derive(Deserialize)]
struct ApiProject {
    id: ApiId,
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct ApiProjectFiles {
    #[serde(default)]
    name: String,
    files: Vec<ApiFileSummary>,
}

#[derive(Deserialize)]
struct ApiFileSummary {
    key: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    thumbnail_url: Option<String>,
    #[serde(default)]
    last_modified: String,
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// GET a path of the Figma API origin the host granted, and parse it.
fn get<T: DeserializeOwned>(
    path: &str,
    query: &[(&str, &str)],
    what: &str,
) -> Result<T, ToolError> {
    let http = Http::connect()?
        .with_header("accept", "application/json")
        .with_header("user-agent", "scout-connector-figma");
    let response = http.send(Method::Get, path, query, None)?;
    parse(response.status, &response.body, what).map_err(|e| match e {
        ToolError::BadResponse(m) => ToolError::BadResponse(format!("GET {path}: {m}")),
        other => other,
    })
}

fn file_label(key: &str) -> String {
    format!("file `{key}`")
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct Figma;

impl read_tools::Guest for Figma {
    fn whoami() -> Result<User, ToolError> {
        let me: ApiUser = get("/v1/me", &[], "the credential's user")?;
        Ok(User {
            id: me.id,
            handle: me.handle,
            email: me.email,
            img_url: me.img_url,
        })
    }

    fn file_outline(file_key: String, depth_arg: Option<u32>) -> Result<Outline, ToolError> {
        validate_file_key(&file_key)?;
        let depth = depth(depth_arg)?.to_string();
        let path = format!("/v1/files/{}", encode_segment(&file_key));
        let file: ApiFile = get(&path, &[("depth", &depth)], &file_label(&file_key))?;
        Ok(file.into_outline())
    }

    fn read_nodes(
        file_key: String,
        ids: Vec<String>,
        depth_arg: Option<u32>,
    ) -> Result<NodesRead, ToolError> {
        validate_file_key(&file_key)?;
        let ids = node_ids(&ids)?;
        let depth = depth(depth_arg)?.to_string();
        let path = format!("/v1/files/{}/nodes", encode_segment(&file_key));
        let joined = ids.join(",");
        let answer: ApiNodes = get(
            &path,
            &[("ids", &joined), ("depth", &depth)],
            &file_label(&file_key),
        )?;
        Ok(nodes_read(&ids, answer))
    }

    fn export_images(
        file_key: String,
        ids: Vec<String>,
        format: Option<ImageFormat>,
        scale: Option<f64>,
    ) -> Result<Vec<ImageExport>, ToolError> {
        validate_file_key(&file_key)?;
        let ids = node_ids(&ids)?;
        let scale = scale_param(scale)?;
        let path = format!("/v1/images/{}", encode_segment(&file_key));
        let joined = ids.join(",");
        let mut query = vec![
            ("ids", joined.as_str()),
            ("format", format_param(format.unwrap_or(ImageFormat::Png))),
        ];
        if let Some(s) = scale.as_deref() {
            query.push(("scale", s));
        }
        let answer: ApiImages = get(&path, &query, &file_label(&file_key))?;
        image_exports(&ids, answer)
    }

    fn comments(file_key: String) -> Result<Vec<Comment>, ToolError> {
        validate_file_key(&file_key)?;
        let path = format!("/v1/files/{}/comments", encode_segment(&file_key));
        let answer: ApiComments = get(&path, &[], &file_label(&file_key))?;
        Ok(answer
            .comments
            .into_iter()
            .map(ApiComment::into_comment)
            .collect())
    }

    fn components_styles(file_key: String) -> Result<Published, ToolError> {
        validate_file_key(&file_key)?;
        let key = encode_segment(&file_key);
        let label = file_label(&file_key);
        let components: ApiComponentsAnswer =
            get(&format!("/v1/files/{key}/components"), &[], &label)?;
        let styles: ApiStylesAnswer = get(&format!("/v1/files/{key}/styles"), &[], &label)?;
        Ok(Published {
            components: components
                .meta
                .components
                .into_iter()
                .map(|c| Component {
                    key: c.key,
                    node_id: c.node_id,
                    name: c.name,
                    description: c.description,
                    containing_frame: non_empty(c.containing_frame.and_then(|f| f.name)),
                    updated_at: c.updated_at,
                })
                .collect(),
            styles: styles
                .meta
                .styles
                .into_iter()
                .map(|s| Style {
                    key: s.key,
                    node_id: s.node_id,
                    name: s.name,
                    style_type: s.style_type,
                    description: s.description,
                    updated_at: s.updated_at,
                })
                .collect(),
        })
    }

    fn team_projects(team_id: String) -> Result<Team, ToolError> {
        validate_numeric_id("team-id", &team_id)?;
        let path = format!("/v1/teams/{}/projects", encode_segment(&team_id));
        let answer: ApiTeamProjects = get(&path, &[], &format!("team `{team_id}`"))?;
        Ok(Team {
            team_name: answer.name,
            projects: answer
                .projects
                .into_iter()
                .map(|p| Project {
                    id: p.id.into_string(),
                    name: p.name,
                })
                .collect(),
        })
    }

    fn project_files(project_id: String) -> Result<ProjectListing, ToolError> {
        validate_numeric_id("project-id", &project_id)?;
        let path = format!("/v1/projects/{}/files", encode_segment(&project_id));
        let answer: ApiProjectFiles = get(&path, &[], &format!("project `{project_id}`"))?;
        Ok(ProjectListing {
            project_name: answer.name,
            files: answer
                .files
                .into_iter()
                .map(|f| FileSummary {
                    key: f.key,
                    name: f.name,
                    thumbnail_url: non_empty(f.thumbnail_url),
                    last_modified: f.last_modified,
                })
                .collect(),
        })
    }
}

scout_sdk::export!(Figma);

#[cfg(test)]
mod tests {
    use super::*;
    use scout_sdk::UpstreamError;

    #[test]
    fn file_keys() {
        for good in ["FigAbc123xyz", "a", "ABCDEFGHIJKLMNOPQRSTUV"] {
            assert!(validate_file_key(good).is_ok(), "{good} should be accepted");
        }
        let long = "a".repeat(65);
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a b",
            "a%2F",
            "a-b",
            "ünï",
            "key?x=1",
            long.as_str(),
        ] {
            assert!(validate_file_key(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(validate_file_key(&"a".repeat(64)).is_ok());
    }

    #[test]
    fn node_id_forms() {
        assert_eq!(node_id("1:2").unwrap(), "1:2");
        assert_eq!(node_id("0:1").unwrap(), "0:1");
        assert_eq!(node_id("12-345").unwrap(), "12:345");
        assert_eq!(node_id("I1:2;3:4").unwrap(), "I1:2;3:4");
        assert_eq!(node_id("I5:6").unwrap(), "I5:6");
        for bad in [
            "", "1", "1:", ":2", "a:b", "1:2;3:4", "1:2,3:4", "1:2/..", "I", "I1:2;", "1 :2",
            "1::2", "1-2-3",
        ] {
            assert!(node_id(bad).is_err(), "{bad:?} should be refused");
        }
        assert!(node_id(&"1".repeat(201)).is_err());
    }

    #[test]
    fn node_id_lists() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(node_ids(&ids(&["1:2", "3-4"])).unwrap(), ["1:2", "3:4"]);
        assert!(node_ids(&[]).is_err());
        assert!(
            node_ids(&ids(&["1:2", "1-2"])).is_err(),
            "the same node twice"
        );
        let many: Vec<String> = (0..51).map(|i| format!("1:{i}")).collect();
        assert!(node_ids(&many).is_err());
        assert!(node_ids(&many[..50]).is_ok());
    }

    #[test]
    fn numbers_depth_scale() {
        assert!(validate_numeric_id("team-id", "1234567890").is_ok());
        for bad in ["", "12a", "-1", "1 2", "../x", &"1".repeat(33)] {
            assert!(
                validate_numeric_id("team-id", bad).is_err(),
                "{bad:?} should be refused"
            );
        }
        assert_eq!(depth(None).unwrap(), 2);
        assert_eq!(depth(Some(1)).unwrap(), 1);
        assert_eq!(depth(Some(4)).unwrap(), 4);
        assert!(depth(Some(0)).is_err());
        assert!(
            matches!(depth(Some(5)), Err(ToolError::InvalidInput(ref m)) if m == "depth must be between 1 and 4, not 5")
        );
        assert_eq!(scale_param(None).unwrap(), None);
        assert_eq!(scale_param(Some(2.0)).unwrap().as_deref(), Some("2"));
        assert_eq!(scale_param(Some(0.5)).unwrap().as_deref(), Some("0.5"));
        assert_eq!(scale_param(Some(0.01)).unwrap().as_deref(), Some("0.01"));
        for bad in [0.0, 0.009, 4.01, -1.0, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(scale_param(Some(bad)), Err(ToolError::InvalidInput(ref m)) if m.starts_with("scale must be between 0.01 and 4, not ")),
                "{bad} should be refused"
            );
        }
        assert_eq!(format_param(ImageFormat::Svg), "svg");
    }

    #[test]
    fn statuses() {
        let e = parse::<ApiUser>(404, br#"{"status":404,"err":"Not found"}"#, "file `k`")
            .err()
            .unwrap();
        assert!(
            matches!(e, ToolError::NotFound(ref m) if m == "file `k`: Not found"),
            "{e:?}"
        );
        let e = parse::<ApiUser>(403, br#"{"status":403,"err":"Invalid token"}"#, "x")
            .err()
            .unwrap();
        assert!(
            matches!(e, ToolError::Upstream(UpstreamError { status: 403, ref message }) if message == "Invalid token")
        );
        let e = parse::<ApiUser>(
            429,
            br#"{"status":429,"message":"Rate limit exceeded"}"#,
            "x",
        )
        .err()
        .unwrap();
        assert!(
            matches!(e, ToolError::Upstream(UpstreamError { status: 429, ref message }) if message == "Rate limit exceeded")
        );
        let e = parse::<ApiUser>(500, b"  oops ", "x").err().unwrap();
        assert!(
            matches!(e, ToolError::Upstream(UpstreamError { ref message, .. }) if message == "oops")
        );
        assert!(matches!(
            parse::<ApiUser>(200, b"[]", "x"),
            Err(ToolError::BadResponse(_))
        ));
        assert_eq!(
            parse::<ApiUser>(200, br#"{"id":"1","handle":"h"}"#, "x")
                .unwrap()
                .handle,
            "h"
        );
    }

    fn node(id: &str, children: Vec<ApiNode>) -> ApiNode {
        ApiNode {
            id: id.into(),
            name: id.into(),
            node_type: "FRAME".into(),
            children,
            characters: None,
            absolute_bounding_box: None,
        }
    }

    #[test]
    fn outlines_are_depth_first_and_bounded() {
        let doc = node(
            "0:0",
            vec![
                node(
                    "0:1",
                    vec![node("1:1", vec![]), node("1:2", vec![node("2:1", vec![])])],
                ),
                node("0:2", vec![]),
            ],
        );
        let (nodes, truncated) = outline(&doc, None);
        assert!(!truncated);
        let ids: Vec<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["0:1", "1:1", "1:2", "2:1", "0:2"]);
        assert_eq!(nodes[0].parent_id, None);
        assert_eq!(nodes[3].parent_id.as_deref(), Some("1:2"));
        assert_eq!(
            nodes.iter().map(|n| n.depth).collect::<Vec<_>>(),
            [1, 2, 2, 3, 1]
        );
        assert_eq!(nodes[0].child_count, 2);

        let wide = node(
            "0:0",
            (0..600).map(|i| node(&format!("1:{i}"), vec![])).collect(),
        );
        let (nodes, truncated) = outline(&wide, None);
        assert!(truncated);
        assert_eq!(nodes.len(), MAX_OUTLINE_NODES);
        let exact = node(
            "0:0",
            (0..500).map(|i| node(&format!("1:{i}"), vec![])).collect(),
        );
        assert!(!outline(&exact, None).1);
        let (nodes, _) = outline(&doc.children[0], Some("0:1"));
        assert_eq!(nodes[0].parent_id.as_deref(), Some("0:1"));
    }

    #[test]
    fn nodes_and_images_keep_the_order_asked() {
        let answer: ApiNodes = serde_json::from_str(
            r#"{"nodes":{"1:2":{"document":{"id":"1:2","name":"Title","type":"TEXT","characters":"Hi",
                "absoluteBoundingBox":{"x":1,"y":2,"width":3,"height":4}}},"9:9":null}}"#,
        )
        .unwrap();
        let read = nodes_read(&["9:9".into(), "1:2".into(), "7:7".into()], answer);
        assert_eq!(read.missing, ["9:9", "7:7"]);
        assert_eq!(read.nodes[0].characters.as_deref(), Some("Hi"));
        assert_eq!(read.nodes[0].bounds.as_ref().unwrap().height, 4.0);

        let answer: ApiImages =
            serde_json::from_str(r#"{"err":null,"images":{"1:2":"https://x/1","3:4":null}}"#)
                .unwrap();
        let out = image_exports(&["3:4".into(), "1:2".into()], answer).unwrap();
        assert_eq!(
            (out[0].url.as_deref(), out[1].url.as_deref()),
            (None, Some("https://x/1"))
        );
        let failed: ApiImages =
            serde_json::from_str(r#"{"err":"Render timeout","images":{}}"#).unwrap();
        assert!(matches!(
            image_exports(&["1:2".into()], failed),
            Err(ToolError::BadResponse(_))
        ));
    }

    #[test]
    fn comments_and_ids() {
        let c: ApiComment = serde_json::from_str(
            r#"{"id":"5","message":"ok","user":{"id":"u","handle":"Ann"},"created_at":"t","resolved_at":null,
                "parent_id":"","client_meta":{"x":1,"y":2},"order_id":"3"}"#,
        )
        .unwrap();
        let c = c.into_comment();
        assert_eq!(
            (c.parent_id, c.node_id, c.order_id.as_deref()),
            (None, None, Some("3"))
        );
        let p: ApiProject = serde_json::from_str(r#"{"id":12,"name":"n"}"#).unwrap();
        assert_eq!(p.id.into_string(), "12");
        let p: ApiProject = serde_json::from_str(r#"{"id":"13","name":"n"}"#).unwrap();
        assert_eq!(p.id.into_string(), "13");
    }
}
