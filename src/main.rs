use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = mur::cli::Cli::parse();
    match mur::cli::dispatch(cli) {
        Ok(status) => ExitCode::from(u8::try_from(status).unwrap_or(1)),
        Err(diagnostic) => {
            eprintln!("{diagnostic}");
            ExitCode::from(1)
        }
    }
}
