//! The seccomp filter every confined command runs under. Namespaces and dropped capabilities
//! already make most of these calls fail; the filter is the second wall, and the only one in
//! the Landlock fallback, which has neither. It refuses (`EPERM`):
//!
//! - mounting, unmounting and pivoting (the masks over the credentials and the dsh home must
//!   stay), entering or making namespaces (`setns`, `unshare`, and `clone` with a namespace
//!   flag), `chroot`;
//! - reaching into other processes (`ptrace`, `process_vm_*`, `pidfd_getfd`), kernel
//!   interfaces that widen the attack surface or load code (`bpf`, `perf_event_open`,
//!   `userfaultfd`, module loading, `kexec_*`, the keyrings, `open_by_handle_at`, the new mount
//!   API, `swapon`, `reboot`, `acct`, `quotactl`, `syslog`);
//! - typing into a terminal (`ioctl` with `TIOCSTI` or `TIOCLINUX`);
//! - creating sockets of the denied families: Unix sockets by default (a read-only mount does
//!   not stop a `connect` to a socket file, so the host's or a Docker daemon's socket would be a
//!   way out), `AF_VSOCK` without the network (it is not confined by a network namespace), and
//!   IP in the Landlock fallback without the network (Landlock fences TCP only).
//!
//! It answers `ENOSYS` to `clone3` (its flags are behind a pointer, which a filter cannot read,
//! so the C library falls back to `clone`, whose flags it can) and to `io_uring` (whose
//! requests would make the refused calls without passing the filter), and to any system call
//! of the x32 ABI. A process of another architecture (a 32-bit program on x86_64) is killed at
//! its first system call: its numbers are not the ones filtered.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

/// A socket family the filter can refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SocketFamily {
    Unix,
    Inet,
    Inet6,
    Vsock,
}

impl SocketFamily {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "unix" => Self::Unix,
            "inet" => Self::Inet,
            "inet6" => Self::Inet6,
            "vsock" => Self::Vsock,
            _ => return None,
        })
    }

    fn number(self) -> u64 {
        let family = match self {
            Self::Unix => libc::AF_UNIX,
            Self::Inet => libc::AF_INET,
            Self::Inet6 => libc::AF_INET6,
            Self::Vsock => libc::AF_VSOCK,
        };
        family as u64
    }
}

#[cfg(target_arch = "x86_64")]
pub(crate) const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
pub(crate) const ARCH: TargetArch = TargetArch::aarch64;

/// Calls refused whatever their arguments.
fn refused_calls() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_chroot,
        libc::SYS_setns,
        libc::SYS_unshare,
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_pidfd_getfd,
        libc::SYS_bpf,
        libc::SYS_perf_event_open,
        libc::SYS_userfaultfd,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_keyctl,
        libc::SYS_open_by_handle_at,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        libc::SYS_mount_setattr,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_acct,
        libc::SYS_quotactl,
        libc::SYS_syslog,
        libc::SYS_vhangup,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([libc::SYS_iopl, libc::SYS_ioperm]);
    calls
}

/// The namespace flags `clone` must not carry (its low byte is the exit signal, so
/// `CLONE_NEWTIME`, which shares it, is left to `unshare`, which is refused whole).
const NAMESPACE_FLAGS: [i32; 7] = [
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWCGROUP,
];

/// The terminal requests refused.
const TERMINAL_INJECTION: [u64; 2] = [libc::TIOCSTI, libc::TIOCLINUX];

fn equals(arg: u8, value: u64) -> Result<SeccompRule, seccompiler::BackendError> {
    SeccompRule::new(vec![SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        value,
    )?])
}

/// The filter that answers `EPERM`.
pub(crate) fn refusals(
    denied_sockets: &[SocketFamily],
) -> Result<BpfProgram, seccompiler::BackendError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = refused_calls()
        .into_iter()
        .map(|call| (call, Vec::new()))
        .collect();
    let clone_rules = NAMESPACE_FLAGS
        .iter()
        .map(|flag| {
            let flag = *flag as u64;
            SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_clone, clone_rules);
    let ioctl_rules = TERMINAL_INJECTION
        .iter()
        .map(|request| equals(1, *request))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctl_rules);
    if !denied_sockets.is_empty() {
        let socket_rules = denied_sockets
            .iter()
            .map(|family| equals(0, family.number()))
            .collect::<Result<Vec<_>, _>>()?;
        rules.insert(libc::SYS_socket, socket_rules);
    }
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        ARCH,
    )?
    .try_into()
}

