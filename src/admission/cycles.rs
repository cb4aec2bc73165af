//! W-ROS-002: the wait cycles of a roster's reachability (docs/roster.md, Wait
//! cycles). A member runs one task at a time, and a task that called a member waits
//! for the answer while it holds that slot; so a call that comes back round a cycle
//! to a member whose task is waiting finds it busy with the very task that waits on
//! it. No `task_acceptance` or `queue_depth` breaks that: a queue only moves where
//! the call waits. A member whose tasks never wait (too few turns) breaks it.

use crate::catalogue::W_ROS_002;
use crate::diag::Diagnostic;
use crate::manifest::Manifest;
use crate::roster::Roster;

/// Cycles reported at most; a roster dense enough to have more has the same fix.
const MAX_REPORTED: usize = 32;

fn waits(manifest: &Manifest) -> bool {
    crate::agent::waits_for_answers(manifest.inference.max_turns)
}

/// Every elementary cycle of the edges over `n` members, each starting at its lowest
/// member index, lowest first. Rosters are small; the walk is capped all the same.
pub(super) fn cycles(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(f, t) in edges {
        next[f].push(t);
    }
    let mut found = Vec::new();
    for start in 0..n {
        let mut path = vec![start];
        walk(&next, start, &mut path, &mut found);
        if found.len() >= MAX_REPORTED {
            found.truncate(MAX_REPORTED);
            break;
        }
    }
    found
}

fn walk(next: &[Vec<usize>], start: usize, path: &mut Vec<usize>, found: &mut Vec<Vec<usize>>) {
    let Some(&at) = path.last() else { return };
    for &to in &next[at] {
        if found.len() >= MAX_REPORTED {
            return;
        }
        if to == start {
            found.push(path.clone());
        } else if to > start && !path.contains(&to) {
            path.push(to);
            walk(next, start, path, found);
            path.pop();
        }
    }
}

/// `a → b → a`: the cycle's members, back to the first.
pub(super) fn named(roster: &Roster, cycle: &[usize]) -> String {
    cycle
        .iter()
        .chain(cycle.first())
        .map(|&i| roster.members[i].name.as_str())
        .collect::<Vec<_>>()
        .join(" → ")
}

/// The cycles that can deadlock (every member on them waits), and one W-ROS-002 each.
pub(super) fn deadlocks(
    roster: &Roster,
    manifests: &[&Manifest],
    edges: &[(usize, usize)],
) -> (Vec<Vec<usize>>, Vec<Diagnostic>) {
    let cycles: Vec<Vec<usize>> = cycles(roster.members.len(), edges)
        .into_iter()
        .filter(|c| c.iter().all(|&i| waits(manifests[i])))
        .collect();
    let warnings = cycles
        .iter()
        .map(|cycle| {
            let last = cycle[cycle.len() - 1];
            let (closer, first) = (&roster.members[last].name, &roster.members[cycle[0]].name);
            Diagnostic::new(
                W_ROS_002,
                format!(
                    "wait cycle {}: a call round it reaches a member whose task is waiting \
                     on that call, so it can never be taken; mur fails such a call at once",
                    named(roster, cycle)
                ),
            )
            .at(roster.location(roster.members[last].name_at))
            .hint(format!(
                "Break the cycle in reachability: drop `{first}` from the `to` of `{closer}` \
                 (or any other edge of the cycle). A longer queue does not help: each \
                 member runs one task at a time. Or set inference.max_turns: 2 on one of \
                 its members, so its tasks never wait for an answer."
            ))
        })
        .collect();
    (cycles, warnings)
}
