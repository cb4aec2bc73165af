//! `mur doctor`: admits a roster and reports the result (docs/roster.md).
//!
//! Admitted: each member with its store, version and sha256, the edges and any
//! warnings, on stdout; exit 0. Refused: the code, the member or rule at fault,
//! file:line:column and a hint, on stderr (or in the `--json` object); exit 1.

use std::path::PathBuf;

use clap::Args;
use serde_json::{Value, json};

use crate::admission::{self, Admitted};
use crate::diag::Result;
use crate::output;
use crate::roster::{self, Fault, Refusal};

mod single;

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The roster to admit: a roster file, or a folder that holds roster.yaml.
    /// Default: roster.yaml in the current folder.
    #[arg(long, value_name = "PATH")]
    pub roster: Option<PathBuf>,
    /// Print one JSON object on stdout instead of the report.
    #[arg(long)]
    pub json: bool,
}

pub(crate) fn run(args: &DoctorArgs) -> Result<i32> {
    let path = args.roster.clone().unwrap_or_else(|| {
        // The project's roster, found from any folder in it.
        // Named as before (`roster.yaml`) when it is the current folder's.
        match std::env::current_dir() {
            Ok(cwd) if crate::paths::project_root(&cwd) != cwd => {
                crate::paths::project_root(&cwd).join(roster::FILE_NAME)
            }
            _ => PathBuf::from(roster::FILE_NAME),
        }
    });
    let file = roster::resolve(&path);
    if args.roster.is_none() && !file.exists() {
        let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        if here.join(crate::manifest::FILE_NAME).is_file() {
            return Ok(single::run(&here, args.json));
        }
    }
    let outcome = admission::admit_report(&file).and_then(|mut admitted| {
        // What a launch would refuse now, unapproved changes included; writes nothing.
        let found = crate::approve::check_report(&crate::approve::Launch::roster(&admitted));
        match found {
            Ok(None) => {}
            Ok(Some(d)) | Err(d) => return Err(Refusal::new(d, Fault::Roster)),
        }
        // What the launcher checks before it starts a process, then what each member
        // checks at its own start.
        let checked = crate::preflight::roster_launch(&admitted)?;
        admitted.warnings.extend(checked);
        let found = members_start(&admitted)?;
        admitted.warnings.extend(found);
        Ok(admitted)
    });
    let status = i32::from(outcome.is_err());
    // A closed stdout is not the roster's fault: the exit status still tells.
    match (&outcome, args.json) {
        (_, true) => {
            output::stdout_line(to_json(&file, &outcome));
        }
        (Ok(admitted), false) => {
            output::stdout_text(&report(admitted));
        }
        (Err(refusal), false) => output::stderr_line(format_args!(
            "{}: refused\n{}",
            file.display(),
            refusal.diagnostic
        )),
    }
    Ok(status)
}

/// What each member checks at its start (`session::capsule::checks`), in roster order.
fn members_start(a: &Admitted) -> Result<Vec<crate::diag::Diagnostic>, Refusal> {
    let mut warnings = Vec::new();
    for (index, m) in a.members.iter().enumerate() {
        let fault = || Fault::Member {
            index,
            name: Some(m.name.to_string()),
        };
        let who = format!("member `{}`", m.name);
        let callees: Vec<&str> = a.callees(&m.name).iter().map(|c| c.as_str()).collect();
        let found = crate::session::capsule::installed(
            &a.project_dir,
            &m.installed.name,
            &m.installed.version,
            Some(m.installed.sha256.as_str()),
        )
        .and_then(|c| crate::session::capsule::checks(&c, Some((m.name.as_str(), &callees))))
        .map_err(|d| Refusal::new(roster::prefixed(&who, d), fault()))?;
        warnings.extend(found.into_iter().map(|w| {
            if w.message.contains(&format!("{who} ")) {
                w
            } else {
                roster::prefixed(&who, w)
            }
        }));
    }
    Ok(warnings)
}

