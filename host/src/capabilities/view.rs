//! One capability's view of a call: its own context and the call's table
//! of guest-visible handles, capped at [`MAX_HANDLES`]. Each interface's
//! host code works on this, never on the whole store data (as in
//! wasmtime-wasi), and needs nothing else of the call.

use wasmtime::component::{HasData, Resource, ResourceTable};

/// Resource handles (clients, folders, reservations) one call may hold at once.
pub(crate) const MAX_HANDLES: usize = 64;

/// One capability's view of a call: its own context, and the handles.
pub(crate) struct View<'a, C> {
    pub(crate) ctx: &'a mut C,
    pub(crate) handles: Handles<'a>,
}

impl<'a, C> View<'a, C> {
    /// `ctx`, with the call's `table` of handles, `count` of them held.
    pub(crate) fn new(ctx: &'a mut C, table: &'a mut ResourceTable, count: &'a mut usize) -> Self {
        View {
            ctx,
            handles: Handles { table, count },
        }
    }
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
