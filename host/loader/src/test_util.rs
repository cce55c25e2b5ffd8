//! Helpers shared by the unit tests.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::{Composed, Layer, compose};

/// A patch-list layer read from `file`.
pub(crate) fn patch(label: &str, file: &str, text: &str) -> Layer {
    Layer::patch_list(label, text, file)
}

/// Composes patch layers given as `(label, file, text)`.
pub(crate) fn compose_patches(layers: &[(&str, &str, &str)]) -> Composed {
    let layers: Vec<Layer> = layers.iter().map(|(l, f, t)| patch(l, f, t)).collect();
    match compose(&layers) {
        Ok(c) => c,
        Err(e) => panic!("compose failed: {e}"),
    }
}

/// An environment lookup over fixed pairs.
pub(crate) fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name: &str| map.get(name).cloned()
}

/// No environment at all.
pub(crate) fn no_env(_: &str) -> Option<String> {
    None
}

pub(crate) fn home() -> &'static Path {
    Path::new("/home/u/.dsh-host")
}

/// A fresh directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("dsh-loader-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        Self(dir)
    }

    pub(crate) fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.0.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(&path, text).expect("write file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
