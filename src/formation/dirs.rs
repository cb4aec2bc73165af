//! Member directories: `~/.murmur/formations/<frm_id>/<member>/` for each peer, and
//! the ownership marker written before the first of them.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::catalogue::E_RUN_045;
use crate::diag::{Diagnostic, Result};
use crate::retention::marker::Marker;

/// The formation's directory and the warning line to print when its marker could not
/// be written (the launch goes on without one).
#[derive(Debug)]
pub struct FormationDir {
    pub path: PathBuf,
    pub marker_warning: Option<String>,
}

/// Makes `<formations>/` and `<formations>/<frm_id>/` owner-only and writes the
/// marker into the latter. Refuses (E-RUN-045, nothing made) when the formation's
/// directory already exists.
pub fn create(
    formations: &Path,
    formation: &crate::ids::FormationId,
    project_dir: &Path,
) -> Result<FormationDir> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(formations)
        .map_err(|e| refusal(formations, &e.to_string()))?;
    // An existing ~/.murmur/formations/ made by hand may be wider: narrow it.
    let _ = std::fs::set_permissions(formations, std::fs::Permissions::from_mode(0o700));
    let path = formations.join(formation);
    make_new_dir(&path)?;
    let marker_warning = Marker::for_this_launcher(project_dir)
        .write(&path)
        .err()
        .map(|e| marker_warning(formation.as_str(), &e.to_string()));
    Ok(FormationDir {
        path,
        marker_warning,
    })
}

/// The spec's line for a launch whose marker could not be written.
pub fn marker_warning(formation: &str, reason: &str) -> String {
    format!(
        "[mur run] warning: formation {formation} has no ownership marker ({reason}); its directory will never be removed automatically"
    )
}

/// Makes a peer's work folder at mode 0700; a path already there is E-RUN-045.
pub fn create_peer(formation_dir: &Path, member: &str) -> Result<PathBuf> {
    let path = formation_dir.join(member);
    make_new_dir(&path)?;
    Ok(path)
}

fn make_new_dir(path: &Path) -> Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {
            // The umask may have narrowed the mode further, never widened it; set it exactly.
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700));
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(refusal(path, "the path already exists and is never reused"))
        }
        Err(e) => Err(refusal(path, &e.to_string())),
    }
}

fn refusal(path: &Path, why: &str) -> Diagnostic {
    Diagnostic::new(E_RUN_045, format!("cannot make {}: {why}", path.display()))
        .hint("Nothing was launched. Remove or rename that path, then launch again.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::FormationId;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn owner_only_dirs_and_marker_before_peers() {
        let tmp = tempfile::tempdir().unwrap();
        let formations = tmp.path().join("formations");
        let dir = create(&formations, &FormationId::mint(), tmp.path()).unwrap();
        assert!(dir.marker_warning.is_none());
        assert_eq!(mode(&formations), 0o700);
        assert_eq!(mode(&dir.path), 0o700);
        assert_eq!(mode(&dir.path.join("formation.json")), 0o600);
        let peer = create_peer(&dir.path, "coder").unwrap();
        assert_eq!(mode(&peer), 0o700);
    }

    #[test]
    fn existing_paths_are_refused_with_e_run_045_naming_them() {
        let tmp = tempfile::tempdir().unwrap();
        let formations = tmp.path().join("formations");
        let taken = FormationId::mint();
        std::fs::create_dir_all(formations.join(taken.as_str())).unwrap();
        let err = create(&formations, &taken, tmp.path()).unwrap_err();
        assert_eq!(err.code, E_RUN_045);
        assert!(err.message.contains(taken.as_str()), "{}", err.message);

        let dir = create(&formations, &FormationId::mint(), tmp.path()).unwrap();
        std::fs::create_dir(dir.path.join("coder")).unwrap();
        let err = create_peer(&dir.path, "coder").unwrap_err();
        assert_eq!(err.code, E_RUN_045);
        assert!(err.message.contains("coder"), "{}", err.message);
    }

    #[test]
    fn the_marker_warning_is_the_spec_s_line() {
        assert_eq!(
            marker_warning("frm_0199", "No space left on device (os error 28)"),
            "[mur run] warning: formation frm_0199 has no ownership marker (No space left on device (os error 28)); its directory will never be removed automatically"
        );
    }
}
