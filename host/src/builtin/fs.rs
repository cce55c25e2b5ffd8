//! `dsh-host/fs`: the `fs` service over the local filesystem. `read`, `write` and `edit` do
//! every file operation through it, so replacing this row (a sandbox's confined filesystem)
//! changes what they can reach without touching them (`glob` and `grep` still walk the local
//! tree directly).

use abi_stable::sabi_trait::TD_Opaque;
use dsh_fs_local::{LocalFs, Served};
use dsh_plugin_api::io::fs::{FS_SERVICE, Fs_TO};
use dsh_plugin_api::{Context, NoConfig, Plugin, PluginError};

pub(crate) struct FsPlugin;

impl Plugin for FsPlugin {
    const NAME: &'static str = "fs";
    const PROVIDES: &'static [&'static str] = &[FS_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.provide(FS_SERVICE, Fs_TO::from_value(Served(LocalFs), TD_Opaque))
    }
}
