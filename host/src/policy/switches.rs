//! Operator switches: the environment variables of seed 000's "Operator
//! switches" table, parsed exactly as its "Counts as on" column says, read
//! once at start ([`Switches::from_env`]) and shown in a startup banner
//! ([`Switches::banner`]) that also reports every value it did not understand.
//!
//! Case and spacing: the seed says "any case" for `SANDBOX_EGRESS` only, so
//! every other value is compared exactly as written (no trimming, no case
//! folding). A value that is close but not exact (`TRUE`, `Yes`, ` true`) is
//! taken in the safe direction — approvals stay on, writes, sends, browser
//! and harnesses stay off, the sandbox stays on its allowlist — and the
//! banner reports it so the operator can fix it.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The default wait for a pending approval before it denies: five minutes.
pub(crate) const DEFAULT_APPROVAL_TIMEOUT_MS: u64 = 300_000;

/// One variable of the operator switches table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Switch {
    RequireWriteApproval,
    ApprovalTimeoutMs,
    ShopifyAllowWrites,
    GithubAllowWrites,
    AgentmailAllowSends,
    RailwayAllowVariableValues,
    RailwayAllowRedeploy,
    SandboxAllowBrowser,
    BrowserbasePersistentLogins,
    SandboxEgress,
    SandboxEgressAllowlist,
    HarnessLoopEnabled,
    HarnessHermesEnabled,
    HarnessMcpBridgeEnabled,
    AgentmailWebhookUrlSecret,
}

impl Switch {
    /// Every switch, in the seed's table order.
    pub const ALL: [Switch; 15] = [
        Switch::RequireWriteApproval,
        Switch::ApprovalTimeoutMs,
        Switch::ShopifyAllowWrites,
        Switch::GithubAllowWrites,
        Switch::AgentmailAllowSends,
        Switch::RailwayAllowVariableValues,
        Switch::RailwayAllowRedeploy,
        Switch::SandboxAllowBrowser,
        Switch::BrowserbasePersistentLogins,
        Switch::SandboxEgress,
        Switch::SandboxEgressAllowlist,
        Switch::HarnessLoopEnabled,
        Switch::HarnessHermesEnabled,
        Switch::HarnessMcpBridgeEnabled,
        Switch::AgentmailWebhookUrlSecret,
    ];

