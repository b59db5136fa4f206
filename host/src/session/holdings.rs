//! What one session may hold besides `http`: a `meter` per billing
//! connector and the configured `folder`s, decided once when the session
//! opens and built lazily at the connector's first call.
//!
//! **Meter.** One session is one run (seed 000: "the per-run figure is
//! enforced inside the connector's spending gate on every call"). Its
//! allowance for a connector whose component imports `scout:connector/meter`
//! is the profile's grant for a specialist or the goal agent, the
//! operator's `person_allowance` for a person's chat, and nothing for every
//! other role: no meter handle, so the guest's `reserve` is refused as
//! `denied` and nothing is sent. The run starts in the store's durable
//! per-day ledger at the connector's first offered call (the day's figure is
//! checked there, atomically); a day already exhausted gives that call a
//! meter that refuses with `day-exhausted`, and the next call tries again.
//! The run ends when the session ends or expires (or is dropped). Person
//! chat's "calls above a threshold ask a person" is the operator's
//! `per_call_threshold_credits` or `per_call_threshold_usd` beside the
//! allowance ([`PersonAllowance::per_call_threshold`], in the meter's unit);
//! the boundary holds each billed call's reservations to it
//! (`crate::boundary`'s `spend.rs`), and without one asks a person before
//! every billed call in person chat.
//!
//! **Folders.** A configured folder is part of the brand's project data, so
//! a session holds it only if its role holds the project folder, and may
//! write it only if the configuration says `writable = true` *and* the role
//! may write the project folder (`mcp__project__project_write` in the
//! session's allowlist). From seed 000 that means: person chat and the goal
//! agent write; a coworker or specialist writes only if its profile asks for
//! `project_write` (so the Content writer preset reads only); the SEO analyst
//! reads only; an inbound email turn, a read-only route and a goal reviewer
//! hold no folder at all. The content writer's and the SEO brief tools'
//! folders are the exception: their own tools write drafts and briefs (and
//! never an APPROVED status), so a session given those tools writes through
//! them when the configuration says `writable`. A `{brand}` root needs a brand that is a safe path
//! segment, or the session does not open.

use crate::capabilities::bindings::meter::MeterError;
use crate::capabilities::folder::FolderCapability;
use crate::capabilities::meter::{AllowanceError, RunMeter};
use crate::policy::{self, Catalog, Profile, Role};
use crate::runtime::LoadedComponent;
use crate::store::LedgerStore;
use parking_lot::Mutex;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The tool whose presence in a session's allowlist lets it read folders.
const PROJECT_READ: &str = "mcp__project__project_read";
/// ... and write them.
const PROJECT_WRITE: &str = "mcp__project__project_write";

/// What the operator configured for one connector's holdings in a session.
#[derive(Clone, Copy)]
pub struct HoldingsConfig<'a> {
    /// Its folders, by name.
    pub folders: &'a BTreeMap<String, FolderConfig>,
    /// Person chat's allowance for it, if it bills.
    pub person_allowance: Option<&'a PersonAllowance>,
}

/// What one session may still spend through one connector.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BudgetLine {
    pub connector: String,
    /// `credits` or `micro-usd`.
    pub unit: String,
    /// What this run may still reserve.
    pub run_left: u64,
    pub per_run: u64,
    /// What the brand's day has left for this connector (charges recorded
    /// today; `None` when the ledger cannot be read).
    pub day_left: Option<u64>,
    pub per_day: u64,
}

/// One session's meters and folders.
pub struct Holdings {
    session: String,
    brand: String,
    /// The allowance per connector this session may spend under.
    allowances: BTreeMap<String, policy::Allowance>,
    read_folders: bool,
    write_folders: bool,
    meters: Mutex<BTreeMap<String, Arc<RunMeter>>>,
    folders: Mutex<BTreeMap<String, Vec<Arc<FolderCapability>>>>,
    ended: AtomicBool,
    /// The session is the fleet's: dropped here (this host lets go of it,
    /// or stops), its runs go on for whichever host serves it next.
    outlives_host: bool,
}

