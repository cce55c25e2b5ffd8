//! The `dsh-host` command line.
//!
//! `dsh-host [HOST OPTIONS] [--] [APP ARGS..]`: host options are the runtime's own; the first
//! token the host does not know, or everything after `--`, goes unchanged to the tree through the
//! `cmdline` service. Subcommands (`check`, `status`, `session`) are recognised only as the first
//! argument, so an app argument can never be mistaken for one; `help` is one too.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};

pub mod session;
pub mod status;

impl From<TreeArgs> for crate::app::boot::TreeSpec {
    fn from(tree: TreeArgs) -> Self {
        Self {
            config: tree.config,
            profile: tree.profile,
            patches: tree.patches,
            plugin_dirs: tree.plugin_dirs,
        }
    }
}

impl From<HostArgs> for crate::app::run::RunOptions {
    fn from(host: HostArgs) -> Self {
        Self {
            tree: host.tree.into(),
            dump_config: host.dump_config,
            dump_preset: host.preset,
            no_watch: host.no_watch,
        }
    }
}

/// `dsh-host --help`: the usage forms, the host options (rendered by clap from the fields of
/// [`HostArgs`]), then the commands and the built-in profiles with their own arguments.
const HELP_TEMPLATE: &str = "\
{about}

{usage-heading} {usage}

Host options:
{options}

Everything after the first argument the host does not know, or after `--`, is an APP ARG:
it goes to the profile (its entry plugin) unchanged.

Commands (recognised only as the first argument; `dsh-host help COMMAND` for its options):
  check    Boot a tree, let it settle, print every fiber; exit 0 all ACTIVE, 1 FAILED, 2 PENDING
             dsh-host check (--config FILE | --profile NAME) [--patch FILE].. [--json]
  status   Print the fiber table (and client socket) of the running hosts of this $DSH_HOME
             dsh-host status [--json]
  session  Inspect the stored session logs; export and import one as an archive
             session list [--cwd DIR] [--json]   id, cwd, created, turns, title
             session show ID|FILE [--json]       header, events by type, turns, token usage
             session derive ID|FILE              the model history, one JSON message per line
             session check ID|FILE               exit 0 sound, 1 corrupt (seq, type, rule)
             session export ID [--output FILE]   the session, its subagents, its images: .tar.zst
             session import FILE [--new-ids]     checked whole, then loaded (nothing on refusal)
  schema   Print the client protocol's JSON Schema: every method's params and result, the
             frames, the error codes, the protocol version and features
  help     Print this text, or a command's: dsh-host help COMMAND

Profiles (--profile NAME; created under $DSH_HOME/profiles on first use):
  headless  Run one agent turn on TASK and print the final answer on stdout
              dsh-host --profile headless [--output text|stream-json] [--resume ID] [--cwd DIR]
                       [--model PROVIDER/MODEL] [--replay FILE] TASK
              its own help: dsh-host --profile headless -- --help
  web       The browser app: serves the page on 127.0.0.1 and prints its sign-in URL
  sdk       The SDK runtime: newline-delimited JSON-RPC 2.0 on stdin and stdout
              dsh-host --profile sdk [--] [--replay FILE]
  acp       An Agent Client Protocol agent (version 1) on stdio, for editors
              dsh-host --profile acp [--] [--replay FILE]
  demo      The example greeter and consumer plugins

Logs: a run's INFO and DEBUG records go to a file under $DSH_HOME/logs (the newest 20 are
kept) and stderr shows only warnings and errors; -v, or RUST_LOG=FILTER, puts the full log on
stderr instead. $DSH_HOME defaults to ~/.dsh-host.
";

const USAGE: &str = "\
dsh-host [HOST OPTIONS] --config FILE [--] [APP ARGS]..
       dsh-host [HOST OPTIONS] --profile NAME [--] [APP ARGS]..
       dsh-host COMMAND [ARGS]..   (check, status, session, schema, help)";

/// Options that choose and shape the tree.
#[derive(Debug, Clone, Default, Args)]
pub struct TreeArgs {
    /// Run one YAML row list as is (no profile layering).
    #[arg(long, value_name = "FILE", conflicts_with = "profile")]
    pub config: Option<PathBuf>,
    /// Compose and run the profile `$DSH_HOME/profiles/NAME`.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Apply a patch layer after the profile's and home's (repeatable, in order).
    #[arg(long = "patch", value_name = "FILE")]
    pub patches: Vec<PathBuf>,
    /// Search DIR for plugins before `$DSH_HOME/plugins` (repeatable, in order).
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,
}

