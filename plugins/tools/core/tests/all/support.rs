//! A tiny executor and rendezvous helpers. Concurrency is proven by futures that can only
//! complete once another one has started: a serial scheduler would leave them pending forever,
//! which the executor reports as a stall instead of hanging.

use std::cell::RefCell;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Poll `future` to completion on this thread. Re-polls only after a wake, so a scheduler that
/// loses a waker is caught as a stall, like a real executor would hang on it.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    for _ in 0..100_000 {
        flag.0.store(false, Ordering::SeqCst);
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        assert!(
            flag.0.load(Ordering::SeqCst),
            "stalled: the future is pending and nothing will wake it"
        );
    }
    panic!("the future did not complete");
}

/// Yield once: pending on the first poll (waking itself), ready on the second.
pub(crate) async fn yield_now() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}

/// An event log shared by the calls of one test, waking waiters on every entry.
#[derive(Default)]
pub(crate) struct Log {
    events: RefCell<Vec<String>>,
    wakers: RefCell<Vec<Waker>>,
    running: RefCell<(usize, usize)>,
}

impl Log {
    pub(crate) fn new() -> Rc<Self> {
        Rc::new(Self::default())
    }

    pub(crate) fn record(&self, event: impl Into<String>) {
        self.events.borrow_mut().push(event.into());
        for waker in self.wakers.borrow_mut().drain(..) {
            waker.wake();
        }
    }

    pub(crate) fn has(&self, event: &str) -> bool {
        self.events.borrow().iter().any(|e| e == event)
    }

    pub(crate) fn position(&self, event: &str) -> usize {
        self.events
            .borrow()
            .iter()
            .position(|e| e == event)
            .unwrap_or_else(|| panic!("{event} never happened: {:?}", self.events()))
    }

    pub(crate) fn events(&self) -> Vec<String> {
        self.events.borrow().clone()
    }

    /// Count a call in, tracking the most that ran at once.
    pub(crate) fn enter(&self, event: impl Into<String>) {
        let mut running = self.running.borrow_mut();
        running.0 += 1;
        running.1 = running.1.max(running.0);
        drop(running);
        self.record(event);
    }

    pub(crate) fn leave(&self, event: impl Into<String>) {
        self.running.borrow_mut().0 -= 1;
        self.record(event);
    }

    pub(crate) fn max_running(&self) -> usize {
        self.running.borrow().1
    }

    /// Wait until `event` has been recorded.
    pub(crate) async fn until(self: &Rc<Self>, event: &str) {
        let log = self.clone();
        poll_fn(move |cx| {
            if log.has(event) {
                Poll::Ready(())
            } else {
                log.wakers.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
    }
}
