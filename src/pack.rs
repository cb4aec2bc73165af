//! PLACEHOLDER (h/roster): the contract's signatures only; replaced by h/store at merge.
use std::path::Path;

use crate::diag::Result;
use crate::manifest::Manifest;

pub fn read_manifest(zip: &Path) -> Result<Manifest> {
    crate::manifest::load(zip)
}