    /// The environment variable.
    pub fn var(self) -> &'static str {
        match self {
            Switch::RequireWriteApproval => "REQUIRE_WRITE_APPROVAL",
            Switch::ApprovalTimeoutMs => "APPROVAL_TIMEOUT_MS",
            Switch::ShopifyAllowWrites => "SHOPIFY_ALLOW_WRITES",
            Switch::GithubAllowWrites => "GITHUB_ALLOW_WRITES",
            Switch::AgentmailAllowSends => "AGENTMAIL_ALLOW_SENDS",
            Switch::RailwayAllowVariableValues => "RAILWAY_ALLOW_VARIABLE_VALUES",
            Switch::RailwayAllowRedeploy => "RAILWAY_ALLOW_REDEPLOY",
            Switch::SandboxAllowBrowser => "SANDBOX_ALLOW_BROWSER",
            Switch::BrowserbasePersistentLogins => "BROWSERBASE_PERSISTENT_LOGINS",
            Switch::SandboxEgress => "SANDBOX_EGRESS",
            Switch::SandboxEgressAllowlist => "SANDBOX_EGRESS_ALLOWLIST",
            Switch::HarnessLoopEnabled => "HARNESS_LOOP_ENABLED",
            Switch::HarnessHermesEnabled => "HARNESS_HERMES_ENABLED",
            Switch::HarnessMcpBridgeEnabled => "HARNESS_MCP_BRIDGE_ENABLED",
            Switch::AgentmailWebhookUrlSecret => "AGENTMAIL_WEBHOOK_URL_SECRET",
        }
    }

    /// The seed's "Effect" column.
    pub fn effect(self) -> &'static str {
        match self {
            Switch::RequireWriteApproval => "Per-call approvals for gated tools",
            Switch::ApprovalTimeoutMs => "How long a pending approval waits before it denies",
            Switch::ShopifyAllowWrites => "Allows Shopify mutations",
            Switch::GithubAllowWrites => {
                "Lets the four GitHub write tools act (they refuse without it)"
            }
            Switch::AgentmailAllowSends => "Registers the four send tools",
            Switch::RailwayAllowVariableValues => {
                "Registers mcp__railway__railway_reveal_variables (still needs approval)"
            }
            Switch::RailwayAllowRedeploy => {
                "Registers mcp__railway__railway_redeploy (still needs approval)"
            }
            Switch::SandboxAllowBrowser => "Registers the browser tools under E2B",
            Switch::BrowserbasePersistentLogins => "Registers the browser login tools",
            Switch::SandboxEgress => {
                "open lets the sandbox reach the whole internet except private ranges, and removes \
                 mcp__sandbox_egress__sandbox_allow_host"
            }
            Switch::SandboxEgressAllowlist => "Replaces the default sandbox site list",
            Switch::HarnessLoopEnabled => "Makes the loop harness exist",
            Switch::HarnessHermesEnabled => "Makes the Hermes harness exist",
            Switch::HarnessMcpBridgeEnabled => "Opens the bridge Hermes needs",
            Switch::AgentmailWebhookUrlSecret => "Makes the inbound email route exist",
        }
    }

    /// The seed's "Counts as on" column.
    pub(crate) fn counts_as_on(self) -> &'static str {
        match self.reading() {
            Reading::OnUnlessFalse => "On unless false, 0 or no",
            Reading::Timeout => "Default 300000 (five minutes); 0 denies at once",
            Reading::TrueOneYes => "true, 1 or yes",
            Reading::ExactlyTrue => "Exactly true",
            Reading::Egress => {
                "open, any case; anything else is the allowlist, and a typo is reported"
            }
            Reading::NonEmpty => "Any non-empty value",
            Reading::OneOrTrue => "1 or true",
            Reading::AnyValue => "Any value",
        }
    }

    fn reading(self) -> Reading {
        match self {
            Switch::RequireWriteApproval => Reading::OnUnlessFalse,
            Switch::ApprovalTimeoutMs => Reading::Timeout,
            Switch::ShopifyAllowWrites
            | Switch::GithubAllowWrites
            | Switch::RailwayAllowVariableValues
            | Switch::RailwayAllowRedeploy => Reading::TrueOneYes,
            Switch::AgentmailAllowSends
            | Switch::SandboxAllowBrowser
            | Switch::BrowserbasePersistentLogins => Reading::ExactlyTrue,
            Switch::SandboxEgress => Reading::Egress,
            Switch::SandboxEgressAllowlist => Reading::NonEmpty,
            Switch::HarnessLoopEnabled
            | Switch::HarnessHermesEnabled
            | Switch::HarnessMcpBridgeEnabled => Reading::OneOrTrue,
            Switch::AgentmailWebhookUrlSecret => Reading::AnyValue,
        }
    }

    /// The switch for an environment variable name.
    pub(crate) fn from_var(var: &str) -> Option<Switch> {
        Switch::ALL.into_iter().find(|s| s.var() == var)
    }
}

#[derive(Debug, Clone, Copy)]
enum Reading {
    OnUnlessFalse,
    Timeout,
    TrueOneYes,
    ExactlyTrue,
    Egress,
    NonEmpty,
    OneOrTrue,
    AnyValue,
}

/// Where the sandbox may connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Egress {
    /// Only the allowlist (the default posture); `sandbox_allow_host` can widen it.
    Allowlist,
    /// The open internet minus private ranges; no `sandbox_allow_host`.
    Open,
}

/// A value the parser did not understand, and what it did instead. The value
/// of a secret is never kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwitchNote {
    pub switch: Switch,
    /// The value as written, escaped and shortened; `None` for a secret.
    pub value: Option<String>,
    /// What was not understood and the effective value taken instead.
    pub problem: String,
}

