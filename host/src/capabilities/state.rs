//! The data of one call's store: the handles granted to it, the table of
//! guest-visible resources every capability shares, what the call's
//! capabilities recorded (logs, HTTP exchanges), and the runtime's limits.
//! It lives with the capabilities that implement their WIT interfaces for
//! it, so the runtime only builds and reads it and no import runs upward.

use super::Capabilities;
use super::http::HttpExchange;
use super::log::GuestLog;
use super::routes::RouteSet;
use std::sync::Arc;
use wasmtime::ResourceLimiter;
use wasmtime::component::{HasData, Resource, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Resource handles (clients, folders, reservations) one call may hold at once.
pub(crate) const MAX_HANDLES: usize = 64;

/// Store data of one call.
pub struct CallState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: CallLimiter,
    pub(crate) caps: Capabilities,
    pub(crate) handles: usize,
    pub(crate) logs: Vec<GuestLog>,
    pub(crate) logs_dropped: u64,
    pub(crate) http_log: Vec<HttpExchange>,
    /// The routes of the tool being called: every request is matched against them.
    pub(crate) routes: Arc<RouteSet>,
    /// The tool being called (wire name), for refusals.
    pub(crate) tool: String,
    pub(crate) deadline_hit: bool,
}

impl CallState {
    /// Adds a guest-visible handle, or `None` past [`MAX_HANDLES`].
    pub(crate) fn push_handle<T: Send + 'static>(
        &mut self,
        value: T,
    ) -> wasmtime::Result<Option<Resource<T>>> {
        if self.handles >= MAX_HANDLES {
            return Ok(None);
        }
        self.handles += 1;
        Ok(Some(self.table.push(value)?))
    }

    /// Whether one more handle may be added.
    pub(crate) fn has_handle_room(&self) -> bool {
        self.handles < MAX_HANDLES
    }

    /// Removes a handle the guest dropped.
    pub(crate) fn drop_handle<T: 'static>(&mut self, handle: Resource<T>) -> wasmtime::Result<T> {
        let value = self.table.delete(handle)?;
        self.handles = self.handles.saturating_sub(1);
        Ok(value)
    }
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

// `types` has no functions; its host trait is empty.
impl super::bindings::types::Host for CallState {}
