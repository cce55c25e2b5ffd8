//! `dsh-credentials-seam`: stored secrets across the plugin ABI. A secret is named as the
//! environment variable it stands in for (`DEEPSEEK_API_KEY`), so an adapter looks a key up
//! here first and in its environment second; a person writes it (the web settings), and no
//! listing ever carries a value. Values cross as plain `RString`s: they are opaque text, with
//! no vocabulary to grow.
#![allow(
    unsafe_code,
    reason = "StableAbi derives and sabi_trait emit unsafe impls"
)]
#![allow(non_camel_case_types, reason = "sabi_trait generates `Trait_TO` names")]
#![allow(
    non_local_definitions,
    reason = "sabi_trait expands impls inside consts"
)]

use abi_stable::sabi_trait;
use abi_stable::std_types::{RBox, ROption, RResult, RString, RVec};
use async_ffi::FfiFuture;
use dsh_plugin_api::SeamError;

/// Service key of the credential store.
pub const CREDENTIALS_SERVICE: &str = "credentials";

/// Whether `name` can name a secret: an environment variable's name (`A-Z`, `0-9`, `_`, not
/// starting with a digit).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The store.
#[sabi_trait]
pub trait Credentials: Send + Sync {
    /// The secret named `name`, if one is stored.
    fn get(&self, name: RString) -> ROption<RString>;
    /// Stores `value` under `name` (written before the future resolves).
    fn set(&self, name: RString, value: RString) -> FfiFuture<RResult<(), SeamError>>;
    /// Removes `name`; answers whether it was stored.
    fn unset(&self, name: RString) -> FfiFuture<RResult<bool, SeamError>>;
    /// The names stored, sorted; never their values.
    fn names(&self) -> RVec<RString>;
}
pub type CredentialsService = Credentials_TO<'static, RBox<()>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_environment_variable_names() {
        for name in ["DEEPSEEK_API_KEY", "A", "OPENAI_KEY_2"] {
            assert!(valid_name(name), "{name}");
        }
        for name in ["", "deepseek", "2KEY", "A-B", "A B", "../x"] {
            assert!(!valid_name(name), "{name}");
        }
    }
}
