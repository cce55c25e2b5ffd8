//! One program in one QuickJS runtime: its limits, the `tools` and `console` globals, and the
//! slices it runs in. A slice (the first evaluation, or the settling of some tool calls) runs
//! the program until it waits on calls nobody has answered yet; the driver answers them and
//! runs the next slice. Nothing here waits: the engine is synchronous and owns no thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rquickjs::atom::PredefinedAtom;
use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Runtime};

/// The prelude's function that answers a call (`__dsh_settle(id, ok, payload)`).
const SETTLE: &str = "__dsh_settle";

/// The globals the program sees, built once per run before the program is evaluated.
const PRELUDE: &str = include_str!("prelude.js");

/// How many calls a program may have queued and not yet dispatched: a loop that fires calls
/// without awaiting them stops here rather than growing the queue without bound (the
/// prelude's message says the same number).
const MAX_QUEUED: usize = 1000;

/// An engine's limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) memory_bytes: usize,
    pub(crate) stack_bytes: usize,
    pub(crate) output_bytes: usize,
}

/// A call the program made, waiting to be dispatched.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) id: u32,
    pub(crate) name: String,
    /// The arguments as JSON text (`JSON.stringify` of an object).
    pub(crate) arguments: String,
}

/// A tool call's answer for the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The call's value, as JSON text.
    Value(String),
    /// Why it failed: the message its promise rejects with.
    Failed(String),
}

/// How the program ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finish {
    /// Its return value, rendered (none for `undefined`).
    Returned(Option<String>),
    /// What it threw, described.
    Threw(String),
}

/// Why a slice stopped short of the program's own end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EngineError {
    #[error("the program does not parse: {0}")]
    Syntax(String),
    /// The interrupt fired (the time limit, or the turn was cancelled): the driver says which.
    #[error("the program was interrupted")]
    Interrupted,
    #[error("the program ran out of memory")]
    OutOfMemory,
    #[error("the JavaScript engine failed: {0}")]
    Engine(String),
}

/// What the program's globals share with Rust.
#[derive(Debug, Default)]
struct State {
    queued: Vec<Request>,
    next_id: u32,
    logs: Vec<String>,
    log_bytes: usize,
    truncated: bool,
    finished: Option<Finish>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One program's engine.
pub(crate) struct Engine {
    // Dropped in this order: the context before its runtime.
    context: Context,
    runtime: Runtime,
    state: Arc<Mutex<State>>,
    /// Time from nothing to the program's first instruction.
    pub(crate) start: Duration,
    /// The most the runtime had allocated after any slice.
    pub(crate) peak_bytes: usize,
}

impl Engine {
    /// A runtime with `limits`, interrupted once `stop` is set or `deadline` passes, whose
    /// `tools` offers `names`; then the program's first slice.
    pub(crate) fn start(
        code: &str,
        names: &[String],
        limits: Limits,
        stop: Arc<AtomicBool>,
        deadline: Instant,
    ) -> Result<Self, EngineError> {
        let began = Instant::now();
        let runtime = Runtime::new().map_err(|error| EngineError::Engine(error.to_string()))?;
        runtime.set_memory_limit(limits.memory_bytes);
        runtime.set_max_stack_size(limits.stack_bytes);
        runtime.set_interrupt_handler(Some(Box::new(move || {
            stop.load(Ordering::Relaxed) || Instant::now() >= deadline
        })));
        let context =
            Context::full(&runtime).map_err(|error| EngineError::Engine(error.to_string()))?;
        let state = Arc::new(Mutex::new(State::default()));
        let names = serde_json::to_string(names).unwrap_or_else(|_| "[]".to_owned());
        context.with(|ctx| install(&ctx, &state, &names, limits))?;
        let mut engine = Self {
            context,
            runtime,
            state,
            start: began.elapsed(),
            peak_bytes: 0,
        };
        // The program is the body of an async function, on the wrapper's first line so that
        // the line numbers in its errors are its own.
        let program = format!("__dsh_run(async () => {{{code}\n}});");
        engine.context.with(|ctx| {
            ctx.eval::<(), _>(program)
                .catch(&ctx)
                .map_err(|caught| classify(caught, true))
        })?;
        engine.run_jobs()?;
        Ok(engine)
    }

    /// Answers call `id`, then runs what that wakes.
    pub(crate) fn settle(&mut self, id: u32, answer: Answer) -> Result<(), EngineError> {
        self.context.with(|ctx| {
            let settle: Function = ctx
                .globals()
                .get(SETTLE)
                .map_err(|error| EngineError::Engine(error.to_string()))?;
            let (ok, payload) = match answer {
                Answer::Value(value) => (true, value),
                Answer::Failed(message) => (false, message),
            };
            settle
                .call::<_, ()>((id, ok, payload))
                .catch(&ctx)
                .map_err(|caught| classify(caught, false))
        })?;
        self.run_jobs()
    }

