//! The command line: clap definitions and dispatch to the library. Each command's
//! flags are defined beside the code that runs it.

use clap::{Parser, Subcommand};

use crate::diag::Result;
use crate::{doctor, explain, lock, pack, scaffold, store};

/// mur (murmur): packs, installs and runs capsules, and launches formations of them.
#[derive(Debug, Parser)]
#[command(name = "mur", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print what an error or warning code means, and what to do about it.
    Explain(explain::ExplainArgs),
    /// Run a capsule, or with --roster launch a formation.
    Run(crate::formation::LaunchArgs),
    /// Scaffold a capsule folder, or with --roster a two-member formation.
    New(scaffold::NewArgs),
    /// Pack a capsule source folder into a deterministic <name>-<version>.mur.zip.
    Pack(pack::PackArgs),
    /// Install .mur.zip files or capsule source folders into the project (or global) store.
    Install(store::install::InstallArgs),
    /// List installed artifacts, project store first.
    Ls(store::ls::LsArgs),
    /// Pin name, version and sha256 of what the project uses in murmur.lock.
    Lock(lock::LockArgs),
    /// Admit a roster and report the result: members, edges, warnings, or the refusal.
    Doctor(doctor::DoctorArgs),
}

/// Runs the parsed command; returns the process exit status.
pub fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Explain(args) => explain::run(&args),
        Command::Run(args) => crate::formation::run_launch_args(&args),
        Command::New(args) => scaffold::run(&args),
        Command::Pack(args) => pack::run(&args),
        Command::Install(args) => store::install::run(&args),
        Command::Ls(args) => store::ls::run(&args),
        Command::Lock(args) => lock::run(&args),
        Command::Doctor(args) => doctor::run(&args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
