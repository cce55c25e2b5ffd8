//! The call scheduler of one step: parallel-safe calls overlap in a rolling pool, exclusive
//! calls are barriers, results come back in model order.
//!
//! Runtime-agnostic on purpose: it is one future driving the others by hand through
//! [`std::future::poll_fn`], so it runs on whatever executor polls it and spawns nothing.

use std::collections::{BTreeMap, VecDeque};
use std::future::{Future, Ready, poll_fn, ready};
use std::pin::Pin;
use std::task::{Context, Poll};

/// The reference's `maxParallelToolCalls` default.
pub const DEFAULT_MAX_PARALLEL_TOOL_CALLS: usize = 10;

/// How one call may be scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Concurrency {
    /// May overlap with neighbouring parallel-safe calls.
    Parallel,
    /// Runs alone: every earlier call has finished before it starts, and no later call starts
    /// before it has finished.
    Exclusive,
}

/// What [`CallStages::prepare`] decided for one call.
#[derive(Debug)]
pub enum Prepared<D, S> {
    /// The call passed policy; dispatch it.
    Dispatch(D),
    /// The call is already settled (denied, invalid, cancelled before start) and skips dispatch.
    Settled(S),
}

/// The stages of one call, as the reference's loop runs them. Policy (`prepare`) and result
/// recording (`commit`) run one call at a time in model order, because hooks, approval prompts
/// and the log must see calls in the order the model wrote them; only `dispatch` (the tool
/// body) overlaps.
///
/// Cancellation is the stages' business too: once the step is cancelled, `prepare` answers
/// [`Prepared::Settled`] with the synthetic `ABORTED_BEFORE_DISPATCH` result, so nothing new is
/// dispatched while started calls drain and commit in order.
pub trait CallStages<T> {
    /// A prepared call ready for dispatch.
    type Ticket;
    /// A settled call waiting for its turn to commit.
    type Settled;
    /// The committed result.
    type Output;
    type Prepare: Future<Output = Prepared<Self::Ticket, Self::Settled>>;
    type Dispatch: Future<Output = Self::Settled>;
    type Commit: Future<Output = Self::Output>;

    /// Classify a call just before it would start (possibly more than once), so a registry
    /// change made while earlier calls ran still counts.
    fn classify(&mut self, index: usize, call: &T) -> Concurrency;
    fn prepare(&mut self, index: usize, call: T) -> Self::Prepare;
    fn dispatch(&mut self, index: usize, ticket: Self::Ticket) -> Self::Dispatch;
    fn commit(&mut self, index: usize, settled: Self::Settled) -> Self::Commit;
}

/// Run one step's calls, given in model order, and return their outputs in model order.
///
/// Parallel-safe calls run concurrently, at most `limit` at a time (a rolling pool: a finished
/// call makes room for the next); an exclusive call starts only after everything before it has
/// finished and nothing after it starts until it has finished. A `limit` of 0 is taken as 1.
pub async fn run_calls<T, C, F, Fut>(
    calls: Vec<T>,
    classify: C,
    limit: usize,
    run: F,
) -> Vec<Fut::Output>
where
    C: Fn(&T) -> Concurrency,
    F: FnMut(T) -> Fut,
    Fut: Future,
{
    run_staged(calls, limit, Simple { classify, run }).await
}

/// [`run_calls`] with ordered policy and commit stages around the overlapping dispatch.
pub async fn run_staged<T, S: CallStages<T>>(
    calls: Vec<T>,
    limit: usize,
    mut stages: S,
) -> Vec<S::Output> {
    let mut state = Schedule::new(calls, limit.max(1));
    poll_fn(|cx| state.poll(&mut stages, cx)).await
}

/// [`CallStages`] for a plain per-call future: no policy, no separate commit.
struct Simple<C, F> {
    classify: C,
    run: F,
}

impl<T, C, F, Fut> CallStages<T> for Simple<C, F>
where
    C: Fn(&T) -> Concurrency,
    F: FnMut(T) -> Fut,
    Fut: Future,
{
    type Ticket = T;
    type Settled = Fut::Output;
    type Output = Fut::Output;
    type Prepare = Ready<Prepared<T, Fut::Output>>;
    type Dispatch = Fut;
    type Commit = Ready<Fut::Output>;

    fn classify(&mut self, _index: usize, call: &T) -> Concurrency {
        (self.classify)(call)
    }

    fn prepare(&mut self, _index: usize, call: T) -> Self::Prepare {
        ready(Prepared::Dispatch(call))
    }

    fn dispatch(&mut self, _index: usize, call: T) -> Fut {
        (self.run)(call)
    }

    fn commit(&mut self, _index: usize, settled: Fut::Output) -> Self::Commit {
        ready(settled)
    }
}

/// The serial lane: at most one prepare or one commit runs at a time.
enum Lane<P, C> {
    Idle,
    Preparing(usize, Pin<Box<P>>),
    Committing(usize, Pin<Box<C>>),
}

