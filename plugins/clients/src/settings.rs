//! The `credentials.*` methods and the model route new sessions get. A key entered here is
//! stored by the `credentials` service (which adapters consult before their environment), so
//! the next request uses it without a restart; no method ever answers a value.

use abi_stable::std_types::RString;
use dsh_client_protocol::{
    CredentialName, CredentialState, CredentialsDescription, RpcErrorCode, SetCredential,
};
use dsh_credentials_seam::{CREDENTIALS_SERVICE, CredentialsService, valid_name};
use dsh_plugin_api::{SeamError, SeamErrorKind, Service};

use crate::api::{Api, Failure};

/// The default adapter's key and the route it makes usable.
const DEEPSEEK_KEY: &str = "DEEPSEEK_API_KEY";
const DEEPSEEK_ROUTE: &str = "deepseek-official/deepseek-v4-flash";

fn in_environment(name: &str) -> bool {
    std::env::var(name).is_ok_and(|value| !value.trim().is_empty())
}

impl Api {
    fn credentials(&self) -> Option<Service<CredentialsService>> {
        self.ctx
            .get::<CredentialsService>(CREDENTIALS_SERVICE)
            .ok()
            .flatten()
    }

    fn has_stored(&self, name: &str) -> bool {
        self.credentials()
            .is_some_and(|store| store.get(RString::from(name)).is_some())
    }

    /// The route new sessions use: the row's, else DeepSeek once it has a key.
    pub(crate) fn default_model(&self) -> Option<String> {
        self.configured_model.clone().or_else(|| {
            (self.has_stored(DEEPSEEK_KEY) || in_environment(DEEPSEEK_KEY))
                .then(|| DEEPSEEK_ROUTE.to_owned())
        })
    }

    pub(crate) fn describe_credentials(&self, writable: bool) -> CredentialsDescription {
        let mut names = vec![DEEPSEEK_KEY.to_owned()];
        if let Some(store) = self.credentials() {
            for name in store.names().iter() {
                if !names.iter().any(|known| known == name.as_str()) {
                    names.push(name.to_string());
                }
            }
        }
        let credentials = names
            .into_iter()
            .map(|name| CredentialState {
                stored: self.has_stored(&name),
                in_environment: in_environment(&name),
                name,
            })
            .collect();
        CredentialsDescription {
            credentials,
            writable,
        }
    }

    fn store(&self) -> Result<Service<CredentialsService>, Failure> {
        self.credentials()
            .ok_or_else(|| Failure::internal("no `credentials` service is running"))
    }

    pub(crate) async fn set_credential(&self, set: SetCredential) -> Result<(), Failure> {
        let rejected = |message: String| Failure(RpcErrorCode::CredentialRejected, message);
        if !valid_name(&set.name) {
            return Err(rejected(format!(
                "`{}` is not a credential name: use an environment variable's name",
                set.name
            )));
        }
        let value = set.value.trim();
        if value.is_empty() || !value.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            return Err(rejected(format!(
                "{}: a key is printable ASCII with no spaces",
                set.name
            )));
        }
        self.store()?
            .set(RString::from(set.name), RString::from(value))
            .await
            .into_result()
            .map_err(store_refused)
    }

    pub(crate) async fn unset_credential(&self, name: CredentialName) -> Result<bool, Failure> {
        self.store()?
            .unset(RString::from(name.name))
            .await
            .into_result()
            .map_err(store_refused)
    }
}

/// A refusal of the credential store: a name it does not take is the caller's, a failed
/// write the server's.
fn store_refused(error: SeamError) -> Failure {
    let code = match error.kind {
        SeamErrorKind::Invalid => RpcErrorCode::CredentialRejected,
        _ => RpcErrorCode::Internal,
    };
    Failure(code, error.message.into_string())
}

/// The namespace of the default adapter in the settings document (its row id).
const ADAPTER_ROW: &str = "llm-deepseek";