impl Holdings {
    /// Decides what a session of `role` may hold. `allowlist` is the
    /// session's whole allowlist; `served` the connectors it is served.
    /// Refuses a brand that cannot name a per-brand folder it would hold.
    #[allow(clippy::too_many_arguments)]
    pub fn decide<'c>(
        session: &str,
        brand: &str,
        role: Role,
        profile: Option<&Profile>,
        allowlist: &[String],
        served: &[&LoadedComponent],
        config: &dyn Fn(&str) -> Option<HoldingsConfig<'c>>,
        catalog: &Catalog,
    ) -> Result<Holdings, String> {
        let read_folders = allowlist.iter().any(|t| t == PROJECT_READ);
        let write_folders = read_folders && allowlist.iter().any(|t| t == PROJECT_WRITE);
        let mut allowances = BTreeMap::new();
        for component in served {
            let name = component.name();
            let Some(settings) = config(name) else {
                continue;
            };
            if read_folders && component.imports_interface("folder") {
                for (folder, f) in settings.folders {
                    if f.per_brand() {
                        safe_segment(brand).map_err(|e| {
                            format!("connector `{name}`, folder `{folder}`: brand {e}")
                        })?;
                    }
                }
            }
            if !component.imports_interface("meter") {
                continue;
            }
            if let Some(allowance) = allowance_for(role, profile, name, &settings) {
                let billing = catalog.connector(name).and_then(|c| c.billing);
                if billing.is_some_and(|unit| unit != allowance.unit()) {
                    // Validation keeps grants in the connector's unit; a
                    // person allowance in another unit is the operator's slip.
                    tracing::error!(
                        connector = name,
                        "the allowance is not in the connector's billing unit; no meter"
                    );
                    continue;
                }
                allowances.insert(name.to_string(), allowance);
            }
        }
        Ok(Holdings {
            session: session.to_string(),
            brand: brand.to_string(),
            allowances,
            read_folders,
            write_folders,
            meters: Mutex::new(BTreeMap::new()),
            folders: Mutex::new(BTreeMap::new()),
            ended: AtomicBool::new(false),
            outlives_host: false,
        })
    }

    /// Whether this session holds folders, and may write them.
    pub fn folder_rights(&self) -> (bool, bool) {
        (self.read_folders, self.write_folders)
    }

    /// The run's meter for `connector`, started in `store` at the first
    /// call. `None`: no allowance (or the session ended), so no handle.
    pub fn meter(&self, store: &Arc<dyn LedgerStore>, connector: &str) -> Option<Arc<RunMeter>> {
        let allowance = self.allowances.get(connector)?;
        let unit = allowance.meter_unit();
        let mut meters = self.meters.lock();
        if self.ended.load(Ordering::SeqCst) {
            return None;
        }
        if let Some(meter) = meters.get(connector) {
            return Some(meter.clone());
        }
        let metered = match allowance.metered() {
            Ok(m) => m,
            Err(e) => {
                return Some(RunMeter::refusing(
                    unit,
                    MeterError::Denied(format!("the allowance cannot be metered: {e}")),
                ));
            }
        };
        if metered.per_run == 0 {
            return Some(RunMeter::refusing(unit, MeterError::RunExhausted(0)));
        }
        let run_id = format!("{}:{connector}", self.session);
        // Held under the lock: two first calls start one run, not two.
        match RunMeter::start_in_store(
            store.clone(),
            &run_id,
            &self.brand,
            connector,
            &crate::dates::utc_day(std::time::SystemTime::now()),
            unit,
            metered,
        ) {
            Ok(meter) => {
                meters.insert(connector.to_string(), meter.clone());
                Some(meter)
            }
            // The session's run ended (on another host, or with it):
            // kept, so every later call is refused alike.
            Err(AllowanceError::RunEnded) => {
                let meter = RunMeter::refusing(
                    unit,
                    MeterError::Denied(
                        "this session's run has ended: it spends no more".to_string(),
                    ),
                );
                meters.insert(connector.to_string(), meter.clone());
                Some(meter)
            }
            // Not kept: a later call tries again, once runs have ended.
            Err(AllowanceError::DayExhausted {
                committed, per_day, ..
            }) => Some(RunMeter::refusing(
                unit,
                MeterError::DayExhausted(per_day.saturating_sub(committed)),
            )),
            Err(e) => {
                tracing::error!(run = %run_id, error = %e, "cannot start a run");
                Some(RunMeter::refusing(
                    unit,
                    MeterError::Denied("the allowance ledger is unavailable".to_string()),
                ))
            }
        }
    }

    /// Whether the session may spend through any connector.
    pub fn has_allowances(&self) -> bool {
        !self.allowances.is_empty()
    }

    /// What this session may still spend, per billing connector it holds an
    /// allowance for: its own run's figure (from its meter once the run has
    /// started) and its brand's day for that connector. Never another
    /// run's or brand's figures.
    pub fn budget(&self, store: &Arc<dyn LedgerStore>) -> Vec<BudgetLine> {
        let day = crate::dates::utc_day(std::time::SystemTime::now());
        let meters = self.meters.lock();
        self.allowances
            .iter()
            .filter_map(|(connector, allowance)| {
                let metered = allowance.metered().ok()?;
                let run_left = match meters.get(connector) {
                    Some(meter) => meter.remaining(),
                    None => metered.per_run,
                };
                let spent_today =
                    crate::store::block(store.spent_on_day(&self.brand, connector, &day)).ok();
                Some(BudgetLine {
                    connector: connector.clone(),
                    unit: allowance.meter_unit().to_string(),
                    run_left,
                    per_run: metered.per_run,
                    day_left: spent_today.map(|spent| metered.per_day.saturating_sub(spent)),
                    per_day: metered.per_day,
                })
            })
            .collect()
    }

    /// The folders `connector` may open in this session, opened (and their
    /// roots created, 0700) at its first call.
    pub fn folders(
        &self,
        connector: &str,
        settings: HoldingsConfig<'_>,
    ) -> Vec<Arc<FolderCapability>> {
        if !self.read_folders || settings.folders.is_empty() {
            return Vec::new();
        }
        let mut cache = self.folders.lock();
        if let Some(open) = cache.get(connector) {
            return open.clone();
        }
        // The content writer's and the SEO brief tools' own writes go only
        // where those tools put them (drafts, briefs; never an APPROVED
        // status), so a session given the tools writes through them even
        // without `project_write` (seed 000: the Content writer saves drafts
        // but cannot edit its voice guide's status directly).
        let tools_write = matches!(
            policy::Platform::from_server_name(connector),
            Some(policy::Platform::Writer | policy::Platform::Seo)
        );
        let mut open = Vec::new();
        for (name, f) in settings.folders {
            match open_folder(
                name,
                &self.brand,
                f,
                (self.write_folders || tools_write) && f.writable,
            ) {
                Ok(folder) => open.push(folder),
                Err(e) => {
                    tracing::error!(connector, folder = %name, error = %e, "cannot open the folder; not granted")
                }
            }
        }
        cache.insert(connector.to_string(), open.clone());
        open
    }

    /// The session is the fleet's (when `shared`): its runs end when the
    /// session ends, never because this host dropped it.
    pub fn outliving_this_host(mut self, shared: bool) -> Holdings {
        self.outlives_host = shared;
        self
    }

    /// Ends every run this session started; no meter is handed out after.
    pub fn end(&self) {
        let meters = {
            let mut meters = self.meters.lock();
            self.ended.store(true, Ordering::SeqCst);
            std::mem::take(&mut *meters)
        };
        for meter in meters.values() {
            meter.end();
        }
    }
}

