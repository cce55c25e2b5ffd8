//! Lifecycle costs in one process: mounting and disposing 100 plugin rows (50 providers and 50
//! consumers from two libraries, each pair in an isolate group), and a reactive reload (the
//! provider replaced until the consumer has re-applied).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_host::app::App;
use dsh_host::library::Libraries;
use dsh_host::runtime::{FiberState, MountSpec, Runtime, Scope};
use dsh_loader::{IsolateTarget, ResolvedRow};

use crate::{exe_dir, median, report};

fn row(id: String, name: &str, config: serde_json::Value, inject: Vec<String>) -> ResolvedRow {
    ResolvedRow {
        id,
        name: name.to_owned(),
        config,
        disabled: false,
        inject,
        isolate: BTreeMap::new(),
        children: None,
        layer: "bench".to_owned(),
    }
}

/// 50 isolate groups, each holding a provider of `svc` and a consumer injecting it.
pub(crate) fn hundred_rows(announce: bool) -> Vec<ResolvedRow> {
    (0..50)
        .map(|index| ResolvedRow {
            isolate: BTreeMap::from([("svc".to_owned(), IsolateTarget::Private)]),
            children: Some(vec![
                row(
                    format!("provider-{index}"),
                    "bench-plugin/provider",
                    serde_json::json!({}),
                    Vec::new(),
                ),
                row(
                    format!("consumer-{index}"),
                    "bench-consumer",
                    serde_json::json!({ "announce": announce }),
                    vec!["svc".to_owned()],
                ),
            ]),
            ..row(
                format!("pair-{index}"),
                "group",
                serde_json::Value::Null,
                Vec::new(),
            )
        })
        .collect()
}

pub(crate) async fn run() -> anyhow::Result<()> {
    let runtime = Runtime::new();
    let libraries = Arc::new(Libraries::new(
        vec![exe_dir()],
        std::env::temp_dir(),
        std::env::temp_dir(),
        dsh_host::builtin::library(),
    ));
    let (mut mounts, mut disposes) = (Vec::new(), Vec::new());
    for round in 0..23 {
        let app = App::new(runtime.clone(), libraries.clone());
        let started = Instant::now();
        app.mount_tree(hundred_rows(false)).await;
        runtime.wait_until(|runtime| runtime.in_flight() == 0).await;
        let mounted = started.elapsed();
        let report_rows = runtime.report();
        let active = report_rows
            .iter()
            .filter(|row| row.state == FiberState::Active)
            .count();
        if active != 150 {
            return Err(anyhow::anyhow!(
                "mount round {round}: {active} of 150 fibers active"
            ));
        }
        let started = Instant::now();
        runtime.dispose_all(Duration::from_secs(5)).await;
        let disposed = started.elapsed();
        if !runtime.report().is_empty() {
            return Err(anyhow::anyhow!("dispose round {round}: fibers left"));
        }
        if round >= 3 {
            mounts.push(mounted.as_secs_f64() * 1e3);
            disposes.push(disposed.as_secs_f64() * 1e3);
        }
    }
    report("mount_100_plugins", median(mounts), "ms");
    report("dispose_100_plugins", median(disposes), "ms");

    let provider = |round: usize| MountSpec {
        row_id: format!("provider-{round}"),
        label: "bench-plugin/provider".to_owned(),
        source: libraries.resolve_spec("bench-plugin/provider"),
        config: "{}".to_owned(),
        inject: Vec::new(),
    };
    let consumer = runtime.mount(
        None,
        Scope::root(),
        MountSpec {
            row_id: "consumer".to_owned(),
            label: "bench-consumer".to_owned(),
            source: libraries.resolve_spec("bench-consumer"),
            config: "{}".to_owned(),
            inject: vec!["svc".to_owned()],
        },
    );
    let mut current = runtime.mount(None, Scope::root(), provider(0));
    runtime.wait_until(|runtime| runtime.in_flight() == 0).await;
    let mut samples = Vec::new();
    for round in 1..=200 {
        let started = Instant::now();
        runtime.dispose(current).await;
        current = runtime.mount(None, Scope::root(), provider(round));
        runtime.wait_until(|runtime| runtime.in_flight() == 0).await;
        samples.push(started.elapsed().as_secs_f64() * 1e6);
        if runtime.state_of(consumer) != Some(FiberState::Active) {
            return Err(anyhow::anyhow!(
                "reload round {round}: consumer is {:?}",
                runtime.state_of(consumer)
            ));
        }
    }
    report("reactive_reload_replace_provider", median(samples), "us");
    runtime.dispose_all(Duration::from_secs(5)).await;
    Ok(())
}
