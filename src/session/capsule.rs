//! What a session runs: the current folder's murmur.yaml, or an installed capsule
//! found in the project store then the global store (murmur.lock honoured) and
//! unpacked once into `~/.murmur/cache/<sha256>/`.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use crate::catalogue::{E_RUN_001, E_RUN_002, E_RUN_047};
use crate::diag::{Diagnostic, Result};
use crate::manifest::{self, Manifest};
use crate::store::{self, Installed, Stores};
use crate::{lock, pack, paths};

/// A capsule ready to run.
#[derive(Debug, Clone)]
pub(crate) struct Capsule {
    pub manifest: Manifest,
    /// The folder holding the capsule's files: its source folder, or its unpacked copy.
    pub root: PathBuf,
    /// `<scope>/<name>` when installed; the bare manifest name when run from its folder.
    pub name: String,
    pub version: String,
    /// The installed artifact, when there is one.
    pub installed: Option<Installed>,
}

impl Capsule {
    pub(crate) fn sha256(&self) -> Option<String> {
        self.installed.as_ref().map(|i| i.sha256.to_string())
    }

    /// The capsule's instructions file, read from its root (None when it has none or
    /// it cannot be read: [`instructions_missing`] warned of that at the start).
    pub(crate) fn instructions(&self) -> Option<String> {
        self.read_instructions()?.ok()
    }

    fn read_instructions(&self) -> Option<std::io::Result<String>> {
        let rel = self.manifest.instructions.as_ref()?;
        Some(std::fs::read_to_string(self.root.join(rel)))
    }
}

/// W-MAN-002 when `instructions:` names a file the capsule does not hold, or one that
/// is not UTF-8 text: the model would go without that system prompt, silently.
pub(crate) fn instructions_missing(capsule: &Capsule) -> Option<Diagnostic> {
    let err = capsule.read_instructions()?.err()?;
    let rel = capsule.manifest.instructions.as_deref().unwrap_or_default();
    let why = match err.kind() {
        std::io::ErrorKind::NotFound => "the capsule holds no such file".to_string(),
        std::io::ErrorKind::InvalidData => "it is not UTF-8 text".to_string(),
        _ => err.to_string(),
    };
    Some(Diagnostic::new(
        crate::catalogue::W_MAN_002,
        format!(
            "{}: `instructions: {rel}` cannot be read ({why}); the model runs without these instructions",
            capsule.name
        ),
    ))
}

/// The murmur.yaml of `dir` (`mur run` with no --capsule). Never reads roster.yaml.
pub(crate) fn from_folder(dir: &Path) -> Result<Capsule> {
    let manifest = manifest::load(&dir.join(manifest::FILE_NAME))?;
    Ok(Capsule {
        name: manifest.name.clone(),
        version: manifest.version.clone(),
        root: dir.to_path_buf(),
        manifest,
        installed: None,
    })
}

/// `~/.murmur/cache/`
pub(crate) fn cache_root() -> PathBuf {
    paths::murmur_home().join("cache")
}

/// The installed capsule `name` at `version`, resolved from `project`'s stores and
/// lock. `bound` is the sha256 a formation's admission bound it to: other bytes are
/// refused with E-RUN-047.
pub(crate) fn installed(
    project: &Path,
    name: &str,
    version: &str,
    bound: Option<&str>,
) -> Result<Capsule> {
    installed_in(&Stores::of(project), project, name, version, bound)
}

/// The version of `name` to run when `--capsule-version` was left out: the one
/// murmur.lock pins, else the only one installed. Says which on stderr (not with
/// `-q`); none installed, or several and no pin: E-RUN-001.
pub(crate) fn version_for(project: &Path, name: &str) -> Result<String> {
    if let Some(lock) = lock::load(project)?
        && let Some(pin) = lock.pin(name)
    {
        crate::output::banner_line(format_args!(
            "[mur run] {name} {}: the version murmur.lock pins",
            pin.version
        ));
        return Ok(pin.version.clone());
    }
    let stores = Stores::of(project);
    let mut versions: Vec<String> = stores
        .list()?
        .into_iter()
        .filter(|i| i.name == name)
        .map(|i| i.version)
        .collect();
    versions.sort_by(|a, b| store::compare_versions(a, b));
    versions.dedup();
    match versions.as_slice() {
        [one] => {
            crate::output::banner_line(format_args!(
                "[mur run] {name} {one}: the only version installed"
            ));
            Ok(one.clone())
        }
        [] => Err(not_installed(&stores, name, "(any version)")),
        several => Err(Diagnostic::new(
            E_RUN_001,
            format!(
                "{name} is installed at {} and murmur.lock pins none of them",
                several.join(", ")
            ),
        )
        .hint("Give --capsule-version, or pin one with `mur lock`.")),
    }
}

