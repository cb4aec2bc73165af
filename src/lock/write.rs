//! `mur lock`: pins what the project uses, resolved through the stores (project store,
//! then global store): every artifact installed in the project store, the members of
//! the roster.yaml in the project folder, and the `artifacts[]` of its murmur.yaml.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;

use super::{FILE_NAME, Lock, Pin};
use crate::catalogue::{
    E_MAN_001, E_REG_002, E_REG_006, E_REG_007, E_REG_008, E_ROS_001, W_REG_001,
};
use crate::diag::{Diagnostic, Location, Result};
use crate::fsutil::{self, Durability};
use crate::store::{self, StoreKind, Stores};
use crate::yaml::{self, Node, Reader, Value};
use crate::{manifest, output};

/// The roster file `mur lock` reads members from (the roster module owns its rules).
const ROSTER_FILE: &str = "roster.yaml";

#[derive(Debug, Args)]
pub struct LockArgs {}

pub(crate) fn run(_args: &LockArgs) -> Result<i32> {
    let project = std::env::current_dir()
        .map(|cwd| crate::paths::project_root(&cwd))
        .map_err(|e| Diagnostic::new(E_REG_007, format!("cannot read the current folder: {e}")))?;
    let (lock, warnings) = resolve(&project)?;
    for w in &warnings {
        output::stderr_line(w);
    }
    let file = project.join(FILE_NAME);
    let text = lock.render();
    let written = crate::approval::Wrote::File(&file, crate::ids::Sha256::of(text.as_bytes()));
    if std::fs::read_to_string(&file).ok().as_deref() == Some(text.as_str()) {
        // What `mur lock` would write is approved, written now or before.
        crate::approval::record_written(&project, &[written])?;
        output::stdout_line(format_args!(
            "{FILE_NAME} is up to date ({})",
            count(lock.pins.len())
        ));
        return Ok(0);
    }
    write_atomically(&file, &text)?;
    crate::approval::record_written(&project, &[written])?;
    for p in &lock.pins {
        output::stdout_line(format_args!(
            "pinned {} {} sha256 {}",
            p.name, p.version, p.sha256
        ));
    }
    output::stdout_line(format_args!(
        "wrote {} ({})",
        file.display(),
        count(lock.pins.len())
    ));
    Ok(0)
}

fn count(pins: usize) -> String {
    match pins {
        1 => "1 pin".to_string(),
        n => format!("{n} pins"),
    }
}

/// Something the project asks for by name and version, and where it asks.
#[derive(Debug, Clone)]
struct Want {
    name: String,
    version: String,
    origin: String,
    place: Option<Location>,
    file: PathBuf,
}

impl Want {
    fn locate(&self, d: Diagnostic) -> Diagnostic {
        match &self.place {
            Some(loc) => d.at(loc.clone()),
            None => d.in_file(&self.file),
        }
    }
}

/// What `mur lock` pins for `project`, and the warnings to show. Writes nothing.
pub(crate) fn resolve(project: &Path) -> Result<(Lock, Vec<Diagnostic>)> {
    resolve_in(project, &Stores::of(project))
}

/// `resolve` with the stores given.
pub(crate) fn resolve_in(project: &Path, stores: &Stores) -> Result<(Lock, Vec<Diagnostic>)> {
    let mut wants: BTreeMap<String, Want> = BTreeMap::new();
    let mut asked = roster_wants(project)?;
    asked.extend(manifest_wants(project)?);
    for want in asked {
        match wants.get(&want.name) {
            Some(first) if first.version != want.version => {
                return Err(want
                    .locate(Diagnostic::new(
                        E_REG_006,
                        format!(
                            "{} asks for {} {}, but {} asks for {}",
                            want.origin, want.name, want.version, first.origin, first.version
                        ),
                    ))
                    .hint("Make roster.yaml and murmur.yaml ask for the same version."));
            }
            Some(_) => {}
            None => {
                wants.insert(want.name.clone(), want);
            }
        }
    }
    let mut pins: BTreeMap<String, Pin> = BTreeMap::new();
    for want in wants.values() {
        let Some(found) = stores.find(&want.name, &want.version)? else {
            return Err(want
                .locate(Diagnostic::new(
                    E_REG_002,
                    format!(
                        "{} asks for {} {}, which is installed in neither the project store ({}) nor the global store ({})",
                        want.origin,
                        want.name,
                        want.version,
                        stores.project.display(),
                        stores.global.display()
                    ),
                ))
                .hint(format!(
                    "Install {} {} with `mur install`, then run `mur lock` again.",
                    want.name, want.version
                )));
        };
        pins.insert(
            found.name.clone(),
            Pin {
                name: found.name,
                version: found.version,
                sha256: found.sha256,
            },
        );
    }
    // Everything else installed in the project store; list_store sorts versions, so
    // the last one of a name is the highest.
    let mut extra: BTreeMap<String, Vec<store::Installed>> = BTreeMap::new();
    for one in stores.list_store(StoreKind::Project)? {
        if !wants.contains_key(&one.name) {
            extra.entry(one.name.clone()).or_default().push(one);
        }
    }
    // A folder that is no project would get an empty lock that pins nothing.
    if pins.is_empty()
        && extra.is_empty()
        && !project.join(ROSTER_FILE).exists()
        && !project.join(manifest::FILE_NAME).exists()
    {
        return Err(Diagnostic::new(
            E_REG_008,
            format!(
                "{} has no {ROSTER_FILE}, no {} and nothing in the project store: there is nothing to lock",
                project.display(),
                manifest::FILE_NAME
            ),
        )
        .in_file(project)
        .hint("Run `mur lock` in the project folder (the one holding roster.yaml or murmur.yaml)."));
    }
    let mut warnings = Vec::new();
    for (name, mut versions) in extra {
        let Some(top) = versions.pop() else { continue };
        if !versions.is_empty() {
            let others: Vec<&str> = versions.iter().map(|v| v.version.as_str()).collect();
            warnings.push(
                Diagnostic::new(
                    W_REG_001,
                    format!(
                        "the project store holds {name} at {} and {}; pinned {}",
                        others.join(", "),
                        top.version,
                        top.version
                    ),
                )
                .in_file(&stores.project),
            );
        }
        pins.insert(
            name,
            Pin {
                name: top.name,
                version: top.version,
                sha256: top.sha256,
            },
        );
    }
    Ok((
        Lock {
            pins: pins.into_values().collect(),
        },
        warnings,
    ))
}

