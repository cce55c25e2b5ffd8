//! `cargo xtask`: the project's tasks. It owns how the workspace is built and tested (one
//! workspace build, then the fixture crates that must live outside the workspace, then the
//! tests), the source counts (`lint`), the plugin template (`new-plugin`), the benchmark
//! runner (`bench`) and the start's function order (`link-order`).

mod apt;
mod bench;
mod browser;
mod clients;
mod fixtures;
mod fuzz;
mod link_order;
mod lint;
mod mcp;
mod plugin_template;
mod process;
mod products;
mod skips;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use process::cargo;

fn main() {
    if let Err(error) = run(std::env::args().skip(1).collect()) {
        eprintln!("xtask: {error:#}");
        std::process::exit(1);
    }
}

const USAGE: &str = "usage: cargo xtask <command>
  build [--release]        build the workspace and the test fixtures
  run [DSH-HOST ARGS..]    build, then run dsh-host (default: the offline headless demo)
  record-demo              re-record demo/session.jsonl against the fake DeepSeek server
  lint                     count json!, [\"key\"] lookups, unsafe blocks, long files and functions
  test [CARGO TEST ARGS..] lint, build everything once, then run every test
  bench [runtime]          measure ours against the peer and write BENCHMARKS.md
  fuzz TARGET|all SECONDS  run fuzz targets (optimized; --debug for the debug build)
  link-order [check]       profile a start under callgrind; write xtask/link/start-order.txt
                           (check: how much of it the release build defines)
  new-plugin NAME [--dir DIR]  create a plugin crate that builds and loads";

fn run(args: Vec<String>) -> Result<()> {
    let root = workspace_root()?;
    let (command, rest) = args
        .split_first()
        .map(|(c, r)| (c.as_str(), r.to_vec()))
        .unwrap_or(("", Vec::new()));
    match command {
        "build" => {
            let release = rest.iter().any(|arg| arg == "--release");
            build_workspace(&root, release)?;
            fixtures::build(&root)
        }
        "run" => run_host(&root, rest),
        "record-demo" => record_demo(&root),
        "lint" => lint::run(&root),
        "test" => test(&root, rest),
        "bench" => bench::run(&root, rest),
        "fuzz" => fuzz::run(&root, rest),
        "link-order" => match rest.first().map(String::as_str) {
            None => link_order::run(&root),
            Some("check") => link_order::check(&root),
            Some(other) => bail!("link-order takes no argument or `check`, not `{other}`\n{USAGE}"),
        },
        "new-plugin" => {
            let Some(name) = rest.first() else {
                bail!("new-plugin needs a NAME\n{USAGE}")
            };
            let dir = match rest.iter().position(|arg| arg == "--dir") {
                Some(index) => PathBuf::from(rest.get(index + 1).context("--dir needs a path")?),
                None => PathBuf::from(name),
            };
            let created = plugin_template::create(&root, name, &dir)?;
            println!("created plugin `{name}` in {}", created.display());
            println!(
                "build it: cargo build --manifest-path {}/Cargo.toml",
                created.display()
            );
            Ok(())
        }
        _ => bail!("{USAGE}"),
    }
}

/// The directory of the workspace `Cargo.toml` (xtask lives one level below it).
fn workspace_root() -> Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .context("xtask has no parent directory")
}

fn timed<T>(stage: &str, work: impl FnOnce() -> Result<T>) -> Result<T> {
    let started = Instant::now();
    println!("xtask: {stage} ...");
    let result = work();
    println!("xtask: {stage}: {:.1} s", started.elapsed().as_secs_f64());
    result
}

fn build_workspace(root: &Path, release: bool) -> Result<()> {
    timed("build workspace", || {
        let mut args = vec!["build", "--workspace", "--all-targets"];
        if release {
            args.push("--release");
        }
        cargo(root, &args)
    })
}

/// The task the shipped demo answers (the words `record-demo` recorded it with).
const DEMO_TASK: &str = "What is 6 times 7? Check it with the shell.";

fn run_host(root: &Path, args: Vec<String>) -> Result<()> {
    build_workspace(root, false)?;
    apt::ensure_bubblewrap();
    let mut command = std::process::Command::new(root.join("target/debug/dsh-host"));
    match args.first().map(String::as_str) {
        None => {
            println!(
                "xtask: the web app (dsh-host --profile web): open the URL it prints. With no \
                 DEEPSEEK_API_KEY the page offers the offline demo, a recorded session replayed in \
                 place of the model (no key, no network); or save a key in the page. Ctrl-C stops \
                 it. The terminal demo: cargo xtask run demo"
            );
            command.args(["--profile", "web"]);
        }
        Some("demo") => {
            println!(
                "xtask: offline demo: one agent turn of the headless profile. The model's answers \
                 are replayed from demo/session.jsonl (recorded with the project's fake DeepSeek \
                 server), the bash tool runs for real, and no API key or network is used. For a \
                 live model: DEEPSEEK_API_KEY=... cargo xtask run --profile headless -- \"your task\""
            );
            command.args([
                "--profile",
                "headless",
                "--",
                "--replay",
                &root.join("demo/session.jsonl").display().to_string(),
                DEMO_TASK,
            ]);
        }
        Some(_) => {
            command.args(&args);
        }
    }
    // A home inside the project unless the caller chose one, so a demo leaves ~ untouched.
    if std::env::var_os("DSH_HOME").is_none() {
        command.env("DSH_HOME", root.join("target/dsh-home"));
    }
    let status = command
        .status()
        .context("cannot start target/debug/dsh-host")?;
    match status.code() {
        Some(0) | Some(130) => Ok(()),
        code => bail!("dsh-host exited with {code:?}"),
    }
}

