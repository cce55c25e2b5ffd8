//! Where skills are found, and finding them. A workspace's roots come first (`.dsh/skills`,
//! then `.agents/skills`, of the project: the nearest ancestor of the working directory holding
//! `.git`, else the working directory itself), then the configured roots, then the user's
//! (`$DSH_HOME/skills`, whose `.system` folder is not the user's, then `~/.agents/skills`).
//! A root holds one folder per skill (`<name>/SKILL.md`, beside the files it refers to) or flat
//! `<name>.md` files; a name found twice is the first root's. A root that does not exist is an
//! empty one; a file that does not read as a skill is a problem, and the others still load.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use dsh_doc_limits::Limits;

use crate::error::{LoadError, SkillError};
use crate::skill::{Skill, parse};

/// One root to look in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Root {
    pub(crate) path: PathBuf,
    /// Skip the `.system` folder (the dsh home's, which the user does not own).
    pub(crate) skip_system: bool,
}

impl Root {
    fn new(path: PathBuf) -> Self {
        Self {
            path,
            skip_system: false,
        }
    }
}

/// The roots that do not depend on the workspace.
#[derive(Debug, Clone, Default)]
pub(crate) struct SharedRoots {
    pub(crate) custom: Vec<PathBuf>,
    /// `$DSH_HOME/skills`.
    pub(crate) home: Option<PathBuf>,
    /// `~/.agents/skills`.
    pub(crate) agents: Option<PathBuf>,
}

impl SharedRoots {
    /// Every root of `project` for a session whose tool scope adds `scoped`, in the order a
    /// name is looked up: the project's own first (a project can override anything), then
    /// the scope's.
    pub(crate) fn of_project(&self, project: &Path, scoped: &[PathBuf]) -> Vec<Root> {
        let mut roots = vec![
            Root::new(project.join(".dsh").join("skills")),
            Root::new(project.join(".agents").join("skills")),
        ];
        roots.extend(self.scoped_and_shared(scoped));
        roots
    }

    /// The roots of a workspace not trusted (its own roots do not count): the scope's, then
    /// those every workspace shares.
    pub(crate) fn scoped_and_shared(&self, scoped: &[PathBuf]) -> Vec<Root> {
        let mut roots: Vec<Root> = scoped.iter().cloned().map(Root::new).collect();
        roots.extend(self.shared());
        roots
    }

    /// The roots every workspace shares.
    pub(crate) fn shared(&self) -> Vec<Root> {
        let mut roots: Vec<Root> = self.custom.iter().cloned().map(Root::new).collect();
        if let Some(home) = &self.home {
            roots.push(Root {
                path: home.clone(),
                skip_system: true,
            });
        }
        roots.extend(self.agents.iter().cloned().map(Root::new));
        roots
    }
}

/// The project `cwd` belongs to: its nearest ancestor with a `.git`, else `cwd` itself.
pub(crate) fn project_of(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_owned()
}

/// What a look through some roots found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Discovery {
    /// The winning skill of each name, by name.
    pub(crate) skills: Vec<Skill>,
    /// Files that are not skills, each naming the file and what is wrong.
    pub(crate) problems: Vec<SkillError>,
    /// False when a root could not be listed: the skills it holds may be missing.
    pub(crate) complete: bool,
}

impl Discovery {
    pub(crate) fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name == name)
    }
}

/// The skill file of directory entry `path`, and the directory it resolves against.
fn skill_file(root: &Path, path: &Path) -> Option<(PathBuf, PathBuf)> {
    let metadata = std::fs::metadata(path).ok()?;
    if metadata.is_dir() {
        let file = path.join("SKILL.md");
        return file.is_file().then(|| (file, path.to_owned()));
    }
    let flat = metadata.is_file() && path.extension().is_some_and(|ext| ext == "md");
    flat.then(|| (path.to_owned(), root.to_owned()))
}

/// Reads skill file `path`.
pub(crate) fn read(path: &Path, directory: &Path) -> Result<(Skill, String), SkillError> {
    let text = dsh_doc_limits::read_capped(path, Limits::DOCUMENT.max_bytes).map_err(|error| {
        SkillError::Read {
            path: path.to_owned(),
            message: error.to_string(),
        }
    })?;
    parse(&text, path, directory)
}

