//! Formations: `mur run --roster` and what it leaves on disk.

pub mod dirs;
pub mod launch;
pub mod marker;
pub mod member;
