//! The `dsh-host` command line.
//!
//! `dsh-host [HOST OPTIONS] [--] [APP ARGS..]`: host options are the runtime's own; the first
//! token the host does not know, or everything after `--`, goes unchanged to the tree through the
//! `cmdline` service. Subcommands (`check`, `status`, `session`) are recognised only as the first
//! argument, so an app argument can never be mistaken for one.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Options that choose and shape the tree.
#[derive(Debug, Clone, Default, Args)]
pub struct TreeArgs {
    /// Run one YAML row list as is (no profile layering).
    #[arg(long, value_name = "FILE", conflicts_with = "profile")]
    pub config: Option<PathBuf>,
    /// Compose and run the profile `$DSH_HOME/profiles/NAME`.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// A patch layer applied after the profile's and the home's (repeatable, in order).
    #[arg(long = "patch", value_name = "FILE")]
    pub patches: Vec<PathBuf>,
    /// A directory searched for plugin libraries before `$DSH_HOME/plugins` and the host's own
    /// directory (repeatable, in lookup order).
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,
}

/// `dsh-host [HOST OPTIONS] [--] [APP ARGS..]`
#[derive(Debug, Parser)]
#[command(
    name = "dsh-host",
    version,
    about = "Runs a dsh plugin tree",
    disable_help_subcommand = true
)]
pub struct HostArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Print the composed rows, each with the layer that last changed it, and exit.
    #[arg(long)]
    pub dump_config: bool,
    /// Do not watch plugin directories and config files for changes.
    #[arg(long)]
    pub no_watch: bool,
}

#[derive(Debug, Parser)]
#[command(name = "dsh-host", disable_help_subcommand = true)]
pub struct SubcommandArgs {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Boot the tree, wait until it settles, print every fiber and exit: 0 all ACTIVE, 1 any
    /// FAILED, 2 some PENDING.
    Check {
        #[command(flatten)]
        tree: TreeArgs,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Ask the running hosts of this `$DSH_HOME` for their fiber table.
    Status {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Inspect session logs (read-only).
    Session {
        #[command(subcommand)]
        command: crate::session_cli::SessionCommand,
    },
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Invocation {
    Run {
        host: HostArgs,
        app_args: Vec<String>,
    },
    Sub(Command),
}

const SUBCOMMANDS: [&str; 3] = ["check", "status", "session"];
const VALUE_OPTIONS: [&str; 4] = ["--config", "--profile", "--patch", "--plugin-dir"];
const FLAG_OPTIONS: [&str; 6] = [
    "--dump-config",
    "--no-watch",
    "--help",
    "-h",
    "--version",
    "-V",
];

/// Splits host options from app args and parses them.
pub fn parse(args: Vec<OsString>) -> Result<Invocation, clap::Error> {
    let args: Vec<String> = args
        .into_iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let program = args
        .first()
        .cloned()
        .unwrap_or_else(|| "dsh-host".to_owned());
    if let Some(first) = args.get(1)
        && SUBCOMMANDS.contains(&first.as_str())
    {
        return SubcommandArgs::try_parse_from(args).map(|parsed| Invocation::Sub(parsed.command));
    }
    let (host, app_args) = split_host_args(&args[1.min(args.len())..]);
    let mut host_argv = vec![program];
    host_argv.extend(host);
    let host = HostArgs::try_parse_from(host_argv)?;
    Ok(Invocation::Run { host, app_args })
}

/// Host options up to the first unknown token or `--`; the rest are app args.
fn split_host_args(args: &[String]) -> (Vec<String>, Vec<String>) {
    let mut host = Vec::new();
    let mut index = 0;
    while index < args.len() {
        let arg = &args[index];
        if arg == "--" {
            return (host, args[index + 1..].to_vec());
        }
        let option = arg.split_once('=').map(|(name, _)| name).unwrap_or(arg);
        if VALUE_OPTIONS.contains(&option) {
            host.push(arg.clone());
            if !arg.contains('=')
                && let Some(value) = args.get(index + 1)
            {
                host.push(value.clone());
                index += 1;
            }
        } else if FLAG_OPTIONS.contains(&arg.as_str()) {
            host.push(arg.clone());
        } else {
            return (host, args[index..].to_vec());
        }
        index += 1;
    }
    (host, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(items: &[&str]) -> Vec<OsString> {
        std::iter::once("dsh-host")
            .chain(items.iter().copied())
            .map(OsString::from)
            .collect()
    }

    #[test]
    fn app_args_start_at_first_unknown_token() {
        let Invocation::Run { host, app_args } = parse(argv(&[
            "--profile",
            "web",
            "--patch",
            "a.yml",
            "--port",
            "3000",
            "--config",
            "x",
        ]))
        .unwrap() else {
            panic!("expected run");
        };
        assert_eq!(host.tree.profile.as_deref(), Some("web"));
        assert_eq!(host.tree.patches, vec![PathBuf::from("a.yml")]);
        assert_eq!(app_args, vec!["--port", "3000", "--config", "x"]);
    }

    #[test]
    fn double_dash_is_consumed_once() {
        let Invocation::Run { app_args, .. } =
            parse(argv(&["--config=hello.yml", "--", "--", "check"])).unwrap()
        else {
            panic!("expected run");
        };
        assert_eq!(app_args, vec!["--", "check"]);
    }

    #[test]
    fn subcommands_only_as_first_argument() {
        assert!(matches!(
            parse(argv(&["check", "--config", "a.yml", "--json"])).unwrap(),
            Invocation::Sub(Command::Check { json: true, .. })
        ));
        let Invocation::Run { app_args, .. } =
            parse(argv(&["--profile", "headless", "check"])).unwrap()
        else {
            panic!("expected run");
        };
        assert_eq!(app_args, vec!["check"]);
    }

    #[test]
    fn config_and_profile_conflict() {
        assert!(parse(argv(&["--config", "a.yml", "--profile", "web"])).is_err());
    }
}
