//! `dsh-host`: the host process of dsh, the Rust counterpart of Cordis plus the native plugin
//! boundary.
//!
//! It owns the plugin runtime (fibers and their derived states, realms and services, the typed
//! event bus with its five dispatch modes, effects and disposal), loading plugin libraries
//! through abi_stable, mounting the config tree composed by `dsh-loader`, hot reload of
//! libraries and config, and the `dsh-host` command line. It owns no agent capability: the
//! session log, the model seam, tools and the loop are plugins mounted from rows.

pub mod library;
pub mod logging;
pub mod runtime;
