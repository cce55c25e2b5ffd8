//! The step scheduler, proven with rendezvous and start logs, never with timing.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use dsh_tools_core::{
    CallStages, Concurrency, DEFAULT_MAX_PARALLEL_TOOL_CALLS, Prepared, run_calls, run_staged,
};

use crate::support::{Log, block_on, yield_now};

/// A call: its index, its mode, and what it waits for before finishing.
#[derive(Clone)]
struct Call {
    index: usize,
    mode: Concurrency,
    waits_for: Option<String>,
}

fn call(index: usize, mode: Concurrency, waits_for: Option<&str>) -> Call {
    Call {
        index,
        mode,
        waits_for: waits_for.map(str::to_owned),
    }
}

const P: Concurrency = Concurrency::Parallel;
const X: Concurrency = Concurrency::Exclusive;

fn run(log: &Rc<Log>, calls: Vec<Call>, limit: usize) -> Vec<usize> {
    block_on(run_calls(
        calls,
        |c: &Call| c.mode,
        limit,
        |c: Call| {
            let log = log.clone();
            async move {
                log.enter(format!("start {}", c.index));
                yield_now().await;
                if let Some(event) = &c.waits_for {
                    log.until(event).await;
                }
                log.leave(format!("end {}", c.index));
                c.index
            }
        },
    ))
}

#[test]
fn parallel_calls_overlap() {
    let log = Log::new();
    // Each finishes only after the other has started: serial execution would stall.
    let out = run(
        &log,
        vec![call(0, P, Some("start 1")), call(1, P, Some("start 0"))],
        DEFAULT_MAX_PARALLEL_TOOL_CALLS,
    );
    assert_eq!(out, [0, 1]);
    assert_eq!(log.max_running(), 2);
}

#[test]
fn results_come_back_in_model_order() {
    let log = Log::new();
    let out = run(
        &log,
        vec![
            call(0, P, Some("end 2")),
            call(1, P, Some("end 2")),
            call(2, P, None),
        ],
        DEFAULT_MAX_PARALLEL_TOOL_CALLS,
    );
    assert_eq!(out, [0, 1, 2]);
    assert!(log.position("end 2") < log.position("end 0"));
}

#[test]
fn an_exclusive_call_is_a_barrier() {
    let log = Log::new();
    let out = run(
        &log,
        vec![
            call(0, P, Some("start 1")),
            call(1, P, Some("start 0")),
            call(2, X, None),
            call(3, P, Some("start 4")),
            call(4, P, Some("start 3")),
        ],
        DEFAULT_MAX_PARALLEL_TOOL_CALLS,
    );
    assert_eq!(out, [0, 1, 2, 3, 4]);
    assert!(log.position("start 2") > log.position("end 0"));
    assert!(log.position("start 2") > log.position("end 1"));
    assert!(log.position("start 3") > log.position("end 2"));
    assert!(log.position("start 4") > log.position("end 2"));
}

#[test]
fn consecutive_exclusive_calls_never_overlap() {
    let log = Log::new();
    let out = run(
        &log,
        vec![call(0, X, None), call(1, X, None), call(2, P, None)],
        10,
    );
    assert_eq!(out, [0, 1, 2]);
    assert_eq!(log.max_running(), 1);
    assert_eq!(
        log.events(),
        ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"]
    );
}

#[test]
fn the_pool_is_bounded_and_rolling() {
    let log = Log::new();
    // Limit 2. Call 1 can only finish once call 2 has started, which a rolling pool allows
    // (call 0 frees a slot) and fixed batches of two would not.
    let calls = vec![
        call(0, P, None),
        call(1, P, Some("start 2")),
        call(2, P, Some("start 3")),
        call(3, P, None),
        call(4, P, None),
    ];
    let out = run(&log, calls, 2);
    assert_eq!(out, [0, 1, 2, 3, 4]);
    assert_eq!(log.max_running(), 2);
}

#[test]
fn a_zero_limit_runs_one_at_a_time_and_empty_is_empty() {
    let log = Log::new();
    assert_eq!(
        run(&log, vec![call(0, P, None), call(1, P, None)], 0),
        [0, 1]
    );
    assert_eq!(log.max_running(), 1);
    assert!(run(&log, Vec::new(), 3).is_empty());
}

