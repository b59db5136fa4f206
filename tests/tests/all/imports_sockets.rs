//! The `imports-sockets` test guest imports sockets: refused at load.

use crate::hostile::assert_refused_naming;
use scout_tests::components;

#[test]
fn a_guest_importing_wasi_sockets_is_refused_at_load_naming_every_import() {
    assert_refused_naming(
        components::IMPORTS_SOCKETS,
        &[
            "wasi:sockets/tcp@",
            "wasi:sockets/udp@",
            "wasi:sockets/ip-name-lookup@",
            "wasi:sockets/network@",
        ],
    );
}