/// The human report of an admitted roster.
pub(crate) fn report(a: &Admitted) -> String {
    let mut s = format!(
        "{}: admitted ({} member{}, {} edge{}, {} warning{})\n\nmembers:\n",
        a.roster.file.display(),
        a.members.len(),
        plural(a.members.len()),
        a.edges.len(),
        plural(a.edges.len()),
        a.warnings.len(),
        plural(a.warnings.len()),
    );
    let width = a
        .members
        .iter()
        .map(|m| m.name.as_str().len())
        .max()
        .unwrap_or(0);
    let capsule_width = a
        .members
        .iter()
        .map(|m| m.installed.name.len() + 1 + m.installed.version.len())
        .max()
        .unwrap_or(0);
    for m in &a.members {
        let capsule = format!("{} {}", m.installed.name, m.installed.version);
        s.push_str(&format!(
            "  {:width$}  {:5}  {:capsule_width$}  {:7}  sha256:{}\n",
            m.name,
            if m.entry { "entry" } else { "" },
            capsule,
            m.installed.store.to_string(),
            m.installed.sha256,
        ));
    }
    s.push_str("\nedges:\n");
    if a.edges.is_empty() {
        s.push_str("  none\n");
    }
    for (from, to) in &a.edges {
        s.push_str(&format!("  {from} -> {to}\n"));
    }
    s.push_str("\nwarnings:\n");
    if a.warnings.is_empty() {
        s.push_str("  none\n");
    }
    for w in &a.warnings {
        for line in w.to_string().lines() {
            s.push_str(&format!("  {line}\n"));
        }
    }
    s.push_str("\nconfinement (docs/confinement.md):\n");
    let (kernel, opted_out) = (
        crate::confine::net::Kernel::probe(),
        crate::confine::start::opt_out(false),
    );
    // Only where something native runs: the tier is this machine's, not the roster's.
    if a.members
        .iter()
        .any(|m| crate::confine::start::native(&m.manifest).is_some())
    {
        s.push_str(&format!(
            "  network tier: {}\n",
            crate::confine::start::tier_line(&kernel)
        ));
    }
    for m in &a.members {
        let line = crate::confine::start::describe(&m.manifest, &kernel, opted_out);
        s.push_str(&format!("  {:width$}  {line}\n", m.name));
    }
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The one `--json` object, admitted or refused.
pub(crate) fn to_json(file: &std::path::Path, outcome: &Result<Admitted, Refusal>) -> Value {
    match outcome {
        Ok(a) => json!({
            "roster": a.roster.file.display().to_string(),
            "admitted": true,
            "project_dir": a.project_dir.display().to_string(),
            "members": a.members.iter().map(|m| json!({
                "name": m.name,
                "entry": m.entry,
                "capsule": m.installed.name,
                "version": m.installed.version,
                "store": m.installed.store.to_string(),
                "sha256": m.installed.sha256,
                "path": m.installed.path.display().to_string(),
                "confinement": crate::confine::start::describe(
                    &m.manifest,
                    &crate::confine::net::Kernel::probe(),
                    crate::confine::start::opt_out(false),
                ),
            })).collect::<Vec<_>>(),
            "edges": a.edges.iter().map(|(from, to)| json!({"from": from, "to": to})).collect::<Vec<_>>(),
            "warnings": a.warnings.iter().map(|w| w.to_json()).collect::<Vec<_>>(),
        }),
        Err(r) => {
            let mut error = r.diagnostic.to_json();
            error["at_fault"] = match &r.fault {
                Fault::Roster => json!({"kind": "roster"}),
                Fault::Member { index, name } => {
                    json!({"kind": "member", "index": index + 1, "name": name})
                }
                Fault::Rule { index, from } => {
                    json!({"kind": "rule", "index": index + 1, "from": from})
                }
            };
            json!({
                "roster": file.display().to_string(),
                "admitted": false,
                "error": error,
            })
        }
    }
}
