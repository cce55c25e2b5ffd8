//! Dispatch costs: emit to 1, 10 and 100 listeners, bail, serial, parallel and a waterfall of
//! 10 listeners, all living in a plugin library, dispatched through the host's channels.

use std::time::Instant;

use dsh_bench_events::{BAIL, EMIT, PARALLEL, SERIAL, WATERFALL};
use dsh_host::library::Libraries;
use dsh_host::runtime::{MountSpec, Runtime, Scope};
use dsh_plugin_api::{Channel, Descriptor, RArc, typed_channel};

use crate::{exe_dir, median, report};

/// Mounts `count` listeners per event in a fresh runtime and waits until they are active.
async fn runtime_with_listeners(count: u32) -> anyhow::Result<Runtime> {
    let runtime = Runtime::new();
    let libraries = Libraries::new(
        vec![exe_dir()],
        std::env::temp_dir(),
        std::env::temp_dir(),
        dsh_host::builtin::library(),
    );
    let source = libraries.resolve_spec("bench-plugin/listeners");
    let spec = MountSpec {
        row_id: "listeners".to_owned(),
        label: "bench-plugin/listeners".to_owned(),
        source,
        config: format!("{{\"count\":{count}}}"),
        inject: Vec::new(),
    };
    let id = runtime.mount(None, Scope::root(), spec);
    runtime.wait_until(|runtime| runtime.in_flight() == 0).await;
    match runtime.state_of(id) {
        Some(dsh_host::runtime::FiberState::Active) => Ok(runtime),
        state => Err(anyhow::anyhow!(
            "bench listeners did not become active: {state:?} {:?}",
            runtime.report()
        )),
    }
}

fn channel<D: Descriptor>(runtime: &Runtime, event: &D) -> anyhow::Result<Channel<D>> {
    let channel = runtime.channel(&event.decl())?;
    // SAFETY: resolved for `event`'s declaration just above.
    #[allow(unsafe_code, reason = "a typed view of a channel the host resolved")]
    Ok(unsafe { typed_channel(channel.boxed()) })
}

/// Median ns per call over 7 batches of `per_batch` calls.
fn time_sync(per_batch: u32, mut call: impl FnMut()) -> f64 {
    for _ in 0..per_batch {
        call();
    }
    let samples = (0..7)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..per_batch {
                call();
            }
            started.elapsed().as_nanos() as f64 / f64::from(per_batch)
        })
        .collect();
    median(samples)
}

async fn time_async<F, Fut>(per_batch: u32, mut call: F) -> f64
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..per_batch {
        call().await;
    }
    let mut samples = Vec::new();
    for _ in 0..7 {
        let started = Instant::now();
        for _ in 0..per_batch {
            call().await;
        }
        samples.push(started.elapsed().as_nanos() as f64 / f64::from(per_batch));
    }
    median(samples)
}

pub(crate) async fn run() -> anyhow::Result<()> {
    for count in [1, 10, 100] {
        let runtime = runtime_with_listeners(count).await?;
        let emit = channel(&runtime, &EMIT)?;
        let per_ns = time_sync(20_000 / count.max(1) * 10, || {
            let _ = emit.emit(&7);
        });
        report(&format!("emit_{count}_listeners"), per_ns, "ns/emit");
    }
    let runtime = runtime_with_listeners(10).await?;
    let bail = channel(&runtime, &BAIL)?;
    report(
        "bail_10_sync_listeners",
        time_sync(20_000, || {
            let _ = bail.bail(&7);
        }),
        "ns/call",
    );
    let serial = channel(&runtime, &SERIAL)?;
    let value = RArc::new(7_u64);
    let ns = time_async(5_000, || {
        let (serial, value) = (serial.clone(), value.clone());
        async move {
            let _ = serial.serial(value).await;
        }
    })
    .await;
    report("serial_10_async_listeners", ns, "ns/call");
    let parallel = channel(&runtime, &PARALLEL)?;
    let ns = time_async(5_000, || {
        let (parallel, value) = (parallel.clone(), value.clone());
        async move {
            let _ = parallel.parallel(value).await;
        }
    })
    .await;
    report("parallel_10_async_listeners", ns, "ns/call");
    let waterfall = channel(&runtime, &WATERFALL)?;
    let ns = time_async(5_000, || {
        let (waterfall, value) = (waterfall.clone(), value.clone());
        async move {
            let result = waterfall
                .waterfall(value, |value: RArc<u64>| async move { Ok(*value) })
                .await;
            std::hint::black_box(result.ok());
        }
    })
    .await;
    report("waterfall_10_async_listeners", ns, "ns/call");
    Ok(())
}
