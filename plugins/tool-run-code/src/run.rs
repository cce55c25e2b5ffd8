//! One `run_code` call, driven: the program's slices on the host's blocking pool, its tool
//! calls through the `tools` service in batches (at most `max_parallel` at once; the pipeline
//! schedules them by their concurrency class and commits them in order), the time limit and
//! the turn's cancellation over both, and the result the model gets.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use abi_stable::std_types::{RString, RVec};
use dsh_plugin_api::cancel::{CancelBox, CancelFlag, Either, first_of};
use dsh_plugin_api::prelude::*;
use dsh_protocol::{CallReport, ContentBlock, StepReport, text_of};
use dsh_tools_seam::{CallView, StepCall, StepCalls, ToolsService};

use crate::engine::{Answer, Engine, EngineError, Finish, Limits, Request};

/// What one run needs besides its program.
pub(crate) struct Setup {
    pub(crate) call: CallView,
    /// The scope chain its calls are resolved in.
    pub(crate) scope: Vec<String>,
    /// The tools `tools` offers.
    pub(crate) names: Vec<String>,
    pub(crate) limits: Limits,
    pub(crate) time_limit: Duration,
    pub(crate) max_parallel: usize,
    /// Where image-bearing results wait for the model (see `images`).
    pub(crate) images: Arc<crate::images::Pending>,
}

/// How a run ended.
#[derive(Debug)]
pub(crate) enum Ended {
    Returned(Option<String>),
    Failed(Failure),
}

/// Why a run failed, each named for the model.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    #[error("code run failed (syntax): the program does not parse: {0}")]
    Syntax(String),
    #[error("code run failed (thrown): {0}")]
    Threw(String),
    #[error("code run failed (time limit): the program ran past its time limit of {0} ms")]
    TimeLimit(u128),
    #[error("code run failed (memory limit): the program ran out of its {0} MiB memory limit")]
    MemoryLimit(usize),
    #[error("code run failed (cancelled): the turn was cancelled")]
    Cancelled,
    #[error(
        "code run failed (stuck): the program awaits a promise that nothing will settle (no tool call is pending)"
    )]
    Stuck,
    #[error("code run failed (engine): {0}")]
    Engine(String),
}

/// A finished run: how it ended, what it printed, and the engine's figures.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) ended: Ended,
    pub(crate) logs: Vec<String>,
    pub(crate) truncated: bool,
    pub(crate) calls: u32,
    pub(crate) start: Duration,
    pub(crate) peak_bytes: usize,
}

/// The interrupt's reasons, watched by the engine between instructions, and the limits a
/// failure names.
struct Stop {
    flag: Arc<AtomicBool>,
    deadline: Instant,
    time_limit: Duration,
    memory_bytes: usize,
}

/// Sets the interrupt flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `code`; never fails: every failure is an outcome.
pub(crate) async fn run(
    ctx: &Context,
    tools: &ToolsService,
    code: String,
    setup: Setup,
    cancel: &CancelBox,
) -> Outcome {
    let stop = Stop {
        flag: Arc::new(AtomicBool::new(false)),
        deadline: Instant::now() + setup.time_limit,
        time_limit: setup.time_limit,
        memory_bytes: setup.limits.memory_bytes,
    };
    // Dropped with this future (the pipeline drops a cancelled body after a grace), the flag
    // still stops the engine at its next check.
    let _stop_on_drop = StopOnDrop(stop.flag.clone());
    let (flag, deadline, limits) = (stop.flag.clone(), stop.deadline, setup.limits);
    let names = setup.names.clone();
    let started = slice(ctx, cancel, &stop, move || {
        Engine::start(&code, &names, limits, flag, deadline)
    })
    .await
    .and_then(|started| started.map_err(|error| failure_of(error, cancel, &stop)));
    let mut engine = match started {
        Ok(engine) => engine,
        Err(failure) => {
            return Outcome {
                ended: Ended::Failed(failure),
                logs: Vec::new(),
                truncated: false,
                calls: 0,
                start: Duration::ZERO,
                peak_bytes: 0,
            };
        }
    };
    let mut queue: VecDeque<Request> = VecDeque::new();
    let mut calls = 0u32;
    let ended = loop {
        if let Some(finish) = engine.finished() {
            break match finish {
                Finish::Returned(text) => Ended::Returned(text),
                // An allocation that failed is the memory limit, even where the program
                // caught it and threw on.
                Finish::Threw(text) if text.starts_with("InternalError: out of memory") => {
                    Ended::Failed(Failure::MemoryLimit(stop.memory_bytes >> 20))
                }
                Finish::Threw(text) => Ended::Failed(Failure::Threw(text)),
            };
        }
        queue.extend(engine.take_requests());
        if queue.is_empty() {
            break Ended::Failed(Failure::Stuck);
        }
        let batch: Vec<Request> = (0..setup.max_parallel.max(1))
            .map_while(|_| queue.pop_front())
            .collect();
        let first = calls;
        calls += u32::try_from(batch.len()).unwrap_or(u32::MAX);
        let report = dispatch(ctx, tools, &setup, &batch, first, cancel, &stop).await;
        for result in &report.results {
            let call = &setup.call;
            setup.images.keep(
                call.session.as_str(),
                call.call_id.as_str(),
                &result.content,
            );
        }
        if let Some(failure) = stopped(cancel, &stop) {
            break Ended::Failed(failure);
        }
        let answers = answers(&batch, &report);
        let settled = slice(ctx, cancel, &stop, move || {
            let settled = answers
                .into_iter()
                .try_for_each(|(id, outcome)| engine.settle(id, outcome));
            (engine, settled)
        })
        .await;
        match settled {
            Ok((back, Ok(()))) => engine = back,
            Ok((back, Err(error))) => {
                let failure = failure_of(error, cancel, &stop);
                let (logs, truncated) = back.logs();
                return finished(Ended::Failed(failure), &back, logs, truncated, calls);
            }
            // The blocking pool lost the engine: nothing of it is left to read.
            Err(failure) => {
                return Outcome {
                    ended: Ended::Failed(failure),
                    logs: Vec::new(),
                    truncated: false,
                    calls,
                    start: Duration::ZERO,
                    peak_bytes: 0,
                };
            }
        }
    };
    let (logs, truncated) = engine.logs();
    finished(ended, &engine, logs, truncated, calls)
}

