//! The Landlock fence of the fallback backend (no bubblewrap): files readable everywhere or
//! only under the readable directories, writable only under the writable ones and a few
//! device files, TCP bind and connect refused unless the network is allowed. A second layer,
//! where the kernel has it (Linux 6.12), keeps signals and abstract Unix sockets inside the
//! command's own domain, so it can neither signal the host nor reach a socket of a process
//! outside; older kernels go without that layer, which the enforcement status of the first
//! does not depend on.

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use crate::args::Fence;

/// The newest file and network ABI asked for; the probe requires all of it.
const WANTED: ABI = ABI::V5;

/// Device files every shell writes to.
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
];

/// Restricts this process to `fence`; answers how fully the kernel enforced the file and
/// network rules.
pub(crate) fn restrict(fence: &Fence) -> Result<RulesetStatus, landlock::RulesetError> {
    let mut ruleset = Ruleset::default().handle_access(AccessFs::from_all(WANTED))?;
    if !fence.network {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    let readable = match fence.readable.is_empty() {
        true => vec!["/".to_owned()],
        false => fence.readable.clone(),
    };
    let status = ruleset
        .create()?
        .add_rules(path_beneath_rules(readable, AccessFs::from_read(WANTED)))?
        .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(WANTED)))?
        .add_rules(path_beneath_rules(
            &fence.writable,
            AccessFs::from_all(WANTED),
        ))?
        .restrict_self()?;
    scope_signals_and_sockets()?;
    Ok(status.ruleset)
}

/// The best-effort second layer: signals and abstract Unix sockets stay in the domain.
fn scope_signals_and_sockets() -> Result<(), landlock::RulesetError> {
    // Every ruleset handles `Refer` implicitly (Landlock ABI 2 on), so a layer that grants it
    // nowhere turns each rename or link between two directories into EXDEV, inside the
    // writable roots too (rustc's, git's); this layer grants it everywhere and leaves the
    // fence to the first one.
    Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::Refer)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)?
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::Refer))?
        .restrict_self()?;
    Ok(())
}
