//! What the file tools' race-free operations cost against the path-based ones they replaced,
//! measured one after the other in the same run on the local filesystem: a 4 KiB read opened
//! by path versus one that also asks the kernel where the open file is, and a 4 KiB atomic
//! publication by path versus one that walks the path from `/` without following a link and
//! stages and renames inside the directory handle.

use std::path::Path;
use std::time::Instant;

use dsh_fs_local::{FileSystem, LocalFs};

use crate::process::scratch;
use crate::{median, report};

/// Operations per sample, and samples per figure.
const OPS: usize = 200;
const SAMPLES: usize = 9;

/// The median time of one call of `op` (µs), over [`SAMPLES`] samples of [`OPS`] calls.
fn per_call(mut op: impl FnMut(usize) -> anyhow::Result<()>) -> anyhow::Result<f64> {
    let mut samples = Vec::new();
    for sample in 0..SAMPLES {
        let started = Instant::now();
        for call in 0..OPS {
            op(sample * OPS + call)?;
        }
        samples.push(started.elapsed().as_secs_f64() * 1e6 / OPS as f64);
    }
    Ok(median(samples))
}

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = scratch("fs")?.canonicalize()?;
    let file = dir.join("read.txt");
    std::fs::write(&file, "x".repeat(4096))?;
    let fs = LocalFs;
    let read = |path: &Path| fs.read_at(path, 0, 8192).map(drop);
    report("fs_read_by_path", per_call(|_| Ok(read(&file)?))?, "us");
    report(
        "fs_read_resolved",
        per_call(|_| Ok(fs.read_at_resolved(&file, 0, 8192).map(drop)?))?,
        "us",
    );
    let content = vec![b'y'; 4096];
    let publish = |name: String, strict: bool| -> anyhow::Result<()> {
        let target = dir.join(name);
        let done = match strict {
            false => fs.publish(&target, &content, None, false),
            true => fs.publish_no_symlinks(&target, &content, None, false),
        };
        done.map_err(|error| anyhow::anyhow!("{error}"))
    };
    report(
        "fs_publish_by_path",
        per_call(|n| publish(format!("path-{n}.txt"), false))?,
        "us",
    );
    report(
        "fs_publish_no_symlinks",
        per_call(|n| publish(format!("strict-{n}.txt"), true))?,
        "us",
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