/// E-RUN-001, with a guess when one fits: the scoped name of a bare one (`c1` →
/// `local/c1`), the versions of that name that are installed, or the installed name a
/// misspelled one is closest to (`local/reviewr` → `local/reviewer`).
fn not_installed(stores: &Stores, name: &str, version: &str) -> Diagnostic {
    let refusal = Diagnostic::new(
        E_RUN_001,
        format!(
            "{name} {version} is installed in neither {} nor {}",
            stores.project.display(),
            stores.global.display()
        ),
    );
    let installed = stores.list().unwrap_or_default();
    let named = |n: &str| -> Vec<String> {
        let mut v: Vec<String> = installed
            .iter()
            .filter(|i| i.name == n)
            .map(|i| i.version.clone())
            .collect();
        v.dedup();
        v
    };
    if !name.contains('/') {
        let mut scoped: Vec<&str> = installed
            .iter()
            .filter(|i| i.name.rsplit('/').next() == Some(name))
            .map(|i| i.name.as_str())
            .collect();
        scoped.dedup();
        if let Some(first) = scoped.first() {
            return refusal.hint(format!(
                "Capsules are named `<scope>/<name>`: did you mean `{first}`? Installed: {}.",
                scoped
                    .iter()
                    .map(|n| format!("{n} {}", named(n).join(", ")))
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
    } else if !named(name).is_empty() {
        return refusal.hint(format!(
            "{name} is installed at {}; `mur ls` lists every version.",
            named(name).join(", ")
        ));
    }
    // A misspelled name: the installed one it is closest to, scoped or bare.
    let names = installed.iter().map(|i| i.name.as_str());
    let guess = if name.contains('/') {
        crate::diag::closest(name, names)
    } else {
        let bare = crate::diag::closest(name, names.clone().filter_map(|n| n.rsplit('/').next()));
        bare.and_then(|b| names.clone().find(|n| n.rsplit('/').next() == Some(b)))
    };
    if let Some(guess) = guess {
        return refusal.hint(format!(
            "Did you mean `{guess}`? It is installed at {}; `mur ls` lists every capsule.",
            named(guess).join(", ")
        ));
    }
    refusal
}

fn installed_in(
    stores: &Stores,
    project: &Path,
    name: &str,
    version: &str,
    bound: Option<&str>,
) -> Result<Capsule> {
    let found = match stores.find(name, version)? {
        Some(found) => found,
        None => return Err(not_installed(stores, name, version)),
    };
    if let Some(lock) = lock::load(project)?
        && let Some(pin) = lock.pin(name)
    {
        lock::check(pin, &found, &project.join(lock::FILE_NAME))?;
    }
    if let Some(bound) = bound
        && bound != found.sha256.as_str()
    {
        return Err(Diagnostic::new(
            E_RUN_047,
            format!(
                "{name} {version} changed since admission: sha256 {bound} then, {} now",
                found.sha256
            ),
        )
        .in_file(&found.path));
    }
    let root = unpacked(&found)?;
    let manifest = manifest::load(&root.join(manifest::FILE_NAME))?;
    Ok(Capsule {
        manifest,
        root,
        name: found.name.clone(),
        version: found.version.clone(),
        installed: Some(found),
    })
}

/// The artifact's unpacked copy, `~/.murmur/cache/<sha256>/`, made when missing. The
/// artifact is hashed again after unpacking: bytes that changed meanwhile are refused
/// with E-RUN-047 and the copy is removed, so the cache never holds a folder under
/// another artifact's hash. A copy already there is not hashed again: it holds the
/// bytes `found.sha256` names, the hash the lock and admission were checked against,
/// and the artifact is not read again.
fn unpacked(found: &Installed) -> Result<PathBuf> {
    let root = cache_root();
    let dest = root.join(&found.sha256);
    if dest.join(manifest::FILE_NAME).is_file() {
        return Ok(dest);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&root)
        .map_err(|e| {
            Diagnostic::new(
                E_RUN_002,
                format!("cannot create the cache {}: {e}", root.display()),
            )
        })?;
    if let Err(e) = pack::unpack(&found.path, &dest) {
        // Another session may have unpacked the same artifact at the same moment.
        if !dest.join(manifest::FILE_NAME).is_file() {
            return Err(e);
        }
    }
    if let Err(e) = store::verify(found) {
        let _ = std::fs::remove_dir_all(&dest);
        return Err(e);
    }
    Ok(dest)
}

/// What a session checks of its capsule before it takes a task, without starting it:
/// its component files read and check (`Catalog::open`, as the start does), its model
/// key is set (E-AGT-001), and, for a formation member that may call `callees`, W-RUN-008
/// (no door known yet). Refusals are `Err`; W-RUN-008 and W-MAN-002 come back.
/// `mur doctor` asks this of every member, and of a single capsule's folder.
pub(crate) fn checks(
    capsule: &Capsule,
    member: Option<(&str, &[&str])>,
) -> Result<Vec<Diagnostic>> {
    crate::component::Catalog::open(&capsule.root, &capsule.manifest)?;
    if let manifest::Transport::Http(h) = &capsule.manifest.agent.transport {
        crate::agent::http::api_key(h.api_key_env.as_deref())?;
    }
    let mut warnings = Vec::new();
    if let Some((name, callees)) = member {
        let callees: Vec<(&str, Option<&reqwest::Url>)> =
            callees.iter().map(|c| (*c, None)).collect();
        warnings.extend(crate::call_member::network_warning(
            name,
            &callees,
            &capsule.manifest.capabilities.network.allow,
        ));
    }
    warnings.extend(instructions_missing(capsule));
    Ok(warnings)
}
