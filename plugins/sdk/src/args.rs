//! The runtime's command line, as the host hands it over through `cmdline`.

use std::path::PathBuf;

pub(crate) const USAGE: &str = "usage: dsh-host --profile sdk [--] [OPTIONS]

Serves the DeepSeek Harness SDK protocol: newline-delimited JSON-RPC 2.0 on stdin and stdout
(requests initialize, session/prompt, shutdown; notifications session.event, session.status,
subagent.started, subagent.finished). stdout carries frames only.

options:
  --replay FILE   answer every model request from a recorded session log
                  (the logs of its subagents beside it: session.1.jsonl, ...)
  --cwd DIR       the directory a relative `initialize.cwd` resolves against, and the
                  sessions' working directory when `initialize` names none
                  (default: the current one)
  -h, --help      this text";

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Args {
    pub(crate) replay: Option<PathBuf>,
    pub(crate) cwd: Option<PathBuf>,
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    Serve(Args),
    Help,
}

/// A command line the runtime cannot serve, in words for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UsageError(pub(crate) String);

pub(crate) fn parse(args: &[String]) -> Result<Parsed, UsageError> {
    let mut parsed = Args::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = |name: &str| {
            rest.next()
                .map(PathBuf::from)
                .ok_or_else(|| UsageError(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--" => {}
            "-h" | "--help" => return Ok(Parsed::Help),
            "--replay" => parsed.replay = Some(value("--replay")?),
            "--cwd" => parsed.cwd = Some(value("--cwd")?),
            other => {
                return Err(UsageError(format!(
                    "unknown argument `{other}` (the SDK runtime takes its prompts over stdin)"
                )));
            }
        }
    }
    Ok(Parsed::Serve(parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn options_are_read_and_mistakes_named() {
        assert_eq!(
            parse(&strings(&["--", "--replay", "r.jsonl", "--cwd", "/w"])),
            Ok(Parsed::Serve(Args {
                replay: Some("r.jsonl".into()),
                cwd: Some("/w".into()),
            }))
        );
        assert_eq!(parse(&strings(&["-h"])), Ok(Parsed::Help));
        assert!(parse(&strings(&["task"])).unwrap_err().0.contains("`task`"));
        assert!(
            parse(&strings(&["--cwd"]))
                .unwrap_err()
                .0
                .contains("needs a value")
        );
    }
}
