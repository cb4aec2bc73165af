// The binary is a thin CLI over the library: the dependencies are the library's.
#![allow(unused_crate_dependencies)]

use std::process::ExitCode;

use clap::Parser;

/// Exit status: what the command returned; 1 for a diagnostic. A reader of stdout or
/// stderr that went away changes neither (`mur::output`).
fn main() -> ExitCode {
    // First: as PID 1 (a container's entrypoint) an unhandled SIGTERM is dropped.
    mur::signals::init_duties();
    // A formation's --deadline counts from here.
    mur::timing::process_start();
    let cli = mur::cli::Cli::parse();
    mur::output::set_quiet(cli.quiet);
    mur::output::install_log_sink(cli.command.name(), cli.verbose);
    match mur::cli::dispatch(cli) {
        Ok(status) => ExitCode::from(u8::try_from(status).unwrap_or(1)),
        Err(diagnostic) => {
            mur::output::stderr_line(&diagnostic);
            ExitCode::from(mur::exit::FAILED as u8)
        }
    }
}
