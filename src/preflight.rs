//! What a launch of a roster checks before it starts a process, in one place for
//! `mur run --roster` (which refuses before any member starts) and `mur doctor`
//! (which reports the same): the model key each member's manifest names (E-AGT-001,
//! which a member would otherwise hit only once started, as E-RUN-045), and each
//! member's source folder beside the roster that differs from its installed bytes
//! (W-STO-001), and a formation of the same roster already live in its folder
//! (W-RUN-020). What a member checks at its own start (W-RUN-008, its component
//! files) `mur doctor` asks through `crate::session::capsule::checks`.

use crate::admission::Admitted;
use crate::catalogue::W_RUN_020;
use crate::diag::Diagnostic;
use crate::manifest::Transport;
use crate::roster::{self, Fault, Refusal};

/// The launch's refusal, members in roster order, or its warnings.
pub(crate) fn roster_launch(admitted: &Admitted) -> Result<Vec<Diagnostic>, Refusal> {
    for (index, m) in admitted.members.iter().enumerate() {
        if let Transport::Http(h) = &m.manifest.agent.transport
            && let Err(d) = crate::agent::http::api_key(h.api_key_env.as_deref())
        {
            return Err(Refusal::new(
                roster::prefixed(&format!("member `{}`", m.name), d),
                Fault::Member {
                    index,
                    name: Some(m.name.to_string()),
                },
            ));
        }
    }
    let mut warnings = crate::sync::stale(admitted);
    warnings.extend(live_here(admitted));
    Ok(warnings)
}

/// W-RUN-020: each live formation launched from this roster's folder (so of this
/// roster). A warning, not a refusal: two formations of one roster are legitimate
/// (one serving, one running a `--task`), but their entry members share the project
/// folder, so files their agents write there can clash (docs/run.md).
fn live_here(admitted: &Admitted) -> Vec<Diagnostic> {
    let live = crate::running::RunningDir::default()
        .list()
        .unwrap_or_default();
    crate::retention::marker::live_formations(&live)
        .into_iter()
        .filter(|(_, project)| project.as_deref() == Some(admitted.project_dir.as_path()))
        .map(|(frm, _)| {
            Diagnostic::new(
                W_RUN_020,
                format!(
                    "formation {frm} of this roster is already live in {}; a new launch \
                     runs beside it, and both entry members work in that folder",
                    admitted.project_dir.display()
                ),
            )
            .hint(format!(
                "Give it the task with `mur send {frm} \"…\"`, or stop it first with \
                 `mur stop {frm}`."
            ))
        })
        .collect()
}
