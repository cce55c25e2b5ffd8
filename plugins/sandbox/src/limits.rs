//! The resource limits of every confined command (the row's `limits`), passed to
//! `dsh-sandbox-exec`, which sets them before the program starts. They bound what one command
//! can take from the machine: a fork bomb meets the process limit (counted within the command's
//! user namespace; the kernel does not apply it to root, which is why the row's defaults are
//! also said in the model's runtime context and the README says what holds), a memory bomb
//! meets the data limit (private writable memory per process, so runtimes that reserve large
//! address ranges still start), a runaway writer meets the file size limit, and a spinning
//! process meets the CPU limit (killed with SIGXCPU). No core files are written.

use dsh_plugin_api::{Deserialize, JsonSchema, Serialize};

/// Config of the limits (`limits` in the `sandbox` row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(crate = "dsh_plugin_api::serde", default, deny_unknown_fields)]
#[schemars(crate = "dsh_plugin_api::schemars")]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Processes (and threads) the command's user may run at once.
    pub processes: u64,
    /// Private writable memory of each process, in bytes.
    pub memory_bytes: u64,
    /// The largest file a process may write, in bytes.
    pub file_size_bytes: u64,
    /// CPU seconds of each process.
    pub cpu_seconds: u64,
}

const GIB: u64 = 1 << 30;

impl Default for Limits {
    fn default() -> Self {
        Self {
            processes: 4096,
            memory_bytes: 8 * GIB,
            file_size_bytes: 8 * GIB,
            cpu_seconds: 3600,
        }
    }
}

impl Limits {
    /// The `--limit` arguments of `dsh-sandbox-exec`; a limit of 0 is no limit.
    pub(crate) fn arguments(&self) -> Vec<String> {
        let mut argv = Vec::new();
        for (name, value) in [
            ("processes", self.processes),
            ("data", self.memory_bytes),
            ("fsize", self.file_size_bytes),
            ("cpu", self.cpu_seconds),
        ] {
            if value > 0 {
                argv.extend(["--limit".to_owned(), format!("{name}={value}")]);
            }
        }
        argv.extend(["--limit".to_owned(), "core=0".to_owned()]);
        argv
    }

    /// The limits as a person reads them.
    pub(crate) fn describe(&self) -> String {
        let bytes = |value: u64| match value {
            0 => "unlimited".to_owned(),
            value if value % GIB == 0 => format!("{} GiB", value / GIB),
            value => format!("{} MiB", value / (1 << 20)),
        };
        format!(
            "{} processes, {} of memory per process, files up to {}, {} CPU seconds per process",
            match self.processes {
                0 => "unlimited".to_owned(),
                value => value.to_string(),
            },
            bytes(self.memory_bytes),
            bytes(self.file_size_bytes),
            match self.cpu_seconds {
                0 => "unlimited".to_owned(),
                value => value.to_string(),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_set_limit_is_an_argument_and_zero_is_none() {
        let limits = Limits {
            processes: 64,
            memory_bytes: 0,
            ..Limits::default()
        };
        assert_eq!(
            limits.arguments().join(" "),
            "--limit processes=64 --limit fsize=8589934592 --limit cpu=3600 --limit core=0"
        );
        assert_eq!(
            limits.describe(),
            "64 processes, unlimited of memory per process, files up to 8 GiB, 3600 CPU seconds per process"
        );
    }
}