/// The group being run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Group {
    /// Between groups: the next call opens one once everything started has committed.
    Idle,
    /// A parallel group: more parallel-safe calls may start while the pool has room.
    Parallel,
    /// An exclusive call runs, or a parallel group drains before an exclusive call.
    Barrier,
}

struct Schedule<T, S: CallStages<T>> {
    limit: usize,
    pending: VecDeque<(usize, T)>,
    group: Group,
    lane: Lane<S::Prepare, S::Commit>,
    in_flight: Vec<(usize, Pin<Box<S::Dispatch>>)>,
    settled: BTreeMap<usize, S::Settled>,
    started: usize,
    next_commit: usize,
    outputs: Vec<Option<S::Output>>,
}

impl<T, S: CallStages<T>> Schedule<T, S> {
    fn new(calls: Vec<T>, limit: usize) -> Self {
        let outputs = calls.iter().map(|_| None).collect();
        Self {
            limit,
            pending: calls.into_iter().enumerate().collect(),
            group: Group::Idle,
            lane: Lane::Idle,
            in_flight: Vec::new(),
            settled: BTreeMap::new(),
            started: 0,
            next_commit: 0,
            outputs,
        }
    }

    /// Every started call has committed and nothing is running.
    fn quiescent(&self) -> bool {
        matches!(self.lane, Lane::Idle)
            && self.in_flight.is_empty()
            && self.next_commit == self.started
    }

    fn poll(&mut self, stages: &mut S, cx: &mut Context<'_>) -> Poll<Vec<S::Output>> {
        loop {
            let mut progressed = self.poll_dispatches(cx);
            progressed |= self.poll_lane(stages, cx);
            if matches!(self.lane, Lane::Idle) {
                progressed |= self.advance(stages);
            }
            if self.pending.is_empty() && self.quiescent() {
                let outputs = std::mem::take(&mut self.outputs);
                return Poll::Ready(outputs.into_iter().flatten().collect());
            }
            if !progressed {
                return Poll::Pending;
            }
        }
    }

    fn poll_dispatches(&mut self, cx: &mut Context<'_>) -> bool {
        let mut progressed = false;
        let mut slot = 0;
        while slot < self.in_flight.len() {
            if let Poll::Ready(settled) = self.in_flight[slot].1.as_mut().poll(cx) {
                let (index, _) = self.in_flight.swap_remove(slot);
                self.settled.insert(index, settled);
                progressed = true;
            } else {
                slot += 1;
            }
        }
        progressed
    }

    fn poll_lane(&mut self, stages: &mut S, cx: &mut Context<'_>) -> bool {
        match std::mem::replace(&mut self.lane, Lane::Idle) {
            Lane::Idle => false,
            Lane::Preparing(index, mut prepare) => match prepare.as_mut().poll(cx) {
                Poll::Ready(Prepared::Dispatch(ticket)) => {
                    let dispatch = stages.dispatch(index, ticket);
                    self.in_flight.push((index, Box::pin(dispatch)));
                    true
                }
                Poll::Ready(Prepared::Settled(settled)) => {
                    self.settled.insert(index, settled);
                    true
                }
                Poll::Pending => {
                    self.lane = Lane::Preparing(index, prepare);
                    false
                }
            },
            Lane::Committing(index, mut commit) => match commit.as_mut().poll(cx) {
                Poll::Ready(output) => {
                    if let Some(slot) = self.outputs.get_mut(index) {
                        *slot = Some(output);
                    }
                    self.next_commit += 1;
                    true
                }
                Poll::Pending => {
                    self.lane = Lane::Committing(index, commit);
                    false
                }
            },
        }
    }

    /// With the lane idle: commit the next call in model order if it has settled (results are
    /// recorded before anything new starts, as in the reference), else maybe start a call.
    fn advance(&mut self, stages: &mut S) -> bool {
        if let Some(settled) = self.settled.remove(&self.next_commit) {
            let index = self.next_commit;
            self.lane = Lane::Committing(index, Box::pin(stages.commit(index, settled)));
            return true;
        }
        let Some((index, call)) = self.pending.front() else {
            return false;
        };
        let index = *index;
        match self.group {
            Group::Barrier => {
                if self.quiescent() {
                    self.group = Group::Idle;
                    return true;
                }
                false
            }
            Group::Idle => {
                if !self.quiescent() {
                    return false;
                }
                self.group = match stages.classify(index, call) {
                    Concurrency::Parallel => Group::Parallel,
                    Concurrency::Exclusive => Group::Barrier,
                };
                self.start(stages)
            }
            Group::Parallel => {
                if self.in_flight.len() >= self.limit {
                    return false;
                }
                match stages.classify(index, call) {
                    Concurrency::Parallel => self.start(stages),
                    Concurrency::Exclusive => {
                        // The pool drains first; the exclusive call then opens its own group.
                        self.group = Group::Barrier;
                        true
                    }
                }
            }
        }
    }

    fn start(&mut self, stages: &mut S) -> bool {
        let Some((index, call)) = self.pending.pop_front() else {
            return false;
        };
        self.started += 1;
        self.lane = Lane::Preparing(index, Box::pin(stages.prepare(index, call)));
        true
    }
}
