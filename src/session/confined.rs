//! The session's confinement of its native processes (docs/confinement.md): one
//! egress proxy and one prepared plan, made once after the records exist and applied
//! to the harness and every shell command.

use std::path::Path;
use std::sync::Arc;

use super::capsule::Capsule;
use crate::catalogue::{E_RUN_055, W_RUN_010};
use crate::confine::net::Kernel;
use crate::confine::{self, Confined, Inputs, Plan};
use crate::diag::{Diagnostic, Result};
use crate::manifest::Transport;
use crate::records::Records;
use crate::trace::TraceWriter;

/// The confinement of `capsule`'s native processes, or None when it starts none or
/// the user opted out. Every proxy decision becomes a `proxy_decision` record.
pub(super) async fn start(
    capsule: &Capsule,
    workdir: &Path,
    records: &Records,
    trace: &Arc<TraceWriter>,
    unconfined: Option<&str>,
    kernel: &Kernel,
) -> Result<Option<Confined>> {
    if unconfined.is_some() || confine::start::native(&capsule.manifest).is_none() {
        return Ok(None);
    }
    // `start::check` refused this kernel already (E-RUN-054) unless the user opted out.
    let Some(tier) = kernel.tier() else {
        return Ok(None);
    };
    let m = &capsule.manifest;
    let (home, tmp, out) = (records.home_dir(), records.tmp_dir(), records.out_dir());
    let harness = match &m.agent.transport {
        Transport::Process(p) => p.command.first().and_then(|program| {
            let path = std::env::var(crate::env::PATH)
                .unwrap_or_else(|_| crate::grant::DEFAULT_PATH.to_string());
            crate::spawn::find_program(program, &capsule.root, &path)
        }),
        _ => None,
    };
    // mur itself, read-only: a harness or command may run `mur` (`mur trace show`).
    let mur = std::env::current_exe().ok();
    let (user_home, murmur_home) = (crate::paths::home(), crate::paths::murmur_home());
    let mut capsule_read = vec![capsule.root.as_path()];
    capsule_read.extend(harness.as_deref());
    capsule_read.extend(mur.as_deref());
    let inputs = Inputs {
        workdir,
        session_dirs: vec![&home, &tmp, &out],
        capsule_read,
        files: &m.capabilities.files,
        user_home: &user_home,
        murmur_home: &murmur_home,
        network: m.capabilities.network.allow.clone(),
    };
    let plan = Plan::new(&inputs).map_err(|e| {
        Diagnostic::new(
            E_RUN_055,
            format!("{}: cannot confine its native processes: {e}", capsule.name),
        )
        .hint("Grant a narrower path, create the missing one, or run the session from a project folder rather than from your home.")
    })?;
    let sink_trace = trace.clone();
    let sink: confine::proxy::Sink = Arc::new(move |d| sink_trace.record(d.event()));
    let confined = Confined::start(&plan, sink, tier).await.map_err(|e| {
        Diagnostic::new(
            crate::catalogue::E_RUN_002,
            format!("{}: cannot confine its native processes: {e}", capsule.name),
        )
    })?;
    Ok(Some(confined))
}

/// W-RUN-010, printed once at start: the network tier the native processes run in
/// and what it cannot stop (`start::tier_line`, as `mur doctor` says it).
pub(super) fn tier_warning(capsule: &Capsule, kernel: &Kernel) -> Option<Diagnostic> {
    let what = confine::start::native(&capsule.manifest)?;
    Some(
        Diagnostic::new(
            W_RUN_010,
            format!(
                "{} starts {what}, confined: files deny by default, the network only through mur's egress proxy; tier {}",
                capsule.name,
                confine::start::tier_line(kernel),
            ),
        )
        .hint("docs/confinement.md says what is and is not confined."),
    )
}
