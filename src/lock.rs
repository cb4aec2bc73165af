//! `murmur.lock`: the project's pins, name, version and sha256 of each artifact it
//! uses. Only `mur lock` writes it; admission and runs read it with `load` and hold
//! what they found against it with `check`.
//!
//! ```yaml
//! # murmur.lock: written by `mur lock`; do not edit.
//! lock_version: 1
//! artifacts:
//!   - name: local/coder
//!     version: "1.2.0"
//!     sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//! ```

use std::io;
use std::path::Path;

use crate::catalogue::{E_REG_001, E_REG_003, E_REG_004, E_REG_005};
use crate::diag::{Diagnostic, Location, Result};
use crate::store::Installed;
use crate::yaml::{self, Node, Reader};

mod write;

pub(crate) use write::{LockArgs, resolve, run, write_atomically as write_file};

pub(crate) const FILE_NAME: &str = "murmur.lock";
/// The only `lock_version` this mur reads and writes.
pub(crate) const VERSION: i64 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pin {
    /// `<scope>/<name>`
    pub name: String,
    pub version: String,
    /// Of the .mur.zip bytes.
    pub sha256: crate::ids::Sha256,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Lock {
    /// Sorted by name when `mur lock` writes them; one per name.
    pub pins: Vec<Pin>,
}

impl Lock {
    pub(crate) fn pin(&self, name: &str) -> Option<&Pin> {
        self.pins.iter().find(|p| p.name == name)
    }

    /// The file's text, as `mur lock` writes it: pins sorted by name, versions quoted
    /// so that no YAML reader turns 1.10 into a number.
    pub(crate) fn render(&self) -> String {
        let mut pins: Vec<&Pin> = self.pins.iter().collect();
        pins.sort_by(|a, b| a.name.cmp(&b.name));
        let mut out = format!(
            "# {FILE_NAME}: written by `mur lock`; do not edit.\nlock_version: {VERSION}\n"
        );
        if pins.is_empty() {
            out.push_str("artifacts: []\n");
        } else {
            out.push_str("artifacts:\n");
            for p in pins {
                out.push_str(&format!(
                    "  - name: {}\n    version: \"{}\"\n    sha256: {}\n",
                    p.name, p.version, p.sha256
                ));
            }
        }
        out
    }
}

/// The project's murmur.lock; None when there is none.
pub(crate) fn load(project: &Path) -> Result<Option<Lock>> {
    let file = project.join(FILE_NAME);
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(
                Diagnostic::new(E_REG_001, format!("cannot read {}: {e}", file.display()))
                    .in_file(&file),
            );
        }
    };
    parse(&text, &file).map(|(lock, _)| Some(lock))
}

/// Parses a lock file's text strictly; also returns where each pin starts.
pub(crate) fn parse(text: &str, file: &Path) -> Result<(Lock, Vec<Location>)> {
    let root = yaml::parse(text, file, E_REG_001)?;
    let r = Reader::new(file, E_REG_001);
    if root.is_null() {
        return Err(r
            .fault(&root, format!("{FILE_NAME} is empty"))
            .hint("Run `mur lock` to write it again."));
    }
    let top = r.map(&root, "", &["lock_version", "artifacts"])?;
    let version_node = r.required(&top, "lock_version", "lock_version")?;
    let version = r.integer(version_node, "lock_version")?;
    if version != VERSION {
        return Err(r
            .fault(
                version_node,
                format!("lock_version is {version}; this mur reads lock_version {VERSION}"),
            )
            .hint("Run `mur lock` to write it again with this mur."));
    }
    let items = r.seq(r.required(&top, "artifacts", "artifacts")?, "artifacts")?;
    let mut lock = Lock::default();
    let mut places: Vec<Location> = Vec::new();
    for item in items {
        let m = r.map(item, "artifacts[]", &["name", "version", "sha256"])?;
        let field = |key: &str| -> Result<(&Node, &str)> {
            let node = r.required(&m, key, &format!("artifacts[].{key}"))?;
            Ok((node, r.string(node, &format!("artifacts[].{key}"))?))
        };
        let (name_node, name) = field("name")?;
        let (version_node, version) = field("version")?;
        let (sha_node, sha256) = field("sha256")?;
        if crate::artifact::split_name(name).is_none() {
            return Err(r
                .fault_with(
                    E_REG_004,
                    name_node,
                    format!("`{name}` is not an artifact name `<scope>/<name>`"),
                )
                .hint("Run `mur lock` to write it again."));
        }
        if !crate::artifact::valid_version(version) {
            return Err(r
                .fault_with(
                    E_REG_004,
                    version_node,
                    format!("`{version}` is not a version an artifact can have"),
                )
                .hint("Run `mur lock` to write it again."));
        }
        let Ok(sha256) = sha256.parse::<crate::ids::Sha256>() else {
            return Err(r
                .fault_with(
                    E_REG_004,
                    sha_node,
                    format!("sha256 `{sha256}` is not 64 lowercase hex digits"),
                )
                .hint("Run `mur lock` to write it again."));
        };
        if let Some(i) = lock.pins.iter().position(|p| p.name == name) {
            return Err(r
                .fault_with(
                    E_REG_003,
                    name_node,
                    format!("`{name}` is pinned twice; first at line {}", places[i].line),
                )
                .hint("Run `mur lock` to write it again."));
        }
        places.push(Location::new(file, item.line, item.column));
        lock.pins.push(Pin {
            name: name.to_string(),
            version: version.to_string(),
            sha256,
        });
    }
    Ok((lock, places))
}

/// E-REG-005 naming both the pin and what was found, when they differ.
pub(crate) fn check(pin: &Pin, found: &Installed, lock_file: &Path) -> Result<()> {
    if pin.name == found.name && pin.version == found.version && pin.sha256 == found.sha256 {
        return Ok(());
    }
    let what = if pin.version != found.version {
        "another version"
    } else {
        "other bytes"
    };
    let mut d = Diagnostic::new(
        E_REG_005,
        format!(
            "{} pins {} {} (sha256 {}), but the {} store has {what}: {} {} (sha256 {}) at {}",
            FILE_NAME,
            pin.name,
            pin.version,
            pin.sha256,
            found.store,
            found.name,
            found.version,
            found.sha256,
            found.path.display()
        ),
    );
    // Point at the pin itself when the file still reads.
    let place = std::fs::read_to_string(lock_file)
        .ok()
        .and_then(|text| parse(&text, lock_file).ok())
        .and_then(|(lock, places)| {
            let i = lock.pins.iter().position(|p| p.name == pin.name)?;
            places.get(i).cloned()
        });
    d = match place {
        Some(loc) => d.at(loc),
        None => d.in_file(lock_file),
    };
    Err(d)
}

#[cfg(test)]
mod tests;
