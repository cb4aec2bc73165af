//! The real `mur` with none of the caller's own `MURMUR_*` or `MUR_TEST_*` variables: a
//! test or bench run inside a formation member must not become one, and a developer's
//! test settings must not leak in. Shared with benches/ (`#[path]`), which measure the
//! spec's real limits and so add no time scale.

use std::process::Command;

pub const MUR: &str = env!("CARGO_BIN_EXE_mur");

pub fn clean_mur() -> Command {
    let mut cmd = Command::new(MUR);
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if text.starts_with("MURMUR_") || text.starts_with("MUR_TEST_") {
            cmd.env_remove(&name);
        }
    }
    cmd
}
