//! `waterfall-stress`: many waterfall chains at once, interleaved on the host's runtime, whose
//! listeners suspend, hand their `next` to another task, fail before `next`, short-circuit, or
//! forget the rest of the chain half-run.
//! Every result is checked against the value the chain must produce; the plugin prints how many
//! dispatches ran and how many came out wrong.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_plugin_api::prelude::*;

use crate::{Rendezvous, say};

pub const STRESS: WaterfallEvent<u64, u64> = WaterfallEvent::new("probe/waterfall-stress");

const TASKS: u64 = 8;
const DISPATCHES_PER_TASK: u64 = 50;

/// What the second listener answers when it forgets the rest of its chain.
const FORGOTTEN: u64 = 50_000;

/// What the chain below answers for `payload`.
fn expected(payload: u64) -> u64 {
    if payload.is_multiple_of(11) {
        return FORGOTTEN + 1;
    }
    let innermost = if payload.is_multiple_of(7) {
        1_000
    } else {
        10_000
    };
    innermost + 100 + 10 + 1
}

pub struct WaterfallStress;

impl Plugin for WaterfallStress {
    const NAME: &'static str = "waterfall-stress";
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        register(&ctx)?;
        let mismatches = Arc::new(AtomicU64::new(0));
        let finished = Arc::new(AtomicUsize::new(0));
        let all_done = Arc::new(Rendezvous::default());
        for task in 0..TASKS {
            let (ctx2, mismatches, finished, all_done) = (
                ctx.clone(),
                mismatches.clone(),
                finished.clone(),
                all_done.clone(),
            );
            ctx.spawn(async move {
                for round in 0..DISPATCHES_PER_TASK {
                    let payload = task * DISPATCHES_PER_TASK + round;
                    let result = ctx2
                        .waterfall(&STRESS, RArc::new(payload), |_p: RArc<u64>| async { Ok(0) })
                        .await;
                    if result.ok() != Some(expected(payload)) {
                        mismatches.fetch_add(1, Ordering::SeqCst);
                    }
                }
                if finished.fetch_add(1, Ordering::SeqCst) + 1 == TASKS as usize {
                    all_done.open();
                }
            })?;
        }
        all_done.wait().await;
        say(&format!(
            "stress: {} dispatches, {} wrong",
            TASKS * DISPATCHES_PER_TASK,
            mismatches.load(Ordering::SeqCst)
        ));
        Ok(())
    }
}

fn register(ctx: &Context) -> Result<(), PluginError> {
    ctx.on_waterfall(&STRESS, |next: Next<u64, u64>| async move {
        Ok(next.run().await? + 1)
    })?;
    // Starts the rest of the chain, polls it once (it suspends further in) and forgets it, as
    // safe code may: the chain, whose memory the suspended steps live in, must then be kept and
    // never handed to another dispatch.
    ctx.on_waterfall(&STRESS, |next: Next<u64, u64>| async move {
        if !next.payload().is_multiple_of(11) {
            return next.run().await;
        }
        let mut run = Box::pin(next.run());
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let _ = std::future::Future::poll(run.as_mut(), &mut cx);
        std::mem::forget(run);
        Ok(FORGOTTEN)
    })?;
    // Runs the rest of the chain in another task and waits for it there.
    let spawner = ctx.clone();
    ctx.on_waterfall(&STRESS, move |next: Next<u64, u64>| {
        let spawner = spawner.clone();
        async move {
            let answer = Arc::new(Mutex::new(None));
            let done = Arc::new(Rendezvous::default());
            let (slot, signal) = (answer.clone(), done.clone());
            spawner.spawn(async move {
                let result = next.run().await;
                if let Ok(mut slot) = slot.lock() {
                    *slot = Some(result);
                }
                signal.open();
            })?;
            done.wait().await;
            let result = answer
                .lock()
                .ok()
                .and_then(|mut slot| slot.take())
                .unwrap_or_else(|| Err(PluginError::plugin("the spawned next never answered")));
            Ok(result? + 10)
        }
    })?;
    let sleeper = ctx.clone();
    ctx.on_waterfall(&STRESS, move |next: Next<u64, u64>| {
        let sleeper = sleeper.clone();
        async move {
            let p = next.payload();
            if !p.is_multiple_of(2) {
                sleeper.sleep(Duration::from_millis(1)).await;
            }
            Ok(next.run().await? + 100)
        }
    })?;
    ctx.on_waterfall(&STRESS, |next: Next<u64, u64>| async move {
        let p = next.payload();
        if p.is_multiple_of(5) {
            return Err(PluginError::plugin(format!("stress refuses {}", *p)));
        }
        next.run().await
    })?;
    ctx.on_waterfall(&STRESS, |next: Next<u64, u64>| async move {
        let p = next.payload();
        if p.is_multiple_of(7) {
            drop(next);
            return Ok(1_000);
        }
        next.run().await
    })?;
    ctx.on_waterfall(&STRESS, |next: Next<u64, u64>| async move {
        Ok(next.run().await? + 10_000)
    })?;
    Ok(())
}

pub const KEEP: WaterfallEvent<u64, u64> = WaterfallEvent::new("probe/keep");

/// Prints when dropped: shows when a listener's closure is released.
struct Loud;

impl Drop for Loud {
    fn drop(&mut self) {
        say("keeper listener dropped");
    }
}

/// Registers a waterfall listener that owns a [`Loud`] and dispatches through it once, so the
/// event's parked chain keeps a snapshot holding that listener. Disabling the row must drop the
/// listener right away, not at the event's next dispatch.
pub struct WaterfallKeeper;

impl Plugin for WaterfallKeeper {
    const NAME: &'static str = "waterfall-keeper";
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let loud = Arc::new(Loud);
        ctx.on_waterfall(&KEEP, move |next: Next<u64, u64>| {
            let _held = loud.clone();
            async move { Ok(next.run().await? + 1) }
        })?;
        let answer = ctx
            .waterfall(&KEEP, RArc::new(1), |p: RArc<u64>| async move { Ok(*p) })
            .await?;
        say(&format!("keeper dispatched: {answer}"));
        Ok(())
    }
}