impl Drop for Holdings {
    fn drop(&mut self) {
        if !self.outlives_host {
            self.end();
        }
    }
}

/// The allowance `role` spends through `connector` under.
fn allowance_for(
    role: Role,
    profile: Option<&Profile>,
    connector: &str,
    settings: &HoldingsConfig<'_>,
) -> Option<policy::Allowance> {
    match role {
        Role::SpecialistRun { .. } | Role::GoalAgentStep => {
            let grant = &profile?.grant;
            grant
                .names_connector(connector)
                .then(|| grant.allowances.get(connector).copied())
                .flatten()
        }
        Role::PersonChat => settings.person_allowance.and_then(|a| a.allowance().ok()),
        // A plain coworker has no grant; an inbound turn, a reviewer and a
        // read-only route spend nothing.
        _ => None,
    }
}

fn open_folder(
    name: &str,
    brand: &str,
    f: &FolderConfig,
    writable: bool,
) -> Result<Arc<FolderCapability>, String> {
    let root = f.root_for(brand)?;
    if !root.exists() {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&root)
            .map_err(|e| format!("cannot create {}: {e}", root.display()))?;
    }
    FolderCapability::open(name, &root, writable)
        .map_err(|e| format!("cannot open {}: {e}", root.display()))
}

/// An operator's allowance for person chat: a pair of credit figures or a
/// pair of dollar figures, as a grant's (`policy::Allowance`) and converted
/// by the same `metered`; and optionally the per-call threshold above which
/// a reservation asks a person, in the same unit.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PersonAllowance {
    /// Credits one person-chat run may spend (with `per_day_credits`).
    #[serde(default)]
    pub per_run_credits: Option<u64>,
    /// Credits all of a brand's person-chat runs may spend in one day.
    #[serde(default)]
    pub per_day_credits: Option<u64>,
    /// Dollars one person-chat run may spend (with `per_day_usd`).
    #[serde(default)]
    pub per_run_usd: Option<f64>,
    /// Dollars all of a brand's person-chat runs may spend in one day.
    #[serde(default)]
    pub per_day_usd: Option<f64>,
    /// A reservation of more credits than this asks a person; at or below
    /// it, the call runs. Absent: every billed call asks before it runs.
    #[serde(default)]
    pub per_call_threshold_credits: Option<u64>,
    /// ... in dollars, for an allowance in dollars.
    #[serde(default)]
    pub per_call_threshold_usd: Option<f64>,
}

