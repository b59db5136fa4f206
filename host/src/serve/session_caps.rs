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
//! chat's "calls above a threshold ask a person" is not built here: the
//! boundary asks a person for every billing call in person chat.
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

use super::config::{ConnectorConfig, ServeConfig, safe_segment};
use crate::capabilities::bindings::meter::MeterError;
use crate::capabilities::folder::FolderCapability;
use crate::capabilities::meter::{AllowanceError, RunMeter};
use crate::policy::{self, Catalog, Profile, Role};
use crate::runtime::LoadedComponent;
use crate::store::Store;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The tool whose presence in a session's allowlist lets it read folders.
const PROJECT_READ: &str = "mcp__project__project_read";
/// ... and write them.
const PROJECT_WRITE: &str = "mcp__project__project_write";

/// One session's meters and folders.
pub struct SessionCaps {
    session: String,
    brand: String,
    /// The allowance per connector this session may spend under.
    allowances: BTreeMap<String, policy::Allowance>,
    read_folders: bool,
    write_folders: bool,
    meters: Mutex<BTreeMap<String, Arc<RunMeter>>>,
    folders: Mutex<BTreeMap<String, Vec<Arc<FolderCapability>>>>,
    ended: AtomicBool,
}

impl SessionCaps {
    /// Decides what a session of `role` may hold. `allowlist` is the
    /// session's whole allowlist; `served` the connectors it is served.
    /// Refuses a brand that cannot name a per-brand folder it would hold.
    #[allow(clippy::too_many_arguments)]
    pub fn decide(
        session: &str,
        brand: &str,
        role: Role,
        profile: Option<&Profile>,
        allowlist: &[String],
        served: &[&LoadedComponent],
        config: &ServeConfig,
        catalog: &Catalog,
    ) -> Result<SessionCaps, String> {
        let read_folders = allowlist.iter().any(|t| t == PROJECT_READ);
        let write_folders = read_folders && allowlist.iter().any(|t| t == PROJECT_WRITE);
        let mut allowances = BTreeMap::new();
        for component in served {
            let name = component.name();
            let Some(settings) = config.connectors.get(name) else {
                continue;
            };
            if read_folders && component.imports_interface("folder") {
                for (folder, f) in &settings.folders {
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
            if let Some(allowance) = allowance_for(role, profile, name, settings) {
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
        Ok(SessionCaps {
            session: session.to_string(),
            brand: brand.to_string(),
            allowances,
            read_folders,
            write_folders,
            meters: Mutex::new(BTreeMap::new()),
            folders: Mutex::new(BTreeMap::new()),
            ended: AtomicBool::new(false),
        })
    }

    /// Whether this session holds folders, and may write them.
    pub fn folder_rights(&self) -> (bool, bool) {
        (self.read_folders, self.write_folders)
    }

    /// The run's meter for `connector`, started in `store` at the first
    /// call. `None`: no allowance (or the session ended), so no handle.
    pub fn meter(&self, store: &Arc<dyn Store>, connector: &str) -> Option<Arc<RunMeter>> {
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

    /// The folders `connector` may open in this session, opened (and their
    /// roots created, 0700) at its first call.
    pub fn folders(
        &self,
        connector: &str,
        settings: &ConnectorConfig,
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
        for (name, f) in &settings.folders {
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

impl Drop for SessionCaps {
    fn drop(&mut self) {
        self.end();
    }
}

/// The allowance `role` spends through `connector` under.
fn allowance_for(
    role: Role,
    profile: Option<&Profile>,
    connector: &str,
    settings: &ConnectorConfig,
) -> Option<policy::Allowance> {
    match role {
        Role::SpecialistRun { .. } | Role::GoalAgentStep => {
            let grant = &profile?.grant;
            grant
                .names_connector(connector)
                .then(|| grant.allowances.get(connector).copied())
                .flatten()
        }
        Role::PersonChat => settings
            .person_allowance
            .as_ref()
            .and_then(|a| a.allowance().ok()),
        // A plain coworker has no grant; an inbound turn, a reviewer and a
        // read-only route spend nothing.
        _ => None,
    }
}

fn open_folder(
    name: &str,
    brand: &str,
    f: &super::config::FolderConfig,
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
