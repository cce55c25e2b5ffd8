//! Tool pipeline overhead: `tools-probe` in bench mode registers a no-op tool in a real
//! `dsh-host` (rows `session`, `tools`, `tools-probe`) and times one-call steps through the
//! whole pipeline, outside a session and inside one; it reports its medians on stdout.

use crate::process::{Host, scratch};
use crate::{median, report};

pub(crate) fn run() -> anyhow::Result<()> {
    let dir = scratch("tools")?;
    let config = dir.join("tools.yml");
    std::fs::write(
        &config,
        format!(
            "- id: session\n  name: session\n- id: tools\n  name: tools\n- id: probe\n  name: tools-probe\n  config:\n    session: bench\n    cwd: {:?}\n    calls: []\n    benchCalls: 7000\n",
            dir.display().to_string()
        ),
    )?;
    let config = config.display().to_string();
    let (mut unlogged, mut logged) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let host = Host::start(&dir, &["--config", &config, "--no-watch"])?;
        let parse = |text: String| {
            text.trim()
                .parse::<f64>()
                .map_err(|error| anyhow::anyhow!("bad figure `{text}`: {error}"))
        };
        unlogged.push(parse(
            host.line_after("bench tool_pipeline_noop_unlogged ")?,
        )?);
        logged.push(parse(host.line_after("bench tool_pipeline_noop_logged ")?)?);
        host.stop();
    }
    report("tool_pipeline_noop_unlogged", median(unlogged), "us");
    report("tool_pipeline_noop_logged", median(logged), "us");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
