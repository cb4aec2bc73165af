//! The launch-time approval check and `mur approve`: what a project holds, hashed
//! ([`scan`]), held against its record (`crate::approval`, which keeps the records and
//! knows nothing of stores or manifests, so the store and the lock can record what they
//! write without a module cycle). docs/approval.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::admission::Admitted;
use crate::approval::{self, Mode, Project, State};
use crate::diag::{Diagnostic, Result};
use crate::ids::Sha256;
use crate::store::{Installed, StoreKind};

pub(crate) mod command;
mod scan;

pub(crate) use command::{ApproveArgs, run};

/// What a launch is about to run, as it read it: these hashes are compared as well as
/// the files on disk, so a file swapped back after it was read is still caught.
#[derive(Debug, Default)]
pub(crate) struct Launch<'a> {
    /// A folder in the project (the roster's folder, the project of the current one).
    pub project: PathBuf,
    /// The capsule source folder run, for `mur run` without `--capsule`.
    pub capsule: Option<PathBuf>,
    /// The roster file read, and the sha256 of the text admission parsed.
    pub roster: Option<(PathBuf, Sha256)>,
    /// The artifacts the launch bound to (those of the project store are compared).
    pub artifacts: Vec<&'a Installed>,
}

impl<'a> Launch<'a> {
    /// `mur run --roster` (and `mur doctor`): the roster text admission parsed and
    /// the artifacts it bound.
    pub(crate) fn roster(admitted: &'a Admitted) -> Launch<'a> {
        Launch {
            project: admitted.project_dir.clone(),
            capsule: None,
            roster: Some((admitted.roster.file.clone(), admitted.roster.sha256.clone())),
            artifacts: admitted.members.iter().map(|m| &m.installed).collect(),
        }
    }

    /// The folder the refusal's `mur approve` runs on: the capsule folder, else the
    /// project.
    fn hint_at(&self) -> &Path {
        self.capsule.as_deref().unwrap_or(&self.project)
    }

    fn state(&self, project: &Project, recorded: Option<&State>) -> Result<State> {
        let bound: BTreeMap<String, Sha256> = self
            .artifacts
            .iter()
            .filter(|i| i.store == StoreKind::Project)
            .map(|i| {
                (
                    approval::artifact_key(&i.name, &i.version),
                    i.sha256.clone(),
                )
            })
            .collect();
        let mut now = scan::project(project, recorded, &bound)?;
        if let Some(dir) = &self.capsule {
            now.capsules.insert(project.rel(dir), scan::capsule(dir)?);
        }
        if let Some((file, sha)) = &self.roster {
            now.files.insert(project.rel(file), sha.clone());
        }
        // What the launch bound runs, whatever the folder holds now (even gone).
        now.artifacts.extend(bound);
        Ok(now)
    }
}

/// Refuses the launch with E-APR-001 unless what it runs is what was approved (a
/// project with no record yet is recorded, in one line).
pub(crate) fn check_launch(launch: &Launch) -> Result<()> {
    approval::check(
        &launch.project,
        launch.capsule.as_deref(),
        Mode::Launch,
        launch.hint_at(),
        |p, r| launch.state(p, r),
    )
    .map(|_| ())
}

/// `mur doctor`: the E-APR-001 a launch would give now, or None. Writes nothing.
pub(crate) fn check_report(launch: &Launch) -> Result<Option<Diagnostic>> {
    approval::check(
        &launch.project,
        launch.capsule.as_deref(),
        Mode::Report,
        launch.hint_at(),
        |p, r| launch.state(p, r),
    )
}

/// `mur new`: the folder it made. Its capsule folders are recorded at their first run:
/// until a session runs in the project, only the user writes them.
pub(crate) fn record_new(folder: &Path) -> Result<()> {
    approval::record_new(folder, |project| {
        scan::project(project, None, &BTreeMap::new())
    })
}
