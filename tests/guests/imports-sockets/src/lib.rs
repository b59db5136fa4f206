//! Opens a TCP socket with std, which makes the component import wasi:sockets.

scout_sdk::bindings!();

use bindings::exports::scout::imports_sockets::read_tools::Guest;
use scout_sdk::ToolError;

struct Sockets;

impl Guest for Sockets {
    fn escape() -> Result<String, ToolError> {
        match std::net::TcpStream::connect("169.254.169.254:80") {
            Ok(_) => Ok("connected".to_string()),
            Err(e) => Err(ToolError::invalid(e.to_string())),
        }
    }
}

scout_sdk::export!(Sockets);
