//! Plugin `credentials`: provides `credentials`, the store of secrets a person entered (the web
//! settings' API keys). They live in one JSON object (`{"NAME": "value"}`) in the row's `file`,
//! created with mode 0600 and rewritten whole through a temporary file and a rename, so a crash
//! leaves the old file or the new one, never half of either; reads are served from memory.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::std_types::{RErr, ROk, ROption, RResult, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use dsh_credentials_seam::{CREDENTIALS_SERVICE, Credentials, Credentials_TO, valid_name};
use dsh_plugin_api::prelude::*;
use dsh_plugin_api::{SeamError, SeamErrorKind, lock};

/// Config of `credentials`.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct CredentialsConfig {
    /// The store's file (`!home credentials.json` in the base bundle).
    pub file: String,
}

/// Why the store cannot be read or written, naming the file.
#[derive(Debug, thiserror::Error)]
enum StoreError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: not a JSON object of names to strings: {source}", path.display())]
    Format {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("`{0}` is not a credential name: use an environment variable's name (A-Z, 0-9, _)")]
    Name(String),
}

impl From<StoreError> for SeamError {
    fn from(error: StoreError) -> Self {
        let kind = match error {
            StoreError::Name(_) => SeamErrorKind::Invalid,
            StoreError::Io { .. } | StoreError::Format { .. } => SeamErrorKind::Failed,
        };
        SeamError::new(kind, error.to_string())
    }
}

type Secrets = BTreeMap<String, String>;

fn read(path: &Path) -> Result<Secrets, StoreError> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|source| StoreError::Format {
            path: path.to_owned(),
            source,
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Secrets::new()),
        Err(source) => Err(StoreError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

fn write(path: &Path, secrets: &Secrets) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let text = serde_json::to_string_pretty(secrets).unwrap_or_default();
    let scratch = path.with_extension("json.part");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&scratch)
        .map_err(io)?;
    // An existing scratch file keeps its mode through `open`: set it again.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    std::fs::rename(&scratch, path).map_err(io)
}

struct Store {
    ctx: Context,
    path: PathBuf,
    secrets: Arc<Mutex<Secrets>>,
}

impl Store {
    /// Applies `change` to a copy, writes it on the blocking pool, and only then keeps it.
    fn update(
        &self,
        change: impl FnOnce(&mut Secrets) -> bool + Send + 'static,
    ) -> FfiFuture<RResult<bool, SeamError>> {
        let (ctx, path, secrets) = (self.ctx.clone(), self.path.clone(), self.secrets.clone());
        async move {
            let mut next = lock(&secrets).clone();
            let changed = change(&mut next);
            let written = ctx
                .blocking(move || write(&path, &next).map(|()| next))
                .await;
            match written {
                Ok(Ok(next)) => {
                    *lock(&secrets) = next;
                    ROk(changed)
                }
                Ok(Err(error)) => RErr(error.into()),
                // The blocking pool is gone (the host is stopping): nothing was written.
                Err(error) => RErr(SeamError::failed(error.to_string())),
            }
        }
        .into_ffi()
    }
}

impl Credentials for Store {
    fn get(&self, name: RString) -> ROption<RString> {
        lock(&self.secrets)
            .get(name.as_str())
            .map(|value| RString::from(value.as_str()))
            .into()
    }

    fn set(&self, name: RString, value: RString) -> FfiFuture<RResult<(), SeamError>> {
        if !valid_name(&name) {
            let error = SeamError::from(StoreError::Name(name.into_string()));
            return std::future::ready(RErr(error)).into_ffi();
        }
        let updating = self.update(move |secrets| {
            secrets.insert(name.into_string(), value.into_string());
            true
        });
        async move { updating.await.map(|_| ()) }.into_ffi()
    }

    fn unset(&self, name: RString) -> FfiFuture<RResult<bool, SeamError>> {
        self.update(move |secrets| secrets.remove(name.as_str()).is_some())
    }

    fn names(&self) -> RVec<RString> {
        lock(&self.secrets)
            .keys()
            .map(|name| RString::from(name.as_str()))
            .collect()
    }
}

pub struct CredentialsPlugin;

impl Plugin for CredentialsPlugin {
    const NAME: &'static str = "credentials";
    const PROVIDES: &'static [&'static str] = &[CREDENTIALS_SERVICE];
    type Config = CredentialsConfig;

    async fn apply(ctx: Context, config: CredentialsConfig) -> Result<(), PluginError> {
        let path = PathBuf::from(&config.file);
        let reading = path.clone();
        let secrets = ctx
            .blocking(move || read(&reading))
            .await?
            .map_err(|error| PluginError::plugin(error.to_string()))?;
        let store = Store {
            ctx: ctx.clone(),
            path,
            secrets: Arc::new(Mutex::new(secrets)),
        };
        ctx.provide(
            CREDENTIALS_SERVICE,
            Credentials_TO::from_value(store, TD_Opaque),
        )
    }
}

dsh_plugin_api::export_plugins!(CredentialsPlugin);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn the_file_is_the_owners_alone_and_rewritten_whole() {
        let dir = std::env::temp_dir().join(format!("credentials-{}", std::process::id()));
        let path = dir.join("credentials.json");
        let mut secrets = Secrets::new();
        secrets.insert("DEEPSEEK_API_KEY".into(), "sk-1".into());
        write(&path, &secrets).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(read(&path).unwrap(), secrets);
        assert!(!path.with_extension("json.part").exists());
        std::fs::write(&path, "[1]").unwrap();
        let error = read(&path).unwrap_err().to_string();
        assert!(error.contains("credentials.json"), "{error}");
        assert!(read(&dir.join("absent.json")).unwrap().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