/// Looks through `roots` (blocking: run it on the host's pool).
pub(crate) fn discover(roots: &[Root]) -> Discovery {
    let mut found = Discovery {
        complete: true,
        ..Discovery::default()
    };
    for root in roots {
        let entries = match std::fs::read_dir(&root.path) {
            Ok(entries) => entries,
            Err(error)
                if matches!(error.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) =>
            {
                continue;
            }
            Err(error) => {
                found.complete = false;
                found.problems.push(SkillError::Read {
                    path: root.path.clone(),
                    message: format!("the skill root cannot be listed: {error}"),
                });
                continue;
            }
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
        paths.sort();
        for path in paths {
            let hidden = path
                .file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with('.'));
            if hidden || (root.skip_system && path.ends_with(".system")) {
                continue;
            }
            let Some((file, directory)) = skill_file(&root.path, &path) else {
                continue;
            };
            match read(&file, &directory) {
                Ok((skill, _)) if found.get(&skill.name).is_none() => found.skills.push(skill),
                Ok(_) => {}
                Err(problem) => found.problems.push(problem),
            }
        }
    }
    found.skills.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The body of `skill`, read again now (an edit of the instructions shows at the next load);
/// a file whose name changed since discovery is gone under the old name.
pub(crate) fn load(skill: &Skill) -> Result<String, LoadError> {
    let (now, body) = match read(&skill.path, &skill.directory) {
        Ok(read) => read,
        Err(SkillError::Read { .. }) => return Err(LoadError::Unknown(skill.name.clone())),
        Err(problem) => return Err(LoadError::Broken(problem)),
    };
    if now.name != skill.name {
        return Err(LoadError::Unknown(skill.name.clone()));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("dsh-skills-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn skill(name: &str, description: &str) -> String {
        format!("---\nname: {name}\ndescription: {description}\n---\nBody of {name}.\n")
    }

    #[test]
    fn roots_are_looked_up_in_order_and_the_first_name_wins() {
        let dir = temp("order");
        let project = dir.join("project");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        let cwd = project.join("sub");
        std::fs::create_dir_all(&cwd).unwrap();
        assert_eq!(project_of(&cwd), project);
        write(
            &project.join(".dsh/skills/alpha/SKILL.md"),
            &skill("alpha", "project dsh"),
        );
        write(
            &project.join(".agents/skills/alpha/SKILL.md"),
            &skill("alpha", "project agents"),
        );
        write(
            &project.join(".agents/skills/beta.md"),
            &skill("beta", "flat"),
        );
        write(
            &dir.join("home/skills/gamma/SKILL.md"),
            &skill("gamma", "home"),
        );
        write(
            &dir.join("home/skills/.system/delta/SKILL.md"),
            &skill("delta", "system"),
        );
        write(
            &dir.join("agents/skills/epsilon/SKILL.md"),
            &skill("epsilon", "agents"),
        );
        write(&dir.join("agents/skills/notes/README.txt"), "not a skill");
        let roots = SharedRoots {
            custom: vec![dir.join("custom")],
            home: Some(dir.join("home/skills")),
            agents: Some(dir.join("agents/skills")),
        };
        let found = discover(&roots.of_project(&project_of(&cwd), &[]));
        let names: Vec<(&str, &str)> = found
            .skills
            .iter()
            .map(|skill| (skill.name.as_str(), skill.description.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("alpha", "project dsh"),
                ("beta", "flat"),
                ("epsilon", "agents"),
                ("gamma", "home")
            ]
        );
        assert!(
            found.complete && found.problems.is_empty(),
            "{:?}",
            found.problems
        );
        assert_eq!(
            found.get("beta").unwrap().directory,
            project.join(".agents/skills")
        );
        assert_eq!(load(found.get("gamma").unwrap()).unwrap(), "Body of gamma.");
    }

    #[test]
    fn a_broken_file_is_a_problem_and_the_others_load() {
        let dir = temp("broken");
        write(&dir.join("good/SKILL.md"), &skill("good", "fine"));
        write(&dir.join("bad/SKILL.md"), "---\nname: bad\n---\n");
        let found = discover(&[Root::new(dir.clone())]);
        assert_eq!(found.skills.len(), 1);
        let problem = found.problems[0].to_string();
        assert!(
            problem.contains("bad/SKILL.md") && problem.contains("`description`"),
            "{problem}"
        );
    }

    #[test]
    fn a_renamed_skill_is_gone_under_its_old_name() {
        let dir = temp("renamed");
        let file = dir.join("one/SKILL.md");
        write(&file, &skill("one", "d"));
        let found = discover(&[Root::new(dir.clone())]);
        write(&file, &skill("two", "d"));
        assert_eq!(
            load(found.get("one").unwrap()),
            Err(LoadError::Unknown("one".into()))
        );
    }
}
