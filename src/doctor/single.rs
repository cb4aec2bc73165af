//! `mur doctor` in a single-capsule folder (a murmur.yaml and no roster.yaml): the
//! checks `mur run` would make of that folder before it takes a task — the manifest
//! reads, the approval of the folder (E-APR-001), its component files, its model key —
//! and its warnings (docs/roster.md, `mur doctor`).

use std::path::Path;

use serde_json::json;

use crate::diag::{Diagnostic, Result};
use crate::output;
use crate::session::capsule;

fn check(dir: &Path) -> Result<(capsule::Capsule, Vec<Diagnostic>)> {
    let capsule = capsule::from_folder(dir)?;
    let launch = crate::approve::Launch {
        project: crate::paths::project_root(&capsule.root),
        capsule: Some(capsule.root.clone()),
        roster: None,
        artifacts: Vec::new(),
    };
    if let Some(d) = crate::approve::check_report(&launch)? {
        return Err(d);
    }
    let warnings = capsule::checks(&capsule, None)?;
    Ok((capsule, warnings))
}

/// Exit status 0 when `mur run` would start, 1 when it would refuse.
pub(super) fn run(dir: &Path, as_json: bool) -> i32 {
    let file = Path::new(crate::manifest::FILE_NAME);
    let outcome = check(dir);
    match (&outcome, as_json) {
        (Ok((c, warnings)), true) => {
            output::stdout_line(json!({
            "capsule": file.display().to_string(),
            "ready": true,
            "name": format!("local/{}", c.manifest.name),
            "version": c.manifest.version,
            "warnings": warnings.iter().map(|w| w.to_json()).collect::<Vec<_>>(),
            }));
        }
        (Err(d), true) => {
            output::stdout_line(json!({
                "capsule": file.display().to_string(),
                "ready": false,
                "error": d.to_json(),
            }));
        }
        (Ok((c, warnings)), false) => {
            let mut s = format!(
                "{}: ready to run (local/{} {}, no roster: checked as `mur run` would)\n\nwarnings:\n",
                file.display(),
                c.manifest.name,
                c.manifest.version
            );
            if warnings.is_empty() {
                s.push_str("  none\n");
            }
            for w in warnings {
                for line in w.to_string().lines() {
                    s.push_str(&format!("  {line}\n"));
                }
            }
            output::stdout_text(&s);
        }
        (Err(d), false) => {
            output::stderr_line(format_args!("{}: refused\n{d}", file.display()));
        }
    }
    i32::from(outcome.is_err())
}
