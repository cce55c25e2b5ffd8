//! The `secret_values` service: the secret values the host's own configuration holds, so that
//! whoever starts processes can keep them out of their environment whatever variable carries
//! them. Those are the string values of every row's `env` and `headers` (an MCP entry's token, a
//! product subagent's key), as the tree now resolves them (a reload updates them). Never
//! listed to a model or a page: only compared with.
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
use abi_stable::std_types::{RBox, RString, RVec};

/// The service key.
pub const SECRET_VALUES_SERVICE: &str = "secret_values";

#[sabi_trait]
pub trait SecretValues: Send + Sync {
    /// The values, as of the tree's last resolution.
    fn values(&self) -> RVec<RString>;
}

/// The value registered under [`SECRET_VALUES_SERVICE`].
pub type SecretValuesService = SecretValues_TO<'static, RBox<()>>;
