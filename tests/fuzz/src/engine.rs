//! The run loop: seeds first, then mutated seeds until the time (or case count) is up. Each
//! case runs under `catch_unwind` (a panic is a crasher, saved and counted) and under a
//! watchdog thread (a case past the hang bound is saved and ends the process, since the stuck
//! thread cannot be stopped). The report gives cases per second, the slowest case and the
//! peak RSS of the process.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, PoisonError};
use std::time::{Duration, Instant};

use arbitrary::Unstructured;

use crate::corpus::{self, CorpusError};
use crate::mutate::{Rng, mutate};
use crate::targets::Target;

/// How a run is bounded.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Stop generating after this long.
    pub duration: Duration,
    /// Or after this many cases, if sooner.
    pub max_cases: Option<u64>,
    /// A case taking longer is a hang.
    pub hang_after: Duration,
    /// The run's random seed (printed, so a run can be repeated).
    pub seed: u64,
    /// Where crashers are written (`<dir>/<target>/`); `None` keeps them in memory only.
    pub corpus: Option<PathBuf>,
}

/// What a run found.
#[derive(Debug)]
pub struct Report {
    pub target: &'static str,
    pub cases: u64,
    pub elapsed: Duration,
    pub slowest: Duration,
    pub slowest_len: usize,
    /// The slowest case's input, to time it again apart from the run (`dsh-fuzz time`).
    pub slowest_input: Vec<u8>,
    /// The panics: the message and the file the input was saved to (if saved).
    pub crashers: Vec<(String, Option<PathBuf>)>,
    /// The process's peak resident set, in KiB (Linux: `VmHWM`).
    pub peak_rss_kib: Option<u64>,
}

impl Report {
    pub fn cases_per_second(&self) -> f64 {
        self.cases as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// What the watchdog sees: the running case's start (nanoseconds since `epoch`, 0 for none)
/// and its input.
struct Watch {
    epoch: Instant,
    started: AtomicU64,
    input: Mutex<Vec<u8>>,
    done: AtomicBool,
}

thread_local! {
    /// While a case runs on this thread: the slot its panic message goes to.
    static CASE: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

/// Panics inside a case are expected: their messages are kept for the report instead of
/// printed. Any other panic (a test's own assertion) goes to the hook that was there before.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let place = info
                .location()
                .map(|at| format!(" at {}:{}", at.file(), at.line()))
                .unwrap_or_default();
            let payload = info
                .payload()
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned());
            let kept = CASE.with_borrow_mut(|case| match case {
                Some(slot) => {
                    *slot = Some(format!("{payload}{place}"));
                    true
                }
                None => false,
            });
            if !kept {
                previous(info);
            }
        }));
    });
}

/// Runs one case; `Err` with the panic's message.
fn guarded(target: &Target, input: &[u8]) -> Result<(), String> {
    CASE.with_borrow_mut(|case| *case = Some(None));
    let outcome = catch_unwind(AssertUnwindSafe(|| (target.run)(input)));
    let message = CASE.with_borrow_mut(Option::take).flatten();
    outcome.map_err(|_| message.unwrap_or_else(|| "a panic".to_owned()))
}

fn watchdog(watch: Arc<Watch>, target: &'static str, hang_after: Duration, dir: Option<PathBuf>) {
    std::thread::spawn(move || {
        while !watch.done.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            let started = watch.started.load(Ordering::Acquire);
            if started == 0 {
                continue;
            }
            let running = watch
                .epoch
                .elapsed()
                .saturating_sub(Duration::from_nanos(started));
            if running <= hang_after {
                continue;
            }
            let input = watch
                .input
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let saved = dir
                .as_deref()
                .and_then(|dir| corpus::save(dir, target, "hang", &input).ok());
            eprintln!(
                "fuzz {target}: HANG: a case of {} bytes ran past {:?}{}",
                input.len(),
                hang_after,
                saved
                    .map(|path| format!("; saved to {}", path.display()))
                    .unwrap_or_default()
            );
            std::process::exit(3);
        }
    });
}