impl std::fmt::Display for SwitchNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Some(v) => write!(f, "{}={}: {}", self.switch.var(), v, self.problem),
            None => write!(f, "{}: {}", self.switch.var(), self.problem),
        }
    }
}

/// The operator switches, parsed once. Fields hold effective values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Switches {
    /// `REQUIRE_WRITE_APPROVAL`: per-call approvals for gated tools.
    pub require_write_approval: bool,
    /// `APPROVAL_TIMEOUT_MS`: 0 denies at once.
    pub approval_timeout_ms: u64,
    pub shopify_allow_writes: bool,
    pub github_allow_writes: bool,
    pub agentmail_allow_sends: bool,
    pub railway_allow_variable_values: bool,
    pub railway_allow_redeploy: bool,
    pub sandbox_allow_browser: bool,
    pub browserbase_persistent_logins: bool,
    pub sandbox_egress: Egress,
    /// `SANDBOX_EGRESS_ALLOWLIST`: `Some` when set non-empty; replaces the
    /// default site list with the entries that passed the checks (possibly
    /// none, in which case the sandbox reaches no site).
    pub sandbox_egress_allowlist: Option<Vec<String>>,
    pub harness_loop_enabled: bool,
    pub harness_hermes_enabled: bool,
    pub harness_mcp_bridge_enabled: bool,
    /// `AGENTMAIL_WEBHOOK_URL_SECRET` is set (its value is not kept here).
    pub agentmail_webhook_secret_set: bool,
    /// Which variables were present in the environment.
    pub present: Vec<Switch>,
    /// Values not understood, in table order.
    pub notes: Vec<SwitchNote>,
}

impl Default for Switches {
    /// Every variable unset.
    fn default() -> Self {
        Switches::from_vars(std::iter::empty::<(&str, &str)>())
    }
}

const NOT_UTF8: &str = "\u{FFFD}(not UTF-8)";

impl Switches {
    /// Reads the process environment once. Never panics: a value that is not
    /// UTF-8 is reported as not understood.
    pub fn from_env() -> Switches {
        Switches::from_vars(std::env::vars_os().filter_map(|(k, v)| {
            let k = k.into_string().ok()?;
            Switch::from_var(&k)?;
            Some((k, v.into_string().unwrap_or_else(|_| NOT_UTF8.to_string())))
        }))
    }

