//! Logging into the host's trace. The host caps size and rate.

use crate::bindings::scout::connector::log::{Level, log};

/// Logs at debug level.
pub fn debug(message: &str) {
    log(Level::Debug, message);
}
/// Logs at info level.
pub fn info(message: &str) {
    log(Level::Info, message);
}
/// Logs at warn level.
pub fn warn(message: &str) {
    log(Level::Warn, message);
}
/// Logs at error level.
pub fn error(message: &str) {
    log(Level::Error, message);
}
