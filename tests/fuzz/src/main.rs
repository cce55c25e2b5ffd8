//! `dsh-fuzz TARGET|all SECONDS` (or `dsh-fuzz list`): runs fuzz targets for a time and prints, per target, the cases
//! run and their rate, the slowest case, the peak RSS and the crashers found (saved under the
//! crate's `corpus/`). Exits 1 on a panic or on memory over the bound, 3 on a hang, 2 on usage.

use std::process::ExitCode;
use std::time::Duration;

use dsh_fuzz::{Settings, TARGETS, Target, corpus, find, run};

const USAGE: &str = "usage: dsh-fuzz list | dsh-fuzz time TARGET FILE | dsh-fuzz TARGET|all SECONDS [--seed N] [--hang-ms MS] [--max-rss-mib MIB] [--no-save] [--slowest-to DIR]";

struct Args {
    targets: Vec<&'static Target>,
    settings: Settings,
    max_rss_mib: u64,
    /// Where to write each target's slowest input (`<dir>/<target>.bin`).
    slowest_to: Option<std::path::PathBuf>,
}

fn value<T: std::str::FromStr>(args: &[String], flag: &str) -> Result<Option<T>, String> {
    match args.iter().position(|arg| arg == flag) {
        None => Ok(None),
        Some(at) => {
            let text = args.get(at + 1).ok_or(format!("{flag} needs a value"))?;
            text.parse()
                .map(Some)
                .map_err(|_| format!("{flag}: `{text}` is not a number"))
        }
    }
}

fn parse(args: &[String]) -> Result<Args, String> {
    let (Some(name), Some(seconds)) = (args.first(), args.get(1)) else {
        return Err(USAGE.to_owned());
    };
    let targets = match name.as_str() {
        "all" => TARGETS.iter().collect(),
        name => vec![find(name).ok_or_else(|| {
            let names: Vec<&str> = TARGETS.iter().map(|target| target.name).collect();
            format!("no target `{name}`; the targets: {}", names.join(", "))
        })?],
    };
    let seconds: f64 = seconds
        .parse()
        .ok()
        .filter(|seconds: &f64| seconds.is_finite() && *seconds >= 0.0)
        .ok_or(format!("SECONDS: `{seconds}` is not a number of seconds"))?;
    let seed = value(args, "--seed")?.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |since| since.as_nanos() as u64)
    });
    let hang_ms = value(args, "--hang-ms")?.unwrap_or(5_000);
    let save = !args.iter().any(|arg| arg == "--no-save");
    Ok(Args {
        targets,
        settings: Settings {
            duration: Duration::from_secs_f64(seconds),
            max_cases: None,
            hang_after: Duration::from_millis(hang_ms),
            seed,
            corpus: save.then(corpus::default_dir),
        },
        max_rss_mib: value(args, "--max-rss-mib")?.unwrap_or(1024),
        slowest_to: value(args, "--slowest-to")?,
    })
}

/// `time TARGET FILE`: the input of FILE through TARGET ten times, each run's time printed, to
/// tell a slow input from a run that was only descheduled.
fn time(args: &[String]) -> ExitCode {
    let (Some(name), Some(file)) = (args.first(), args.get(1)) else {
        eprintln!("dsh-fuzz: {USAGE}");
        return ExitCode::from(2);
    };
    let Some(target) = find(name) else {
        eprintln!("dsh-fuzz: no target `{name}`");
        return ExitCode::from(2);
    };
    let input = match std::fs::read(file) {
        Ok(input) => input,
        Err(error) => {
            eprintln!("dsh-fuzz: cannot read {file}: {error}");
            return ExitCode::from(2);
        }
    };
    let runs: Vec<String> = (0..10)
        .map(|_| {
            let started = std::time::Instant::now();
            (target.run)(&input);
            format!("{:.2}", started.elapsed().as_secs_f64() * 1000.0)
        })
        .collect();
    println!("{name} {} bytes: {} ms", input.len(), runs.join(" "));
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|arg| arg == "time") {
        return time(&args[1..]);
    }
    if args.first().is_some_and(|arg| arg == "list") {
        TARGETS
            .iter()
            .for_each(|target| println!("{}", target.name));
        return ExitCode::SUCCESS;
    }
    let args = match parse(&args) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("dsh-fuzz: {message}");
            for target in TARGETS {
                eprintln!("  {:<16} {}", target.name, target.about);
            }
            return ExitCode::from(2);
        }
    };
    println!("dsh-fuzz: seed {}", args.settings.seed);
    let mut failed = false;
    for target in args.targets {
        let report = match run(target, &args.settings) {
            Ok(report) => report,
            Err(error) => {
                eprintln!("dsh-fuzz: {error}");
                return ExitCode::from(2);
            }
        };
        let rss_mib = report.peak_rss_kib.map(|kib| kib / 1024);
        println!(
            "fuzz {:<16} {:>9} cases in {:>5.1} s = {:>8.0} cases/s; slowest {:>7.1} ms ({} bytes); peak RSS {} MiB; crashers {}",
            report.target,
            report.cases,
            report.elapsed.as_secs_f64(),
            report.cases_per_second(),
            report.slowest.as_secs_f64() * 1000.0,
            report.slowest_len,
            rss_mib.map_or("?".to_owned(), |mib| mib.to_string()),
            report.crashers.len(),
        );
        for (message, saved) in &report.crashers {
            failed = true;
            let saved = saved
                .as_ref()
                .map(|path| format!(" (input saved to {})", path.display()))
                .unwrap_or_default();
            println!("  PANIC: {message}{saved}");
        }
        if let Some(dir) = &args.slowest_to {
            let path = dir.join(format!("{}.bin", report.target));
            if let Err(error) = std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(&path, &report.slowest_input))
            {
                eprintln!("dsh-fuzz: cannot write {}: {error}", path.display());
            }
        }
        if rss_mib.is_some_and(|mib| mib > args.max_rss_mib) {
            failed = true;
            println!("  MEMORY: peak RSS over {} MiB", args.max_rss_mib);
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
