//! The runner's command line, as the host hands it over through `cmdline`.

use std::path::PathBuf;

pub(crate) const USAGE: &str = "usage: dsh-host --profile headless [OPTIONS] \"TASK\"

Runs an agent on TASK (and each --then task after it) and prints the final answer.

options:
  --output text|stream-json  what stdout carries (default: text, the final answer)
  --resume ID                continue session ID with a new task
  --cwd DIR                  working directory of the tools (default: the current one)
  --model PROVIDER/MODEL     the model route (split at the first '/')
  --preset ID                the agent preset of a new session (standard, code, minimal,
                             plugin-author or one of $DSH_HOME/agent-presets; default: the
                             configured default)
  --replay FILE              answer every model request from a recorded session log
  --then TASK                another task, run once the one before completed and everything
                             it delegated settled (repeatable)
  --trust-project            trust the project for this run: its .mcp.json servers, hooks,
                             .dsh/settings.yaml and skills take effect (untrusted, they wait)
  -h, --help                 this text";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    Text,
    StreamJson,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Args {
    pub(crate) task: String,
    pub(crate) output: Output,
    pub(crate) resume: Option<String>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) model: Option<(String, String)>,
    /// The agent preset of a new session.
    pub(crate) preset: Option<String>,
    pub(crate) replay: Option<PathBuf>,
    /// Tasks run after `task`, in order.
    pub(crate) then: Vec<String>,
    /// Trust the project's own configuration for this run.
    pub(crate) trust_project: bool,
}

/// A command line the runner cannot run, in words for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UsageError(pub(crate) String);

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    Run(Args),
    Help,
}

/// Splits `provider/model` at the first `/`, so model ids may contain slashes.
pub(crate) fn split_route(route: &str) -> Result<(String, String), UsageError> {
    match route.split_once('/') {
        Some((provider, model)) if !provider.is_empty() && !model.is_empty() => {
            Ok((provider.to_owned(), model.to_owned()))
        }
        _ => Err(UsageError(format!(
            "--model: `{route}` is not PROVIDER/MODEL"
        ))),
    }
}

pub(crate) fn parse(args: &[String]) -> Result<Parsed, UsageError> {
    let mut task = Vec::new();
    let mut output = Output::Text;
    let (mut resume, mut cwd, mut model, mut replay) = (None, None, None, None);
    let mut preset = None;
    let mut then = Vec::new();
    let mut trust_project = false;
    let mut rest = args.iter();
    let mut literal = false;
    while let Some(arg) = rest.next() {
        if literal || !arg.starts_with('-') || arg == "-" {
            task.push(arg.clone());
            continue;
        }
        let mut value = |name: &str| {
            rest.next()
                .cloned()
                .ok_or_else(|| UsageError(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--" => literal = true,
            "-h" | "--help" => return Ok(Parsed::Help),
            "--output" => {
                output = match value("--output")?.as_str() {
                    "text" => Output::Text,
                    "stream-json" => Output::StreamJson,
                    other => {
                        return Err(UsageError(format!(
                            "--output: `{other}` is not text or stream-json"
                        )));
                    }
                }
            }
            "--resume" => resume = Some(value("--resume")?),
            "--cwd" => cwd = Some(PathBuf::from(value("--cwd")?)),
            "--model" => model = Some(split_route(&value("--model")?)?),
            "--preset" => preset = Some(value("--preset")?),
            "--replay" => replay = Some(PathBuf::from(value("--replay")?)),
            "--then" => then.push(value("--then")?),
            "--trust-project" => trust_project = true,
            other => return Err(UsageError(format!("unknown option `{other}`"))),
        }
    }
    if preset.is_some() && resume.is_some() {
        return Err(UsageError(
            "--preset chooses a new session's preset; a resumed session keeps its own".to_owned(),
        ));
    }
    let task = task.join(" ");
    if task.trim().is_empty() {
        return Err(UsageError(
            "give a task: dsh-host --profile headless \"what to do\"".to_owned(),
        ));
    }
    Ok(Parsed::Run(Args {
        task,
        output,
        resume,
        cwd,
        model,
        preset,
        replay,
        then,
        trust_project,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn options_and_the_task_are_read() {
        let parsed = parse(&strings(&[
            "--model",
            "openrouter/deepseek/deepseek-chat",
            "--output",
            "stream-json",
            "fix",
            "it",
        ]))
        .unwrap();
        let Parsed::Run(args) = parsed else {
            panic!("{parsed:?}")
        };
        assert_eq!(args.task, "fix it");
        assert!(args.then.is_empty());
        assert_eq!(args.output, Output::StreamJson);
        assert_eq!(
            args.model,
            Some(("openrouter".to_owned(), "deepseek/deepseek-chat".to_owned()))
        );
    }

    #[test]
    fn mistakes_are_named() {
        assert!(parse(&strings(&[])).unwrap_err().0.contains("give a task"));
        assert!(
            parse(&strings(&["--output", "xml", "t"]))
                .unwrap_err()
                .0
                .contains("xml")
        );
        assert!(
            parse(&strings(&["--model", "nomodel", "t"]))
                .unwrap_err()
                .0
                .contains("PROVIDER/MODEL")
        );
        assert!(
            parse(&strings(&["--bogus", "t"]))
                .unwrap_err()
                .0
                .contains("--bogus")
        );
        assert!(
            parse(&strings(&["t", "--cwd"]))
                .unwrap_err()
                .0
                .contains("needs a value")
        );
        assert_eq!(
            parse(&strings(&["--", "--not-an-option"])).map(|p| matches!(p, Parsed::Run(_))),
            Ok(true)
        );
    }
}
