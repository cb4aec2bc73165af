//! The command line: clap definitions and dispatch to the library. Each command's
//! flags are defined beside the code that runs it.

use clap::{CommandFactory, Parser, Subcommand};

use crate::diag::Result;
use crate::{approve, doctor, explain, lock, pack, scaffold, session, store};

/// mur (murmur): packs, installs and runs capsules, and launches formations of them.
#[derive(Debug, Parser)]
#[command(
    name = "mur",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = "Examples:\n  mur new --roster team && cd team && mur install lead helper\n  mur run --roster --task \"Plan a picnic.\"\n  mur ps -a\n\nEach command's --help shows examples of its own."
)]
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
    #[command(after_help = "Examples:\n  mur explain E-RUN-045\n  mur explain --list")]
    Explain(Later<explain::ExplainArgs>),
    /// Scaffold a capsule folder, or with --roster a two-member formation.
    #[command(
        after_help = "Examples:\n  mur new hello && cd hello && mur run --task \"Say hello\"\n  mur new --roster team"
    )]
    New(Later<scaffold::NewArgs>),
    /// Pack a capsule source folder into a deterministic <name>-<version>.mur.zip.
    #[command(after_help = "Example:\n  mur pack hello --out dist/")]
    Pack(Later<pack::PackArgs>),
    /// Install .mur.zip files or capsule source folders into the project (or global) store.
    #[command(
        after_help = "Examples:\n  mur install lead helper\n  mur install --global dist/hello-0.1.0.mur.zip"
    )]
    Install(Later<store::install::InstallArgs>),
    /// List installed artifacts, project store first.
    #[command(after_help = "Example:\n  mur ls --json")]
    Ls(Later<store::ls::LsArgs>),
    /// Reinstall each roster member whose source folder changed, and update murmur.lock.
    #[command(
        after_help = "Example (after editing lead/INSTRUCTIONS.md):\n  mur sync && mur run --roster --task \"Plan a picnic.\""
    )]
    Sync(Later<crate::sync::SyncArgs>),
    /// Pin name, version and sha256 of what the project uses in murmur.lock.
    #[command(after_help = "Example:\n  mur lock")]
    Lock(Later<lock::LockArgs>),
    /// Approve the changes a launch refuses (E-APR-001): show each change to the project's
    /// roster, lock, store and capsule files since mur last recorded them, and record them.
    #[command(
        after_help = "Examples (after editing roster.yaml by hand):\n  mur approve && mur run --roster --task \"Plan a picnic.\"\n  mur approve team/lead"
    )]
    Approve(Later<approve::ApproveArgs>),
    /// Run a capsule as a session serving its door; with --roster, launch a formation.
    #[command(
        after_help = "Examples:\n  mur run --task \"Say hello\"\n  mur run --capsule local/hello --capsule-version 0.1.0 --json\n  mur run --roster --task \"Plan a picnic.\"\n  mur run --roster --json"
    )]
    Run(Later<session::RunArgs>),
    /// Give a running session (ses_…) or a formation's entry member (frm_…) a task.
    #[command(
        after_help = "Example:\n  mur send frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071 \"Plan a picnic.\""
    )]
    Send(Later<session::send::SendArgs>),
    /// Send SIGTERM to a session (ses_…), or to a formation's launcher (frm_…).
    #[command(after_help = "Example:\n  mur stop frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071")]
    Stop(Later<session::ops::StopArgs>),
    /// List the live sessions of this project; with -a every session of every project.
    #[command(after_help = "Examples:\n  mur ps\n  mur ps -a --json")]
    Ps(Later<session::ps::PsArgs>),
    /// Print what a session or formation member wrote to stderr, its harness's too.
    #[command(after_help = "Examples:\n  mur logs helper\n  mur logs ses_0199d5a0c3b4 -f")]
    Logs(Later<session::logs::LogsArgs>),
    /// Read traces: `mur trace show <ses_id|frm_id>`.
    #[command(
        after_help = "Examples:\n  mur trace show frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071\n  mur trace show ses_0199d5a0c3b47c1e9a2b3c4d5e6f7081 --follow"
    )]
    Trace(Later<session::ops::TraceArgs>),
    /// Admit a roster and report the result: members, edges, warnings, or the refusal.
    #[command(after_help = "Examples:\n  mur doctor\n  mur doctor --roster team/ --json")]
    Doctor(Later<doctor::DoctorArgs>),
    /// Print Kubernetes manifests for the project: `mur kube job`.
    #[command(
        after_help = "Example:\n  mur kube job --image registry.example/team:1 --task \"Plan a picnic.\" > job.yaml"
    )]
    Kube(Later<crate::kube::KubeArgs>),
    /// Remove what no installed capsule uses from ~/.murmur/cache: `mur cache prune`.
    #[command(after_help = "Example:\n  mur cache prune")]
    Cache(Later<session::cache::CacheArgs>),
    /// Print a shell completion script (in bash, live ids complete too).
    #[command(
        after_help = "Example:\n  mur completions bash > ~/.local/share/bash-completion/completions/mur"
    )]
    Completions(Later<CompletionsArgs>),
    /// Print mur's man page (roff), or with --dir write one for mur and each command.
    #[command(
        after_help = "Examples:\n  mur man | man -l -\n  mur man --dir ~/.local/share/man/man1"
    )]
    Man(Later<ManArgs>),
    /// The live ids a completion script offers (`mur completions`).
    #[command(name = "__complete", hide = true)]
    Complete(Later<session::complete::CompleteArgs>),
    /// The watcher of a formation's cgroup, started by the launcher (docs/design/descendants.md).
    #[command(name = "formation-watch", hide = true)]
    FormationWatch(Later<crate::cgroup::WatchArgs>),
}

