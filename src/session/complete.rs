//! Completing live ids: `mur __complete ids` (hidden) prints the id of every live
//! session and formation, one a line, and the bash script `mur completions bash`
//! prints calls it where a command takes an id (`stop`, `send`, `logs`, `trace show`,
//! `trace export`). clap_complete writes the rest of the script, which knows only the
//! commands and flags.

use clap::{Args, ValueEnum};

use crate::diag::Result;
use crate::output;
use crate::retention::marker::live_formations;
use crate::running::RunningDir;

// `mur __complete ids`
#[derive(Debug, Clone, Args)]
pub struct CompleteArgs {
    /// What to list.
    #[arg(value_enum)]
    pub what: Completable,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Completable {
    /// The ids of live sessions (`ses_…`) and formations (`frm_…`).
    Ids,
}

/// The hidden command's name, as the completion script calls it.
pub(crate) const COMMAND: &str = "__complete";

/// `mur __complete ids`: formations first, then sessions, oldest first.
pub(crate) fn complete(args: &CompleteArgs) -> Result<i32> {
    match args.what {
        Completable::Ids => {
            for id in live_ids()? {
                if !output::stdout_line(id) {
                    break;
                }
            }
        }
    }
    Ok(0)
}

/// Every live formation's id, then every live session's.
pub(crate) fn live_ids() -> Result<Vec<String>> {
    let live = RunningDir::default().list()?;
    let mut ids: Vec<String> = live_formations(&live).into_iter().map(|(f, _)| f).collect();
    ids.sort();
    ids.extend(live.into_iter().map(|r| r.session_id));
    Ok(ids)
}

/// What `mur completions bash` adds to clap_complete's script: at the word where a
/// command takes an id (no flag typed there), the live ids replace the flags clap
/// offers; anywhere else clap's `_mur` answers alone.
pub(crate) const BASH_IDS: &str = r#"
# Live session and formation ids where a command takes one (`mur __complete ids`).
_mur_with_ids() {
    _mur "$@"
    local i words=() cur="${COMP_WORDS[COMP_CWORD]}"
    [[ "$cur" == -* ]] && return 0
    for ((i = 1; i < COMP_CWORD; i++)); do
        [[ "${COMP_WORDS[i]}" == -* ]] || words+=("${COMP_WORDS[i]}")
    done
    case "${words[*]}" in
        stop | send | logs | "trace show" | "trace export") ;;
        *) return 0 ;;
    esac
    local ids
    ids="$(mur __complete ids 2>/dev/null)" || return 0
    [[ -n "$ids" ]] && COMPREPLY=($(compgen -W "$ids" -- "$cur"))
    return 0
}
if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _mur_with_ids -o nosort -o bashdefault -o default mur
else
    complete -F _mur_with_ids -o bashdefault -o default mur
fi
"#;
