//! `modes`: exercises the five dispatch modes through the host and prints each result, including
//! a waterfall whose listeners fail, panic, suspend and hold large futures.

use std::sync::{Arc, Mutex};

use dsh_plugin_api::prelude::*;

use crate::{Rendezvous, say};

/// Events of the `modes` plugin.
pub const MODE_EMIT: EmitEvent<RString> = EmitEvent::new("probe/emit");
pub const MODE_BAIL: BailEvent<u32, u32> = BailEvent::new("probe/bail");
pub const MODE_PARALLEL: ParallelEvent<RString> = ParallelEvent::new("probe/parallel");
pub const MODE_SERIAL: SerialEvent<u32, RString> = SerialEvent::new("probe/serial");
pub const MODE_WATERFALL: WaterfallEvent<RString, RString> = WaterfallEvent::new("probe/waterfall");
pub const MODE_WATERFALL_FAULTS: WaterfallEvent<RString, RString> =
    WaterfallEvent::new("probe/waterfall-faults");
pub const MODE_WATERFALL_DEEP: WaterfallEvent<u64, u64> =
    WaterfallEvent::new("probe/waterfall-deep");

/// Exercises the five dispatch modes and prints each result.
pub struct Modes;

impl Plugin for Modes {
    const NAME: &'static str = "modes";
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        for name in ["a", "b"] {
            let seen = seen.clone();
            ctx.on_emit(&MODE_EMIT, move |payload: &RString| {
                if let Ok(mut seen) = seen.lock() {
                    seen.push(format!("{name}:{payload}"));
                }
            })?;
        }
        ctx.emit(&MODE_EMIT, &RString::from("x"))?;
        say(&format!(
            "emit: {}",
            seen.lock().map(|seen| seen.join(" ")).unwrap_or_default()
        ));

        ctx.on_bail(&MODE_BAIL, |_n: &u32| None)?;
        ctx.on_bail(&MODE_BAIL, |n: &u32| Some(n * 2))?;
        ctx.on_bail(&MODE_BAIL, |_n: &u32| Some(999))?;
        say(&format!("bail: {:?}", ctx.bail(&MODE_BAIL, &21)?));

        // Every parallel listener waits until all three have started.
        let gate = Arc::new(Rendezvous::default());
        let started = Arc::new(Mutex::new(0_u32));
        for _ in 0..3 {
            let (gate, started) = (gate.clone(), started.clone());
            ctx.on_parallel(&MODE_PARALLEL, move |_payload: RArc<RString>| {
                let (gate, started) = (gate.clone(), started.clone());
                async move {
                    let all = started.lock().map(|mut count| {
                        *count += 1;
                        *count == 3
                    });
                    if all.unwrap_or(false) {
                        gate.open();
                    }
                    gate.wait().await;
                }
            })?;
        }
        ctx.parallel(&MODE_PARALLEL, RArc::new(RString::from("go")))
            .await?;
        say(&format!(
            "parallel: {} started, all done",
            started.lock().map(|count| *count).unwrap_or(0)
        ));

        let third_called = Arc::new(Mutex::new(false));
        ctx.on_serial(&MODE_SERIAL, |_n: RArc<u32>| async move { None })?;
        ctx.on_serial(&MODE_SERIAL, |n: RArc<u32>| async move {
            Some(RString::from(format!("first answer {n}")))
        })?;
        let flag = third_called.clone();
        ctx.on_serial(&MODE_SERIAL, move |_n: RArc<u32>| {
            let flag = flag.clone();
            async move {
                if let Ok(mut flag) = flag.lock() {
                    *flag = true;
                }
                Some(RString::from("second answer"))
            }
        })?;
        let answer = ctx.serial(&MODE_SERIAL, RArc::new(7)).await?;
        say(&format!(
            "serial: {} (third called: {})",
            answer.map(|s| s.to_string()).unwrap_or_default(),
            third_called.lock().map(|flag| *flag).unwrap_or(true)
        ));

        ctx.on_waterfall(&MODE_WATERFALL, |next: Next<RString, RString>| async move {
            Ok(RString::from(format!("inner({})", next.run().await?)))
        })?;
        ctx.prepend()
            .on_waterfall(&MODE_WATERFALL, |next: Next<RString, RString>| async move {
                Ok(RString::from(format!("outer({})", next.run().await?)))
            })?;
        let result = ctx
            .waterfall(
                &MODE_WATERFALL,
                RArc::new(RString::from("default")),
                |p: RArc<RString>| async move { Ok((*p).clone()) },
            )
            .await?;
        say(&format!("waterfall: {result}"));
        waterfall_faults(&ctx).await?;
        waterfall_deep(&ctx).await
    }
}

