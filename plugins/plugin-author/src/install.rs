//! `plugin_install {path, config?}`: the library of the crate's last build, checked by the
//! host's own loader in a separate, confined `dsh-host check` (the ABI layout, the plugin-api
//! version, the plugin header; a library that fails never reaches the plugins folder, and what
//! runs keeps running), then copied into the plugins folder (a rename, so the watcher never
//! sees half a file) and mounted as a child of this row; a new version of a plugin the row runs
//! takes the running one's place (`replace`). The result names the tools that appeared, or why
//! the plugin did not start.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use abi_stable::std_types::{RString, RVec};
use dsh_plugin_api::cancel::{CancelBox, Either, first_of};
use dsh_plugin_api::{Deserialize, lock};
use dsh_tools_seam::CallView;
use serde_json::{Map, Value};

use crate::build::{self, Built};
use crate::error::AuthorError;
use crate::run::{Command, run as run_confined};
use crate::tools::capped;
use crate::{State, installed, replace};

#[derive(Deserialize)]
#[serde(crate = "dsh_plugin_api::serde", deny_unknown_fields)]
struct Arguments {
    path: String,
    #[serde(default)]
    config: Option<Map<String, Value>>,
}

pub(crate) async fn run(
    state: &State,
    call: &CallView,
    cancel: CancelBox,
) -> Result<String, AuthorError> {
    let arguments: Arguments = serde_json::from_str(&call.arguments)?;
    let dir = State::resolve(call, &arguments.path);
    let built = lock(&state.built)
        .get(&dir)
        .cloned()
        .ok_or_else(|| AuthorError::NotBuilt {
            dir: dir.clone(),
            path: arguments.path.clone(),
        })?;
    if build::stamp(&built.library) != built.stamp {
        return Err(AuthorError::Stale {
            library: built.library,
            dir,
            path: arguments.path,
        });
    }
    let file = format!("lib{}.so", built.name);
    // A name the host ships would be shadowed by the plugins folder at the next start.
    if let Some(shipped) = state.host_program.parent().map(|dir| dir.join(&file))
        && shipped.is_file()
    {
        return Err(AuthorError::Shipped {
            name: built.name,
            shipped,
        });
    }
    let started = Instant::now();
    check(state, call, &built, cancel).await?;
    let checked = started.elapsed().as_secs_f64();
    let mut config = arguments.config.unwrap_or_default();
    if !state.scope.is_empty() && !config.contains_key("scope") {
        config.insert("scope".to_owned(), Value::String(state.scope.clone()));
    }
    // A new version of a plugin this row runs replaces it: the running version's file is set
    // aside until the new one is ACTIVE, to come back to if it fails.
    let previous = lock(&state.mounted).get(&built.name).copied();
    let aside = match previous {
        Some(_) => replace::set_aside(&state.plugins_dir, &file)?,
        None => None,
    };
    let installed = copy_in(&built.library, &state.plugins_dir, &file)?;
    if let Some(fiber) = previous {
        state
            .ctx
            .unmount(fiber)
            .await
            .map_err(|error| AuthorError::Mount {
                installed: installed.clone(),
                message: error.to_string(),
            })?;
        lock(&state.mounted).remove(&built.name);
    }
    let before = tool_names(state);
    let mounting = Instant::now();
    let fiber = match state.ctx.mount(&built.name, &Value::Object(config.clone())) {
        Ok(fiber) => fiber,
        Err(error) => {
            let restored = replace::restore(state, &built.name, &file, None, aside).await;
            return Err(AuthorError::Mount {
                installed: installed.clone(),
                message: format!("{error}{restored}"),
            });
        }
    };
    lock(&state.mounted).insert(built.name.clone(), fiber);
    let settle = Duration::from_millis(state.settle_timeout_ms);
    let outcome = first_of(state.ctx.settled(fiber), state.ctx.sleep(settle)).await;
    let mounted = mounting.elapsed().as_secs_f64();
    let replacing = match previous {
        Some(old) => format!(" in place of fiber {old}, the version that ran until now"),
        None => String::new(),
    };
    let header = format!(
        "Installed {} (checked in {checked:.1} s) and mounted it as fiber {fiber} of row `{}`{replacing}",
        installed.display(),
        state.ctx.row_id()
    );
    // Kept for the next start unless it failed (a failed one is fixed and installed again).
    let kept = match outcome {
        Either::Left(Err(_)) => Ok(()),
        _ => installed::record(
            &state.installed_file,
            installed::Entry {
                name: built.name.clone(),
                scope: state.scope.clone(),
                config,
            },
        ),
    };
    let header = match kept {
        Ok(()) => header,
        Err(error) => format!("{header} (not listed for the next start: {error})"),
    };
    if let Either::Left(Err(error)) = outcome {
        let restored = replace::restore(state, &built.name, &file, Some(fiber), aside).await;
        return Err(AuthorError::Failed {
            header,
            message: error.to_string(),
            restored,
        });
    }
    replace::discard(aside);
    match outcome {
        Either::Left(Ok(())) => {
            let added: Vec<String> = tool_names(state).difference(&before).cloned().collect();
            let tools = match added.is_empty() {
                true => "it registered no tool".to_owned(),
                false => format!(
                    "its tools, offered from the next step on: {}",
                    added.join(", ")
                ),
            };
            Ok(format!("{header}; ACTIVE in {mounted:.1} s; {tools}."))
        }
        // Answered above.
        Either::Left(Err(error)) => Err(AuthorError::Failed {
            header,
            message: error.to_string(),
            restored: String::new(),
        }),
        Either::Right(()) => Ok(format!(
            "{header}; it is not active after {} s (it waits for a service no row provides, or its apply has not finished).",
            settle.as_secs()
        )),
    }
}

