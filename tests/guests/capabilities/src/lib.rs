//! Exercises the `meter` and `folder` capabilities from inside a guest.

scout_sdk::bindings!();

use bindings::exports::scout::capabilities::{read_tools, write_tools};
use scout_sdk::{Http, Method, ToolError, folder, meter};

struct Capabilities;

impl read_tools::Guest for Capabilities {
    fn spend(estimate: u64, actual: Option<u64>, path: Option<String>) -> Result<u64, ToolError> {
        let reservation = meter::reserve(estimate)?;
        if let Some(path) = path {
            Http::connect()?.send(Method::Get, &path, &[], None)?;
        }
        match actual {
            Some(actual) => reservation.settle(actual)?,
            None => drop(reservation),
        }
        Ok(meter::remaining())
    }

    fn spend_in_parts(estimates: Vec<u64>) -> Result<u64, ToolError> {
        for estimate in estimates {
            meter::reserve(estimate)?.settle(estimate)?;
        }
        Ok(meter::remaining())
    }

    fn spend_then_crash(estimate: u64) -> Result<u64, ToolError> {
        let _reservation = meter::reserve(estimate)?;
        panic!("crashed while holding a reservation")
    }

    fn read_text(name: String, path: String) -> Result<String, ToolError> {
        let bytes = folder::open(&name)?.read(&path)?;
        String::from_utf8(bytes).map_err(|_| ToolError::invalid("not UTF-8"))
    }

    fn list_entries(name: String, path: String) -> Result<Vec<String>, ToolError> {
        Ok(folder::open(&name)?
            .entries(&path)?
            .into_iter()
            .map(|e| e.name)
            .collect())
    }
}

impl write_tools::Guest for Capabilities {
    fn write_text(name: String, path: String, text: String) -> Result<bool, ToolError> {
        folder::open(&name)?.write(&path, text.as_bytes())?;
        Ok(true)
    }
}

scout_sdk::export!(Capabilities);