/// A chain of forty listeners (more than the chain keeps inline, and more than the 32 whose
/// claims are bits of one word: the rest use their links' flags). The innermost keeps a counted
/// reference to the payload and hands its `next`, unrun, to a task that drops it after the
/// dispatch ended: that drop releases the chain's last reference, through a link that lives
/// outside the chain's inline ones.
async fn waterfall_deep(ctx: &Context) -> Result<(), PluginError> {
    for _ in 0..39 {
        ctx.on_waterfall(&MODE_WATERFALL_DEEP, |next: Next<u64, u64>| async move {
            Ok(next.run().await? + 1)
        })?;
    }
    let released = Arc::new(Rendezvous::default());
    let (keeper, signal) = (ctx.clone(), released.clone());
    ctx.on_waterfall(&MODE_WATERFALL_DEEP, move |next: Next<u64, u64>| {
        let (keeper, signal) = (keeper.clone(), signal.clone());
        async move {
            let kept = next.payload_arc();
            let timer = keeper.clone();
            keeper.spawn(async move {
                timer.sleep(std::time::Duration::from_millis(5)).await;
                drop(next);
                signal.open();
            })?;
            Ok(*kept * 100)
        }
    })?;
    let answer = ctx
        .waterfall(
            &MODE_WATERFALL_DEEP,
            RArc::new(7),
            |p: RArc<u64>| async move { Ok(*p) },
        )
        .await?;
    released.wait().await;
    say(&format!("waterfall deep: {answer}"));
    Ok(())
}

/// A chain with a listener that fails and one that panics before running `next` (both skipped),
/// one that suspends on a timer while holding more state than the chain's scratch memory (its
/// future is boxed), and one that fails after running `next` (its error reaches the outermost
/// listener, which catches it).
async fn waterfall_faults(ctx: &Context) -> Result<(), PluginError> {
    ctx.on_waterfall(
        &MODE_WATERFALL_FAULTS,
        |next: Next<RString, RString>| async move {
            let inner = match next.run().await {
                Ok(value) => value.to_string(),
                Err(error) => format!("caught: {error}"),
            };
            Ok(RString::from(format!("outer({inner})")))
        },
    )?;
    ctx.on_waterfall(
        &MODE_WATERFALL_FAULTS,
        |_next: Next<RString, RString>| async move {
            Err(PluginError::plugin("refused before next"))
        },
    )?;
    ctx.on_waterfall(
        &MODE_WATERFALL_FAULTS,
        |_next: Next<RString, RString>| async move {
            if true {
                panic!("panicked before next");
            }
            Ok(RString::new())
        },
    )?;
    let timer = ctx.clone();
    ctx.on_waterfall(
        &MODE_WATERFALL_FAULTS,
        move |next: Next<RString, RString>| {
            let timer = timer.clone();
            async move {
                let pad = std::hint::black_box([7_u8; 4096]);
                timer.sleep(std::time::Duration::from_millis(2)).await;
                let inner = next.run().await?;
                Ok(RString::from(format!("big{}({inner})", pad[4095])))
            }
        },
    )?;
    ctx.on_waterfall(
        &MODE_WATERFALL_FAULTS,
        |next: Next<RString, RString>| async move {
            let fail = next.payload().as_str() == "fail";
            let inner = next.run().await?;
            if fail {
                return Err(PluginError::plugin(format!("failed after {inner}")));
            }
            Ok(inner)
        },
    )?;
    for payload in ["default", "fail"] {
        let result = ctx
            .waterfall(
                &MODE_WATERFALL_FAULTS,
                RArc::new(RString::from(payload)),
                |p: RArc<RString>| async move { Ok((*p).clone()) },
            )
            .await?;
        say(&format!("waterfall faults: {result}"));
    }
    // Two dispatches at once, both suspended in the timer listener: each runs in its own chain.
    let dispatch = |payload: &str| {
        ctx.waterfall(
            &MODE_WATERFALL_FAULTS,
            RArc::new(RString::from(payload)),
            |p: RArc<RString>| async move { Ok((*p).clone()) },
        )
    };
    let (mut first, mut second) = (Box::pin(dispatch("one")), Box::pin(dispatch("two")));
    let (mut first_done, mut second_done) = (None, None);
    std::future::poll_fn(|cx| {
        if first_done.is_none()
            && let std::task::Poll::Ready(result) = first.as_mut().poll(cx)
        {
            first_done = Some(result);
        }
        if second_done.is_none()
            && let std::task::Poll::Ready(result) = second.as_mut().poll(cx)
        {
            second_done = Some(result);
        }
        if first_done.is_some() && second_done.is_some() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    if let (Some(first), Some(second)) = (first_done, second_done) {
        say(&format!("waterfall concurrent: {} {}", first?, second?));
    }
    Ok(())
}
