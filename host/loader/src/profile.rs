//! Profiles under `$DSH_HOME`: which layers make up a profile, in which order.
//!
//! Layout: `profiles/<name>/profile.yml` (`bundles: [names]`), `profiles/<name>/cordis.patch.yml`,
//! `cordis.patch.yml`, and `bundles/<bundle>.yml` overriding built-in bundles.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use dsh_doc_limits::Limits;
use serde::Deserialize;
use serde_norway::Value;

use crate::error::{ProfileError, SourcePos, list_or_none};
use crate::patch::Layer;
use crate::source::yaml_error;

/// The file name of the per-profile and home patch layers.
pub const PATCH_FILE: &str = "cordis.patch.yml";
/// The file naming a profile's bundles.
pub const PROFILE_FILE: &str = "profile.yml";

/// `$DSH_HOME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Home {
    /// The directory.
    pub root: PathBuf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    bundles: Vec<String>,
}

impl Home {
    /// A home rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// `profiles/<name>`.
    pub fn profile_dir(&self, name: &str) -> PathBuf {
        self.root.join("profiles").join(name)
    }

    /// Names of the profiles that have a `profile.yml`, sorted.
    pub fn profiles(&self) -> Vec<String> {
        let Ok(entries) = fs::read_dir(self.root.join("profiles")) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join(PROFILE_FILE).is_file())
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .collect();
        names.sort();
        names
    }

    /// The bundle names listed by `profiles/<name>/profile.yml`.
    pub fn profile_bundles(&self, name: &str) -> Result<Vec<String>, ProfileError> {
        check_name(name).map_err(|_| ProfileError::BadName(name.to_owned()))?;
        let path = self.profile_dir(name).join(PROFILE_FILE);
        if !path.is_file() {
            return Err(ProfileError::MissingProfile {
                name: name.to_owned(),
                available: self.profiles(),
            });
        }
        let text = read(&path)?;
        let file = path.display().to_string();
        dsh_doc_limits::check_yaml(&text, &file, Limits::DOCUMENT)?;
        let invalid = |at: SourcePos, message: String| ProfileError::Invalid { at, message };
        match serde_norway::from_str::<Value>(&text) {
            Ok(Value::Null) => {
                return Err(invalid(
                    SourcePos::file(&file),
                    "the profile file is empty; write `bundles: [base]`".to_owned(),
                ));
            }
            Ok(_) => {}
            Err(err) => {
                let (at, message) = yaml_error(&file, &err);
                return Err(invalid(at, format!("malformed YAML: {message}")));
            }
        }
        let parsed: ProfileFile = serde_norway::from_str(&text).map_err(|err| {
            let (at, message) = yaml_error(&file, &err);
            invalid(at, message)
        })?;
        for bundle in &parsed.bundles {
            if check_name(bundle).is_err() {
                return Err(invalid(
                    SourcePos::file(&file),
                    format!("`{bundle}` is not a bundle name (letters, digits, `-`, `_`, `.`)"),
                ));
            }
        }
        Ok(parsed.bundles)
    }

    /// The layers of profile `name`, in application order: each bundle of its `profile.yml`
    /// (`bundles/<bundle>.yml` when that file exists, else `builtin_bundles(bundle)`), the
    /// profile's `cordis.patch.yml`, the home `cordis.patch.yml`, then each of `patch_files`.
    pub fn profile_layers(
        &self,
        name: &str,
        builtin_bundles: &dyn Fn(&str) -> Option<&'static str>,
        patch_files: &[PathBuf],
    ) -> Result<Vec<Layer>, ProfileError> {
        let bundles = self.profile_bundles(name)?;
        let mut layers = Vec::new();
        for bundle in bundles {
            let label = format!("bundle {bundle}");
            let override_path = self.root.join("bundles").join(format!("{bundle}.yml"));
            if override_path.is_file() {
                layers.push(Layer::patch_list(
                    label,
                    read(&override_path)?,
                    override_path,
                ));
            } else if let Some(text) = builtin_bundles(&bundle) {
                layers.push(Layer::patch_list(
                    label,
                    text,
                    format!("builtin:{bundle}.yml"),
                ));
            } else {
                return Err(ProfileError::MissingBundle {
                    profile_file: self.profile_dir(name).join(PROFILE_FILE),
                    bundle,
                    override_path,
                });
            }
        }
        let profile_patch = self.profile_dir(name).join(PATCH_FILE);
        if profile_patch.is_file() {
            let text = read(&profile_patch)?;
            layers.push(Layer::patch_list(
                format!("profile {name} patch"),
                text,
                profile_patch,
            ));
        }
        let home_patch = self.root.join(PATCH_FILE);
        if home_patch.is_file() {
            layers.push(Layer::patch_list(
                "home patch",
                read(&home_patch)?,
                home_patch,
            ));
        }
        for path in patch_files {
            if !path.is_file() {
                return Err(ProfileError::MissingPatch { path: path.clone() });
            }
            let label = format!("--patch {}", path.display());
            layers.push(Layer::patch_list(label, read(path)?, path.clone()));
        }
        Ok(layers)
    }

    /// The files whose change means the profile must be recomposed (existing or not).
    pub fn watched_files(
        &self,
        name: &str,
        bundles: &[String],
        patch_files: &[PathBuf],
    ) -> Vec<PathBuf> {
        let mut files = vec![self.profile_dir(name).join(PROFILE_FILE)];
        files.extend(
            bundles
                .iter()
                .map(|b| self.root.join("bundles").join(format!("{b}.yml"))),
        );
        files.push(self.profile_dir(name).join(PATCH_FILE));
        files.push(self.root.join(PATCH_FILE));
        files.extend(patch_files.iter().cloned());
        files
    }

    /// Creates `profiles/<name>/profile.yml` listing `template_bundles` unless it exists.
    /// Returns whether it was created. A missing profile without a template is an error that
    /// lists the available profiles.
    pub fn ensure_profile(&self, name: &str, template_bundles: &[&str]) -> io::Result<bool> {
        check_name(name)?;
        let path = self.profile_dir(name).join(PROFILE_FILE);
        if path.is_file() {
            return Ok(false);
        }
        if template_bundles.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "profile `{name}` does not exist (available: {})",
                    list_or_none(&self.profiles())
                ),
            ));
        }
        for bundle in template_bundles {
            check_name(bundle)?;
        }
        fs::create_dir_all(self.profile_dir(name))?;
        fs::write(&path, template_text(name, template_bundles))?;
        Ok(true)
    }

    /// Rewrites the profile file of `name` to `current` when it is still exactly what an
    /// earlier template (`retired`) wrote, so a home keeps working when a template changes; a
    /// file someone edited is left alone. Answers whether it was rewritten.
    pub fn upgrade_profile(
        &self,
        name: &str,
        retired: &[&str],
        current: &[&str],
    ) -> io::Result<bool> {
        check_name(name)?;
        let path = self.profile_dir(name).join(PROFILE_FILE);
        match fs::read_to_string(&path) {
            Ok(text) if text == template_text(name, retired) => {
                fs::write(&path, template_text(name, current))?;
                Ok(true)
            }
            Ok(_) => Ok(false),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(error),
        }
    }
}

/// The profile file a template writes.
fn template_text(name: &str, bundles: &[&str]) -> String {
    let mut text =
        format!("# profile `{name}`: bundles applied in order, then patch layers\nbundles:\n");
    for bundle in bundles {
        text.push_str(&format!("  - {bundle}\n"));
    }
    text
}

/// A layer's text; a file over the size of a config document is not read whole.
fn read(path: &Path) -> Result<String, ProfileError> {
    dsh_doc_limits::read_capped(path, Limits::DOCUMENT.max_bytes).map_err(|source| {
        ProfileError::Io {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Profile and bundle names are plain directory/file names.
fn check_name(name: &str) -> io::Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid name `{name}`"),
        ))
    }
}

#[cfg(test)]
#[path = "profile_tests.rs"]
mod tests;
