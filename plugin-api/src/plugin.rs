//! Declaring plugins: the [`Plugin`] trait, config validation before `apply`, and the
//! [`export_plugins!`](crate::export_plugins) macro that builds a library's root module.

use std::future::Future;

use abi_stable::prefix_type::PrefixTypeTrait;
use abi_stable::std_types::{RErr, RResult, RString, RVec};
use async_ffi::{FfiFuture, FutureExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::abi::{
    ErrorKind, HostCtx, LogSinkBox, PluginDecl, PluginError, PluginLib, PluginLibRef,
};
use crate::context::Context;
use crate::guard::{contain, contained};

/// A plugin: a name, what it needs and provides, a config type and an `apply`.
pub trait Plugin: 'static {
    /// Export name. A row names the plugin as `<library>` or `<library>/<NAME>`.
    const NAME: &'static str;
    /// Services that must be present before `apply` runs; the plugin waits (PENDING) until then
    /// and unloads when one goes away.
    const INJECT: &'static [&'static str] = &[];
    /// Services the plugin may probe with [`Context::get`].
    const OPTIONAL: &'static [&'static str] = &[];
    /// Services the plugin provides from `apply`.
    const PROVIDES: &'static [&'static str] = &[];
    /// The row's `config`, validated before `apply` is called.
    type Config: DeserializeOwned + JsonSchema + Send + 'static;

    fn apply(
        ctx: Context,
        config: Self::Config,
    ) -> impl Future<Output = Result<(), PluginError>> + Send + 'static;
}

/// The config of a plugin that takes none: an empty map (or no `config` at all).
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoConfig {}

/// Parses a row's config, reporting the JSON path of the first problem.
pub fn parse_config<C: DeserializeOwned>(json: &str) -> Result<C, PluginError> {
    let json = if json.trim().is_empty() || json.trim() == "null" {
        "{}"
    } else {
        json
    };
    let mut deserializer = serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize::<_, C>(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let path = if path == "." {
            "$".to_owned()
        } else {
            format!("$.{path}")
        };
        PluginError {
            kind: ErrorKind::Config,
            message: RString::from(format!(
                "invalid config: {}",
                without_position(&error.inner().to_string())
            )),
            path: abi_stable::std_types::RSome(RString::from(path)),
        }
    })
}

/// serde_json appends the position in the JSON text the host built, which means nothing to the
/// person who wrote the YAML row; the JSON path says where the problem is.
fn without_position(message: &str) -> &str {
    match message.rfind(" at line ") {
        Some(index) => &message[..index],
        None => message,
    }
}

fn strings(items: &[&str]) -> RVec<RString> {
    items.iter().map(|item| RString::from(*item)).collect()
}

/// The declaration of plugin `P` as the host sees it.
pub fn declare<P: Plugin>() -> PluginDecl {
    PluginDecl {
        name: RString::from(P::NAME),
        config_schema: config_schema_shim::<P>,
        inject: strings(P::INJECT),
        optional: strings(P::OPTIONAL),
        provides: strings(P::PROVIDES),
        apply: apply_shim::<P>,
    }
}

extern "C" fn config_schema_shim<P: Plugin>() -> RString {
    let schema = contain(|| {
        serde_json::to_string(&schemars::schema_for!(P::Config)).map_err(|error| PluginError {
            kind: ErrorKind::Plugin,
            message: RString::from(format!("config schema: {error}")),
            path: abi_stable::std_types::RNone,
        })
    });
    // A schema that cannot be built reads as none; the row's config is still validated.
    RString::from(schema.unwrap_or_default())
}

extern "C" fn apply_shim<P: Plugin>(
    ctx: HostCtx,
    config: RString,
) -> FfiFuture<RResult<(), PluginError>> {
    let started = contain(|| {
        let config = parse_config::<P::Config>(config.as_str())?;
        Ok(P::apply(Context::from_host(ctx), config))
    });
    async move {
        match started {
            Ok(fut) => contained(fut).await.into(),
            Err(error) => RErr(error),
        }
    }
    .into_ffi()
}

#[doc(hidden)]
pub mod __private {
    use super::*;

    pub use abi_stable::library::{LibHeader, RootModuleResult};

