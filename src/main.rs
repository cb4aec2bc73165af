use std::process::ExitCode;

use clap::Parser;

/// Exit status: what the command returned; 1 for a diagnostic. A reader of stdout or
/// stderr that went away changes neither (`mur::output`).
fn main() -> ExitCode {
    let cli = mur::cli::Cli::parse();
    mur::output::install_log_sink(cli.command.name());
    match mur::cli::dispatch(cli) {
        Ok(status) => ExitCode::from(u8::try_from(status).unwrap_or(1)),
        Err(diagnostic) => {
            mur::output::stderr_line(&diagnostic);
            ExitCode::from(1)
        }
    }
}
