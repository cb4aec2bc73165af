//! `mur ls`: the installed artifacts, project store first.

use clap::Args;

use crate::catalogue::E_STO_001;
use crate::diag::{Diagnostic, Result};
use crate::output;

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Print one JSON array of {store, name, version, sha256, path}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &LsArgs) -> Result<i32> {
    let project = std::env::current_dir()
        .map(|cwd| crate::paths::project_root(&cwd))
        .map_err(|e| Diagnostic::new(E_STO_001, format!("cannot read the current folder: {e}")))?;
    let all = super::list(&project)?;
    if args.json {
        let items: Vec<_> = all.iter().map(super::Installed::to_json).collect();
        output::stdout_line(serde_json::Value::Array(items));
        return Ok(0);
    }
    if all.is_empty() {
        output::stdout_line("no artifacts installed");
        return Ok(0);
    }
    let width = |f: fn(&super::Installed) -> usize, title: &str| {
        all.iter().map(f).max().unwrap_or(0).max(title.len())
    };
    let (ws, wn, wv) = (
        width(|i| i.store.to_string().len(), "STORE"),
        width(|i| i.name.len(), "NAME"),
        width(|i| i.version.len(), "VERSION"),
    );
    output::stdout_line(format_args!(
        "{:ws$}  {:wn$}  {:wv$}  SHA256",
        "STORE", "NAME", "VERSION"
    ));
    for i in &all {
        let line = format!(
            "{:ws$}  {:wn$}  {:wv$}  {}",
            i.store.to_string(),
            i.name,
            i.version,
            i.sha256
        );
        if !output::stdout_line(line) {
            break;
        }
    }
    Ok(0)
}