/// `cargo xtask record-demo`: re-records demo/session.jsonl against the fake DeepSeek server.
fn record_demo(root: &Path) -> Result<()> {
    build_workspace(root, false)?;
    let status = std::process::Command::new(root.join("target/debug/record-demo"))
        .arg(root.join("demo/session.jsonl"))
        .status()
        .context("cannot start target/debug/record-demo")?;
    if !status.success() {
        bail!("record-demo failed");
    }
    Ok(())
}

/// The test command: the lint, one workspace build, the fixtures, then the tests (no rebuild).
fn test(root: &Path, extra: Vec<String>) -> Result<()> {
    let started = Instant::now();
    timed("lint", || lint::run(root))?;
    build_workspace(root, false)?;
    fixtures::build(root)?;
    timed("sandbox backend", || {
        apt::ensure_bubblewrap();
        Ok(())
    })?;
    timed("PostgreSQL server", || {
        apt::ensure_postgres();
        Ok(())
    })?;
    timed("libfaketime", || {
        apt::ensure_faketime();
        Ok(())
    })?;
    // Every fuzz target for a few seconds; what it finds fails the command after the tests.
    let fuzzed = timed("fuzz targets (bounded)", || Ok(fuzz::smoke(root)));
    let skip_browser = timed("browser tests' tools", || Ok(browser::prepare(root)))?;
    let skip_mcp = timed("MCP reference servers", || Ok(mcp::prepare(root)))?;
    let skip_products = timed("agent products", || Ok(products::prepare(root)))?;
    let skip_acp = timed("ACP clients", || Ok(clients::prepare_acp(root)))?;
    timed("terminal for the terminal UI", || {
        clients::ensure_tmux();
        Ok(())
    })?;
    // Tests that cannot run here (no corpus beside the checkout, no bubblewrap, no browser)
    // say so and add a line to this file; they are counted as skipped, with their reasons.
    let skips_file = root.join("target/test-skips.tsv");
    let _ = std::fs::remove_file(&skips_file);
    let skips_path = skips_file.display().to_string();
    let (success, mut totals, failures) = timed("run tests", || {
        let mut args = vec![
            "test".to_owned(),
            "--workspace".to_owned(),
            "--no-fail-fast".to_owned(),
        ];
        args.extend(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let envs: Vec<(&str, &str)> = skip_browser
            .as_deref()
            .map(|reason| ("DSH_BROWSER_SKIP", reason))
            .into_iter()
            .chain(skip_mcp.as_deref().map(|reason| ("DSH_MCP_SKIP", reason)))
            .chain(
                skip_products
                    .as_deref()
                    .map(|reason| ("DSH_PRODUCTS_SKIP", reason)),
            )
            .chain(
                skip_acp
                    .as_deref()
                    .map(|reason| ("DSH_ACP_CLIENTS_SKIP", reason)),
            )
            .chain(std::iter::once(("DSH_SKIPS", skips_path.as_str())))
            .collect();
        process::cargo_test(root, &args, &envs)
    })?;
    println!(
        "xtask: test total: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut reports = failures.lines().peekable();
    if reports.peek().is_some() {
        println!("xtask: why the failed tests failed:");
        reports.for_each(|line| println!("  {line}"));
    }
    let skipped = skips::read(&skips_file);
    totals.passed = totals.passed.saturating_sub(skipped.count());
    totals.ignored += skipped.count();
    println!(
        "tests: {} passed, {} failed, {} skipped{}",
        totals.passed,
        totals.failed,
        totals.ignored,
        skipped.reasons_in_brackets()
    );
    skipped.print();
    if let Some(reason) = skip_browser {
        println!("xtask: the browser tests were skipped: {reason}");
    }
    if let Some(reason) = skip_mcp {
        println!("xtask: the MCP tests were skipped: {reason}");
    }
    if let Some(reason) = skip_products {
        println!("xtask: the real-product subagent tests were skipped: {reason}");
    }
    if let Some(reason) = skip_acp {
        println!("xtask: the ACP client tests were skipped: {reason}");
    }
    if let Ok(Err(error)) = &fuzzed {
        println!("xtask: {error:#}");
    }
    if !success || totals.failed > 0 {
        bail!("tests failed");
    }
    fuzzed??;
    Ok(())
}