/// `members[].capsule` and `members[].version` of the project's roster.yaml, read
/// leniently: the roster module owns the rest of its rules.
fn roster_wants(project: &Path) -> Result<Vec<Want>> {
    let file = project.join(ROSTER_FILE);
    let text = match std::fs::read_to_string(&file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(
                Diagnostic::new(E_ROS_001, format!("cannot read {}: {e}", file.display()))
                    .in_file(&file),
            );
        }
    };
    let root = yaml::parse(&text, &file, E_ROS_001)?;
    let r = Reader::new(&file, E_ROS_001);
    let top = lenient_map(&r, &root, "")?;
    let members = r.seq(r.required(&top, "members", "members")?, "members")?;
    let mut wants = Vec::new();
    for member in members {
        let m = lenient_map(&r, member, "members[]")?;
        let capsule_node = r.required(&m, "capsule", "members[].capsule")?;
        let capsule = r.string(capsule_node, "members[].capsule")?;
        let version_node = r.required(&m, "version", "members[].version")?;
        let version = r.string(version_node, "members[].version")?;
        if !capsule.contains('/') {
            return Err(r
                .fault(
                    capsule_node,
                    format!("`{capsule}` is a bare name; a capsule is named `<scope>/<name>`"),
                )
                .hint(format!(
                    "Write `{}/{capsule}` for a capsule installed from its .mur.zip.",
                    crate::artifact::LOCAL_SCOPE
                )));
        }
        let member_name = m
            .get("name")
            .and_then(Node::text)
            .unwrap_or(capsule)
            .to_string();
        wants.push(Want {
            name: capsule.to_string(),
            version: version.to_string(),
            origin: format!("{ROSTER_FILE} member `{member_name}`"),
            place: Some(Location::new(&file, member.line, member.column)),
            file: file.clone(),
        });
    }
    Ok(wants)
}

/// The `artifacts[]` of the project's murmur.yaml, each with the line it starts on.
fn manifest_wants(project: &Path) -> Result<Vec<Want>> {
    let file = project.join(manifest::FILE_NAME);
    if !file.exists() {
        return Ok(Vec::new());
    }
    let m = manifest::load(&file)?;
    // The manifest keeps no positions; the same text read again gives them.
    let places: Vec<Location> = std::fs::read_to_string(&file)
        .ok()
        .and_then(|text| yaml::parse(&text, &file, E_MAN_001).ok())
        .and_then(|root| match root.value {
            Value::Map(entries) => entries
                .into_iter()
                .find(|(k, _)| k.text() == Some("artifacts"))
                .map(|(_, v)| v),
            _ => None,
        })
        .and_then(|list| match list.value {
            Value::Seq(items) => Some(
                items
                    .iter()
                    .map(|i| Location::new(&file, i.line, i.column))
                    .collect(),
            ),
            _ => None,
        })
        .unwrap_or_default();
    Ok(m.artifacts
        .into_iter()
        .enumerate()
        .map(|(i, a)| Want {
            origin: format!("{} artifacts[]", manifest::FILE_NAME),
            name: a.name,
            version: a.version,
            place: places.get(i).cloned(),
            file: file.clone(),
        })
        .collect())
}

fn lenient_map<'a>(r: &Reader, node: &'a Node, field: &str) -> Result<yaml::Map<'a>> {
    match &node.value {
        Value::Map(entries) => Ok(yaml::Map { node, entries }),
        _ => Err(r.fault(
            node,
            format!(
                "`{}` must be a mapping, not {}",
                if field.is_empty() { ROSTER_FILE } else { field },
                node.kind()
            ),
        )),
    }
}

/// murmur.lock is replaced whole, and the rename made durable: `mur run` binds to it.
pub(crate) fn write_atomically(file: &Path, text: &str) -> Result<()> {
    fsutil::write_atomic(file, text.as_bytes(), 0o644, Durability::Folder).map_err(|e| {
        fsutil::write_failed(E_REG_007, file, &e)
            .hint("Make the project folder writable; murmur.lock was left as it was.")
    })
}
