//! The `credentials.*` methods and the model route new sessions get. A key entered here is
//! stored by the `credentials` service (which adapters consult before their environment), so
//! the next request uses it without a restart; no method ever answers a value.

use abi_stable::std_types::RString;
use dsh_credentials_seam::{CREDENTIALS, CredentialsService, valid_name};
use dsh_plugin_api::Service;
use dsh_protocol::{
    CredentialName, CredentialState, CredentialsDescription, RpcErrorCode, SetCredential,
};

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
            .get::<CredentialsService>(CREDENTIALS)
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
            .map_err(|error| Failure::internal(error.into_string()))
    }

    pub(crate) async fn unset_credential(&self, name: CredentialName) -> Result<bool, Failure> {
        self.store()?
            .unset(RString::from(name.name))
            .await
            .into_result()
            .map_err(|error| Failure::internal(error.into_string()))
    }
}
