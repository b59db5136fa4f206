//! The guest-visible resources of the `scout:connector` contract as the
//! host keeps them in a call's resource table: names of what the call was
//! granted, looked up in the call's context by the interface that made
//! them. They hold nothing of a capability, so the WIT bindings, which map
//! the contract's resources onto these, depend on no capability module.

/// The `client` resource: which of the call's HTTP handles it is.
pub struct ClientHandle {
    /// `None`: the connector's own origin; otherwise a named destination.
    pub(crate) destination: Option<String>,
}

/// The `dir` resource: which granted folder it is (its place among the
/// call's folders).
pub struct DirHandle {
    pub(crate) folder: usize,
}

/// The `reservation` resource: its number among the call's reservations,
/// which the `meter` context holds (and charges in full if the guest never
/// settles one).
pub struct ReservationHandle {
    pub(crate) id: u64,
}
