//! The skills of a working directory, kept between calls while the host's `fs_watch` follows
//! their roots (any change there, or a `write`/`edit` by the agent, starts a new generation and
//! the next call looks again); without the watch service every call looks again. A file that
//! does not read as a skill is logged as a warning naming it and its field when it is first
//! seen broken, not at every step.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use dsh_plugin_api::{Channel, Context, Json, LogLevel, PluginError, RArc, WaterfallEvent, lock};
use dsh_skills_seam::SKILLS_ROOTS;
use dsh_trust_seam::is_trusted;

use crate::discover::{Discovery, Root, SharedRoots, discover, project_of};
use crate::error::LoadError;

struct Cached {
    generation: u64,
    discovery: Arc<Discovery>,
}

/// The skills plugin's view of its roots.
pub(crate) struct Library {
    ctx: Context,
    roots: SharedRoots,
    /// Asks the other plugins for the roots of a tool scope chain (`skills/roots`).
    scoped: Channel<WaterfallEvent<Json<Vec<String>>, Json<Vec<String>>>>,
    generation: AtomicU64,
    /// A watch follows the roots, so a cached discovery stays true until the generation moves.
    followed: AtomicBool,
    cache: Mutex<HashMap<String, Cached>>,
    /// Roots a watch was started for.
    watched: Mutex<HashSet<PathBuf>>,
}

/// At most this many working directories keep a discovery (and their roots a watch): a host
/// serves a handful of workspaces.
const MAX_WORKSPACES: usize = 64;

impl Library {
    pub(crate) fn new(
        ctx: Context,
        roots: SharedRoots,
        followed: bool,
    ) -> Result<Arc<Self>, PluginError> {
        Ok(Arc::new(Self {
            scoped: ctx.channel(&SKILLS_ROOTS)?,
            ctx,
            roots,
            generation: AtomicU64::new(0),
            followed: AtomicBool::new(followed),
            cache: Mutex::new(HashMap::new()),
            watched: Mutex::new(HashSet::new()),
        }))
    }

    /// Something under a root changed: the next call looks again.
    pub(crate) fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// A watch could not be kept: discoveries are no longer kept between calls.
    pub(crate) fn unfollowed(&self) {
        self.followed.store(false, Ordering::Release);
    }

    /// Whether `path` could be a skill file or folder under one of the roots `cwd`s see.
    pub(crate) fn concerns(&self, path: &Path) -> bool {
        lock(&self.watched)
            .iter()
            .any(|root| path.starts_with(root))
    }

    /// Starts following `roots` (those not followed yet).
    pub(crate) fn follow(self: &Arc<Self>, roots: &[Root]) {
        for root in roots {
            if lock(&self.watched).insert(root.path.clone()) {
                dsh_path_follow::follow(self, root.path.clone(), true, "skills");
            }
        }
    }

    pub(crate) fn context(&self) -> &Context {
        &self.ctx
    }

    /// The shared roots, to follow from the start.
    pub(crate) fn shared_roots(&self) -> Vec<Root> {
        self.roots.shared()
    }

    /// The folders the plugins serving tool scope chain `scope` add (`skills/roots`): absolute
    /// ones, each once; a relative one is logged and left out (it has no base to resolve on).
    async fn scope_roots(&self, scope: &[String]) -> Vec<PathBuf> {
        let asked = self
            .scoped
            .waterfall(RArc::new(Json::encode(&scope.to_vec())), |_| async {
                Ok(Json::encode(&Vec::<String>::new()))
            })
            .await
            .map(|answer| answer.decode());
        let folders = match asked {
            Ok(Ok(folders)) => folders,
            Ok(Err(error)) => {
                self.ctx
                    .log(LogLevel::Warn, &format!("skills/roots: {error}"));
                Vec::new()
            }
            Err(error) => {
                self.ctx
                    .log(LogLevel::Warn, &format!("skills/roots: {error}"));
                Vec::new()
            }
        };
        let mut roots: Vec<PathBuf> = Vec::new();
        for folder in folders.into_iter().map(PathBuf::from) {
            if !folder.is_absolute() {
                let shown = folder.display();
                self.ctx.log(
                    LogLevel::Warn,
                    &format!("skills/roots: {shown} is not an absolute path; left out"),
                );
            } else if !roots.contains(&folder) {
                roots.push(folder);
            }
        }
        roots
    }

    /// The skills a session working in `cwd` with tool scope chain `scope` sees.
    pub(crate) async fn for_session(
        self: &Arc<Self>,
        cwd: &str,
        scope: &[String],
    ) -> Result<Arc<Discovery>, LoadError> {
        let scoped = self.scope_roots(scope).await;
        // The scope's folders are part of what a discovery was made from.
        let key = scoped.iter().fold(cwd.to_owned(), |mut key, root| {
            key.push('\0');
            key.push_str(&root.to_string_lossy());
            key
        });
        let generation = self.generation.load(Ordering::Acquire);
        let followed = self.followed.load(Ordering::Acquire);
        if followed
            && let Some(cached) = lock(&self.cache).get(&key)
            && cached.generation == generation
        {
            return Ok(cached.discovery.clone());
        }
        let roots = self.roots.clone();
        let dir = PathBuf::from(cwd);
        // A project's own skills count once the person trusts it (a trust given later bumps
        // the generation).
        let trusted = is_trusted(&self.ctx, cwd);
        let (project_roots, found) = self
            .ctx
            .blocking(move || {
                let roots = match trusted {
                    true => roots.of_project(&project_of(&dir), &scoped),
                    false => roots.scoped_and_shared(&scoped),
                };
                let found = discover(&roots);
                (roots, found)
            })
            .await
            .map_err(|error| LoadError::Host(error.to_string()))?;
        let found = Arc::new(found);
        let previous = {
            let mut cache = lock(&self.cache);
            if cache.len() >= MAX_WORKSPACES && !cache.contains_key(&key) {
                cache.clear();
            }
            cache.insert(
                key,
                Cached {
                    generation,
                    discovery: found.clone(),
                },
            )
        };
        self.report(previous.as_ref().map(|cached| &*cached.discovery), &found);
        if followed && lock(&self.watched).len() < MAX_WORKSPACES * 2 {
            self.follow(&project_roots);
        }
        Ok(found)
    }

    /// Logs the problems `found` has that `previous` had not.
    fn report(&self, previous: Option<&Discovery>, found: &Discovery) {
        for problem in &found.problems {
            let known = previous.is_some_and(|previous| previous.problems.contains(problem));
            if !known {
                self.ctx
                    .log(LogLevel::Warn, &format!("{problem}; the other skills load"));
            }
        }
    }
}

impl dsh_path_follow::Followed for Library {
    fn context(&self) -> &Context {
        &self.ctx
    }

    /// A change below a root, or of a folder on the way to one.
    fn concerns(&self, root: &Path, changed: &Path) -> bool {
        changed.starts_with(root) || root.starts_with(changed)
    }

    fn invalidate(&self) {
        Library::invalidate(self);
    }

    fn unfollowed(&self) {
        Library::unfollowed(self);
    }
}
