//! `cargo xtask new-plugin NAME`: a plugin crate outside the workspace, depending on
//! `plugin-api` only, that builds and loads as it is.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

const CARGO_TOML: &str = include_str!("../templates/plugin/Cargo.toml.tmpl");
const LIB_RS: &str = include_str!("../templates/plugin/src/lib.rs.tmpl");

/// `my-tool` -> `MyTool`.
fn type_name(name: &str) -> String {
    name.split(['-', '_'])
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
}

/// Writes the crate into `dir`; refuses to overwrite an existing crate.
pub(crate) fn create(root: &Path, name: &str, dir: &Path) -> Result<PathBuf> {
    if !valid_name(name) {
        bail!(
            "plugin name `{name}`: use lowercase letters, digits, `-` or `_`, starting with a letter"
        );
    }
    if dir.join("Cargo.toml").exists() {
        bail!("{} already holds a Cargo.toml", dir.display());
    }
    let api_path = root.join("plugin-api");
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{lib}}", &name.replace('-', "_"))
            .replace("{{type_name}}", &type_name(name))
            .replace("{{api_path}}", &api_path.display().to_string())
    };
    std::fs::create_dir_all(dir.join("src"))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::write(dir.join("Cargo.toml"), fill(CARGO_TOML))?;
    std::fs::write(dir.join("src/lib.rs"), fill(LIB_RS))?;
    Ok(std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_camel_case() {
        assert_eq!(type_name("my-tool"), "MyTool");
        assert_eq!(type_name("third_party_plugin"), "ThirdPartyPlugin");
    }

    #[test]
    fn names_are_checked() {
        assert!(valid_name("my-tool"));
        assert!(!valid_name("My Tool"));
        assert!(!valid_name("1tool"));
    }
}