/// A command's arguments, which clap adds to the parser only when that command is the
/// one typed (`Command::defer`): a `mur run` builds the flags of no other command.
/// Completions and the man page build every command's.
#[derive(Debug)]
pub struct Later<T>(pub T);

impl<T: clap::Args> clap::Args for Later<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.defer(T::augment_args)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        cmd.defer(T::augment_args_for_update)
    }
}

impl<T: clap::FromArgMatches> clap::FromArgMatches for Later<T> {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(matches).map(Later)
    }

    fn from_arg_matches_mut(matches: &mut clap::ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(matches).map(Later)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(matches)
    }

    fn update_from_arg_matches_mut(
        &mut self,
        matches: &mut clap::ArgMatches,
    ) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(matches)
    }
}

// `mur man`
#[derive(Debug, Clone, clap::Args)]
pub struct ManArgs {
    /// Write mur.1 and one mur-<command>.1 for each command into this folder
    /// (made if missing), instead of printing mur's page.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<std::path::PathBuf>,
}

// `mur completions <shell>`
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
            Command::Approve(_) => "approve",
            Command::Sync(_) => "sync",
            Command::Run(_) => "run",
            Command::Send(_) => "send",
            Command::Stop(_) => "stop",
            Command::Ps(_) => "ps",
            Command::Logs(_) => "logs",
            Command::Trace(_) => "trace",
            Command::Doctor(_) => "doctor",
            Command::Kube(_) => "kube",
            Command::Cache(_) => "cache",
            Command::Completions(_) => "completions",
            Command::Complete(_) => session::complete::COMMAND,
            Command::Man(_) => "man",
            Command::FormationWatch(_) => crate::cgroup::WATCH_COMMAND,
        }
    }
}

