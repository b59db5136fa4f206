//! The data of one call's store: the handles granted to it, the table of
//! guest-visible resources every capability shares, what the call's
//! capabilities recorded (logs, HTTP exchanges), and the runtime's limits.
//! It lives with the capabilities that implement their WIT interfaces for
//! it, so the runtime only builds and reads it and no import runs upward.

use super::Capabilities;
use super::folder::FolderCapability;
use super::http::{HttpCapability, HttpExchange};
use super::log::GuestLog;
use super::meter::RunMeter;
use super::routes::RouteSet;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::ResourceLimiter;
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Resource handles (clients, folders, reservations) one call may hold at once.
pub(crate) const MAX_HANDLES: usize = 64;

/// What the `http` interface of one call holds: the clients granted, the
/// tool's routes every request is matched against, and the exchanges made.
pub(crate) struct HttpCtx {
    /// The client bound to the connector's own origin, if granted.
    pub(crate) http: Option<Arc<HttpCapability>>,
    /// Further clients by destination name.
    pub(crate) destinations: BTreeMap<String, Arc<HttpCapability>>,
    /// Whether a `(graphql)` route may carry a mutation in this call.
    pub(crate) graphql_mutations: bool,
    /// The routes of the tool being called.
    pub(crate) routes: Arc<RouteSet>,
    /// The tool being called (wire name), for refusals.
    pub(crate) tool: String,
    /// The requests made, as the trace records them.
    pub(crate) exchanges: Vec<HttpExchange>,
    /// Handles refused for want of a credential, and why (by destination).
    pub(crate) refused: BTreeMap<Option<String>, String>,
    /// What obtaining and renewing credentials did, for the trace.
    pub(crate) credential_events: Vec<serde_json::Value>,
    /// Handles renewed after a 401 in this call (once each).
    pub(crate) renewed: std::collections::BTreeSet<Option<String>>,
    /// Asked before each request is sent (see [`Capabilities::fence`]).
    pub(crate) fence: Option<super::Fence>,
}

/// What the `meter` interface of one call holds: the run's meter, if any;
/// the per-call threshold above which a reservation asks a person; and the
/// call's deadline, paused while a person decides.
pub(crate) struct MeterCtx {
    pub(crate) meter: Option<Arc<RunMeter>>,
    pub(crate) spend: Option<super::meter::SpendGate>,
    /// What this call reserved under the threshold without asking.
    pub(crate) reserved_unasked: u64,
    pub(crate) deadline: Arc<CallDeadline>,
}

/// A call's wall-clock deadline, host calls included, except the time a
/// person spends deciding on one of its reservations (bounded by the
/// approval timeout): the deadline is paused meanwhile and moves on by as
/// much when the wait ends.
pub(crate) struct CallDeadline {
    state: parking_lot::Mutex<DeadlineState>,
    changed: tokio::sync::Notify,
}

struct DeadlineState {
    at: Instant,
    paused_since: Option<Instant>,
}

impl CallDeadline {
    pub(crate) fn new(at: Instant) -> Arc<CallDeadline> {
        Arc::new(CallDeadline {
            state: parking_lot::Mutex::new(DeadlineState {
                at,
                paused_since: None,
            }),
            changed: tokio::sync::Notify::new(),
        })
    }

    /// When the call's time runs out; `None` while paused.
    pub(crate) fn at(&self) -> Option<Instant> {
        let state = self.state.lock();
        state.paused_since.is_none().then_some(state.at)
    }

    /// Whether the call's time ran out (never while paused).
    pub(crate) fn passed(&self) -> bool {
        self.at().is_some_and(|at| Instant::now() >= at)
    }

    /// Resolves when the deadline is paused or moved.
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Pauses the deadline until the guard is dropped.
    pub(crate) fn pause(self: &Arc<Self>) -> DeadlinePaused {
        {
            let mut state = self.state.lock();
            if state.paused_since.is_none() {
                state.paused_since = Some(Instant::now());
            }
        }
        self.changed.notify_waiters();
        DeadlinePaused(self.clone())
    }
}

/// The deadline paused; dropping it moves the deadline on by the pause.
pub(crate) struct DeadlinePaused(Arc<CallDeadline>);

impl Drop for DeadlinePaused {
    fn drop(&mut self) {
        {
            let mut state = self.0.state.lock();
            if let Some(since) = state.paused_since.take() {
                state.at += since.elapsed();
            }
        }
        self.0.changed.notify_waiters();
    }
}

/// What the `folder` interface of one call holds: the folders granted.
pub(crate) struct FolderCtx {
    pub(crate) folders: Vec<Arc<FolderCapability>>,
}

/// What the `log` interface of one call holds: the lines kept, how many
/// were dropped, and the handles whose secrets are scrubbed from them.
pub(crate) struct LogCtx {
    pub(crate) lines: Vec<GuestLog>,
    pub(crate) dropped: u64,
    pub(crate) scrub: Capabilities,
}

/// Store data of one call: each capability's own context, the one table
/// of guest-visible resources they (and WASI's streams) share, and the
/// runtime's limits. A capability's host code sees only its own context
/// and the handles ([`View`]).
pub struct CallState {
    pub(crate) wasi: WasiCtx,
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
        wasi: WasiCtx,
        table: ResourceTable,
        limiter: CallLimiter,
        caps: &Capabilities,
        tool: String,
        routes: Arc<RouteSet>,
        deadline: Arc<CallDeadline>,
    ) -> CallState {
        CallState {
            wasi,
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
        View {
            ctx,
            handles: Handles {
                table,
                count: handles,
            },
        }
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

/// One capability's view of a call: its own context, and the handles.
pub(crate) struct View<'a, C> {
    pub(crate) ctx: &'a mut C,
    pub(crate) handles: Handles<'a>,
}

/// The guest-visible resources of a call, capped at [`MAX_HANDLES`].
pub(crate) struct Handles<'a> {
    table: &'a mut ResourceTable,
    count: &'a mut usize,
}

impl Handles<'_> {
    /// Adds a guest-visible handle, or `None` past [`MAX_HANDLES`].
    pub(crate) fn push<T: Send + 'static>(
        &mut self,
        value: T,
    ) -> wasmtime::Result<Option<Resource<T>>> {
        if *self.count >= MAX_HANDLES {
            return Ok(None);
        }
        *self.count += 1;
        Ok(Some(self.table.push(value)?))
    }

    /// Whether one more handle may be added.
    pub(crate) fn has_room(&self) -> bool {
        *self.count < MAX_HANDLES
    }

    /// The value behind a handle the guest holds.
    pub(crate) fn get<T: 'static>(&self, handle: &Resource<T>) -> wasmtime::Result<&T> {
        Ok(self.table.get(handle)?)
    }

    /// ... mutably.
    pub(crate) fn get_mut<T: 'static>(&mut self, handle: &Resource<T>) -> wasmtime::Result<&mut T> {
        Ok(self.table.get_mut(handle)?)
    }

    /// Removes a handle the guest dropped.
    pub(crate) fn drop<T: 'static>(&mut self, handle: Resource<T>) -> wasmtime::Result<T> {
        let value = self.table.delete(handle)?;
        *self.count = self.count.saturating_sub(1);
        Ok(value)
    }
}

/// The `HasData` of a capability's view: `add_to_linker` projects the
/// store data to it, so each capability's host code sees only its part.
pub(crate) struct HasView<C>(std::marker::PhantomData<C>);

impl<C: 'static> HasData for HasView<C> {
    type Data<'a> = View<'a, C>;
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
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
