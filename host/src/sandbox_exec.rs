//! `dsh-host sandbox-exec [--env NAME VALUE].. [--read DIR].. [--write DIR].. [--network] -- PROGRAM [ARGS..]`: the Landlock
//! backend of the `sandbox` plugin, for machines where bubblewrap cannot run. The process
//! restricts itself (files: read and execute everywhere, or only under the `--read`
//! directories, write only under the `--write`
//! directories and a few device files; TCP: no bind or connect unless `--network`), sets
//! `no_new_privs`, and replaces itself with the program, which inherits the restriction with
//! every process it starts; the `--env` variables are set for the program only then, so that
//! a requested `LD_PRELOAD` never acts on this process before it is confined. `--probe` only restricts and exits 0 when the kernel enforced it
//! all. It is internal: the sandbox plugin builds these command lines. Runs before anything
//! else of the host (no runtime, no logging), as the first argument.

use std::os::unix::process::CommandExt;

use landlock::{
    ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    path_beneath_rules,
};

/// The subcommand's name, recognised as the first argument.
pub const SANDBOX_EXEC: &str = "sandbox-exec";

/// The newest ABI asked for; older kernels enforce what they can (said as partial).
const WANTED: ABI = ABI::V5;

/// Device files every shell writes to.
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
];

struct Request {
    /// Readable directories; empty: everything is readable.
    readable: Vec<String>,
    writable: Vec<String>,
    /// Set for the program after the restriction, in order (a later one wins).
    env: Vec<(String, String)>,
    network: bool,
    probe: bool,
    command: Vec<String>,
}

fn parse(args: &[String]) -> Result<Request, String> {
    let mut request = Request {
        readable: Vec::new(),
        writable: Vec::new(),
        env: Vec::new(),
        network: false,
        probe: false,
        command: Vec::new(),
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--write" => request
                .writable
                .push(rest.next().ok_or("--write needs a directory")?.clone()),
            "--read" => request
                .readable
                .push(rest.next().ok_or("--read needs a directory")?.clone()),
            "--env" => {
                let name = rest.next().ok_or("--env needs a name and a value")?;
                let value = rest.next().ok_or("--env needs a name and a value")?;
                if name.is_empty() || name.contains('=') {
                    return Err(format!("`{name}` is not a variable's name"));
                }
                request.env.push((name.clone(), value.clone()));
            }
            "--network" => request.network = true,
            "--probe" => request.probe = true,
            "--" => {
                request.command = rest.cloned().collect();
                break;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if !request.probe && request.command.is_empty() {
        return Err("no program after `--`".to_owned());
    }
    Ok(request)
}

fn restrict(request: &Request) -> Result<RulesetStatus, landlock::RulesetError> {
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(WANTED))?;
    if !request.network {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    let status = ruleset
        .create()?
        .add_rules(path_beneath_rules(
            readable_or_all(&request.readable),
            AccessFs::from_read(WANTED),
        ))?
        .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(WANTED)))?
        .add_rules(path_beneath_rules(
            &request.writable,
            AccessFs::from_all(WANTED),
        ))?
        .restrict_self()?;
    Ok(status.ruleset)
}

/// The readable directories: those given, or `/`.
fn readable_or_all(readable: &[String]) -> Vec<String> {
    match readable.is_empty() {
        true => vec!["/".to_owned()],
        false => readable.to_vec(),
    }
}

/// Runs the subcommand on `args` (after its name); answers the exit code when it does not exec.
pub fn run(args: &[String]) -> i32 {
    let request = match parse(args) {
        Ok(request) => request,
        Err(problem) => {
            eprintln!("dsh-host sandbox-exec: {problem}");
            return 2;
        }
    };
    match restrict(&request) {
        Ok(RulesetStatus::FullyEnforced) => {}
        Ok(RulesetStatus::PartiallyEnforced) if !request.probe => {}
        Ok(status) => {
            eprintln!("dsh-host sandbox-exec: Landlock is not fully enforced here ({status:?})");
            return 126;
        }
        Err(error) => {
            eprintln!("dsh-host sandbox-exec: Landlock: {error}");
            return 126;
        }
    }
    if request.probe {
        return 0;
    }
    let error = std::process::Command::new(&request.command[0])
        .args(&request.command[1..])
        .envs(request.env.iter().map(|(name, value)| (name, value)))
        .exec();
    eprintln!(
        "dsh-host sandbox-exec: cannot run `{}`: {error}",
        request.command[0]
    );
    127
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn variables_are_read_for_the_program_in_order() {
        let request = parse(&strings(&[
            "--env",
            "A",
            "1",
            "--env",
            "LD_PRELOAD",
            "x.so",
            "--",
            "true",
        ]))
        .unwrap();
        assert_eq!(
            request.env,
            [
                ("A".to_owned(), "1".to_owned()),
                ("LD_PRELOAD".to_owned(), "x.so".to_owned())
            ]
        );
        assert_eq!(request.command, ["true"]);
        assert!(parse(&strings(&["--env", "A"])).is_err());
        assert!(parse(&strings(&["--env", "A=B", "1", "--", "true"])).is_err());
    }
}
