//! The `imports-filesystem` test guest imports the filesystem and the wall clock: refused at load.

use crate::hostile::assert_refused_naming;
use scout_tests::components;

#[test]
fn a_guest_importing_wasi_filesystem_is_refused_at_load_naming_every_import() {
    assert_refused_naming(
        components::IMPORTS_FILESYSTEM,
        &[
            "wasi:filesystem/types@",
            "wasi:filesystem/preopens@",
            "wasi:clocks/wall-clock@",
        ],
    );
}