impl PersonAllowance {
    /// The per-call threshold in the meter's unit (credits, or dollars as
    /// micro-dollars by the same conversion as the allowance), or `None`
    /// when none is configured; refuses a threshold in the other unit than
    /// the allowance's, or a figure the meter cannot hold.
    pub fn per_call_threshold(&self) -> Result<Option<u64>, String> {
        let credits = self.per_run_credits.is_some() || self.per_day_credits.is_some();
        match (self.per_call_threshold_credits, self.per_call_threshold_usd) {
            (None, None) => Ok(None),
            (Some(_), Some(_)) => Err(
                "give per_call_threshold_credits or per_call_threshold_usd, not both".into(),
            ),
            (Some(_), None) if !credits => Err(
                "per_call_threshold_credits is in credits but the allowance is in dollars: give per_call_threshold_usd".into(),
            ),
            (None, Some(_)) if credits => Err(
                "per_call_threshold_usd is in dollars but the allowance is in credits: give per_call_threshold_credits".into(),
            ),
            (Some(credits), None) if credits > crate::policy::MAX_UNITS => Err(format!(
                "per_call_threshold_credits is above the largest figure the ledger holds ({})",
                crate::policy::MAX_UNITS
            )),
            (Some(credits), None) => Ok(Some(credits)),
            (None, Some(usd)) => crate::policy::profile::micro_usd("per_call_threshold_usd", usd)
                .map(Some)
                .map_err(|e| e.to_string()),
        }
    }

    /// The grant-side allowance it states, checked as a meter would count it
    /// (per-run above zero, at most per-day), with its threshold checked too.
    pub fn allowance(&self) -> Result<crate::policy::Allowance, String> {
        self.per_call_threshold()?;
        use crate::policy::Allowance;
        let allowance = match (
            self.per_run_credits,
            self.per_day_credits,
            self.per_run_usd,
            self.per_day_usd,
        ) {
            (Some(per_run_credits), Some(per_day_credits), None, None) => Allowance::Credits {
                per_run_credits,
                per_day_credits,
            },
            (None, None, Some(per_run_usd), Some(per_day_usd)) => Allowance::Usd {
                per_run_usd,
                per_day_usd,
            },
            _ => return Err(
                "give either per_run_credits and per_day_credits, or per_run_usd and per_day_usd"
                    .into(),
            ),
        };
        let metered = allowance.metered().map_err(|e| e.to_string())?;
        metered.validate().map_err(|e| e.to_string())?;
        Ok(allowance)
    }
}

/// One folder a connector's `folder` handle may open.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FolderConfig {
    /// Absolute path of its root; `{brand}` stands for the session's brand
    /// (which must then be a safe path segment). Created, 0700, if missing.
    pub root: String,
    /// Whether it may be written at all; a session writes only if its role
    /// may also write the project folder.
    #[serde(default)]
    pub writable: bool,
}

/// The placeholder a folder root may carry.
pub(crate) const BRAND_PLACEHOLDER: &str = "{brand}";

