//! PLACEHOLDER (h/roster): the contract's signatures only; replaced by h/store at merge.
#![allow(unused_variables)]
use std::fmt;
use std::path::{Path, PathBuf};

use crate::diag::Result;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Project,
    Global,
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StoreKind::Project => "project",
            StoreKind::Global => "global",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub name: String,
    pub version: String,
    pub sha256: String,
    pub store: StoreKind,
    pub path: PathBuf,
}

pub fn find(project: &Path, name: &str, version: &str) -> Result<Option<Installed>> {
    Ok(None)
}

pub fn list(project: &Path) -> Result<Vec<Installed>> {
    Ok(Vec::new())
}
