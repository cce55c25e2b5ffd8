//! Example plugin `waterfall-demo`: the seed's `demo/transform` pair. The outer listener
//! upper-cases whatever the inside returns; the inner one short-circuits inputs containing
//! `blocked`. Dispatching `hello` and `blocked` prints `HELLO` and `** BLOCKED **`.

use std::io::Write;

use dsh_plugin_api::prelude::*;

/// `demo/transform`: payload and result are strings.
pub const TRANSFORM: WaterfallEvent<RString, RString> = WaterfallEvent::new("demo/transform");

pub struct WaterfallDemo;

impl Plugin for WaterfallDemo {
    const NAME: &'static str = "waterfall-demo";
    type Config = NoConfig;

    async fn apply(ctx: Context, _config: NoConfig) -> Result<(), PluginError> {
        ctx.on_waterfall(&TRANSFORM, |next: Next<RString, RString>| async move {
            let downstream = next.run().await?;
            Ok(RString::from(downstream.to_uppercase()))
        })?;
        ctx.on_waterfall(&TRANSFORM, |next: Next<RString, RString>| async move {
            let input = next.payload();
            if input.contains("blocked") {
                return Ok(RString::from("** blocked **"));
            }
            next.run().await
        })?;
        let channel = ctx.channel(&TRANSFORM)?;
        for input in ["hello", "blocked"] {
            let output = channel
                .waterfall(
                    RArc::new(RString::from(input)),
                    |input: RArc<RString>| async move { Ok((*input).clone()) },
                )
                .await?;
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{output}");
            let _ = stdout.flush();
        }
        Ok(())
    }
}

dsh_plugin_api::export_plugins!(WaterfallDemo);
