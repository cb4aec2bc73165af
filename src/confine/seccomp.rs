//! The seccomp filter every confined tree gets, compiled in the parent: sockets other
//! than Unix, TCP and netlink-route are refused with EPERM (Landlock has no UDP, raw or
//! packet rule, and does not cover Multipath TCP), and so is io_uring (it makes sockets
//! without `socket()`). Everything else passes; files, signals and ptrace are
//! Landlock's.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op,
    SeccompCondition as Cond, SeccompFilter, SeccompRule, TargetArch,
};

/// One BPF instruction, as the kernel reads it (`struct sock_filter`).
pub type Insn = seccompiler::sock_filter;

fn cond(arg: u8, op: Op, value: u64) -> Cond {
    Cond::new(arg, Len::Dword, op, value).expect("argument index below 6")
}

fn rule(conds: Vec<Cond>) -> SeccompRule {
    SeccompRule::new(conds).expect("a rule with conditions")
}

/// The compiled filter.
pub fn filter() -> Result<BpfProgram, String> {
    let (unix, inet, inet6, netlink) = (
        libc::AF_UNIX as u64,
        libc::AF_INET as u64,
        libc::AF_INET6 as u64,
        libc::AF_NETLINK as u64,
    );
    let mut socket = vec![
        // Any family but these four.
        rule(vec![
            cond(0, Op::Ne, unix),
            cond(0, Op::Ne, inet),
            cond(0, Op::Ne, inet6),
            cond(0, Op::Ne, netlink),
        ]),
        // Netlink other than route (getaddrinfo's interface list).
        rule(vec![
            cond(0, Op::Eq, netlink),
            cond(2, Op::Ne, libc::NETLINK_ROUTE as u64),
        ]),
    ];
    for family in [inet, inet6] {
        // Every type but SOCK_STREAM (the low bits; the high ones are CLOEXEC/NONBLOCK).
        for ty in 2..=10u64 {
            socket.push(rule(vec![
                cond(0, Op::Eq, family),
                cond(1, Op::MaskedEq(0xf), ty),
            ]));
        }
        // A stream that is not plain TCP (IPPROTO_MPTCP passes Landlock by).
        socket.push(rule(vec![
            cond(0, Op::Eq, family),
            cond(2, Op::Ne, 0),
            cond(2, Op::Ne, libc::IPPROTO_TCP as u64),
        ]));
    }
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, socket);
    for nr in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(nr, Vec::new());
    }
    let arch: TargetArch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| format!("seccomp: {e}"))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| format!("seccomp: {e}"))?;
    let program: BpfProgram = filter.try_into().map_err(|e| format!("seccomp: {e:?}"))?;
    Ok(x32_guard(program))
}

/// On x86_64 the x32 ABI's calls carry the same arch and their number | 0x4000_0000,
/// which a filter keyed by number lets through: refuse every one of them first.
#[cfg(target_arch = "x86_64")]
fn x32_guard(program: BpfProgram) -> BpfProgram {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    const ERRNO: u32 = 0x0005_0000; // SECCOMP_RET_ERRNO
    let insn = |code, jt, jf, k| Insn { code, jt, jf, k };
    let mut out = vec![
        insn(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
        insn(JGE_K, 0, 1, 0x4000_0000),
        insn(RET_K, 0, 0, ERRNO | libc::EPERM as u32),
    ];
    out.extend(program);
    out
}

#[cfg(not(target_arch = "x86_64"))]
fn x32_guard(program: BpfProgram) -> BpfProgram {
    program
}
