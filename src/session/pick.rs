//! Which session or formation a typed id names, for `mur stop`, `mur send` and `mur
//! trace show`: the whole id, or a prefix of it that no other id the command knows
//! shares, as docker and git take one. The kind (`ses_`, `frm_`) may be left out.
//! Ids are UUIDv7s, whose first hex digits are their time, so ids minted close
//! together share a long prefix; the refusal lists them, so the next try is a paste.

use crate::catalogue::E_RUN_009;
use crate::diag::{Diagnostic, Result};

/// At most this many matching ids are listed in a refusal.
const LISTED: usize = 8;

/// The one id of `known` that `typed` names, `None` when it names none; an error
/// naming the matches when it names several. A whole id always wins over the
/// longer ids it is a prefix of.
pub(crate) fn pick<'a>(
    typed: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Result<Option<String>> {
    let mut matches: Vec<&str> = Vec::new();
    for id in known {
        if id == typed {
            return Ok(Some(id.to_string()));
        }
        let bare = id.split_once('_').map_or(id, |(_, hex)| hex);
        if !typed.is_empty()
            && (id.starts_with(typed) || bare.starts_with(typed))
            && !matches.contains(&id)
        {
            matches.push(id);
        }
    }
    match matches.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.to_string())),
        many => {
            let mut listed: Vec<&str> = many.iter().take(LISTED).copied().collect();
            listed.sort_unstable();
            let more = many.len().saturating_sub(LISTED);
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            Err(Diagnostic::new(
                E_RUN_009,
                format!(
                    "`{typed}` names {} ids: {}{tail}",
                    many.len(),
                    listed.join(", ")
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "frm_0199d5a0c1a07d2f8e1b2c3d4e5f6071";
    const B: &str = "frm_0199d5a0c1a07d2f8e1b2c3d4e5f9999";
    const S: &str = "ses_0199d5a0c3b47c1e9a2b3c4d5e6f7081";

    #[test]
    fn a_unique_prefix_names_its_id_with_or_without_the_kind() {
        let known = [A, B, S];
        assert_eq!(pick(A, known).unwrap().as_deref(), Some(A));
        assert_eq!(pick("ses_0199", known).unwrap().as_deref(), Some(S));
        assert_eq!(pick("0199d5a0c3", known).unwrap().as_deref(), Some(S));
        assert_eq!(
            pick("frm_0199d5a0c1a07d2f8e1b2c3d4e5f60", known)
                .unwrap()
                .as_deref(),
            Some(A)
        );
        assert_eq!(pick("frm_01aa", known).unwrap(), None);
        assert_eq!(pick("", known).unwrap(), None);
    }

    #[test]
    fn an_ambiguous_prefix_is_e_run_009_listing_the_matches() {
        let err = pick("frm_0199", [A, B, S]).unwrap_err();
        assert_eq!(err.code, E_RUN_009);
        assert!(err.message.contains(A) && err.message.contains(B), "{err}");
        assert!(!err.message.contains(S), "{err}");
        let err = pick("0199", [A, B, S]).unwrap_err();
        assert!(err.message.contains("3 ids"), "{err}");
    }

    #[test]
    fn a_whole_id_wins_and_duplicates_count_once() {
        assert_eq!(pick(A, [B, A]).unwrap().as_deref(), Some(A));
        assert_eq!(pick("frm_0199", [A, A]).unwrap().as_deref(), Some(A));
    }
}
