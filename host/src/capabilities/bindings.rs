//! Host-side bindings of the `scout:connector` contract.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "scout:connector/imports",
    imports: {
        "scout:connector/http.[method]client.send": async | trappable,
        // A reservation above person chat's per-call threshold waits for a person.
        "scout:connector/meter.reserve": async | trappable,
        default: trappable,
    },
    with: {
        "scout:connector/http.client": crate::capabilities::handles::ClientHandle,
        "scout:connector/meter.reservation": crate::capabilities::handles::ReservationHandle,
        "scout:connector/folder.dir": crate::capabilities::handles::DirHandle,
    },
});

pub use scout::connector::{folder, http, log, meter, types};
