//! `cargo xtask new-plugin NAME`: a plugin crate outside the workspace, depending on
//! `plugin-api` only, that builds and loads as it is. The template itself lives in
//! `dsh-plugin-template`, which the `plugin_new` tool writes from too.

use std::path::{Path, PathBuf};

use anyhow::Result;

/// Writes the crate into `dir`; refuses to overwrite an existing crate.
pub(crate) fn create(root: &Path, name: &str, dir: &Path) -> Result<PathBuf> {
    dsh_plugin_template::create(&root.join("plugin-api"), name, dir)?;
    Ok(std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()))
}
