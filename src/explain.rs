//! `mur explain`: prints catalogue entries.

use clap::Args;

use crate::catalogue::{self, E_CLI_001};
use crate::diag::{Diagnostic, Result};
use crate::output;

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The code to explain, such as E-ROS-001.
    #[arg(required_unless_present_any = ["list", "markdown"])]
    pub code: Option<String>,
    /// List every code with its title.
    #[arg(long, conflicts_with = "markdown")]
    pub list: bool,
    /// Print the whole catalogue as Markdown (the text of docs/errors.md).
    #[arg(long)]
    pub markdown: bool,
}

pub(crate) fn run(args: &ExplainArgs) -> Result<i32> {
    if args.markdown {
        output::stdout_text(&catalogue::markdown());
        return Ok(0);
    }
    if args.list {
        for e in catalogue::ENTRIES {
            if !output::stdout_line(format_args!("{}  {}", e.code, e.title)) {
                break;
            }
        }
        return Ok(0);
    }
    let code = args.code.as_deref().unwrap_or_default();
    let entry = catalogue::lookup(code)
        .ok_or_else(|| Diagnostic::new(E_CLI_001, format!("no code `{code}` in the catalogue")))?;
    output::stdout_line(format_args!(
        "{} — {}\n\n{}\n\nHint: {}",
        entry.code, entry.title, entry.meaning, entry.hint
    ));
    Ok(0)
}
