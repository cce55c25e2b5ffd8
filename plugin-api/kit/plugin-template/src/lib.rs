//! `dsh-plugin-template`: the one plugin crate template, written by `cargo xtask new-plugin`
//! and by the `plugin_new` tool of the `plugin-author` plugin. The crate it writes stands
//! outside any workspace (it has an empty `[workspace]` of its own), depends on `plugin-api` by
//! path, and builds and loads as it is. Kept in one place so that what a person scaffolds from
//! the command line and what a model scaffolds in a session cannot drift apart.

use std::path::{Path, PathBuf};

const CARGO_TOML: &str = include_str!("../templates/Cargo.toml.tmpl");
const LIB_RS: &str = include_str!("../templates/src/lib.rs.tmpl");

/// Why a crate was not written.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("plugin name `{0}`: use lowercase letters, digits, `-` or `_`, starting with a letter")]
    Name(String),
    #[error("{} already holds a Cargo.toml", .0.display())]
    Exists(PathBuf),
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// `my-tool` -> `MyTool`: the plugin's type name.
pub fn type_name(name: &str) -> String {
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

/// Whether `name` can be a plugin (and crate) name.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
}

/// The library name cargo gives the crate `name` (`my-tool` -> `my_tool`, the file
/// `libmy_tool.so`).
pub fn lib_name(name: &str) -> String {
    name.replace('-', "_")
}

/// Writes the crate `name` into `dir`, depending on the `plugin-api` crate at `api_path`;
/// refuses to overwrite an existing crate. Answers the files written.
pub fn create(api_path: &Path, name: &str, dir: &Path) -> Result<Vec<PathBuf>, TemplateError> {
    if !valid_name(name) {
        return Err(TemplateError::Name(name.to_owned()));
    }
    if dir.join("Cargo.toml").exists() {
        return Err(TemplateError::Exists(dir.to_path_buf()));
    }
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{lib}}", &lib_name(name))
            .replace("{{type_name}}", &type_name(name))
            .replace("{{api_path}}", &api_path.display().to_string())
    };
    let src = dir.join("src");
    std::fs::create_dir_all(&src).map_err(|source| TemplateError::Write {
        path: src.clone(),
        source,
    })?;
    let files = [
        (dir.join("Cargo.toml"), fill(CARGO_TOML)),
        (src.join("lib.rs"), fill(LIB_RS)),
    ];
    for (path, text) in &files {
        std::fs::write(path, text).map_err(|source| TemplateError::Write {
            path: path.clone(),
            source,
        })?;
    }
    Ok(files.into_iter().map(|(path, _)| path).collect())
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
        assert!(!valid_name("../escape"));
    }

    #[test]
    fn a_crate_is_written_once_with_every_placeholder_filled() {
        let dir = std::env::temp_dir().join(format!("dsh-template-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let files = create(Path::new("/api"), "my-tool", &dir);
        let files = match files {
            Ok(files) => files,
            Err(error) => panic!("{error}"),
        };
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            assert!(!text.contains("{{"), "{}: {text}", file.display());
        }
        let toml = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
        assert!(toml.contains("path = \"/api\""), "{toml}");
        assert!(matches!(
            create(Path::new("/api"), "my-tool", &dir),
            Err(TemplateError::Exists(_))
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