/// Why the settings document cannot be read or written, naming the file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DocumentError {
    #[error("{file}: {error}")]
    Io { file: String, error: std::io::Error },
    #[error("{0}")]
    Limits(dsh_doc_limits::LimitError),
    #[error("{file}: not a mapping of namespaces")]
    NotMapping { file: String },
    #[error("{file}: {error}")]
    Yaml {
        file: String,
        error: serde_norway::Error,
    },
}

impl DocumentError {
    fn io(path: &std::path::Path, error: std::io::Error) -> Self {
        Self::Io {
            file: path.display().to_string(),
            error,
        }
    }

    fn yaml(path: &std::path::Path, error: serde_norway::Error) -> Self {
        Self::Yaml {
            file: path.display().to_string(),
            error,
        }
    }
}

/// The settings document, refused (before parsing) over the size or nesting of a config file.
pub(crate) fn read_document(
    path: &std::path::Path,
) -> Result<serde_norway::Mapping, DocumentError> {
    let shown = path.display().to_string();
    let limits = dsh_doc_limits::Limits::DOCUMENT;
    let text = match dsh_doc_limits::read_capped(path, limits.max_bytes) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(serde_norway::Mapping::new());
        }
        Err(error) => return Err(DocumentError::io(path, error)),
    };
    dsh_doc_limits::check_yaml(&text, &shown, limits).map_err(DocumentError::Limits)?;
    match serde_norway::from_str::<serde_norway::Value>(&text) {
        Ok(serde_norway::Value::Mapping(document)) => Ok(document),
        Ok(serde_norway::Value::Null) => Ok(serde_norway::Mapping::new()),
        Ok(_) => Err(DocumentError::NotMapping { file: shown }),
        Err(error) => Err(DocumentError::yaml(path, error)),
    }
}

fn base_url_of(document: &serde_norway::Mapping) -> Option<String> {
    document
        .get(ADAPTER_ROW)?
        .get("baseURL")?
        .as_str()
        .map(str::to_owned)
}

impl Api {
    pub(crate) fn settings_file(&self) -> Result<std::path::PathBuf, Failure> {
        self.settings_file
            .clone()
            .ok_or_else(|| Failure::internal("this server has no settingsFile configured"))
    }

    /// The settings document as it is now, read on the blocking pool.
    pub(crate) async fn settings_document(&self) -> Result<serde_norway::Mapping, Failure> {
        let path = self.settings_file()?;
        self.ctx
            .blocking(move || read_document(&path))
            .await
            .map_err(|error| Failure::internal(error.to_string()))?
            .map_err(|error| Failure::internal(error.to_string()))
    }

    pub(crate) async fn describe_settings(
        &self,
        writable: bool,
    ) -> Result<dsh_client_protocol::SettingsDescription, Failure> {
        let document = self.settings_document().await?;
        Ok(dsh_client_protocol::SettingsDescription {
            base_url: base_url_of(&document),
            writable,
        })
    }

    /// Writes the settings document (through a rename); the host's watcher applies it, which
    /// remounts the adapter row with its new config.
    pub(crate) async fn update_settings(
        &self,
        update: dsh_client_protocol::SettingsUpdate,
    ) -> Result<(), Failure> {
        let rejected = |message: String| Failure(RpcErrorCode::SettingsRejected, message);
        if let Some(url) = &update.base_url {
            let url = url.trim();
            let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
            if !scheme_ok || url.contains(char::is_whitespace) {
                return Err(rejected(format!(
                    "base URL `{url}`: an http:// or https:// address without spaces"
                )));
            }
        }
        let url = update.base_url.as_deref().map(str::trim).map(str::to_owned);
        self.write_setting(ADAPTER_ROW, "baseURL", url).await
    }

