//! The agent's command line, as the host hands it over through `cmdline`: the model route and
//! the recorded log to replay in the model's place. Everything else comes over the protocol.

use std::path::PathBuf;

pub(crate) const USAGE: &str = "usage: dsh-host --profile acp [--] [OPTIONS]

An Agent Client Protocol agent (protocol version 1) on stdin and stdout, for editors
(Zed, JetBrains, Neovim, Emacs...) and ACP clients: they start it and speak to it.

options:
  --model PROVIDER/MODEL     the model route of new sessions (split at the first '/')
  --replay FILE              answer every model request from a recorded session log
                             (its replay.override.json and session.1.jsonl... beside it)
  -h, --help                 this text";

/// What the command line asks for.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Args {
    pub(crate) model: Option<(String, String)>,
    pub(crate) replay: Option<PathBuf>,
}

/// A command line the agent cannot run, in words for the user.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UsageError(pub(crate) String);

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
        _ => Err(UsageError(format!("`{route}` is not PROVIDER/MODEL"))),
    }
}

pub(crate) fn parse(args: &[String]) -> Result<Parsed, UsageError> {
    let mut parsed = Args::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = |name: &str| {
            rest.next()
                .cloned()
                .ok_or_else(|| UsageError(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--" => {}
            "-h" | "--help" => return Ok(Parsed::Help),
            "--model" => {
                parsed.model = Some(
                    split_route(&value("--model")?)
                        .map_err(|error| UsageError(format!("--model: {error}")))?,
                )
            }
            "--replay" => parsed.replay = Some(PathBuf::from(value("--replay")?)),
            other => return Err(UsageError(format!("unknown argument `{other}`"))),
        }
    }
    Ok(Parsed::Run(parsed))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn options_are_read() {
        let parsed = parse(&strings(&["--", "--replay", "a.jsonl", "--model", "p/m/x"])).unwrap();
        assert_eq!(
            parsed,
            Parsed::Run(Args {
                model: Some(("p".to_owned(), "m/x".to_owned())),
                replay: Some(PathBuf::from("a.jsonl")),
            })
        );
        assert_eq!(parse(&strings(&["--help"])).unwrap(), Parsed::Help);
    }

    #[test]
    fn mistakes_are_named() {
        assert!(parse(&strings(&["task"])).unwrap_err().0.contains("`task`"));
        assert!(
            parse(&strings(&["--replay"]))
                .unwrap_err()
                .0
                .contains("--replay needs a value")
        );
        assert!(
            parse(&strings(&["--model", "nope"]))
                .unwrap_err()
                .0
                .contains("PROVIDER/MODEL")
        );
    }
}