/// The calls answered `ENOSYS`.
const ABSENT_CALLS: [i64; 4] = [
    libc::SYS_clone3,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
];

/// The filter that answers `ENOSYS`, so callers fall back to what the first filter can see.
pub(crate) fn absent() -> Result<BpfProgram, seccompiler::BackendError> {
    let rules: BTreeMap<i64, Vec<SeccompRule>> = ABSENT_CALLS
        .into_iter()
        .map(|call| (call, Vec::new()))
        .collect();
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        ARCH,
    )?
    .try_into()
}

/// x32 system calls carry this bit in their number on x86_64: numbers the other filters never
/// name, so they are refused as a range.
#[cfg(target_arch = "x86_64")]
pub(crate) const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// `ENOSYS` for every x32 call: load the number, compare it with the x32 bit, answer.
#[cfg(target_arch = "x86_64")]
fn no_x32() -> BpfProgram {
    const LOAD_WORD_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JUMP_IF_AT_LEAST: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RETURN: u16 = 0x06; // BPF_RET | BPF_K
    let nr_offset = 0; // seccomp_data.nr
    vec![
        sock_filter {
            code: LOAD_WORD_ABS,
            jt: 0,
            jf: 0,
            k: nr_offset,
        },
        sock_filter {
            code: JUMP_IF_AT_LEAST,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        sock_filter {
            code: RETURN,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        },
        sock_filter {
            code: RETURN,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ]
}

/// Why the filters could not be built or installed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SeccompError {
    #[error("{0}")]
    Build(seccompiler::BackendError),
    #[error("{0}")]
    Install(seccompiler::Error),
}

/// The filters, in the order they are installed.
pub(crate) fn programs(denied_sockets: &[SocketFamily]) -> Result<Vec<BpfProgram>, SeccompError> {
    let mut refused = refused_calls();
    refused.extend([libc::SYS_clone, libc::SYS_ioctl]);
    if !denied_sockets.is_empty() {
        refused.push(libc::SYS_socket);
    }
    let absent_calls = ABSENT_CALLS.to_vec();
    #[allow(unused_mut, reason = "the x32 filter exists on x86_64 only")]
    let mut programs = vec![
        crate::seccomp_prefix::fast_allow(
            &refused,
            refusals(denied_sockets).map_err(SeccompError::Build)?,
        ),
        crate::seccomp_prefix::fast_allow(&absent_calls, absent().map_err(SeccompError::Build)?),
    ];
    #[cfg(target_arch = "x86_64")]
    programs.push(no_x32());
    Ok(programs)
}

/// Installs the filters on this thread (the process has one); `no_new_privs` must be set.
pub(crate) fn install(denied_sockets: &[SocketFamily]) -> Result<(), SeccompError> {
    for program in programs(denied_sockets)? {
        seccompiler::apply_filter(&program).map_err(SeccompError::Install)?;
    }
    Ok(())
}

/// The filters as bubblewrap reads them (`--add-seccomp-fd`): each program's raw
/// `struct sock_filter` array, in the order they are to be installed.
pub(crate) fn raw_programs(denied_sockets: &[SocketFamily]) -> Result<Vec<Vec<u8>>, SeccompError> {
    Ok(programs(denied_sockets)?
        .iter()
        .map(|program| {
            program
                .iter()
                .flat_map(|instruction| {
                    let mut bytes = Vec::with_capacity(8);
                    bytes.extend_from_slice(&instruction.code.to_ne_bytes());
                    bytes.push(instruction.jt);
                    bytes.push(instruction.jf);
                    bytes.extend_from_slice(&instruction.k.to_ne_bytes());
                    bytes
                })
                .collect()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_programs_are_eight_bytes_an_instruction() {
        let raw = raw_programs(&[SocketFamily::Unix]).unwrap();
        let compiled = programs(&[SocketFamily::Unix]).unwrap();
        assert_eq!(raw.len(), compiled.len());
        for (bytes, program) in raw.iter().zip(&compiled) {
            assert_eq!(bytes.len(), program.len() * 8);
        }
    }

    #[test]
    fn every_filter_compiles_for_this_architecture() {
        let programs = programs(&[SocketFamily::Unix, SocketFamily::Vsock]).unwrap();
        assert!(programs.len() >= 2);
        // The arch check, the refused calls and the default: far more than a few instructions.
        assert!(programs[0].len() > 40, "{}", programs[0].len());
    }
}