/// `dsh-host [HOST OPTIONS] [--] [APP ARGS..]`
#[derive(Debug, Parser)]
#[command(
    name = "dsh-host",
    version,
    about = "dsh-host: runs a dsh plugin tree, the plugins a YAML row list or a profile names,\n\
             until a signal or until the profile's entry plugin ends the run.",
    override_usage = USAGE,
    help_template = HELP_TEMPLATE,
    disable_help_subcommand = true
)]
pub struct HostArgs {
    #[command(flatten)]
    pub tree: TreeArgs,
    /// Print the composed rows with the layer that last changed each, and exit.
    #[arg(long)]
    pub dump_config: bool,
    /// With --dump-config: also print agent preset ID's rows as they are mounted when a
    /// session chooses it (shipped, or $DSH_HOME/agent-presets/ID).
    #[arg(long, value_name = "ID", requires = "dump_config")]
    pub preset: Option<String>,
    /// Do not watch plugin directories and config files for changes.
    #[arg(long)]
    pub no_watch: bool,
    /// Log INFO and up, timestamped, to stderr instead of `$DSH_HOME/logs`.
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Debug, Parser)]
#[command(name = "dsh-host", disable_help_subcommand = true)]
pub struct SubcommandArgs {
    #[command(subcommand)]
    pub command: Command,
    /// Log INFO and up, timestamped, to stderr.
    #[arg(short, long, global = true)]
    pub verbose: bool,
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
    /// Inspect session logs; export and import them.
    Session {
        #[command(subcommand)]
        command: session::SessionCommand,
    },
    /// Print the client protocol's JSON Schema (methods with their params and results, frames,
    /// error codes, version and features).
    Schema,
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Invocation {
    Run {
        host: HostArgs,
        app_args: Vec<String>,
    },
    Sub {
        command: Command,
        verbose: bool,
    },
}

impl Invocation {
    /// `-v`/`--verbose` was given.
    pub fn verbose(&self) -> bool {
        match self {
            Self::Run { host, .. } => host.verbose,
            Self::Sub { verbose, .. } => *verbose,
        }
    }

