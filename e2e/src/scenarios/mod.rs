//! The scenarios, each in a container of its own.

use std::future::Future;
use std::pin::Pin;

use anyhow::Result;

use crate::formation::Members;
use crate::report::Measured;

pub mod confined;
pub mod kills;
pub mod kube;
pub mod readiness;
pub mod real;
pub mod retention;

pub type Run = Pin<Box<dyn Future<Output = Result<Measured>> + Send>>;

/// One scenario: its name, the members it runs, and how to run it.
pub struct Scenario {
    pub name: &'static str,
    pub members: Members,
    pub run: fn() -> Run,
}

/// Every scenario, the longest first so that a parallel run ends soonest.
pub fn all() -> Vec<Scenario> {
    fn s(name: &'static str, members: Members, run: fn() -> Run) -> Scenario {
        Scenario { name, members, run }
    }
    use Members::{Real, StandIn};
    vec![
        s("readiness-180s", StandIn, || {
            Box::pin(readiness::silent_peer_refused())
        }),
        s("control-leftover", StandIn, || {
            Box::pin(kills::control_leftover())
        }),
        s(
            "stubborn-peer",
            StandIn,
            || Box::pin(kills::stubborn_peer()),
        ),
        s(
            "kill-launcher",
            StandIn,
            || Box::pin(kills::kill_launcher()),
        ),
        s("kill-entry", StandIn, || Box::pin(kills::kill_entry())),
        s("kube-stop", Real, || Box::pin(kube::stop())),
        s("kube-kill", Real, || Box::pin(kube::kill())),
        s("kube-indexed", Real, || Box::pin(kube::indexed())),
        s("kube-orphans", Real, || Box::pin(kube::orphans())),
        s("kube-oom-member", Real, || Box::pin(kube::oom_member())),
        s("kube-oom-launcher", Real, || Box::pin(kube::oom_launcher())),
        s("kill-group", StandIn, || Box::pin(kills::kill_group())),
        s("oom-launcher", StandIn, || Box::pin(kills::oom_launcher())),
        s("sigterm-launcher", StandIn, || {
            Box::pin(kills::sigterm_launcher())
        }),
        s("retention", StandIn, || {
            Box::pin(retention::retention(StandIn))
        }),
        s("real-retention", Real, || {
            Box::pin(retention::retention(Real))
        }),
        s("real-readiness-180s", Real, || Box::pin(real::readiness())),
        s("real-control-byhand", Real, || {
            Box::pin(real::control_by_hand())
        }),
        s("real-deadline", Real, || Box::pin(real::deadline())),
        s("real-kill-launcher", Real, || {
            Box::pin(real::kill_launcher(true))
        }),
        s("real-kill-entry", Real, || Box::pin(real::kill_entry(true))),
        s("real-escape-kill-launcher", Real, || {
            Box::pin(real::escape_kill_launcher())
        }),
        s("real-escape-kill-entry", Real, || {
            Box::pin(real::escape_kill_entry())
        }),
        s("real-escape-kill-group", Real, || {
            Box::pin(real::escape_kill_group())
        }),
        s("real-escape-kill-group-cgroup", Real, || {
            Box::pin(real::escape_kill_group_cgroup())
        }),
        s("real-escape-group-kill-25s", Real, || {
            Box::pin(real::escape_group_kill_25s())
        }),
        s("real-kill-group", Real, || Box::pin(real::kill_group(true))),
        s("real-pure-kill-launcher", Real, || {
            Box::pin(real::kill_launcher(false))
        }),
        s("real-pure-kill-entry", Real, || {
            Box::pin(real::kill_entry(false))
        }),
        s("real-pure-kill-group", Real, || {
            Box::pin(real::kill_group(false))
        }),
        s("real-oom-launcher", Real, || Box::pin(real::oom_launcher())),
        s("real-sigterm-launcher", Real, || {
            Box::pin(real::sigterm_launcher())
        }),
        s("real-stubborn-harness", Real, || {
            Box::pin(real::stubborn_harness())
        }),
        s("real-confined-peer", Real, || {
            Box::pin(confined::confined_peer())
        }),
    ]
}