    /// Parses the switches from `(name, value)` pairs; other names are
    /// ignored, and a later pair for the same name wins.
    pub fn from_vars<I, K, V>(vars: I) -> Switches
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut raw: Vec<(Switch, String)> = Vec::new();
        for (k, v) in vars {
            if let Some(s) = Switch::from_var(k.as_ref()) {
                raw.retain(|(seen, _)| *seen != s);
                raw.push((s, v.as_ref().to_string()));
            }
        }
        let get = |s: Switch| {
            raw.iter()
                .find(|(seen, _)| *seen == s)
                .map(|(_, v)| v.as_str())
        };
        let mut notes = Vec::new();
        let notes_ref = &mut notes;
        let mut flag = |s: Switch| parse_flag(s, get(s), notes_ref);
        let require_write_approval = flag(Switch::RequireWriteApproval);
        let shopify_allow_writes = flag(Switch::ShopifyAllowWrites);
        let github_allow_writes = flag(Switch::GithubAllowWrites);
        let agentmail_allow_sends = flag(Switch::AgentmailAllowSends);
        let railway_allow_variable_values = flag(Switch::RailwayAllowVariableValues);
        let railway_allow_redeploy = flag(Switch::RailwayAllowRedeploy);
        let sandbox_allow_browser = flag(Switch::SandboxAllowBrowser);
        let browserbase_persistent_logins = flag(Switch::BrowserbasePersistentLogins);
        let harness_loop_enabled = flag(Switch::HarnessLoopEnabled);
        let harness_hermes_enabled = flag(Switch::HarnessHermesEnabled);
        let harness_mcp_bridge_enabled = flag(Switch::HarnessMcpBridgeEnabled);
        let approval_timeout_ms = parse_timeout(get(Switch::ApprovalTimeoutMs), &mut notes);
        let sandbox_egress = parse_egress(get(Switch::SandboxEgress), &mut notes);
        let sandbox_egress_allowlist =
            parse_allowlist(get(Switch::SandboxEgressAllowlist), &mut notes);
        let agentmail_webhook_secret_set = match get(Switch::AgentmailWebhookUrlSecret) {
            None => false,
            Some("") => {
                notes.push(SwitchNote {
                    switch: Switch::AgentmailWebhookUrlSecret,
                    value: None,
                    problem: "set but empty; the inbound email route stays off".into(),
                });
                false
            }
            Some(_) => true,
        };
        notes.sort_by_key(|n| n.switch);
        let present = Switch::ALL
            .into_iter()
            .filter(|s| get(*s).is_some())
            .collect();
        Switches {
            require_write_approval,
            approval_timeout_ms,
            shopify_allow_writes,
            github_allow_writes,
            agentmail_allow_sends,
            railway_allow_variable_values,
            railway_allow_redeploy,
            sandbox_allow_browser,
            browserbase_persistent_logins,
            sandbox_egress,
            sandbox_egress_allowlist,
            harness_loop_enabled,
            harness_hermes_enabled,
            harness_mcp_bridge_enabled,
            agentmail_webhook_secret_set,
            present,
            notes,
        }
    }

    /// Whether an on/off switch is on. `APPROVAL_TIMEOUT_MS` counts as on
    /// when above 0, `SANDBOX_EGRESS` when open, `SANDBOX_EGRESS_ALLOWLIST`
    /// when set, the webhook secret when set.
    pub fn is_on(&self, switch: Switch) -> bool {
        match switch {
            Switch::RequireWriteApproval => self.require_write_approval,
            Switch::ApprovalTimeoutMs => self.approval_timeout_ms > 0,
            Switch::ShopifyAllowWrites => self.shopify_allow_writes,
            Switch::GithubAllowWrites => self.github_allow_writes,
            Switch::AgentmailAllowSends => self.agentmail_allow_sends,
            Switch::RailwayAllowVariableValues => self.railway_allow_variable_values,
            Switch::RailwayAllowRedeploy => self.railway_allow_redeploy,
            Switch::SandboxAllowBrowser => self.sandbox_allow_browser,
            Switch::BrowserbasePersistentLogins => self.browserbase_persistent_logins,
            Switch::SandboxEgress => self.sandbox_egress == Egress::Open,
            Switch::SandboxEgressAllowlist => self.sandbox_egress_allowlist.is_some(),
            Switch::HarnessLoopEnabled => self.harness_loop_enabled,
            Switch::HarnessHermesEnabled => self.harness_hermes_enabled,
            Switch::HarnessMcpBridgeEnabled => self.harness_mcp_bridge_enabled,
            Switch::AgentmailWebhookUrlSecret => self.agentmail_webhook_secret_set,
        }
    }

    /// How long a pending approval waits; zero denies at once.
    pub fn approval_timeout(&self) -> Duration {
        Duration::from_millis(self.approval_timeout_ms)
    }

    /// Whether the Hermes harness exists: its switch and the MCP bridge.
    pub fn hermes_available(&self) -> bool {
        self.harness_hermes_enabled && self.harness_mcp_bridge_enabled
    }

    /// The effective value of one switch, as the banner shows it. A secret
    /// shows only whether it is set.
    pub fn describe(&self, switch: Switch) -> String {
        let onoff = |b: bool| if b { "on" } else { "off" };
        match switch {
            Switch::ApprovalTimeoutMs if self.approval_timeout_ms == 0 => {
                "0 ms (a pending approval denies at once)".into()
            }
            Switch::ApprovalTimeoutMs => format!("{} ms", self.approval_timeout_ms),
            Switch::SandboxEgress => match self.sandbox_egress {
                Egress::Open => {
                    "open (whole internet except private ranges; no sandbox_allow_host)".into()
                }
                Egress::Allowlist => "allowlist".into(),
            },
            Switch::SandboxEgressAllowlist => match &self.sandbox_egress_allowlist {
                None => "default site list".into(),
                Some(list) if list.is_empty() => {
                    "replaced by an empty list (the sandbox reaches no site)".into()
                }
                Some(list) => format!("replaced: {}", list.join(", ")),
            },
            Switch::AgentmailWebhookUrlSecret => {
                if self.agentmail_webhook_secret_set {
                    "set (inbound email route on)".into()
                } else {
                    "not set (inbound email route off)".into()
                }
            }
            Switch::HarnessHermesEnabled
                if self.harness_hermes_enabled && !self.harness_mcp_bridge_enabled =>
            {
                "on, but the Hermes harness does not exist without HARNESS_MCP_BRIDGE_ENABLED"
                    .into()
            }
            other => onoff(self.is_on(other)).into(),
        }
    }

    /// The startup banner: every switch's effective value (and whether it
    /// came from the environment or the default), then every value not
    /// understood. A secret's value is never printed.
    pub fn banner(&self) -> String {
        let mut out = String::from("Operator switches (read once at start):\n");
        for s in Switch::ALL {
            let source = if self.present.contains(&s) {
                "set"
            } else {
                "default"
            };
            let _ = writeln!(out, "  {:<30} {} [{}]", s.var(), self.describe(s), source);
        }
        if self.notes.is_empty() {
            out.push_str("Every value was understood.\n");
        } else {
            out.push_str("Values not understood:\n");
            for n in &self.notes {
                let _ = writeln!(out, "  {n}");
            }
        }
        out
    }
}

