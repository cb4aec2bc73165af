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

/// Fewest hex digits of an id a table shows: a UUIDv7's first 12 are its millisecond.
const SHORTEST: usize = 12;

/// How many hex digits of each id (after its `ses_`/`frm_`) tell every id of `ids`
/// apart, so that each shown id is a prefix [`pick`] takes: at least [`SHORTEST`].
pub(crate) fn short_len<'a>(ids: impl IntoIterator<Item = &'a str>) -> usize {
    let mut ids: Vec<&str> = ids.into_iter().collect();
    ids.sort_unstable();
    ids.dedup();
    let kind = |id: &str| id.find('_').map_or(0, |at| at + 1);
    let needed = ids
        .windows(2)
        .map(|pair| {
            let common = pair[0]
                .bytes()
                .zip(pair[1].bytes())
                .take_while(|(a, b)| a == b)
                .count();
            (common + 1).saturating_sub(kind(pair[1]))
        })
        .max()
        .unwrap_or(0);
    needed.max(SHORTEST)
}

/// `id` cut to its kind and `hex` digits (`ses_0199d5a0c1a0`), as tables show it.
pub(crate) fn short(id: &str, hex: usize) -> &str {
    let kind = id.find('_').map_or(0, |at| at + 1);
    id.get(..kind.saturating_add(hex)).unwrap_or(id)
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
    fn a_short_id_is_a_prefix_that_names_its_id_alone() {
        let n = short_len([A, B, S]);
        assert_eq!(n, 29, "A and B share 28 hex digits");
        for id in [A, B, S] {
            assert_eq!(pick(short(id, n), [A, B, S]).unwrap().as_deref(), Some(id));
        }
        assert_eq!(short_len([S]), SHORTEST);
        assert_eq!(short(S, SHORTEST), "ses_0199d5a0c3b4");
        assert_eq!(short("odd", 4), "odd");
        assert_eq!(short(S, usize::MAX), S, "--no-trunc");
    }

    #[test]
    fn a_whole_id_wins_and_duplicates_count_once() {
        assert_eq!(pick(A, [B, A]).unwrap().as_deref(), Some(A));
        assert_eq!(pick("frm_0199", [A, A]).unwrap().as_deref(), Some(A));
    }
}
