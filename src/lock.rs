//! PLACEHOLDER (h/roster): the contract's signatures only; replaced by h/store at merge.
#![allow(unused_variables)]
use std::path::Path;

use crate::diag::Result;
use crate::store::Installed;

pub const FILE_NAME: &str = "murmur.lock";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub name: String,
    pub version: String,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lock {
    pub pins: Vec<Pin>,
}

pub fn load(project: &Path) -> Result<Option<Lock>> {
    Ok(None)
}

impl Lock {
    pub fn pin(&self, name: &str) -> Option<&Pin> {
        self.pins.iter().find(|p| p.name == name)
    }
}

pub fn check(pin: &Pin, found: &Installed, lock_file: &Path) -> Result<()> {
    Ok(())
}