    /// Runs every queued job (promise reactions) until none is left.
    fn run_jobs(&mut self) -> Result<(), EngineError> {
        loop {
            match self.runtime.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => break,
                Err(job) => {
                    return Err(job.0.with(|ctx| {
                        classify(
                            CaughtError::from_error(&ctx, rquickjs::Error::Exception),
                            false,
                        )
                    }));
                }
            }
        }
        let used = usize::try_from(self.runtime.memory_usage().malloc_size).unwrap_or(0);
        self.peak_bytes = self.peak_bytes.max(used);
        Ok(())
    }

    /// The calls queued since the last time.
    pub(crate) fn take_requests(&self) -> Vec<Request> {
        std::mem::take(&mut lock(&self.state).queued)
    }

    /// How the program ended, once it has.
    pub(crate) fn finished(&self) -> Option<Finish> {
        lock(&self.state).finished.clone()
    }

    /// What it printed, and whether the output cap cut it.
    pub(crate) fn logs(&self) -> (Vec<String>, bool) {
        let state = lock(&self.state);
        (state.logs.clone(), state.truncated)
    }
}

/// A caught value as an [`EngineError`]; `parsing`: the program's own evaluation, where a
/// SyntaxError means it does not parse.
fn classify(caught: CaughtError<'_>, parsing: bool) -> EngineError {
    match caught {
        CaughtError::Exception(exception) => {
            let message = exception.message().unwrap_or_default();
            let name: rquickjs::Result<String> = exception.get(PredefinedAtom::Name);
            let name = name.unwrap_or_else(|_| "Error".to_owned());
            if message.contains("interrupted") && name == "InternalError" {
                EngineError::Interrupted
            } else if message.contains("out of memory") {
                EngineError::OutOfMemory
            } else if parsing && name == "SyntaxError" {
                let at = exception
                    .stack()
                    .and_then(|stack| line_of(&stack))
                    .map(|line| format!(" (line {line})"))
                    .unwrap_or_default();
                EngineError::Syntax(format!("SyntaxError: {message}{at}"))
            } else {
                EngineError::Engine(format!("{name}: {message}"))
            }
        }
        CaughtError::Value(value) => {
            if value.is_null() {
                // QuickJS throws a bare null when it cannot even allocate the error.
                EngineError::OutOfMemory
            } else {
                EngineError::Engine(format!("a thrown value: {value:?}"))
            }
        }
        CaughtError::Error(rquickjs::Error::Allocation) => EngineError::OutOfMemory,
        CaughtError::Error(error) => EngineError::Engine(error.to_string()),
    }
}

/// The line a QuickJS stack names first (`<input>:LINE`).
fn line_of(stack: &str) -> Option<u32> {
    stack.lines().find_map(|line| {
        let tail = line.rsplit(':').next()?;
        tail.trim_end_matches(')').trim().parse().ok()
    })
}

/// The Rust side of the prelude's globals, then the prelude itself.
fn install(
    ctx: &Ctx<'_>,
    state: &Arc<Mutex<State>>,
    names: &str,
    limits: Limits,
) -> Result<(), EngineError> {
    let engine_error = |error: rquickjs::Error| EngineError::Engine(error.to_string());
    let globals = ctx.globals();
    let queue = state.clone();
    let request = Function::new(ctx.clone(), move |name: String, arguments: String| {
        // 0 refuses the call (the prelude rejects it saying why).
        let mut state = lock(&queue);
        if state.queued.len() >= MAX_QUEUED {
            return 0;
        }
        state.next_id += 1;
        let id = state.next_id;
        state.queued.push(Request {
            id,
            name,
            arguments,
        });
        id
    })
    .map_err(engine_error)?;
    let output = state.clone();
    let log = Function::new(ctx.clone(), move |text: String| {
        let mut state = lock(&output);
        if state.truncated {
            return;
        }
        let room = limits.output_bytes.saturating_sub(state.log_bytes);
        if text.len() + 1 > room {
            state.truncated = true;
            let mut cut = room.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            state.logs.push(text[..cut].to_owned());
            state.log_bytes = limits.output_bytes;
            return;
        }
        state.log_bytes += text.len() + 1;
        state.logs.push(text);
    })
    .map_err(engine_error)?;
    let end = state.clone();
    let finish = Function::new(ctx.clone(), move |ok: bool, text: Option<String>| {
        let mut state = lock(&end);
        if state.finished.is_none() {
            state.finished = Some(match ok {
                true => Finish::Returned(text),
                false => Finish::Threw(text.unwrap_or_default()),
            });
        }
    })
    .map_err(engine_error)?;
    globals
        .set("__dsh_request", request)
        .map_err(engine_error)?;
    globals.set("__dsh_log", log).map_err(engine_error)?;
    globals.set("__dsh_finish", finish).map_err(engine_error)?;
    globals.set("__dsh_names", names).map_err(engine_error)?;
    ctx.eval::<(), _>(PRELUDE)
        .catch(ctx)
        .map_err(|caught| classify(caught, false))
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