    /// Sets (or with `None` removes) `field` of namespace `namespace` (a row id) in the
    /// settings document; the host lays it over that row's config and reloads the row.
    pub(crate) async fn write_setting(
        &self,
        namespace: &str,
        field: &str,
        value: Option<String>,
    ) -> Result<(), Failure> {
        self.write_setting_value(namespace, field, value.map(serde_norway::Value::String))
            .await
    }

    /// [`Api::write_setting`] with any YAML value (a list of providers).
    pub(crate) async fn write_setting_value(
        &self,
        namespace: &str,
        field: &str,
        value: Option<serde_norway::Value>,
    ) -> Result<(), Failure> {
        let path = self.settings_file()?;
        let (namespace, field) = (namespace.to_owned(), field.to_owned());
        let written = self
            .ctx
            .blocking(move || -> Result<(), DocumentError> {
                let mut document = read_document(&path)?;
                let key = serde_norway::Value::String(namespace);
                let mut row = match document.remove(&key) {
                    Some(serde_norway::Value::Mapping(row)) => row,
                    _ => serde_norway::Mapping::new(),
                };
                let field = serde_norway::Value::String(field);
                match value {
                    Some(value) => {
                        row.insert(field, value);
                    }
                    None => {
                        row.remove(&field);
                    }
                }
                if !row.is_empty() {
                    document.insert(key, serde_norway::Value::Mapping(row));
                }
                write_document(&path, &document)
            })
            .await
            .map_err(|error| Failure::internal(error.to_string()))?;
        written.map_err(|error| Failure::internal(error.to_string()))
    }

    /// `approval.respond`: the answer, and for an accepted `always` the allow rule written
    /// under `permissions.allow` in the settings document (the host reloads the rules row).
    pub(crate) async fn respond(
        &self,
        answer: dsh_client_protocol::ApprovalAnswer,
    ) -> Result<dsh_client_protocol::AnswerReceipt, Failure> {
        let (mut receipt, always) = self
            .pending
            .answer(answer)
            .map_err(|error| Failure(RpcErrorCode::BadRequest, error.to_string()))?;
        let Some(call) = always else {
            return Ok(receipt);
        };
        let rule = crate::approvals::rule_for(&call);
        let path = self.settings_file()?;
        let added = rule.clone();
        let written = self
            .ctx
            .blocking(move || -> Result<(), DocumentError> {
                let mut document = read_document(&path)?;
                let key = serde_norway::Value::String(PERMISSIONS_ROW.to_owned());
                let mut permissions = match document.remove(&key) {
                    Some(serde_norway::Value::Mapping(permissions)) => permissions,
                    _ => serde_norway::Mapping::new(),
                };
                let field = serde_norway::Value::String("allow".to_owned());
                let mut allow = match permissions.remove(&field) {
                    Some(serde_norway::Value::Sequence(allow)) => allow,
                    _ => Vec::new(),
                };
                let rule = serde_norway::Value::String(added);
                if !allow.contains(&rule) {
                    allow.push(rule);
                }
                permissions.insert(field, serde_norway::Value::Sequence(allow));
                document.insert(key, serde_norway::Value::Mapping(permissions));
                write_document(&path, &document)
            })
            .await
            .map_err(|error| Failure::internal(error.to_string()))?;
        written.map_err(|error| Failure(RpcErrorCode::SettingsRejected, error.to_string()))?;
        receipt.rule = Some(rule);
        Ok(receipt)
    }
}

/// The namespace of the permission rules in the settings document (their row id).
const PERMISSIONS_ROW: &str = "permissions";

/// Writes the settings document through a rename, so the host's watcher never reads half.
fn write_document(
    path: &std::path::Path,
    document: &serde_norway::Mapping,
) -> Result<(), DocumentError> {
    let text =
        serde_norway::to_string(document).map_err(|error| DocumentError::yaml(path, error))?;
    let scratch = path.with_extension("yaml.part");
    std::fs::write(&scratch, text)
        .and_then(|()| std::fs::rename(&scratch, path))
        .map_err(|error| DocumentError::io(path, error))
}
