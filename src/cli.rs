//! The command line: clap definitions and dispatch to the library. Each command's
//! flags are defined beside the code that runs it.

use clap::{CommandFactory, Parser, Subcommand};

use crate::diag::Result;
use crate::{doctor, explain, lock, pack, scaffold, session, store};

/// mur (murmur): packs, installs and runs capsules, and launches formations of them.
#[derive(Debug, Parser)]
#[command(name = "mur", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Say less: no banners (what runs, where) and no progress.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Say more: -v shows mur's log (info), -vv debug, -vvv everything. RUST_LOG, when
    /// set, chooses instead (as tracing's EnvFilter reads it).
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print what an error or warning code means, and what to do about it.
    Explain(explain::ExplainArgs),
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
    /// Run a capsule as a session serving its door; with --roster, launch a formation.
    Run(session::RunArgs),
    /// Give a running session (ses_…) or a formation's entry member (frm_…) a task, e.g. `mur send frm_… "Plan a picnic."`.
    Send(session::send::SendArgs),
    /// Send SIGTERM to a session (ses_…), or to a formation's launcher (frm_…).
    Stop(session::ops::StopArgs),
    /// List live sessions.
    Ps(session::ops::PsArgs),
    /// Read traces: `mur trace show <ses_id|frm_id>`.
    Trace(session::ops::TraceArgs),
    /// Admit a roster and report the result: members, edges, warnings, or the refusal.
    Doctor(doctor::DoctorArgs),
    /// Print a shell completion script, e.g. `mur completions bash > ~/.local/share/bash-completion/completions/mur`.
    Completions(CompletionsArgs),
    /// Print mur's man page (roff), e.g. `mur man | man -l -`.
    Man,
}

/// `mur completions <shell>`
#[derive(Debug, Clone, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

impl Command {
    /// The command's name, as typed (`run` in `mur run`).
    pub fn name(&self) -> &'static str {
        match self {
            Command::Explain(_) => "explain",
            Command::New(_) => "new",
            Command::Pack(_) => "pack",
            Command::Install(_) => "install",
            Command::Ls(_) => "ls",
            Command::Lock(_) => "lock",
            Command::Run(_) => "run",
            Command::Send(_) => "send",
            Command::Stop(_) => "stop",
            Command::Ps(_) => "ps",
            Command::Trace(_) => "trace",
            Command::Doctor(_) => "doctor",
            Command::Completions(_) => "completions",
            Command::Man => "man",
        }
    }
}

/// Runs the parsed command; returns the process exit status.
pub fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Explain(args) => explain::run(&args),
        Command::New(args) => scaffold::run(&args),
        Command::Pack(args) => pack::run(&args),
        Command::Install(args) => store::install::run(&args),
        Command::Ls(args) => store::ls::run(&args),
        Command::Lock(args) => lock::run(&args),
        Command::Run(args) => session::run(&args),
        Command::Send(args) => session::send::send(&args),
        Command::Stop(args) => session::ops::stop(&args),
        Command::Ps(args) => session::ops::ps(&args),
        Command::Trace(args) => session::ops::trace(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Completions(args) => {
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "mur", &mut script);
            crate::output::stdout_text(&String::from_utf8_lossy(&script));
            Ok(0)
        }
        Command::Man => {
            let mut page = Vec::new();
            // Rendering into memory cannot fail: a Vec takes every write.
            let _ = clap_mangen::Man::new(Cli::command()).render(&mut page);
            crate::output::stdout_text(&String::from_utf8_lossy(&page));
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn command_names_are_the_subcommands() {
        let cli = Cli::command();
        let names: Vec<&str> = cli.get_subcommands().map(|c| c.get_name()).collect();
        for args in [["mur", "ps"], ["mur", "ls"], ["mur", "lock"]] {
            let parsed = Cli::try_parse_from(args).unwrap();
            assert_eq!(parsed.command.name(), args[1]);
            assert!(names.contains(&parsed.command.name()));
        }
    }
}