fn finished(
    ended: Ended,
    engine: &Engine,
    logs: Vec<String>,
    truncated: bool,
    calls: u32,
) -> Outcome {
    Outcome {
        ended,
        logs,
        truncated,
        calls,
        start: engine.start,
        peak_bytes: engine.peak_bytes,
    }
}

/// Why the run must stop now, if it must: the turn was cancelled or the time is up.
fn stopped(cancel: &CancelBox, stop: &Stop) -> Option<Failure> {
    if cancel.is_cancelled() {
        Some(Failure::Cancelled)
    } else if Instant::now() >= stop.deadline {
        Some(Failure::TimeLimit(stop.time_limit.as_millis()))
    } else {
        None
    }
}

/// Runs one slice of the program on the blocking pool; a cancel while it runs interrupts it.
async fn slice<T, F>(ctx: &Context, cancel: &CancelBox, stop: &Stop, work: F) -> Result<T, Failure>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let job = ctx.blocking(work);
    let mut job = std::pin::pin!(job);
    let ran = match first_of(job.as_mut(), cancel.cancelled()).await {
        Either::Left(ran) => ran,
        Either::Right(()) => {
            // The engine stops at its next interrupt check; the slice is waited for, so the
            // engine is never dropped while it runs.
            stop.flag.store(true, Ordering::Relaxed);
            job.await
        }
    };
    ran.map_err(|error| Failure::Engine(error.to_string()))
}

/// What an engine error means for the run.
fn failure_of(error: EngineError, cancel: &CancelBox, stop: &Stop) -> Failure {
    match error {
        EngineError::Interrupted if cancel.is_cancelled() => Failure::Cancelled,
        EngineError::Interrupted => Failure::TimeLimit(stop.time_limit.as_millis()),
        EngineError::Syntax(message) => Failure::Syntax(message),
        EngineError::OutOfMemory => Failure::MemoryLimit(stop.memory_bytes >> 20),
        EngineError::Engine(message) => Failure::Engine(message),
    }
}

/// Runs one batch of calls through the pipeline, numbered after the `first` calls before it;
/// the time limit and the turn's cancellation fire the batch's own signal.
async fn dispatch(
    ctx: &Context,
    tools: &ToolsService,
    setup: &Setup,
    batch: &[Request],
    first: u32,
    cancel: &CancelBox,
    stop: &Stop,
) -> StepReport {
    let call = &setup.call;
    let parent = call.call_id.to_string();
    let calls: RVec<StepCall> = batch
        .iter()
        .zip(first + 1..)
        .map(|(request, n)| StepCall {
            call_id: RString::from(format!("{parent}:code:{n}")),
            name: RString::from(request.name.as_str()),
            arguments: RString::from(request.arguments.as_str()),
        })
        .collect();
    let step = StepCalls {
        session: call.session.clone(),
        scope: setup
            .scope
            .iter()
            .map(|key| RString::from(key.as_str()))
            .collect(),
        turn: call.turn,
        step: call.step,
        cwd: call.cwd.clone(),
        calls,
    };
    let flag = CancelFlag::new();
    let running = tools.run_code_calls(RString::from(parent), step, flag.signal());
    let mut running = std::pin::pin!(running);
    let remaining = stop.deadline.saturating_duration_since(Instant::now());
    let interrupted = first_of(cancel.cancelled(), ctx.sleep(remaining));
    let report = match first_of(running.as_mut(), interrupted).await {
        Either::Left(report) => report,
        Either::Right(_) => {
            // The calls are told to stop and waited for: each still settles (as aborted) and
            // is logged inside this call.
            flag.fire();
            running.await
        }
    };
    report.decode().unwrap_or_default()
}

/// Each call's answer for the program: its value as JSON text, or its error's text.
fn answers(batch: &[Request], report: &StepReport) -> Vec<(u32, Answer)> {
    batch
        .iter()
        .enumerate()
        .map(|(index, request)| {
            let answer = match report.results.get(index) {
                Some(CallReport {
                    is_error: false,
                    value,
                    ..
                }) => Answer::Value(
                    value
                        .as_ref()
                        .map_or_else(|| "null".to_owned(), ToString::to_string),
                ),
                Some(result) => Answer::Failed(error_text(&result.content)),
                None => Answer::Failed("the call was never answered".to_owned()),
            };
            (request.id, answer)
        })
        .collect()
}

fn error_text(content: &[ContentBlock]) -> String {
    let text = text_of(content);
    match text.trim().is_empty() {
        true => "the call failed".to_owned(),
        false => text,
    }
}
