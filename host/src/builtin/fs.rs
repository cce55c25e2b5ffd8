//! `dsh-host/fs`: the `fs` service over the local filesystem, and beside it `fs_strict`, the
//! reads that answer where the file really was and the writes that refuse a symbolic link on
//! the way, which keep a path checked by a file tool from being swapped before it is used.
//! The file tools do every file operation through them, so replacing this row (a sandbox's
//! confined filesystem) changes what they can reach without touching them.

use abi_stable::sabi_trait::TD_Opaque;
use dsh_fs_local::{LocalFs, Served};
use dsh_plugin_api::io::fs::{FS_SERVICE, FS_STRICT_SERVICE, Fs_TO, FsStrict_TO};
use dsh_plugin_api::{Context, NoConfig, Plugin, PluginError};

pub(crate) struct FsPlugin;

impl Plugin for FsPlugin {
    const NAME: &'static str = "fs";
    const PROVIDES: &'static [&'static str] = &[FS_SERVICE, FS_STRICT_SERVICE];
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.provide(FS_SERVICE, Fs_TO::from_value(Served(LocalFs), TD_Opaque))?;
        ctx.provide(
            FS_STRICT_SERVICE,
            FsStrict_TO::from_value(Served(LocalFs), TD_Opaque),
        )
    }
}
