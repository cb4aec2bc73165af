//! `mur approve [DIR]`: shows what changed since the project was last approved and
//! records it as approved.

use std::collections::BTreeSet;
use std::path::PathBuf;

use clap::Args;

use super::scan;
use crate::approval::{Guard, Project, compare, read, refuse_holding_murmur_home, summary, write};
use crate::catalogue::E_APR_003;
use crate::diag::{Diagnostic, Result};
use crate::{manifest, output, paths};

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// A folder in the project (default: the current folder). When it holds a
    /// murmur.yaml, that capsule folder's murmur.yaml and declared files are approved
    /// too.
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub(crate) fn run(args: &ApproveArgs) -> Result<i32> {
    let given = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir().map_err(|e| {
            Diagnostic::new(E_APR_003, format!("cannot read the current folder: {e}"))
        })?,
    };
    let project = Project::of(&paths::project_root(&given))?;
    refuse_holding_murmur_home(&project)?;
    let _guard = Guard::take()?;
    let recorded = read(&project)?;
    let mut now = scan::project(&project, recorded.as_ref(), &Default::default())?;
    let mut keys: BTreeSet<String> = recorded
        .as_ref()
        .map(|r| r.capsules.keys().cloned().collect())
        .unwrap_or_default();
    if given.join(manifest::FILE_NAME).is_file() {
        keys.insert(project.rel(&given));
    }
    let mut was = recorded.clone().unwrap_or_default();
    for key in keys {
        let files = scan::capsule(&project.root.join(&key))?;
        // Both sides name every folder, so one added or gone shows file by file.
        was.capsules.entry(key.clone()).or_default();
        now.capsules.insert(key, files);
    }
    let changes = compare(&was, &now, None);
    now.launched = was.launched;
    now.capsules.retain(|_, files| !files.is_empty());
    let root = project.root.display();
    if recorded.is_none() {
        write(&project, &now)?;
        output::stdout_line(format_args!("approved {root}: {}", summary(&now)));
        return Ok(0);
    }
    if changes.is_empty() {
        output::stdout_line(format_args!(
            "{root}: nothing changed since it was last approved"
        ));
        return Ok(0);
    }
    write(&project, &now)?;
    for c in &changes {
        output::stdout_line(format_args!("approved {c}"));
    }
    output::stdout_line(format_args!(
        "{root}: {} change{} approved",
        changes.len(),
        if changes.len() == 1 { "" } else { "s" }
    ));
    Ok(0)
}