/// Escapes and shortens a value for the banner.
fn shown(value: &str) -> String {
    const MAX: usize = 64;
    let short: String = value.chars().take(MAX).collect();
    let mut s = format!("{short:?}");
    if value.chars().count() > MAX {
        s.push('…');
    }
    s
}

fn parse_flag(switch: Switch, value: Option<&str>, notes: &mut Vec<SwitchNote>) -> bool {
    let Some(v) = value else {
        return matches!(switch.reading(), Reading::OnUnlessFalse);
    };
    let (on, problem) = match switch.reading() {
        Reading::OnUnlessFalse => match v {
            "false" | "0" | "no" => (false, None),
            "true" | "1" | "yes" | "" => (true, None),
            _ => (
                true,
                Some("not understood; only false, 0 or no turn it off, so it stays on"),
            ),
        },
        Reading::TrueOneYes => match v {
            "true" | "1" | "yes" => (true, None),
            "false" | "0" | "no" | "" => (false, None),
            _ => (
                false,
                Some("not understood; only true, 1 or yes turn it on, so it stays off"),
            ),
        },
        Reading::ExactlyTrue => match v {
            "true" => (true, None),
            "false" | "0" | "no" | "" => (false, None),
            _ => (
                false,
                Some("counts as on only when exactly true, so it stays off"),
            ),
        },
        Reading::OneOrTrue => match v {
            "1" | "true" => (true, None),
            "false" | "0" | "no" | "" => (false, None),
            _ => (
                false,
                Some("not understood; only 1 or true turn it on, so it stays off"),
            ),
        },
        Reading::Timeout | Reading::Egress | Reading::NonEmpty | Reading::AnyValue => {
            unreachable!("not a flag")
        }
    };
    if let Some(problem) = problem {
        notes.push(SwitchNote {
            switch,
            value: Some(shown(v)),
            problem: problem.into(),
        });
    }
    on
}

fn parse_timeout(value: Option<&str>, notes: &mut Vec<SwitchNote>) -> u64 {
    match value {
        None | Some("") => DEFAULT_APPROVAL_TIMEOUT_MS,
        Some(v) => match v.parse::<u64>() {
            Ok(ms) if v.bytes().all(|b| b.is_ascii_digit()) => ms,
            _ => {
                notes.push(SwitchNote {
                    switch: Switch::ApprovalTimeoutMs,
                    value: Some(shown(v)),
                    problem: format!(
                        "not a whole number of milliseconds; using the default {DEFAULT_APPROVAL_TIMEOUT_MS}"
                    ),
                });
                DEFAULT_APPROVAL_TIMEOUT_MS
            }
        },
    }
}

