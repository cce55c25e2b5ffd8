//! `dsh-bench-events`: the events of the runtime benchmarks, declared once so the benchmark
//! plugins and `dsh-bench` agree on them (the host checks their layouts anyway). It owns
//! nothing else.

use dsh_plugin_api::{BailEvent, EmitEvent, ParallelEvent, SerialEvent, WaterfallEvent};

pub const EMIT: EmitEvent<u64> = EmitEvent::new("bench/emit");
pub const BAIL: BailEvent<u64, u64> = BailEvent::new("bench/bail");
pub const SERIAL: SerialEvent<u64, u64> = SerialEvent::new("bench/serial");
pub const PARALLEL: ParallelEvent<u64> = ParallelEvent::new("bench/parallel");
pub const WATERFALL: WaterfallEvent<u64, u64> = WaterfallEvent::new("bench/waterfall");
