//! Every connector built from source, configured at once for one `serve`:
//! the catalogue test's deployment, and the benches' session with every
//! connector.
//!
//! This crate cannot depend on `scout-host`, which reads a component's
//! manifest (`scout_host::runtime::read_manifest`); the caller hands that
//! reader in, as the manifest's JSON.

use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One built connector component.
pub struct Connector {
    /// Its name, e.g. `github`.
    pub name: String,
    /// The component file.
    pub path: PathBuf,
    /// Whether some route goes to the connector's own origin (no destination).
    pub own_origin: bool,
    /// The destinations its routes name that are not a connector it reads
    /// from (`Reads-from`): origins the operator configures.
    pub destinations: BTreeSet<String>,
}

/// The part of a manifest's JSON (`scout_manifest::Manifest`) read here.
#[derive(Deserialize)]
struct Manifest {
    connector: String,
    tools: Vec<Tool>,
}

#[derive(Deserialize)]
struct Tool {
    #[serde(default)]
    routes: Vec<Route>,
    #[serde(default)]
    reads_from: Vec<String>,
}

#[derive(Deserialize)]
struct Route {
    #[serde(default)]
    destination: Option<String>,
}

/// Every connector component of [`crate::components::CONNECTORS`], each
/// described from the JSON `manifest_json` reads out of its bytes (with
/// `scout-host`: `read_manifest(bytes).expect(..).to_json()`).
pub fn connectors(manifest_json: impl Fn(&[u8]) -> String) -> Vec<Connector> {
    crate::components::CONNECTORS
        .iter()
        .map(|path| {
            let bytes = std::fs::read(path)
                .unwrap_or_else(|e| panic!("{path}: {e} (built by the scout-tests build script)"));
            let manifest: Manifest = serde_json::from_str(&manifest_json(&bytes))
                .unwrap_or_else(|e| panic!("{path}: the manifest's JSON: {e}"));
            let peers: BTreeSet<&str> = manifest
                .tools
                .iter()
                .flat_map(|t| t.reads_from.iter().map(String::as_str))
                .collect();
            let routes = || manifest.tools.iter().flat_map(|t| t.routes.iter());
            let destinations = routes()
                .filter_map(|r| r.destination.as_deref())
                .filter(|d| !peers.contains(d))
                .map(str::to_string)
                .collect();
            Connector {
                own_origin: routes().any(|r| r.destination.is_none()),
                destinations,
                name: manifest.connector,
                path: PathBuf::from(path),
            }
        })
        .collect()
}

/// Writes `dir/serve.toml`: every connector of `connectors` with every
/// origin it needs set to `origin` (private addresses allowed), Shopify's
/// credential header, Google Ads' and Microsoft Ads' developer tokens
/// (taken by `serve` from `GOOGLE_ADS_DEVELOPER_TOKEN` and
/// `MICROSOFT_ADS_DEVELOPER_TOKEN`; Figma needs `NANGO_SECRET_KEY`), and
/// the writer's, SEO's and Analytics' folders under `dir/data/{brand}`.
/// The database is `scout.db` beside it, reviews are not required, and
/// `extra` (top-level keys) goes before the first table.
pub fn serve_config(dir: &Path, origin: &str, connectors: &[Connector], extra: &str) -> PathBuf {
    let mut toml =
        String::from("listen = \"127.0.0.1:0\"\ndatabase = \"scout.db\"\nrequire_review = false\n");
    toml.push_str(extra);
    for c in connectors {
        let name = c.name.as_str();
        toml.push_str(&format!(
            "\n[connectors.{name}]\ncomponent = {:?}\nallow_private_network = true\n",
            c.path.display().to_string()
        ));
        if c.own_origin {
            toml.push_str(&format!("origin = {origin:?}\n"));
        }
        if name == "shopify" {
            toml.push_str("credential = \"header:X-Shopify-Access-Token\"\n");
        }
        // Seed 000: "when the deployment offers Figma (Nango configured)",
        // and Microsoft Ads, whose every call needs the deployment's
        // developer token (as Google Ads' does).
        match name {
            // Figma: NANGO_SECRET_KEY, which the host requires by itself.
            "microsoftads" => toml.push_str(
                "deployment_headers = { DeveloperToken = \"MICROSOFT_ADS_DEVELOPER_TOKEN\" }\n",
            ),
            "googleads" => toml.push_str(
                "deployment_headers = { developer-token = \"GOOGLE_ADS_DEVELOPER_TOKEN\" }\n",
            ),
            _ => {}
        }
        if !c.destinations.is_empty() {
            toml.push_str(&format!("[connectors.{name}.origins]\n"));
            for d in &c.destinations {
                // Cloudflare's public docs server and Microsoft's report
                // storage must not receive the connector's credential.
                if matches!(
                    (name, d.as_str()),
                    ("cloudflare", "docs") | ("microsoftads", "download")
                ) {
                    toml.push_str(&format!(
                        "{d} = {{ origin = {origin:?}, credential = \"none\" }}\n"
                    ));
                } else {
                    toml.push_str(&format!("{d} = {origin:?}\n"));
                }
            }
        }
        for folder in match name {
            "writer" | "seo" => &["project"][..],
            "analytics" => &["analytics"][..],
            _ => &[][..],
        } {
            let root = dir.join("data").join("{brand}").join(folder);
            toml.push_str(&format!(
                "[connectors.{name}.folders.{folder}]\nroot = {:?}\nwritable = true\n",
                root.display().to_string()
            ));
        }
    }
    let path = dir.join("serve.toml");
    std::fs::write(&path, toml).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// The scopes of the brand's one Google connection: Ads, Search Console,
/// Analytics and Sheets.
pub const GOOGLE_SCOPES: [&str; 4] = [
    "https://www.googleapis.com/auth/adwords",
    "https://www.googleapis.com/auth/webmasters.readonly",
    "https://www.googleapis.com/auth/analytics.readonly",
    "https://www.googleapis.com/auth/drive.file",
];

/// The connections a brand stores so that every connector of `connectors`
/// resolves, each `{"connector": CONNECTION, "body": BODY}` for
/// `PUT /v1/brands/BRAND/connections/CONNECTION`: one `google` connection
/// (`tok-google`, every [`GOOGLE_SCOPES`]) for the Google products, none
/// for the writer and SEO (they hold no credential), and `tok-NAME` for
/// every other connector.
pub fn connections(connectors: &[Connector]) -> Vec<Value> {
    let mut out = vec![
        json!({"connector": "google", "body": {"secret": "tok-google", "scopes": GOOGLE_SCOPES}}),
    ];
    for c in connectors {
        let name = c.name.as_str();
        let google = ["googleads", "searchconsole", "analytics", "sheets"].contains(&name);
        if !google && !["writer", "seo"].contains(&name) {
            out.push(json!({"connector": name, "body": {"secret": format!("tok-{name}")}}));
        }
    }
    out
}
