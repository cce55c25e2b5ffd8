//! Test plugin `fs-probe`: provides the `fs` service over the local filesystem but refuses
//! every path that contains `deny` (and leaves such paths out of walks), the way a sandbox's
//! confined filesystem would. A row that
//! names it in place of `dsh-host/fs` shows that the file tools reach files only through the
//! service.

use std::io;
use std::path::{Path, PathBuf};

use abi_stable::sabi_trait::TD_Opaque;
use dsh_fs_local::{FileStat, FileSystem, LocalFs, PublishError, Served, WalkRequest, Walked};
use dsh_plugin_api::io::fs::{FS_SERVICE, Fs_TO};
use dsh_plugin_api::prelude::*;

#[derive(Deserialize, JsonSchema, Default)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
pub struct ProbeConfig {
    /// Paths containing this text are refused.
    pub deny: String,
}

struct Confined {
    deny: String,
}

impl Confined {
    fn check(&self, path: &Path) -> io::Result<()> {
        if !self.deny.is_empty() && path.to_string_lossy().contains(&self.deny) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("fs-probe refuses {}", path.display()),
            ));
        }
        Ok(())
    }
}

impl FileSystem for Confined {
    fn stat(&self, path: &Path) -> io::Result<Option<FileStat>> {
        self.check(path)?;
        LocalFs.stat(path)
    }

    fn read_at(&self, path: &Path, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        self.check(path)?;
        LocalFs.read_at(path, offset, len)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.check(path)?;
        LocalFs.canonicalize(path)
    }

    fn publish(
        &self,
        path: &Path,
        content: &[u8],
        mode: Option<u32>,
        create_only: bool,
    ) -> Result<(), PublishError> {
        self.check(path).map_err(PublishError::Io)?;
        LocalFs.publish(path, content, mode, create_only)
    }

    fn walk(
        &self,
        request: &WalkRequest<'_>,
        visit: &mut dyn FnMut(Walked<'_>) -> bool,
    ) -> io::Result<()> {
        self.check(request.root)?;
        LocalFs.walk(request, &mut |walked| match walked {
            // Outside the confinement: not there at all.
            Walked::Entry(entry) if self.check(entry.path).is_err() => true,
            walked => visit(walked),
        })
    }
}

pub struct FsProbe;

impl Plugin for FsProbe {
    const NAME: &'static str = "fs-probe";
    const PROVIDES: &'static [&'static str] = &[FS_SERVICE];
    type Config = ProbeConfig;

    async fn apply(ctx: Context, config: ProbeConfig) -> Result<(), PluginError> {
        let confined = Confined { deny: config.deny };
        ctx.provide(FS_SERVICE, Fs_TO::from_value(Served(confined), TD_Opaque))
    }
}

dsh_plugin_api::export_plugins!(FsProbe);
