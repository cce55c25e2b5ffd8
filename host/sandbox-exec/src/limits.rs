//! Resource limits, set with `setrlimit` before the program starts and inherited by every
//! process it starts: how many processes its user may run (which the kernel counts within the
//! command's user namespace when bubblewrap gives it one, and does not enforce for root), how
//! much private writable memory each process may map (`RLIMIT_DATA`, which leaves the large
//! reservations of runtimes such as V8 alone but stops a memory bomb), the largest file it may
//! write, the CPU seconds each process may use, and no core files.

/// Which limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LimitKind {
    Processes,
    Data,
    FileSize,
    CpuSeconds,
    Core,
    OpenFiles,
}

impl LimitKind {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "processes" => Self::Processes,
            "data" => Self::Data,
            "fsize" => Self::FileSize,
            "cpu" => Self::CpuSeconds,
            "core" => Self::Core,
            "files" => Self::OpenFiles,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Processes => "processes",
            Self::Data => "data",
            Self::FileSize => "fsize",
            Self::CpuSeconds => "cpu",
            Self::Core => "core",
            Self::OpenFiles => "files",
        }
    }

    fn resource(self) -> libc::__rlimit_resource_t {
        match self {
            Self::Processes => libc::RLIMIT_NPROC,
            Self::Data => libc::RLIMIT_DATA,
            Self::FileSize => libc::RLIMIT_FSIZE,
            Self::CpuSeconds => libc::RLIMIT_CPU,
            Self::Core => libc::RLIMIT_CORE,
            Self::OpenFiles => libc::RLIMIT_NOFILE,
        }
    }
}

/// How long past its CPU limit a process that ignores SIGXCPU may run before SIGKILL.
const CPU_GRACE_SECONDS: libc::rlim_t = 5;

/// One limit and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limit {
    pub(crate) kind: LimitKind,
    pub(crate) value: u64,
}

/// Lowers the soft and hard limit to `limit.value`, or keeps the current ones where they are
/// already lower (a limit is never raised here).
#[allow(
    unsafe_code,
    reason = "getrlimit and setrlimit have no safe wrapper in std"
)]
pub(crate) fn apply(limit: &Limit) -> std::io::Result<()> {
    let resource = limit.kind.resource();
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one `rlimit` into the struct it is given, which lives here.
    if unsafe { libc::getrlimit(resource, &mut current) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let wanted = limit.value as libc::rlim_t;
    // The CPU limit's soft value sends SIGXCPU, which names the cause in the exit status; the
    // hard one, a little later, is SIGKILL for a process that ignores it.
    let hard = match limit.kind {
        LimitKind::CpuSeconds => wanted.saturating_add(CPU_GRACE_SECONDS),
        _ => wanted,
    };
    let lowered = libc::rlimit {
        rlim_cur: current.rlim_cur.min(wanted),
        rlim_max: current.rlim_max.min(hard),
    };
    // SAFETY: setrlimit reads one `rlimit` from the struct it is given, which lives here.
    if unsafe { libc::setrlimit(resource, &lowered) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
