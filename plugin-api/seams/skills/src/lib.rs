//! `dsh-skills-seam`: what other plugins tell the `skills` plugin. A plugin that brings skills
//! of its own (the plugin-author preset's guide to the plugin API, say) answers the
//! `skills/roots` waterfall with its folders for the tool scopes it serves, so those skills are
//! in the catalog, the `skill` tool and the `/` commands of exactly the sessions that see the
//! plugin's tools, and nowhere else. The skills plugin owns how a folder is read; the
//! listener only says where.

use dsh_plugin_api::{Json, WaterfallEvent};

/// `skills/roots`: the skill roots a tool scope chain (farthest ancestor first, as a call's
/// `scope`; empty: the global view) adds to its workspace's. Each listener answers `next`'s
/// folders with its own appended when the chain holds a scope it serves; the innermost default
/// is none. A folder answered first wins a name answered twice.
pub const SKILLS_ROOTS: WaterfallEvent<Json<Vec<String>>, Json<Vec<String>>> =
    WaterfallEvent::new("skills/roots");