/// Runs `target`: its seeds and its saved crashers as they are, then mutations.
pub fn run(target: &Target, settings: &Settings) -> Result<Report, CorpusError> {
    install_panic_hook();
    let watch = Arc::new(Watch {
        epoch: Instant::now(),
        started: AtomicU64::new(0),
        input: Mutex::new(Vec::new()),
        done: AtomicBool::new(false),
    });
    watchdog(
        watch.clone(),
        target.name,
        settings.hang_after,
        settings.corpus.clone(),
    );
    let seeds = (target.seeds)();
    let mut fixed = seeds.clone();
    if let Some(dir) = &settings.corpus {
        fixed.extend(corpus::load(dir, target.name)?);
    }
    let mut report = Report {
        target: target.name,
        cases: 0,
        elapsed: Duration::ZERO,
        slowest: Duration::ZERO,
        slowest_len: 0,
        slowest_input: Vec::new(),
        crashers: Vec::new(),
        peak_rss_kib: None,
    };
    let mut rng = Rng::new(settings.seed);
    let mut entropy = vec![0u8; 512];
    let mut input = Vec::new();
    let started = Instant::now();
    let mut fixed = fixed.into_iter();
    loop {
        let out_of_time = report.cases.is_multiple_of(64) && started.elapsed() >= settings.duration;
        let out_of_cases = settings.max_cases.is_some_and(|max| report.cases >= max);
        let next_fixed = fixed.next();
        if next_fixed.is_none() && (out_of_time || out_of_cases) {
            break;
        }
        match next_fixed {
            Some(seed) => input = seed,
            None => {
                rng.fill(&mut entropy);
                let mut u = Unstructured::new(&entropy);
                input.clear();
                if let Ok(seed) = u.choose(&seeds) {
                    input.extend_from_slice(seed);
                }
                mutate(&mut u, &mut input, &seeds, target.dict);
            }
        }
        run_case(target, &input, &watch, settings, &mut report)?;
    }
    watch.done.store(true, Ordering::Relaxed);
    report.elapsed = started.elapsed();
    report.peak_rss_kib = peak_rss_kib();
    Ok(report)
}

fn run_case(
    target: &Target,
    input: &[u8],
    watch: &Watch,
    settings: &Settings,
    report: &mut Report,
) -> Result<(), CorpusError> {
    {
        let mut shared = watch.input.lock().unwrap_or_else(PoisonError::into_inner);
        shared.clear();
        shared.extend_from_slice(input);
    }
    let begin = Instant::now();
    let since_epoch = u64::try_from(begin.duration_since(watch.epoch).as_nanos()).unwrap_or(1);
    watch.started.store(since_epoch.max(1), Ordering::Release);
    let outcome = guarded(target, input);
    watch.started.store(0, Ordering::Release);
    let took = begin.elapsed();
    report.cases += 1;
    if took > report.slowest {
        report.slowest = took;
        report.slowest_len = input.len();
        report.slowest_input = input.to_vec();
    }
    if let Err(message) = outcome {
        // One file per distinct panic: a bug found once is found thousands of times.
        if report.crashers.iter().all(|(seen, _)| *seen != message) {
            let saved = match &settings.corpus {
                Some(dir) => Some(corpus::save(dir, target.name, "crash", input)?),
                None => None,
            };
            report.crashers.push((message, saved));
        }
    }
    Ok(())
}

/// `VmHWM` of this process, in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs every saved crasher and hang of `target` under `dir`; answers those that panic.
pub fn replay(target: &Target, dir: &Path) -> Result<Vec<(PathBuf, String)>, CorpusError> {
    install_panic_hook();
    Ok(corpus::load_named(dir, target.name)?
        .into_iter()
        .filter_map(|(path, input)| guarded(target, &input).err().map(|message| (path, message)))
        .collect())
}
