//! The Tailscale connector: five read tools over the Tailscale API v2
//! (`/api/v2`), and no write tools.
//!
//! Every request goes through the host's HTTP capability, which is bound to
//! the Tailscale API origin and adds the token (an OAuth client's access
//! token, requested with read scopes only); this code never sees a secret.
//!
//! The tailnet defaults to `-`, the API's name for the token's own tailnet.
//! Arguments are validated before they are put in a URL (tailnet names and
//! device ids), and every path segment is percent-encoded with the SDK's
//! `encode_segment`.

scout_sdk::bindings!();

use bindings::exports::scout::tailscale::read_tools::{
    self, DerpLatency, DeviceDetail, DeviceSummary, DnsSettings, PolicyFile, SplitDnsRoute, User,
    UserRole, UserType,
};
use scout_sdk::{Http, Method, ToolError, encode_segment};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The API's name for the token's own tailnet.
const DEFAULT_TAILNET: &str = "-";
/// Longest tailnet name accepted (a DNS name's length).
const MAX_TAILNET: usize = 253;
/// Longest device id accepted.
const MAX_DEVICE_ID: usize = 64;
/// What the API answers for a time that is not set (e.g. `expires` when key expiry is off).
const ZERO_TIME: &str = "0001-01-01T00:00:00Z";

// ---------------------------------------------------------------------------
// Validation and mapping (pure functions, unit-tested below)
// ---------------------------------------------------------------------------

/// The tailnet path segment: `-` when none is given; otherwise 1 to 253
/// ASCII letters, digits, `-`, `_`, `.`, `@` or `+` (an organization name
/// such as `example.com`, a tailnet id such as `T1234CNTRL`, or a personal
/// tailnet's login name), percent-encoded.
fn tailnet_segment(tailnet: Option<&str>) -> Result<String, ToolError> {
    let Some(name) = tailnet else {
        return Ok(DEFAULT_TAILNET.to_string());
    };
    if name.is_empty() {
        return Err(ToolError::invalid(
            "tailnet is empty; leave it out for the token's own tailnet",
        ));
    }
    if name.len() > MAX_TAILNET {
        return Err(ToolError::invalid(format!(
            "tailnet is longer than {MAX_TAILNET} characters"
        )));
    }
    if name == "." || name == ".." {
        return Err(ToolError::invalid(format!(
            "tailnet `{name}` is not a name"
        )));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'@' | b'+'))
    {
        return Err(ToolError::invalid(format!(
            "tailnet `{name}` may contain only ASCII letters, digits, `-`, `_`, `.`, `@` and `+`"
        )));
    }
    Ok(encode_segment(name))
}

/// Checks a device id: its node id (`nXXXXXCNTRL`) or legacy numeric id,
/// 1 to 64 ASCII letters and digits.
fn validate_device_id(id: &str) -> Result<(), ToolError> {
    if id.is_empty() {
        return Err(ToolError::invalid(
            "device-id is empty; `devices` lists every device with its id",
        ));
    }
    if id.len() > MAX_DEVICE_ID {
        return Err(ToolError::invalid(format!(
            "device-id is longer than {MAX_DEVICE_ID} characters"
        )));
    }
    if !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(ToolError::invalid(format!(
            "device-id `{id}` is not a Tailscale device id (ASCII letters and digits, e.g. `n5SUKe8CNTRL`)"
        )));
    }
    Ok(())
}

/// A timestamp the API may leave out, send empty, or send as the zero time.
fn timestamp(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty() && v != ZERO_TIME)
}

fn user_type_param(t: UserType) -> &'static str {
    match t {
        UserType::Member => "member",
        UserType::Shared => "shared",
        UserType::All => "all",
    }
}

fn role_param(r: UserRole) -> &'static str {
    match r {
        UserRole::Owner => "owner",
        UserRole::Member => "member",
        UserRole::Admin => "admin",
        UserRole::ItAdmin => "it-admin",
        UserRole::NetworkAdmin => "network-admin",
        UserRole::BillingAdmin => "billing-admin",
        UserRole::Auditor => "auditor",
        UserRole::All => "all",
    }
}

/// The `users` query: only the filters that were given.
fn users_query(
    user_type: Option<UserType>,
    role: Option<UserRole>,
) -> Vec<(&'static str, &'static str)> {
    let mut query = Vec::new();
    if let Some(t) = user_type {
        query.push(("type", user_type_param(t)));
    }
    if let Some(r) = role {
        query.push(("role", role_param(r)));
    }
    query
}

