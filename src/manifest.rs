//! PLACEHOLDER until the manifest workstream's module lands on main: only the
//! contract's signatures and the fields the store needs (name, version, artifacts).

use std::path::Path;

use crate::catalogue::E_MAN_001;
use crate::diag::{Diagnostic, Result};
use crate::yaml::{self, Reader, Value};

pub const FILE_NAME: &str = "murmur.yaml";

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub artifacts: Vec<ArtifactRef>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactRef {
    pub name: String,
    pub version: String,
}

pub fn parse(text: &str, file: &Path) -> Result<Manifest> {
    let root = yaml::parse(text, file, E_MAN_001)?;
    let r = Reader::new(file, E_MAN_001);
    let Value::Map(entries) = &root.value else {
        return Err(r.fault(&root, "murmur.yaml must be a mapping"));
    };
    let map = yaml::Map {
        node: &root,
        entries,
    };
    let name = r
        .string(r.required(&map, "name", "name")?, "name")?
        .to_string();
    let version = r
        .string(r.required(&map, "version", "version")?, "version")?
        .to_string();
    let mut artifacts = Vec::new();
    if let Some(list) = map.get("artifacts") {
        for item in r.seq(list, "artifacts")? {
            let m = r.map(item, "artifacts[]", &["name", "version"])?;
            artifacts.push(ArtifactRef {
                name: r
                    .string(r.required(&m, "name", "artifacts[].name")?, "name")?
                    .into(),
                version: r
                    .string(r.required(&m, "version", "artifacts[].version")?, "version")?
                    .into(),
            });
        }
    }
    Ok(Manifest {
        name,
        version,
        artifacts,
    })
}

pub fn load(path: &Path) -> Result<Manifest> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Diagnostic::new(E_MAN_001, format!("cannot read {}: {e}", path.display())).in_file(path)
    })?;
    parse(&text, path)
}
