//! `clone3` the way glibc's `posix_spawn` clones (x86_64 only): `CLONE_VM |
//! CLONE_VFORK`, the child on a stack of its own until its `execve`, while the calling
//! thread waits. No page table is copied and the parent takes no copy-on-write faults
//! afterwards; a fork-like clone of the launcher cost it about a fifth of its CPU in
//! an 8-member launch (docs/benchmarks.md).
//!
//! The child shares the parent's memory, so it runs only the entry function given,
//! which must keep to what a child between fork and exec may do and never return.
//! Signals: every one is blocked in the calling thread across the clone (as on every
//! path of `spawn`), and the
//! entry function sets each handled signal back to its default before it unblocks
//! them, so no handler of the parent's runs in the child on the parent's data.

use std::ffi::c_void;
use std::io;

/// The child's stack: enough for `spawn::child` and the libc calls it makes, above a
/// guard page.
const STACK: usize = 64 * 1024;

/// An anonymous mapping the child runs on, its lowest page a guard.
pub(super) struct Stack {
    base: *mut c_void,
}

impl Stack {
    pub(super) fn new() -> io::Result<Stack> {
        // SAFETY: a fresh private anonymous mapping, owned by the Stack.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                STACK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let stack = Stack { base };
            if libc::mprotect(base, rustix::param::page_size(), libc::PROT_NONE) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(stack)
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; the child that ran on it has exec'd or
        // exited, since a vfork clone returns only then.
        unsafe { libc::munmap(self.base, STACK) };
    }
}

/// Clones with `args` (its flags gain `CLONE_VM | CLONE_VFORK`, its stack is
/// `stack`); the child calls `entry(ctx)`. Returns what `clone3` returned to the
/// parent (a pid, or `-errno`), once the child has exec'd or exited.
///
/// # Safety
/// `entry` must never return, and must do only what a child between fork and exec
/// may (async-signal-safe calls, no allocation) on data that outlives this call. The
/// caller blocks every signal around it (`spawn::Blocked`).
pub(super) unsafe fn clone3(
    args: &mut libc::clone_args,
    stack: &Stack,
    entry: unsafe extern "C" fn(*const c_void) -> !,
    ctx: *const c_void,
) -> libc::c_long {
    args.flags |= (libc::CLONE_VM | libc::CLONE_VFORK) as u64;
    // clone3 takes the lowest address and the size; the child starts at the top,
    // page-aligned and so 16-byte aligned as a call requires.
    args.stack = stack.base as u64;
    args.stack_size = STACK as u64;
    let ret: libc::c_long;
    // SAFETY: the parent's side is a plain clone3 call (rax, rcx and r11 change). The
    // child's side starts with the parent's registers on its own stack and calls
    // entry(ctx), which never returns.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor ebp, ebp",
            "mov rdi, r12",
            "call r13",
            "ud2",
            "2:",
            inlateout("rax") libc::SYS_clone3 => ret,
            in("rdi") std::ptr::from_mut(args),
            in("rsi") std::mem::size_of::<libc::clone_args>(),
            in("r12") ctx,
            in("r13") entry,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}
