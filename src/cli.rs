//! The command line: clap definitions and dispatch to the library. Each command's
//! flags are defined beside the code that runs it.

use clap::{Parser, Subcommand};

use crate::diag::Result;
use crate::{explain, scaffold};

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
    /// Scaffold a capsule folder, or with --roster a two-member formation.
    New(scaffold::NewArgs),
}

/// Runs the parsed command; returns the process exit status.
pub fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Explain(args) => explain::run(&args),
        Command::New(args) => scaffold::run(&args),
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
