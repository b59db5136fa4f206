//! `scout-host build` and `new` for a connector in Python (componentize-py).
//! Not built yet: engineer P replaces this placeholder.

use super::build::BuildArgs;
use super::new::{Names, NewArgs};
use anyhow::Result;
use std::path::Path;

/// Builds the Python connector in `args.dir`.
pub fn build(_args: &BuildArgs) -> Result<i32> {
    anyhow::bail!(
        "building a connector in Python is not available in this version of scout-host yet"
    )
}

/// Scaffolds a Python connector named `names` into `dir`.
pub fn scaffold(_args: &NewArgs, _names: &Names, _dir: &Path) -> Result<i32> {
    anyhow::bail!(
        "scaffolding a connector in Python is not available in this version of scout-host yet"
    )
}
