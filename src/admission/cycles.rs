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
/// member index, lowest first, at most [`MAX_REPORTED`]. Johnson's algorithm (1975):
/// from each start only the members of its strongly connected component among the
/// higher ones are walked, and a member stays blocked until a cycle through it is
/// found, so the work grows with the cycles found, not with the paths. A plain walk of
/// every path took hours on 64 members where `reachability: all` leaves the entry
/// member on no cycle (admission's own bench; a roster can make mur hold the CPU).
pub(super) fn cycles(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<usize>> {
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut back: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(f, t) in edges {
        next[f].push(t);
        back[t].push(f);
    }
    let mut walk = Walk {
        next: &next,
        allowed: vec![false; n],
        blocked: vec![false; n],
        blocks: vec![Vec::new(); n],
        path: Vec::new(),
        found: Vec::new(),
    };
    for start in 0..n {
        // The start's component among the members from `start` on: reached from it
        // and reaching it.
        let from = reach(&next, start);
        let to = reach(&back, start);
        for v in 0..n {
            walk.allowed[v] = v >= start && from[v] && to[v];
            walk.blocked[v] = false;
            walk.blocks[v].clear();
        }
        walk.circuit(start, start);
        if walk.found.len() >= MAX_REPORTED {
            break;
        }
    }
    walk.found.truncate(MAX_REPORTED);
    walk.found
}

/// The members reached from `start` over `next`, `start` among them, counting only
/// members from `start` on.
fn reach(next: &[Vec<usize>], start: usize) -> Vec<bool> {
    let mut seen = vec![false; next.len()];
    let mut stack = vec![start];
    seen[start] = true;
    while let Some(v) = stack.pop() {
        for &w in &next[v] {
            if w >= start && !seen[w] {
                seen[w] = true;
                stack.push(w);
            }
        }
    }
    seen
}

/// Johnson's walk from one start: the path so far, who is blocked, and whom unblocking
/// each member unblocks.
struct Walk<'a> {
    next: &'a [Vec<usize>],
    allowed: Vec<bool>,
    blocked: Vec<bool>,
    blocks: Vec<Vec<usize>>,
    path: Vec<usize>,
    found: Vec<Vec<usize>>,
}

impl Walk<'_> {
    /// Whether a cycle back to `start` was found through `v`.
    fn circuit(&mut self, v: usize, start: usize) -> bool {
        let next = self.next;
        let mut closed = false;
        self.path.push(v);
        self.blocked[v] = true;
        for &w in &next[v] {
            if self.found.len() >= MAX_REPORTED {
                break;
            }
            if !self.allowed[w] {
                continue;
            }
            if w == start {
                self.found.push(self.path.clone());
                closed = true;
            } else if !self.blocked[w] && self.circuit(w, start) {
                closed = true;
            }
        }
        if closed {
            self.unblock(v);
        } else {
            for &w in &next[v] {
                if self.allowed[w] && !self.blocks[w].contains(&v) {
                    self.blocks[w].push(v);
                }
            }
        }
        self.path.pop();
        closed
    }

    fn unblock(&mut self, v: usize) {
        let mut stack = vec![v];
        while let Some(u) = stack.pop() {
            if !self.blocked[u] {
                continue;
            }
            self.blocked[u] = false;
            stack.append(&mut self.blocks[u]);
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
    // Only the edges between members that wait: the cap then counts only cycles that
    // can deadlock, which cycles through a member that never waits would crowd out.
    let waiting: Vec<(usize, usize)> = edges
        .iter()
        .copied()
        .filter(|&(f, t)| waits(manifests[f]) && waits(manifests[t]))
        .collect();
    let cycles = cycles(roster.members.len(), &waiting);
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