#[test]
fn classification_happens_just_before_each_start() {
    let log = Log::new();
    // Call 2 turns exclusive once call 0 has started (its body changed the registry, say). A
    // scheduler that classified every call up front would let call 2 overlap with 0 and 1.
    let classify_log = log.clone();
    let calls = vec![
        call(0, P, Some("start 1")),
        call(1, P, Some("start 0")),
        call(2, P, None),
    ];
    let out = block_on(run_calls(
        calls,
        move |c: &Call| {
            classify_log.record(format!("classify {}", c.index));
            if c.index == 2 && classify_log.has("start 0") {
                X
            } else {
                c.mode
            }
        },
        10,
        |c: Call| {
            let log = log.clone();
            async move {
                log.enter(format!("start {}", c.index));
                yield_now().await;
                if let Some(event) = &c.waits_for {
                    log.until(event).await;
                }
                log.leave(format!("end {}", c.index));
                c.index
            }
        },
    ));
    assert_eq!(out, [0, 1, 2]);
    assert!(log.position("classify 2") > log.position("start 0"));
    assert!(log.position("start 2") > log.position("end 0"));
    assert!(log.position("start 2") > log.position("end 1"));
}

type Boxed<T> = Pin<Box<dyn Future<Output = T>>>;

/// Stages logging every step: call 1 is denied by policy, call 3 is prepared only after the
/// step was cancelled (while call 0 ran), so it settles as aborted before dispatch.
struct Logged {
    log: Rc<Log>,
}

impl CallStages<usize> for Logged {
    type Ticket = usize;
    type Settled = String;
    type Output = String;
    type Prepare = Boxed<Prepared<usize, String>>;
    type Dispatch = Boxed<String>;
    type Commit = Boxed<String>;

    fn classify(&mut self, _index: usize, _call: &usize) -> Concurrency {
        P
    }

    fn prepare(&mut self, index: usize, call: usize) -> Self::Prepare {
        let log = self.log.clone();
        Box::pin(async move {
            log.enter(format!("prepare {index}"));
            yield_now().await;
            if index == 3 {
                // Policy awaiting something (an approval prompt, say) while the step is cancelled.
                log.until("cancelled").await;
            }
            log.leave(format!("prepared {index}"));
            match call {
                1 => Prepared::Settled(format!("denied {call}")),
                _ if log.has("cancelled") => {
                    Prepared::Settled(format!("aborted before dispatch {call}"))
                }
                _ => Prepared::Dispatch(call),
            }
        })
    }

    fn dispatch(&mut self, index: usize, ticket: usize) -> Self::Dispatch {
        let log = self.log.clone();
        Box::pin(async move {
            log.record(format!("dispatch {index}"));
            if ticket == 0 {
                // Finishes only after the later call 2 was dispatched, and after it finished.
                log.until("done 2").await;
                log.record("cancelled");
            }
            yield_now().await;
            log.record(format!("done {index}"));
            format!("ok {ticket}")
        })
    }

    fn commit(&mut self, index: usize, settled: String) -> Self::Commit {
        let log = self.log.clone();
        Box::pin(async move {
            yield_now().await;
            log.record(format!("commit {index}"));
            settled
        })
    }
}

#[test]
fn staged_policy_and_commits_run_in_model_order_while_dispatch_overlaps() {
    let log = Log::new();
    let out = block_on(run_staged(
        vec![0, 1, 2, 3],
        10,
        Logged { log: log.clone() },
    ));
    assert_eq!(
        out,
        ["ok 0", "denied 1", "ok 2", "aborted before dispatch 3"]
    );
    // Prepares never overlap, and come in model order.
    assert_eq!(log.max_running(), 1);
    let prepares: Vec<String> = log
        .events()
        .into_iter()
        .filter(|e| e.starts_with("prepare "))
        .collect();
    assert_eq!(
        prepares,
        ["prepare 0", "prepare 1", "prepare 2", "prepare 3"]
    );
    // A call settled by policy is never dispatched.
    assert!(!log.has("dispatch 1"));
    assert!(!log.has("dispatch 3"));
    // Call 2 finished before call 0, but commits stay in model order.
    assert!(log.position("done 2") < log.position("done 0"));
    let commits: Vec<String> = log
        .events()
        .into_iter()
        .filter(|e| e.starts_with("commit"))
        .collect();
    assert_eq!(commits, ["commit 0", "commit 1", "commit 2", "commit 3"]);
    // Policy that finished after the cancellation settled its call instead of dispatching it.
    assert!(log.position("prepared 3") > log.position("cancelled"));
}
