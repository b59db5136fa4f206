//! Host-side bindings of the `scout:connector` contract.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "scout:connector/imports",
    imports: {
        "scout:connector/http.[method]client.send": async | trappable,
        default: trappable,
    },
    with: {
        "scout:connector/http.client": crate::capabilities::http::ClientHandle,
        "scout:connector/meter.reservation": crate::capabilities::meter::ReservationHandle,
        "scout:connector/folder.dir": crate::capabilities::folder::DirHandle,
    },
});

pub use scout::connector::{folder, http, log, meter, types};