/// `dsh-host check` on a copy of the library in a folder of its own, under the sandbox like
/// any command of the session: the plugin's code is the model's.
async fn check(
    state: &State,
    call: &CallView,
    built: &Built,
    cancel: CancelBox,
) -> Result<(), AuthorError> {
    // A cargo artefact always lies in a folder of the target directory.
    let build_dir = built.library.parent().unwrap_or(Path::new("/"));
    // One folder per call: two sessions may install at once from the shared target directory.
    let call_id: String = call
        .call_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    let stage = build_dir.join(format!(
        ".dsh-install-check-{}-{call_id}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&stage);
    let home = stage.join("home");
    let file = format!("lib{}.so", built.name);
    let tree = stage.join("check.yml");
    let prepared = std::fs::create_dir_all(&home)
        .and_then(|()| std::fs::copy(&built.library, stage.join(&file)).map(|_| ()))
        .and_then(|()| std::fs::write(&tree, format!("- id: candidate\n  name: {}\n", built.name)));
    prepared.map_err(|source| {
        AuthorError::io(
            format!("preparing the check in {}", stage.display()),
            source,
        )
    })?;
    let program = state.host_program.display().to_string();
    let stage_text = stage.display().to_string();
    let finished = run_confined(
        &state.ctx,
        &state.sandbox,
        call,
        Command {
            program: &program,
            args: vec![
                "check".to_owned(),
                "--config".to_owned(),
                tree.display().to_string(),
                "--plugin-dir".to_owned(),
                stage_text.clone(),
            ],
            cwd: &stage_text,
            env: vec![("DSH_HOME", home.display().to_string())],
            timeout: Duration::from_millis(state.check_timeout_ms),
        },
        cancel,
        64 << 10,
    )
    .await?;
    let _ = std::fs::remove_dir_all(&stage);
    // 0: active; 2: waiting for a service the check's one-row tree does not provide (a tool
    // plugin waits for `tools`). Both mean the host loaded the library.
    match finished.code {
        Some(0 | 2) => Ok(()),
        _ => Err(AuthorError::Refused {
            library: built.library.clone(),
            report: capped(
                format!("{}\n{}", finished.stdout.trim(), finished.stderr.trim()).trim(),
                state.max_message_bytes,
            ),
        }),
    }
}

/// Copies `library` into `dir` as `file` through a temporary name and a rename.
fn copy_in(library: &Path, dir: &Path, file: &str) -> Result<PathBuf, AuthorError> {
    let target = dir.join(file);
    let partial = dir.join(format!(".{file}.partial"));
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::copy(library, &partial).map(|_| ()))
        .and_then(|()| std::fs::rename(&partial, &target))
        .map_err(|source| {
            let _ = std::fs::remove_file(&partial);
            let doing = format!("copying {} to {}", library.display(), target.display());
            AuthorError::io(doing, source)
        })?;
    Ok(target)
}

/// The tools this row's scope sees.
fn tool_names(state: &State) -> BTreeSet<String> {
    let scope: RVec<RString> = match state.scope.is_empty() {
        true => RVec::new(),
        false => RVec::from(vec![RString::from(state.scope.as_str())]),
    };
    state
        .tools
        .schemas(scope)
        .into_result()
        .ok()
        .and_then(|schemas| schemas.decode().ok())
        .map(|schemas| schemas.into_iter().map(|schema| schema.name).collect())
        .unwrap_or_default()
}
