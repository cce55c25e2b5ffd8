//! A fast path in front of a seccomp program that allows every call it does not name. The
//! programs seccompiler writes compare the call's number with each named call in turn, so a
//! call they allow runs through all of those comparisons; the kernel does that once per system
//! call number when the filter is installed (to find the calls it can allow without running the
//! filter), with interrupts off, which measured about a tenth of a millisecond of every
//! confined command. The prefix answers "allow" after a binary search of the named numbers;
//! anything else (a named call, another architecture, an x32 number) goes on to the program
//! unchanged, so the two answer every call the same (tested by running both).

use seccompiler::{BpfProgram, sock_filter};

const LOAD_WORD_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JUMP_IF_EQUAL: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JUMP_IF_AT_LEAST: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
const RETURN: u16 = 0x06; // BPF_RET | BPF_K

/// Offsets in `struct seccomp_data`.
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;

/// The audit architecture of the calls the programs are written for.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;

/// Calls compared in a row at the leaves of the search.
const LEAF: usize = 4;

/// Where a jump of the prefix goes.
#[derive(Clone, Copy)]
enum Target {
    /// This many instructions ahead.
    Ahead(usize),
    /// The program's first instruction.
    Program,
}

struct Step {
    code: u16,
    k: u32,
    yes: Target,
    no: Target,
}

fn statement(code: u16, k: u32) -> Step {
    Step {
        code,
        k,
        yes: Target::Ahead(0),
        no: Target::Ahead(0),
    }
}

/// The search of `calls` (sorted): a named call jumps to the program, any other is allowed.
fn search(calls: &[u32], steps: &mut Vec<Step>) {
    if calls.len() <= LEAF {
        for &call in calls {
            steps.push(Step {
                code: JUMP_IF_EQUAL,
                k: call,
                yes: Target::Program,
                no: Target::Ahead(0),
            });
        }
        steps.push(statement(RETURN, libc::SECCOMP_RET_ALLOW));
        return;
    }
    let middle = calls.len() / 2;
    let at = steps.len();
    steps.push(Step {
        code: JUMP_IF_AT_LEAST,
        k: calls[middle],
        yes: Target::Ahead(0),
        no: Target::Ahead(0),
    });
    search(&calls[..middle], steps);
    steps[at].yes = Target::Ahead(steps.len() - at - 1);
    search(&calls[middle..], steps);
}