/// Adds what was asked for to a `not-found` error.
fn not_found(what: impl Into<String>) -> impl FnOnce(ToolError) -> ToolError {
    let what = what.into();
    move |e| match e {
        ToolError::NotFound(m) => ToolError::NotFound(format!("{what}: {m}")),
        other => other,
    }
}

/// Names the tailnet in a not-found error (`-` is "the token's tailnet").
fn tailnet_label(tailnet: Option<&str>) -> String {
    match tailnet {
        None => "the token's tailnet".to_string(),
        Some(t) => format!("tailnet `{t}`"),
    }
}

// ---------------------------------------------------------------------------
// Tailscale's wire format (only the fields used; extra fields are ignored)
// ---------------------------------------------------------------------------

#[derive(Deserialize)]
struct DeviceList {
    devices: Vec<ApiDevice>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiDevice {
    id: String,
    node_id: String,
    name: String,
    #[serde(default)]
    hostname: String,
    #[serde(default)]
    user: String,
    #[serde(default)]
    os: String,
    #[serde(default)]
    client_version: String,
    #[serde(default)]
    addresses: Vec<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    authorized: bool,
    #[serde(default)]
    is_external: bool,
    #[serde(default)]
    created: Option<String>,
    #[serde(default)]
    last_seen: Option<String>,
    #[serde(default)]
    connected_to_control: Option<bool>,
    #[serde(default)]
    key_expiry_disabled: bool,
    #[serde(default)]
    expires: Option<String>,
    #[serde(default)]
    update_available: bool,
    #[serde(default)]
    blocks_incoming_connections: bool,
    /// Only with `fields=all`.
    #[serde(default)]
    advertised_routes: Vec<String>,
    /// Only with `fields=all`.
    #[serde(default)]
    enabled_routes: Vec<String>,
    /// Only with `fields=all`.
    #[serde(default)]
    client_connectivity: Option<ClientConnectivity>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClientConnectivity {
    #[serde(default)]
    endpoints: Vec<String>,
    #[serde(default)]
    latency: BTreeMap<String, ApiLatency>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiLatency {
    latency_ms: f64,
    #[serde(default)]
    preferred: bool,
}

impl ApiDevice {
    fn summary(self) -> DeviceSummary {
        DeviceSummary {
            id: self.node_id,
            legacy_id: self.id,
            name: self.name,
            hostname: self.hostname,
            user: self.user,
            os: self.os,
            client_version: self.client_version,
            addresses: self.addresses,
            tags: self.tags,
            authorized: self.authorized,
            is_external: self.is_external,
            last_seen: timestamp(self.last_seen),
            connected_to_control: self.connected_to_control,
            key_expiry_disabled: self.key_expiry_disabled,
            expires: timestamp(self.expires),
            update_available: self.update_available,
            blocks_incoming_connections: self.blocks_incoming_connections,
        }
    }

    fn detail(self) -> DeviceDetail {
        let connectivity = self.client_connectivity.unwrap_or(ClientConnectivity {
            endpoints: Vec::new(),
            latency: BTreeMap::new(),
        });
        DeviceDetail {
            id: self.node_id,
            legacy_id: self.id,
            name: self.name,
            hostname: self.hostname,
            user: self.user,
            os: self.os,
            client_version: self.client_version,
            addresses: self.addresses,
            tags: self.tags,
            authorized: self.authorized,
            is_external: self.is_external,
            created: timestamp(self.created),
            last_seen: timestamp(self.last_seen),
            connected_to_control: self.connected_to_control,
            key_expiry_disabled: self.key_expiry_disabled,
            expires: timestamp(self.expires),
            update_available: self.update_available,
            blocks_incoming_connections: self.blocks_incoming_connections,
            advertised_routes: self.advertised_routes,
            enabled_routes: self.enabled_routes,
            endpoints: connectivity.endpoints,
            derp_latency: connectivity
                .latency
                .into_iter()
                .map(|(region, l)| DerpLatency {
                    region,
                    latency_ms: l.latency_ms,
                    preferred: l.preferred,
                })
                .collect(),
        }
    }
}

#[derive(Deserialize)]
struct UserList {
    users: Vec<ApiUser>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiUser {
    id: String,
    #[serde(default)]
    display_name: String,
    login_name: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    status: String,
    #[serde(default, rename = "type")]
    user_type: String,
    #[serde(default)]
    device_count: u32,
    #[serde(default)]
    currently_connected: bool,
    #[serde(default)]
    created: Option<String>,
    #[serde(default)]
    last_seen: Option<String>,
}

impl ApiUser {
    fn into_user(self) -> User {
        User {
            id: self.id,
            display_name: self.display_name,
            login_name: self.login_name,
            role: self.role,
            status: self.status,
            user_type: self.user_type,
            device_count: self.device_count,
            currently_connected: self.currently_connected,
            created: timestamp(self.created),
            last_seen: timestamp(self.last_seen),
        }
    }
}

#[derive(Deserialize)]
struct Preferences {
    #[serde(rename = "magicDNS", default)]
    magic_dns: bool,
}

#[derive(Deserialize)]
struct Nameservers {
    #[serde(default)]
    dns: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SearchPaths {
    #[serde(default)]
    search_paths: Vec<String>,
}

/// `dns/split-dns`: domain -> nameservers (null or absent: none).
type SplitDns = BTreeMap<String, Option<Vec<String>>>;

fn split_dns_routes(map: SplitDns) -> Vec<SplitDnsRoute> {
    map.into_iter()
        .map(|(domain, nameservers)| SplitDnsRoute {
            domain,
            nameservers: nameservers.unwrap_or_default(),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// The client for the Tailscale API origin the host granted.
fn tailscale(accept: &str) -> Result<Http, ToolError> {
    Ok(Http::connect()?
        .with_header("accept", accept)
        .with_header("user-agent", "scout-connector-tailscale"))
}

fn tailnet_path(tailnet: Option<&str>, rest: &str) -> Result<String, ToolError> {
    Ok(format!(
        "/api/v2/tailnet/{}/{rest}",
        tailnet_segment(tailnet)?
    ))
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
struct Tailscale;

impl read_tools::Guest for Tailscale {
    fn devices(tailnet: Option<String>) -> Result<Vec<DeviceSummary>, ToolError> {
        let path = tailnet_path(tailnet.as_deref(), "devices")?;
        let list: DeviceList = tailscale("application/json")?
            .get(&path, &[])
            .map_err(not_found(tailnet_label(tailnet.as_deref())))?;
        Ok(list.devices.into_iter().map(ApiDevice::summary).collect())
    }

    fn device(device_id: String) -> Result<DeviceDetail, ToolError> {
        validate_device_id(&device_id)?;
        let path = format!("/api/v2/device/{}", encode_segment(&device_id));
        let device: ApiDevice = tailscale("application/json")?
            .get(&path, &[("fields", "all")])
            .map_err(not_found(format!("device `{device_id}`")))?;
        Ok(device.detail())
    }

    fn users(
        tailnet: Option<String>,
        user_type: Option<UserType>,
        role: Option<UserRole>,
    ) -> Result<Vec<User>, ToolError> {
        let path = tailnet_path(tailnet.as_deref(), "users")?;
        let list: UserList = tailscale("application/json")?
            .get(&path, &users_query(user_type, role))
            .map_err(not_found(tailnet_label(tailnet.as_deref())))?;
        Ok(list.users.into_iter().map(ApiUser::into_user).collect())
    }

    fn policy(tailnet: Option<String>) -> Result<PolicyFile, ToolError> {
        let path = tailnet_path(tailnet.as_deref(), "acl")?;
        let http = tailscale("application/hujson")?;
        let response = http.send(Method::Get, &path, &[], None)?;
        http.check(&response)
            .map_err(not_found(tailnet_label(tailnet.as_deref())))?;
        let etag = response
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("etag"))
            .map(|(_, v)| v.clone());
        let hujson = String::from_utf8(response.body)
            .map_err(|_| ToolError::BadResponse("the policy file is not UTF-8 text".to_string()))?;
        Ok(PolicyFile { hujson, etag })
    }

    fn dns(tailnet: Option<String>) -> Result<DnsSettings, ToolError> {
        let label = tailnet_label(tailnet.as_deref());
        let preferences_path = tailnet_path(tailnet.as_deref(), "dns/preferences")?;
        let http = tailscale("application/json")?;
        let preferences: Preferences = http
            .get(&preferences_path, &[])
            .map_err(not_found(label.clone()))?;
        let nameservers: Nameservers = http
            .get(&tailnet_path(tailnet.as_deref(), "dns/nameservers")?, &[])
            .map_err(not_found(label.clone()))?;
        let search: SearchPaths = http
            .get(&tailnet_path(tailnet.as_deref(), "dns/searchpaths")?, &[])
            .map_err(not_found(label.clone()))?;
        let split: SplitDns = http
            .get(&tailnet_path(tailnet.as_deref(), "dns/split-dns")?, &[])
            .map_err(not_found(label))?;
        Ok(DnsSettings {
            magic_dns: preferences.magic_dns,
            nameservers: nameservers.dns,
            search_paths: search.search_paths,
            split_dns: split_dns_routes(split),
        })
    }
}

scout_sdk::export!(Tailscale);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tailnet_names() {
        assert_eq!(tailnet_segment(None).unwrap(), "-");
        assert_eq!(tailnet_segment(Some("-")).unwrap(), "-");
        assert_eq!(tailnet_segment(Some("example.com")).unwrap(), "example.com");
        assert_eq!(tailnet_segment(Some("T1234CNTRL")).unwrap(), "T1234CNTRL");
        assert_eq!(
            tailnet_segment(Some("amelie@example.com")).unwrap(),
            "amelie%40example.com"
        );
        assert_eq!(
            tailnet_segment(Some("a+b@gmail.com")).unwrap(),
            "a%2Bb%40gmail.com"
        );
        let long = "a".repeat(254);
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a b",
            "a%2F",
            "a?b",
            "a#b",
            "ünï",
            "a\n",
            "a\\b",
            long.as_str(),
        ] {
            assert!(
                tailnet_segment(Some(bad)).is_err(),
                "{bad:?} should be refused"
            );
        }
        assert!(tailnet_segment(Some(&"a".repeat(253))).is_ok());
        assert_eq!(
            tailnet_path(None, "dns/split-dns").unwrap(),
            "/api/v2/tailnet/-/dns/split-dns"
        );
    }

    #[test]
    fn device_ids() {
        for good in ["n5SUKe8CNTRL", "92960230385", "a"] {
            assert!(
                validate_device_id(good).is_ok(),
                "{good} should be accepted"
            );
        }
        let long = "a".repeat(65);
        for bad in [
            "",
            "..",
            "n1/../x",
            "n 1",
            "n-1",
            "n%2F",
            "ünï",
            long.as_str(),
        ] {
            assert!(
                validate_device_id(bad).is_err(),
                "{bad:?} should be refused"
            );
        }
    }

    #[test]
    fn timestamps() {
        assert_eq!(timestamp(None), None);
        assert_eq!(timestamp(Some(String::new())), None);
        assert_eq!(timestamp(Some(ZERO_TIME.to_string())), None);
        assert_eq!(
            timestamp(Some("2022-12-01T05:23:30Z".to_string())).as_deref(),
            Some("2022-12-01T05:23:30Z")
        );
    }

    #[test]
    fn user_filters() {
        assert!(users_query(None, None).is_empty());
        assert_eq!(
            users_query(Some(UserType::Shared), None),
            [("type", "shared")]
        );
        assert_eq!(
            users_query(None, Some(UserRole::ItAdmin)),
            [("role", "it-admin")]
        );
        assert_eq!(
            users_query(Some(UserType::All), Some(UserRole::All)),
            [("type", "all"), ("role", "all")]
        );
    }

    #[test]
    fn parses_devices_and_dns() {
        let d: ApiDevice = serde_json::from_str(
            r#"{"id":"1","nodeId":"n1CNTRL","name":"a.ts.net","keyExpiryDisabled":true,"expires":"0001-01-01T00:00:00Z",
                "clientConnectivity":{"endpoints":["1.2.3.4:41641"],"latency":{"Dallas":{"latencyMs":60.5,"preferred":true}}}}"#,
        )
        .unwrap();
        let d = d.detail();
        assert_eq!(
            (d.id.as_str(), d.legacy_id.as_str(), d.expires),
            ("n1CNTRL", "1", None)
        );
        assert_eq!(d.derp_latency.len(), 1);
        assert!(d.derp_latency[0].preferred);
        let split: SplitDns =
            serde_json::from_str(r#"{"b.example":["1.1.1.1"],"a.example":null}"#).unwrap();
        let routes = split_dns_routes(split);
        assert_eq!(routes[0].domain, "a.example");
        assert!(routes[0].nameservers.is_empty());
        assert_eq!(routes[1].nameservers, ["1.1.1.1"]);
    }
}