impl FolderConfig {
    /// Whether the root depends on the brand.
    pub(crate) fn per_brand(&self) -> bool {
        self.root.contains(BRAND_PLACEHOLDER)
    }

    /// The root for `brand`, or why `brand` cannot name a folder.
    pub(crate) fn root_for(&self, brand: &str) -> Result<PathBuf, String> {
        if self.per_brand() {
            safe_segment(brand)?;
        }
        Ok(PathBuf::from(self.root.replace(BRAND_PLACEHOLDER, brand)))
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        let rest = self.root.replace(BRAND_PLACEHOLDER, "");
        if rest.contains('{') || rest.contains('}') {
            return Err(format!(
                "`{}`: the only placeholder is {BRAND_PLACEHOLDER}",
                self.root
            ));
        }
        let path = Path::new(&self.root);
        if !path.is_absolute() {
            return Err(format!("`{}` must be an absolute path", self.root));
        }
        if path
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(format!("`{}` may not contain `..`", self.root));
        }
        if self.root.contains('\0') {
            return Err("a root may not contain NUL".into());
        }
        Ok(())
    }
}

/// Refuses what cannot be one path segment: 1 to 64 ASCII letters, digits,
/// `-`, `_` and `.`, starting with a letter or digit (so never `.`, `..`,
/// a hidden name, a separator or an absolute path).
pub(crate) fn safe_segment(text: &str) -> Result<(), String> {
    let ok = !text.is_empty()
        && text.len() <= 64
        && text.as_bytes()[0].is_ascii_alphanumeric()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` cannot name a folder: it must be 1 to 64 of A-Z, a-z, 0-9, `-`, `_`, `.`, starting with a letter or digit",
            text.escape_debug()
        ))
    }
}

#[cfg(test)]
mod tests {
    use crate::serve::{ConfigFileError, ServeConfig};

    fn parse(allowance: &str) -> Result<ServeConfig, ConfigFileError> {
        ServeConfig::parse(&format!(
            "[connectors.x]\ncomponent = \"x.wasm\"\norigin = \"https://x\"\n[connectors.x.person_allowance]\n{allowance}"
        ))
    }

    fn threshold(allowance: &str) -> Option<u64> {
        parse(allowance).unwrap().connectors["x"]
            .person_allowance
            .as_ref()
            .unwrap()
            .per_call_threshold()
            .unwrap()
    }

    /// The error `serve` refuses to start with, which names the key.
    fn refusal(allowance: &str) -> String {
        match parse(allowance) {
            Err(ConfigFileError::Invalid(m)) => m,
            other => panic!("refused: {allowance}\n{other:?}"),
        }
    }

    #[test]
    fn a_per_call_threshold_is_in_the_allowances_unit() {
        let credits = "per_run_credits = 25\nper_day_credits = 100\n";
        let usd = "per_run_usd = 1.0\nper_day_usd = 3.0\n";
        assert_eq!(threshold(credits), None, "none unless configured");
        assert_eq!(
            threshold(&format!("{credits}per_call_threshold_credits = 5\n")),
            Some(5)
        );
        assert_eq!(
            threshold(&format!("{credits}per_call_threshold_credits = 0\n")),
            Some(0),
            "zero: every reservation asks"
        );
        assert_eq!(
            threshold(&format!("{usd}per_call_threshold_usd = 0.005\n")),
            Some(5_000),
            "dollars as micro-dollars, as the allowance"
        );
        for (bad, names) in [
            (
                format!("{credits}per_call_threshold_usd = 0.5\n"),
                "per_call_threshold_usd",
            ),
            (
                format!("{usd}per_call_threshold_credits = 5\n"),
                "per_call_threshold_credits",
            ),
            (
                format!("{usd}per_call_threshold_usd = 0.0000001\n"),
                "per_call_threshold_usd",
            ),
            (
                format!("{usd}per_call_threshold_usd = -1.0\n"),
                "per_call_threshold_usd",
            ),
            (
                format!("{credits}per_call_threshold_credits = 5\nper_call_threshold_usd = 1.0\n"),
                "per_call_threshold_credits or per_call_threshold_usd",
            ),
        ] {
            let m = refusal(&bad);
            assert!(
                m.contains("connectors.x.person_allowance") && m.contains(names),
                "{bad}: {m}"
            );
        }
    }
}