    pub extern "C" fn init_library(sink: LogSinkBox) {
        let _ = contain(|| {
            crate::logging::init(sink);
            Ok(())
        });
    }

    /// Builds the root module from a list of declarations (run inside `catch_unwind`).
    pub fn root_module(
        plugins: extern "C" fn() -> RResult<RVec<PluginDecl>, PluginError>,
    ) -> PluginLibRef {
        PluginLib {
            init: init_library,
            plugins,
        }
        .leak_into_prefix()
    }

    pub fn collect(build: fn() -> Vec<PluginDecl>) -> RResult<RVec<PluginDecl>, PluginError> {
        contain(|| Ok(RVec::from(build()))).into()
    }

    pub fn call_loader(module: fn() -> PluginLibRef) -> RootModuleResult {
        abi_stable::library::__call_root_module_loader(module)
    }

    /// The library header the host looks up by symbol name.
    pub const fn header(loader: extern "C" fn() -> RootModuleResult) -> LibHeader {
        #[allow(unsafe_code, reason = "building the abi_stable library header")]
        // SAFETY: `loader` returns the erased `PluginLibRef` built by `root_module`.
        unsafe {
            LibHeader::from_constructor::<PluginLibRef>(
                loader,
                abi_stable::library::CheckTypeLayout::Yes,
            )
        }
    }
}

/// The symbol abi_stable looks up in a library (checked against abi_stable in a test).
#[doc(hidden)]
pub const ROOT_MODULE_SYMBOL: &str = "_1as_0lib_1header_0root_bmodule_bloader";

/// Exports the listed plugins as this library's root module.
///
/// ```text
/// dsh_plugin_api::export_plugins!(Greeter);
/// ```
#[macro_export]
macro_rules! export_plugins {
    ($($plugin:ty),+ $(,)?) => {
        #[allow(unsafe_code, reason = "the root module symbol must not be mangled")]
        #[unsafe(no_mangle)]
        pub static _1as_0lib_1header_0root_bmodule_bloader: $crate::__private::LibHeader = {
            fn __dsh_declarations() -> ::std::vec::Vec<$crate::PluginDecl> {
                ::std::vec![$($crate::declare::<$plugin>()),+]
            }
            extern "C" fn __dsh_plugins(
            ) -> $crate::RResult<$crate::RVec<$crate::PluginDecl>, $crate::PluginError> {
                $crate::__private::collect(__dsh_declarations)
            }
            fn __dsh_module() -> $crate::PluginLibRef {
                $crate::__private::root_module(__dsh_plugins)
            }
            extern "C" fn __dsh_loader() -> $crate::__private::RootModuleResult {
                $crate::__private::call_loader(__dsh_module)
            }
            $crate::__private::header(__dsh_loader)
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Demo {
        #[serde(default = "hello")]
        greeting: String,
        #[serde(default)]
        targets: Vec<String>,
    }

    fn hello() -> String {
        "Hello".to_owned()
    }

    #[test]
    fn symbol_matches_abi_stable() {
        assert_eq!(
            ROOT_MODULE_SYMBOL,
            abi_stable::library::ROOT_MODULE_LOADER_NAME
        );
    }

    #[test]
    fn missing_config_takes_defaults() {
        let demo: Demo = parse_config("null").unwrap();
        assert_eq!(demo.greeting, "Hello");
        assert!(demo.targets.is_empty());
    }

    #[test]
    fn invalid_config_names_the_path() {
        let error = parse_config::<Demo>(r#"{"targets": "not-an-array"}"#).unwrap_err();
        assert_eq!(error.kind, ErrorKind::Config);
        assert_eq!(
            error.path.as_ref().map(|p| p.as_str()).into_option(),
            Some("$.targets")
        );
        assert!(
            error.message.contains("expected a sequence"),
            "{}",
            error.message
        );
        assert!(!error.message.contains(" at line "), "{}", error.message);
    }

    #[test]
    fn unknown_config_field_is_refused() {
        let error = parse_config::<Demo>(r#"{"greetin": "x"}"#).unwrap_err();
        assert!(
            error.message.contains("unknown field `greetin`"),
            "{}",
            error.message
        );
    }
}