    /// Whether this invocation mounts a tree (a run or `check`), and so keeps a log file; a
    /// dump, `status` and `session` keep none (of them only `session import` writes under
    /// `$DSH_HOME`: the sessions and images it loads).
    pub fn mounts_a_tree(&self) -> bool {
        match self {
            Self::Run { host, .. } => !host.dump_config,
            Self::Sub { command, .. } => matches!(command, Command::Check { .. }),
        }
    }
}

const SUBCOMMANDS: [&str; 4] = ["check", "status", "session", "schema"];
const VALUE_OPTIONS: [&str; 4] = ["--config", "--profile", "--patch", "--plugin-dir"];
const FLAG_OPTIONS: [&str; 8] = [
    "--dump-config",
    "--no-watch",
    "--verbose",
    "-v",
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
    if let Some(first) = args.get(1) {
        if first == "help" {
            return Err(help(&program, &args[2..]));
        }
        if SUBCOMMANDS.contains(&first.as_str()) {
            return SubcommandArgs::try_parse_from(args).map(|parsed| Invocation::Sub {
                command: parsed.command,
                verbose: parsed.verbose,
            });
        }
    }
    let (host, app_args) = split_host_args(&args[1.min(args.len())..]);
    let mut host_argv = vec![program];
    host_argv.extend(host);
    let host = HostArgs::try_parse_from(host_argv)?;
    Ok(Invocation::Run { host, app_args })
}

/// `dsh-host help [COMMAND..]`: the help of the host or of a command, as the error clap answers
/// `--help` with (printed on stdout, exit 0); an unknown topic is a usage error.
fn help(program: &str, topic: &[String]) -> clap::Error {
    let Some(first) = topic.first() else {
        return displayed_help(HostArgs::try_parse_from([program, "--help"]));
    };
    if !SUBCOMMANDS.contains(&first.as_str()) {
        return HostArgs::command().error(
            clap::error::ErrorKind::InvalidSubcommand,
            format!(
                "no command `{first}`; the commands are {}, help (a profile's own help: \
                 dsh-host --profile NAME -- --help)",
                SUBCOMMANDS.join(", ")
            ),
        );
    }
    let argv = std::iter::once(program)
        .chain(topic.iter().map(String::as_str))
        .chain(std::iter::once("--help"));
    displayed_help(SubcommandArgs::try_parse_from(argv))
}

/// The error a parse that saw `--help` ends with (`--help` always ends it).
fn displayed_help<T>(parsed: Result<T, clap::Error>) -> clap::Error {
    parsed
        .err()
        .unwrap_or_else(|| clap::Error::new(clap::error::ErrorKind::DisplayHelp))
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
        // `--preset` is the host's only beside `--dump-config` (a runner such as headless
        // takes its own `--preset` as an app argument).
        let dumped_preset = option == "--preset" && host.iter().any(|seen| seen == "--dump-config");
        if VALUE_OPTIONS.contains(&option) || dumped_preset {
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
    fn preset_is_a_host_option_only_after_dump_config() {
        let Invocation::Run { host, app_args } = parse(argv(&[
            "--profile",
            "headless",
            "--dump-config",
            "--preset",
            "minimal",
        ]))
        .unwrap() else {
            panic!("a run");
        };
        assert_eq!(host.preset.as_deref(), Some("minimal"));
        assert!(app_args.is_empty());
        let Invocation::Run { host, app_args } = parse(argv(&[
            "--profile",
            "headless",
            "--preset",
            "minimal",
            "task",
        ]))
        .unwrap() else {
            panic!("a run");
        };
        assert_eq!(host.preset, None);
        assert_eq!(app_args, ["--preset", "minimal", "task"]);
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
            Invocation::Sub {
                command: Command::Check { json: true, .. },
                verbose: false
            }
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

    #[test]
    fn verbose_is_a_host_option_and_a_subcommand_option() {
        let invocation = parse(argv(&["-v", "--profile", "headless", "task", "-v"])).unwrap();
        assert!(invocation.verbose());
        let Invocation::Run { app_args, .. } = invocation else {
            panic!("expected run");
        };
        assert_eq!(app_args, vec!["task", "-v"]);
        let Invocation::Run { app_args, host } =
            parse(argv(&["--profile", "headless", "--", "-v"])).unwrap()
        else {
            panic!("expected run");
        };
        assert!(!host.verbose);
        assert_eq!(app_args, vec!["-v"]);
        assert!(
            parse(argv(&["check", "--config", "a.yml", "--verbose"]))
                .unwrap()
                .verbose()
        );
        assert!(!parse(argv(&["status"])).unwrap().verbose());
    }

    #[test]
    fn help_is_displayed_not_an_error() {
        for args in [
            &["--help"][..],
            &["-h"],
            &["help"],
            &["help", "session"],
            &["help", "session", "list"],
            &["--profile", "web", "--help"],
        ] {
            let error = parse(argv(args)).unwrap_err();
            assert_eq!(
                error.kind(),
                clap::error::ErrorKind::DisplayHelp,
                "{args:?}"
            );
            assert!(!error.use_stderr(), "{args:?}");
        }
        let text = parse(argv(&["--help"])).unwrap_err().to_string();
        for needle in [
            "--config FILE",
            "--profile NAME",
            "--patch <FILE>",
            "--plugin-dir <DIR>",
            "--dump-config",
            "-v, --verbose",
            "check ",
            "status ",
            "session list",
            "headless ",
            "[--output text|stream-json]",
            "web ",
            "dsh-host --profile headless -- --help",
        ] {
            assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
        }
        assert_eq!(
            parse(argv(&["help"])).unwrap_err().to_string(),
            text,
            "`help` prints what `--help` does"
        );
        let session = parse(argv(&["help", "session"])).unwrap_err().to_string();
        assert!(session.contains("derive"), "{session}");
        let unknown = parse(argv(&["help", "headless"])).unwrap_err();
        assert!(unknown.use_stderr());
        assert!(unknown.to_string().contains("no command `headless`"));
    }

    #[test]
    fn version_names_the_binary() {
        let error = parse(argv(&["-V"])).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::DisplayVersion);
        assert_eq!(
            error.to_string().trim_end(),
            format!("dsh-host {}", env!("CARGO_PKG_VERSION"))
        );
    }

    #[test]
    fn what_mounts_a_tree() {
        assert!(parse(argv(&["--config", "a.yml"])).unwrap().mounts_a_tree());
        assert!(
            !parse(argv(&["--config", "a.yml", "--dump-config"]))
                .unwrap()
                .mounts_a_tree()
        );
        assert!(
            parse(argv(&["check", "--config", "a.yml"]))
                .unwrap()
                .mounts_a_tree()
        );
        assert!(!parse(argv(&["status"])).unwrap().mounts_a_tree());
        assert!(!parse(argv(&["session", "list"])).unwrap().mounts_a_tree());
    }
}
