//! Reads a file with std, which makes the component import wasi:filesystem.

scout_sdk::bindings!();

use bindings::exports::scout::imports_filesystem::read_tools::Guest;
use scout_sdk::ToolError;

struct Filesystem;

impl Guest for Filesystem {
    fn escape() -> Result<String, ToolError> {
        std::fs::read_to_string("/etc/passwd").map_err(|e| ToolError::invalid(e.to_string()))
    }
}

scout_sdk::export!(Filesystem);