fn parse_egress(value: Option<&str>, notes: &mut Vec<SwitchNote>) -> Egress {
    match value {
        None | Some("") => Egress::Allowlist,
        Some(v) if v.eq_ignore_ascii_case("open") => Egress::Open,
        Some(v) if v.eq_ignore_ascii_case("allowlist") => Egress::Allowlist,
        Some(v) => {
            notes.push(SwitchNote {
                switch: Switch::SandboxEgress,
                value: Some(shown(v)),
                problem: "not understood (a typo?); only open, in any case, opens the sandbox, so it stays on \
                          the allowlist"
                    .into(),
            });
            Egress::Allowlist
        }
    }
}

fn parse_allowlist(value: Option<&str>, notes: &mut Vec<SwitchNote>) -> Option<Vec<String>> {
    let v = value.filter(|v| !v.is_empty())?;
    let mut kept = Vec::new();
    for entry in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        match check_allowlist_entry(entry) {
            Ok(()) => kept.push(entry.to_ascii_lowercase()),
            Err(why) => notes.push(SwitchNote {
                switch: Switch::SandboxEgressAllowlist,
                value: Some(shown(entry)),
                problem: format!("entry left out: {why}"),
            }),
        }
    }
    Some(kept)
}

/// An allowlist entry is a host, `*.domain`, a public IP, or a CIDR of public
/// addresses narrower than /8. Private, link-local and metadata addresses can
/// never be added.
fn check_allowlist_entry(entry: &str) -> Result<(), &'static str> {
    if let Some((addr, prefix)) = entry.split_once('/') {
        let ip: IpAddr = addr.parse().map_err(|_| "not a CIDR block")?;
        let prefix: u8 = prefix.parse().map_err(|_| "not a CIDR prefix")?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        if prefix > max {
            return Err("CIDR prefix too long");
        }
        if prefix <= 8 {
            return Err("a CIDR block must be narrower than /8");
        }
        return if is_public(ip) {
            Ok(())
        } else {
            Err("a private, link-local or metadata range can never be added")
        };
    }
    if let Ok(ip) = entry
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return if is_public(ip) {
            Ok(())
        } else {
            Err("a private, link-local or metadata address can never be added")
        };
    }
    let host = entry.strip_prefix("*.").unwrap_or(entry);
    let ok = !host.is_empty()
        && host.len() <= 253
        && host.contains('.')
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if !ok {
        return Err("not a host name, *.domain, public IP or CIDR block");
    }
    if host.eq_ignore_ascii_case("localhost") || host.to_ascii_lowercase().ends_with(".localhost") {
        return Err("a loopback name can never be added");
    }
    Ok(())
}

fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let seg = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (seg[0] & 0xfe00) == 0xfc00
                || (seg[0] & 0xffc0) == 0xfe80
                || seg[0] == 0x2001 && seg[1] == 0x0db8)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let s = Switches::default();
        assert!(s.require_write_approval);
        assert_eq!(s.approval_timeout_ms, 300_000);
        assert_eq!(s.sandbox_egress, Egress::Allowlist);
        assert!(s.notes.is_empty());
        assert!(s.present.is_empty());
    }

    #[test]
    fn allowlist_entries() {
        assert!(check_allowlist_entry("registry.npmjs.org").is_ok());
        assert!(check_allowlist_entry("*.github.com").is_ok());
        assert!(check_allowlist_entry("8.8.8.8").is_ok());
        assert!(check_allowlist_entry("203.0.114.0/24").is_ok());
        assert!(check_allowlist_entry("8.0.0.0/8").is_err());
        assert!(check_allowlist_entry("169.254.169.254").is_err());
        assert!(check_allowlist_entry("169.254.0.0/16").is_err());
        assert!(check_allowlist_entry("10.1.2.3").is_err());
        assert!(check_allowlist_entry("::ffff:127.0.0.1").is_err());
        assert!(check_allowlist_entry("fe80::1").is_err());
        assert!(check_allowlist_entry("localhost").is_err());
        assert!(check_allowlist_entry("bad host").is_err());
    }
}