/// `program` (which allows every call but those in `named`) behind the fast path; `program`
/// alone where a jump would not fit in an instruction.
pub(crate) fn fast_allow(named: &[i64], program: BpfProgram) -> BpfProgram {
    let mut calls: Vec<u32> = named
        .iter()
        .filter_map(|call| u32::try_from(*call).ok())
        .collect();
    if calls.len() != named.len() {
        return program;
    }
    calls.sort_unstable();
    calls.dedup();
    let mut steps = vec![
        statement(LOAD_WORD_ABS, ARCH_OFFSET),
        Step {
            code: JUMP_IF_EQUAL,
            k: AUDIT_ARCH,
            yes: Target::Ahead(0),
            no: Target::Program,
        },
        statement(LOAD_WORD_ABS, NR_OFFSET),
    ];
    #[cfg(target_arch = "x86_64")]
    steps.push(Step {
        code: JUMP_IF_AT_LEAST,
        k: crate::seccomp::X32_SYSCALL_BIT,
        yes: Target::Program,
        no: Target::Ahead(0),
    });
    search(&calls, &mut steps);
    let total = steps.len();
    let offset = |at: usize, target: Target| -> Option<u8> {
        let ahead = match target {
            Target::Ahead(ahead) => ahead,
            Target::Program => total - at - 1,
        };
        u8::try_from(ahead).ok()
    };
    let mut prefixed = Vec::with_capacity(total + program.len());
    for (at, step) in steps.iter().enumerate() {
        let (Some(jt), Some(jf)) = (offset(at, step.yes), offset(at, step.no)) else {
            return program;
        };
        prefixed.push(sock_filter {
            code: step.code,
            jt,
            jf,
            k: step.k,
        });
    }
    prefixed.extend(program);
    prefixed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seccomp::SocketFamily;

    /// The call a filter is asked about (`struct seccomp_data`).
    struct Call {
        nr: u32,
        arch: u32,
        args: [u64; 6],
    }

    impl Call {
        fn word(&self, offset: u32) -> u32 {
            match offset {
                0 => self.nr,
                4 => self.arch,
                16..=63 => {
                    let at = (offset as usize - 16) / 8;
                    let arg = self.args[at];
                    match (offset - 16) % 8 {
                        0 => arg as u32,
                        _ => (arg >> 32) as u32,
                    }
                }
                other => panic!("load of offset {other}"),
            }
        }
    }

    /// Runs a classic BPF program of the instructions seccompiler and the prefix use; answers
    /// its result and how many instructions ran.
    fn run_counted(program: &[sock_filter], call: &Call) -> (u32, usize) {
        let (mut pc, mut accumulator, mut ran) = (0_usize, 0_u32, 0);
        loop {
            let step = &program[pc];
            pc += 1;
            ran += 1;
            let jump = |taken: bool| usize::from(if taken { step.jt } else { step.jf });
            match step.code {
                0x20 => accumulator = call.word(step.k),
                0x54 => accumulator &= step.k,
                0x05 => pc += step.k as usize,
                0x15 => pc += jump(accumulator == step.k),
                0x25 => pc += jump(accumulator > step.k),
                0x35 => pc += jump(accumulator >= step.k),
                0x45 => pc += jump(accumulator & step.k != 0),
                0x06 => return (step.k, ran),
                other => panic!("instruction {other:#x} at {}", pc - 1),
            }
        }
    }

    fn run(program: &[sock_filter], call: &Call) -> u32 {
        run_counted(program, call).0
    }

    fn calls() -> Vec<Call> {
        let mut calls = Vec::new();
        let interesting_args = [
            [0; 6],
            [libc::CLONE_NEWUSER as u64, 0, 0, 0, 0, 0],
            [libc::CLONE_NEWNS as u64 | 17, 0, 0, 0, 0, 0],
            [17, libc::TIOCSTI, 0, 0, 0, 0],
            [libc::AF_UNIX as u64, libc::TIOCLINUX, 0, 0, 0, 0],
            [libc::AF_VSOCK as u64, 0, 0, 0, 0, 0],
            [libc::AF_INET as u64 | (1 << 32), 0, 0, 0, 0, 0],
        ];
        for nr in (0..700).chain([0x4000_0000, 0x4000_0001, u32::MAX]) {
            for arch in [AUDIT_ARCH, 0x4000_0003] {
                for args in interesting_args {
                    calls.push(Call { nr, arch, args });
                }
            }
        }
        calls
    }

    #[test]
    fn the_fast_path_answers_every_call_as_the_program_does() {
        for denied in [vec![], vec![SocketFamily::Unix, SocketFamily::Vsock]] {
            let unprefixed = [
                crate::seccomp::refusals(&denied).unwrap(),
                crate::seccomp::absent().unwrap(),
            ];
            let prefixed = crate::seccomp::programs(&denied).unwrap();
            for (plain, fast) in unprefixed.iter().zip(&prefixed) {
                assert!(fast.len() > plain.len(), "no prefix was put in front");
                let calls = calls();
                // Not a comparison of two programs that allow everything.
                let refused = calls
                    .iter()
                    .filter(|call| run(plain, call) != libc::SECCOMP_RET_ALLOW)
                    .count();
                assert!(refused > 1000, "{refused} calls refused");
                for call in calls {
                    assert_eq!(
                        run(plain, &call),
                        run(fast, &call),
                        "nr {} arch {:#x} args {:?}",
                        call.nr,
                        call.arch,
                        call.args
                    );
                }
            }
        }
    }

    #[test]
    fn an_unnamed_call_is_allowed_within_a_few_instructions() {
        let plain = crate::seccomp::refusals(&[SocketFamily::Unix]).unwrap();
        let fast = &crate::seccomp::programs(&[SocketFamily::Unix]).unwrap()[0];
        let read = Call {
            nr: libc::SYS_read as u32,
            arch: AUDIT_ARCH,
            args: [0; 6],
        };
        let (plain_answer, plain_ran) = run_counted(&plain, &read);
        let (fast_answer, fast_ran) = run_counted(fast, &read);
        assert_eq!(plain_answer, libc::SECCOMP_RET_ALLOW);
        assert_eq!(fast_answer, libc::SECCOMP_RET_ALLOW);
        assert!(fast_ran <= 12, "{fast_ran} instructions");
        assert!(plain_ran > 3 * fast_ran, "{plain_ran} against {fast_ran}");
    }
}
