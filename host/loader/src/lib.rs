//! `dsh-loader` owns the composition of dsh-host config trees: parsing YAML row lists and patch
//! lists (with file, line and column in every error), applying patch layers in order (bundles,
//! profile patch, home patch, `--patch` files) with the reference's patch rules, the `!env`,
//! `!home` and `!platform` tags that replace `!!js`, provenance (the layer that last touched each
//! row), resolution to JSON for the runtime, the `--dump-config` rendering, and the by-id diff
//! that decides which rows a reload remounts. It does not mount plugins, load libraries, watch
//! files or read the process environment; the host does that and passes in texts, an env lookup
//! and `$DSH_HOME`.
//!
//! ```
//! use dsh_loader::{Layer, compose, diff};
//! let base = Layer::patch_list("bundle base", "- insert:\n  - id: hi\n    name: greeter\n", "base.yml");
//! let user = Layer::patch_list("home patch", "- id: hi\n  config: {greeting: !env [G, Hello]}\n", "p.yml");
//! let tree = compose(&[base, user]).unwrap();
//! let rows = tree.resolve(&|_| None, std::path::Path::new("/h")).unwrap();
//! assert_eq!(rows[0].config["greeting"], "Hello");
//! assert_eq!(rows[0].layer, "home patch");
//! assert!(diff(&rows, &rows).is_empty());
//! ```

#![cfg_attr(
    test,
    allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "tests fail loudly on purpose"
    )
)]

mod diff;
mod dump;
mod error;
mod locate;
mod patch;
mod profile;
mod resolve;
mod row;
mod settings;
mod source;
mod tags;
#[cfg(test)]
mod test_util;

pub use diff::{RowDiff, diff};
pub use error::{ComposeError, ProfileError, ResolveError, SourcePos, TagError};
pub use patch::{Composed, Layer, LayerSource, apply_layer, compose, compose_row_list};
pub use profile::{Home, PATCH_FILE, PROFILE_FILE};
pub use resolve::{ResolvedRow, find_resolved};
pub use row::{ComposedRow, IsolateTarget, ROW_FIELDS};
pub use settings::{ENABLED_KEY, SETTINGS_FILE, apply_settings};
pub use tags::{TagContext, current_platform, resolve_config, resolve_disabled};
