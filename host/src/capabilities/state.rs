//! The data of one call's store: the handles granted to it, the table of
//! guest-visible resources every capability shares, what the call's
//! capabilities recorded (logs, HTTP exchanges), and the runtime's limits.
//! It lives with the capabilities that implement their WIT interfaces for
//! it, so the runtime only builds and reads it and no import runs upward.

use super::Capabilities;
pub(crate) use super::deadline::CallDeadline;
use super::folder::FolderCtx;
use super::http::HttpCtx;
use super::log::LogCtx;
use super::meter::MeterCtx;
use super::routes::RouteSet;
use super::view::{HasView, View};
use crate::output::CappedOutput;
use std::sync::Arc;
use wasmtime::ResourceLimiter;
use wasmtime::component::{HasData, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Store data of one call: each capability's own context, the one table
/// of guest-visible resources they (and WASI's streams) share, and the
/// runtime's limits. A capability's host code sees only its own context
/// and the handles ([`View`]).
pub struct CallState {
    /// WASI's context, built the first time the guest calls into WASI: a
    /// call that never writes to stdout or reads the clock builds none.
    wasi: Option<WasiCtx>,
    wasi_from: WasiFrom,
    pub(crate) table: ResourceTable,
    /// Handles the guest holds now (clients, folders, reservations).
    handles: usize,
    pub(crate) http: HttpCtx,
    pub(crate) meter: MeterCtx,
    pub(crate) folder: FolderCtx,
    pub(crate) log: LogCtx,
    pub(crate) limiter: CallLimiter,
    pub(crate) deadline: Arc<CallDeadline>,
    pub(crate) deadline_hit: bool,
}

impl CallState {
    /// The store data of a call of `tool` (its wire name and routes) with
    /// the handles `caps` grants, running until `deadline`.
    pub(crate) fn new(
        wasi_from: WasiFrom,
        table: ResourceTable,
        limiter: CallLimiter,
        caps: &Capabilities,
        tool: String,
        routes: Arc<RouteSet>,
        deadline: Arc<CallDeadline>,
    ) -> CallState {
        CallState {
            wasi: None,
            wasi_from,
            table,
            handles: 0,
            http: HttpCtx {
                http: caps.http.clone(),
                destinations: caps.destinations.clone(),
                graphql_mutations: caps.graphql_mutations,
                routes,
                tool,
                exchanges: Vec::new(),
                refused: caps.refused.clone(),
                credential_events: caps.credential_events.clone(),
                renewed: Default::default(),
                fence: caps.fence.clone(),
            },
            meter: MeterCtx {
                meter: caps.meter.clone(),
                spend: caps.spend.clone(),
                reserved_unasked: 0,
                deadline: deadline.clone(),
                reservations: Default::default(),
                next_reservation: 0,
            },
            folder: FolderCtx {
                folders: caps.folders.clone(),
            },
            log: LogCtx {
                lines: Vec::new(),
                dropped: 0,
                scrub: Capabilities {
                    http: caps.http.clone(),
                    destinations: caps.destinations.clone(),
                    ..Capabilities::default()
                },
            },
            limiter,
            deadline,
            deadline_hit: false,
        }
    }

    fn view<'a, C>(
        table: &'a mut ResourceTable,
        handles: &'a mut usize,
        ctx: &'a mut C,
    ) -> View<'a, C> {
        // Reborrowed as one lifetime: the three are disjoint fields.
        View::new(ctx, table, handles)
    }

    pub(crate) fn http(&mut self) -> View<'_, HttpCtx> {
        Self::view(&mut self.table, &mut self.handles, &mut self.http)
    }

    pub(crate) fn meter(&mut self) -> View<'_, MeterCtx> {
        Self::view(&mut self.table, &mut self.handles, &mut self.meter)
    }

    pub(crate) fn folder(&mut self) -> View<'_, FolderCtx> {
        Self::view(&mut self.table, &mut self.handles, &mut self.folder)
    }

    pub(crate) fn log(&mut self) -> View<'_, LogCtx> {
        Self::view(&mut self.table, &mut self.handles, &mut self.log)
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let from = &self.wasi_from;
        WasiCtxView {
            ctx: self.wasi.get_or_insert_with(|| from.build()),
            table: &mut self.table,
        }
    }
}

