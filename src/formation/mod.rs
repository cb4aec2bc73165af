//! Formations: `mur run --roster` and what it leaves on disk.

pub mod marker;