/// Runs the parsed command; returns the process exit status.
pub fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Explain(Later(args)) => explain::run(&args),
        Command::Kube(Later(args)) => crate::kube::run(&args),
        Command::New(Later(args)) => scaffold::run(&args),
        Command::Pack(Later(args)) => pack::run(&args),
        Command::Install(Later(args)) => store::install::run(&args),
        Command::Ls(Later(args)) => store::ls::run(&args),
        Command::Lock(Later(args)) => lock::run(&args),
        Command::Approve(Later(args)) => approve::run(&args),
        Command::Sync(Later(args)) => crate::sync::run(&args),
        Command::Run(Later(args)) => session::run(&args),
        Command::Send(Later(args)) => session::send::send(&args),
        Command::Stop(Later(args)) => session::ops::stop(&args),
        Command::Ps(Later(args)) => session::ps::ps(&args),
        Command::Logs(Later(args)) => session::logs::logs(&args),
        Command::Trace(Later(args)) => session::ops::trace(&args),
        Command::Cache(Later(args)) => session::cache::run(&args),
        Command::Complete(Later(args)) => session::complete::complete(&args),
        Command::Doctor(Later(args)) => doctor::run(&args),
        Command::FormationWatch(Later(args)) => crate::cgroup::watch(&args),
        Command::Completions(Later(args)) => {
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "mur", &mut script);
            let mut text = String::from_utf8_lossy(&script).into_owned();
            if args.shell == clap_complete::Shell::Bash {
                text.push_str(session::complete::BASH_IDS);
            }
            crate::output::stdout_text(&text);
            Ok(0)
        }
        Command::Man(Later(args)) => man(&args),
    }
}

/// `mur man`: the top page on stdout, or with `--dir` a page for mur and one for each
/// command, so that every `mur-<command>(1)` the top page names exists.
fn man(args: &ManArgs) -> Result<i32> {
    // No `help` command: the pages would name a mur-help(1) that says nothing.
    let cmd = Cli::command().disable_help_subcommand(true);
    let Some(dir) = &args.dir else {
        let mut page = Vec::new();
        // Rendering into memory cannot fail: a Vec takes every write.
        let _ = clap_mangen::Man::new(cmd).render(&mut page);
        crate::output::stdout_text(&String::from_utf8_lossy(&page));
        return Ok(0);
    };
    let fail = |e: std::io::Error| {
        crate::diag::Diagnostic::new(
            crate::catalogue::E_CLI_002,
            format!("cannot write man pages into {}: {e}", dir.display()),
        )
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    clap_mangen::generate_to(cmd, dir).map_err(fail)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// `mur --help`, and every command's and subcommand's (`mur trace show`), ends with
    /// an example of itself.
    #[test]
    fn every_command_s_help_names_an_example() {
        fn check(cmd: &mut clap::Command, path: &str, checked: &mut Vec<String>) {
            let help = cmd.render_long_help().to_string();
            assert!(help.contains("\nExample"), "{path} --help names no example");
            assert!(
                help.contains(&format!("  {path}")),
                "{path} --help: its example runs another command"
            );
            checked.push(path.to_string());
            for sub in cmd.get_subcommands_mut() {
                if sub.get_name() == "help" || sub.is_hide_set() {
                    continue;
                }
                let path = format!("{path} {}", sub.get_name());
                check(sub, &path, checked);
            }
        }
        let mut cli = Cli::command();
        cli.build();
        let mut checked = Vec::new();
        check(&mut cli, "mur", &mut checked);
        for want in [
            "mur",
            "mur run",
            "mur send",
            "mur trace show",
            "mur sync",
            "mur man",
        ] {
            assert!(
                checked.iter().any(|c| c == want),
                "{want} was not checked: {checked:?}"
            );
        }
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

    /// A command's flags are added when it is typed (`Later`): they parse, `--help`
    /// shows them, and `-q`/`-v` still reach them.
    #[test]
    fn a_command_s_deferred_flags_parse_and_show() {
        let cli = Cli::try_parse_from([
            "mur",
            "run",
            "--capsule",
            "local/echo",
            "--capsule-version",
            "1.0.0",
            "-q",
        ])
        .unwrap();
        let Command::Run(Later(run)) = cli.command else {
            panic!("not run: {cli:?}");
        };
        assert_eq!(run.capsule.as_deref(), Some("local/echo"));
        assert_eq!(run.capsule_version.as_deref(), Some("1.0.0"));
        assert!(cli.quiet);
        let help = Cli::try_parse_from(["mur", "run", "--help"]).unwrap_err();
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
        assert!(help.to_string().contains("--capsule-version"), "{help}");
        let unknown = Cli::try_parse_from(["mur", "ps", "--capsule"]).unwrap_err();
        assert_eq!(unknown.kind(), clap::error::ErrorKind::UnknownArgument);
    }
}