/// What a call's WASI context is made of: the sinks of its captured output
/// and the start of its clock.
pub(crate) struct WasiFrom {
    pub(crate) stdout: CappedOutput,
    pub(crate) stderr: CappedOutput,
    pub(crate) started: std::time::Instant,
}

impl WasiFrom {
    fn build(&self) -> WasiCtx {
        WasiCtx::builder()
            .stdout(self.stdout.clone())
            .stderr(self.stderr.clone())
            .monotonic_clock(CoarseClock(self.started))
            .wall_clock(CoarseWallClock)
            .build()
    }
}

/// The guest's monotonic clock: time since the call started, in whole
/// milliseconds, so a guest cannot use it as a fine timer.
struct CoarseClock(std::time::Instant);

impl wasmtime_wasi::HostMonotonicClock for CoarseClock {
    fn resolution(&self) -> u64 {
        1_000_000
    }
    fn now(&self) -> u64 {
        let nanos = self.0.elapsed().as_nanos() as u64;
        nanos - nanos % 1_000_000
    }
}

/// The guest's wall clock (an inert import, for other languages'
/// runtimes): the host's time at each call, in whole milliseconds, so it
/// is no finer a timer than [`CoarseClock`].
struct CoarseWallClock;

impl wasmtime_wasi::HostWallClock for CoarseWallClock {
    fn resolution(&self) -> std::time::Duration {
        std::time::Duration::from_millis(1)
    }
    fn now(&self) -> std::time::Duration {
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        std::time::Duration::from_millis(since_epoch.as_millis() as u64)
    }
}

pub(crate) struct CallLimiter {
    pub(crate) max_memory: usize,
    pub(crate) max_table: usize,
    pub(crate) memory_hit: bool,
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_memory {
            self.memory_hit = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= self.max_table)
    }

    fn instances(&self) -> usize {
        64
    }
    fn tables(&self) -> usize {
        64
    }
    fn memories(&self) -> usize {
        4
    }
}

pub(crate) struct HasTable;

impl HasData for HasTable {
    type Data<'a> = &'a mut ResourceTable;
}

pub(crate) struct HasSelf;

impl HasData for HasSelf {
    type Data<'a> = &'a mut CallState;
}

/// Defines the contract's interfaces in `linker`, each projected to its
/// capability's view of the call.
pub(crate) fn add_to_linker(
    linker: &mut wasmtime::component::Linker<CallState>,
) -> wasmtime::Result<()> {
    use super::bindings::{folder, http, log, meter, types};
    types::add_to_linker::<CallState, HasSelf>(linker, |s| s)?;
    http::add_to_linker::<CallState, HasView<HttpCtx>>(linker, CallState::http)?;
    meter::add_to_linker::<CallState, HasView<MeterCtx>>(linker, CallState::meter)?;
    folder::add_to_linker::<CallState, HasView<FolderCtx>>(linker, CallState::folder)?;
    log::add_to_linker::<CallState, HasView<LogCtx>>(linker, CallState::log)?;
    Ok(())
}

// `types` has no functions; its host trait is empty.
impl super::bindings::types::Host for CallState {}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime_wasi::{HostMonotonicClock, HostWallClock};

    #[test]
    fn a_guests_clocks_tick_in_whole_milliseconds() {
        let wall = CoarseWallClock;
        assert_eq!(wall.resolution(), std::time::Duration::from_millis(1));
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let now = wall.now();
        assert_eq!(now.subsec_nanos() % 1_000_000, 0, "{now:?}");
        // The host's time, not a value fixed at build: within the moment read.
        assert!(
            now + std::time::Duration::from_millis(1) >= before,
            "{now:?} {before:?}"
        );
        let monotonic = CoarseClock(std::time::Instant::now());
        std::thread::sleep(std::time::Duration::from_millis(3));
        assert_eq!(monotonic.now() % 1_000_000, 0);
        assert!(monotonic.now() >= 3_000_000);
    }
}
