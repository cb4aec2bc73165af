//! Artifact names and an artifact's place in a store: `<scope>/<name>` at an exact
//! version is `<store>/<scope>/<name>/<version>.mur.zip`. A leaf, read by the packer
//! (which names what it makes), the stores and the lock.

use std::path::{Path, PathBuf};

use crate::catalogue::E_STO_004;
use crate::diag::{Diagnostic, Result};
use crate::manifest;

/// The scope of every capsule installed from a `.mur.zip` file or a source folder.
pub const LOCAL_SCOPE: &str = "local";
/// The file name suffix of an artifact.
pub const EXTENSION: &str = ".mur.zip";

/// `<store>/<scope>/<name>/<version>.mur.zip`, or None when the name or version
/// cannot be stored.
pub fn artifact_path(store: &Path, name: &str, version: &str) -> Option<PathBuf> {
    let (scope, short) = split_name(name)?;
    valid_version(version).then(|| {
        store
            .join(scope)
            .join(short)
            .join(format!("{version}{EXTENSION}"))
    })
}

/// Like `artifact_path`, refusing with E-STO-004.
pub fn artifact_path_or_refuse(store: &Path, name: &str, version: &str) -> Result<PathBuf> {
    artifact_path(store, name, version).ok_or_else(|| {
        Diagnostic::new(
            E_STO_004,
            format!("cannot store `{name}` at version `{version}`"),
        )
    })
}

/// `<scope>/<name>` split in two, each `^[a-z][a-z0-9-]{0,63}$`.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    crate::ids::ArtifactName::is_valid(name)
        .then(|| name.split_once('/'))
        .flatten()
}

/// An exact version that is safe as a file name, by the manifest's rule:
/// `^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`, and not `latest`, `stable` or `edge`.
pub fn valid_version(version: &str) -> bool {
    manifest::rules::version(version).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_versions_and_paths() {
        assert_eq!(split_name("local/coder"), Some(("local", "coder")));
        for bad in [
            "coder",
            "Local/coder",
            "local/",
            "/coder",
            "local/co/der",
            "local/-x",
        ] {
            assert_eq!(split_name(bad), None, "{bad}");
        }
        for good in ["1.2.0", "1.10", "2.0.0-rc.1+build_5", "v1"] {
            assert!(valid_version(good), "{good}");
        }
        for bad in [
            "",
            ".1",
            "1/2",
            "..",
            "-1",
            "1 2",
            "latest",
            &"9".repeat(65),
        ] {
            assert!(!valid_version(bad), "{bad}");
        }
        assert_eq!(
            artifact_path(Path::new("/s"), "local/coder", "1.2.0"),
            Some(PathBuf::from("/s/local/coder/1.2.0.mur.zip"))
        );
    }
}
