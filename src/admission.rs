//! Admission: a roster is admitted whole or refused with one code, checking in the
//! spec's order and stopping at the first failure (see docs/roster.md):
//!
//! 1–5. `roster::load` (shape, unique names, one entry, rule names, entry not called);
//!      these read no store.
//! 6.   Each member in roster order: installed at its version (project store, then
//!      global store) with a packed murmur.yaml that parses (E-ROS-007), then agreeing
//!      with murmur.lock when it pins the capsule (E-REG-005), before the next member.
//! 7.   Every member a rule calls serves peers (E-ROS-005).
//! 8.   With any edge, every member's door requires authentication (E-ROS-006).
//!
//! Then W-ROS-001 for each called member that more members may call than it holds tasks
//! at once. Admission only reads: it never creates or changes murmur.lock or a store.

use std::path::{Path, PathBuf};

use crate::catalogue::{E_ROS_005, E_ROS_006, E_ROS_007, W_ROS_001};

mod cycles;
use crate::diag::{Diagnostic, Result};
use crate::ids::MemberName;
use crate::lock::{self, Lock};
use crate::manifest::{self, Manifest, TaskAcceptance};
use crate::pack;
use crate::roster::{self, Fault, Member, Reachability, Refusal, Roster};
use crate::store::{self, Installed};

/// A roster admitted whole: each member bound to the artifact admission found.
#[derive(Debug, Clone)]
pub struct Admitted {
    pub roster: Roster,
    /// The folder that holds the roster, symlinks resolved: its stores and lock are
    /// the ones admission read.
    pub project_dir: PathBuf,
    /// Roster order.
    pub members: Vec<AdmittedMember>,
    /// (from, to): deduplicated, sorted by the roster order of `from`, then of `to`.
    pub edges: Vec<(MemberName, MemberName)>,
    /// W-ROS-001 ...; they do not stop admission.
    pub warnings: Vec<Diagnostic>,
}

#[derive(Debug, Clone)]
pub struct AdmittedMember {
    pub name: MemberName,
    pub entry: bool,
    /// The artifact found, with the sha256 of its bytes at admission.
    pub installed: Installed,
    /// Its packed murmur.yaml.
    pub manifest: Manifest,
}

impl Admitted {
    /// The admitted roster from what checks 6–8 found: `bound` in roster order, and
    /// `edges` as (from, to) roster indices.
    fn new(
        roster: Roster,
        project_dir: PathBuf,
        bound: Vec<(Installed, Manifest)>,
        edges: &[(usize, usize)],
        warnings: Vec<Diagnostic>,
    ) -> Admitted {
        let names = |i: usize| roster.members[i].name.clone();
        let edges = edges.iter().map(|&(f, t)| (names(f), names(t))).collect();
        let members = roster
            .members
            .iter()
            .zip(bound)
            .map(|(m, (installed, manifest))| AdmittedMember {
                name: m.name.clone(),
                entry: m.entry,
                installed,
                manifest,
            })
            .collect();
        Admitted {
            roster,
            project_dir,
            members,
            edges,
            warnings,
        }
    }

    /// The entry member (an admitted roster has exactly one).
    pub fn entry(&self) -> &AdmittedMember {
        self.members
            .iter()
            .find(|m| m.entry)
            .unwrap_or(&self.members[0])
    }

    pub fn member(&self, name: &str) -> Option<&AdmittedMember> {
        self.members.iter().find(|m| m.name == name)
    }

    /// The members `member` may call, in roster order.
    pub fn callees(&self, member: &MemberName) -> Vec<&MemberName> {
        self.edges
            .iter()
            .filter(|(from, _)| from == member)
            .map(|(_, to)| to)
            .collect()
    }

    /// The members that may call `member`, in roster order.
    pub fn callers(&self, member: &str) -> Vec<&str> {
        let mut callers: Vec<(usize, &str)> = self
            .edges
            .iter()
            .filter(|(_, to)| to == member)
            .map(|(from, _)| {
                (
                    self.roster.index_of(from.as_str()).unwrap_or(0),
                    from.as_str(),
                )
            })
            .collect();
        callers.sort();
        callers.into_iter().map(|(_, from)| from).collect()
    }
}

/// Admits the roster at `roster_path` (a roster file, or a folder holding roster.yaml).
pub fn admit(roster_path: &Path) -> Result<Admitted> {
    admit_report(roster_path).map_err(Diagnostic::from)
}

/// `admit`, with what a refusal is about (the member or rule at fault).
pub fn admit_report(roster_path: &Path) -> Result<Admitted, Refusal> {
    let file = roster::resolve(roster_path);
    let roster = roster::load(&file)?;
    let project_dir = project_dir(&file);
    let bound = bind(&roster, &project_dir)?;
    let accepts: Vec<bool> = bound
        .iter()
        .map(|(_, m)| m.exports.peer_tasks.accept)
        .collect();
    callees_serve_peers(&roster, &bound, &accepts)?;
    let edges = edges(&roster, &accepts);
    doors_authenticate(&roster, &bound, &edges)?;
    let mut warnings = crowded(&roster, &bound, &edges);
    warnings.extend(wait_cycles(&roster, &bound, &edges));
    for (installed, manifest) in &bound {
        warnings.extend(manifest.credential_warnings(&installed.path));
    }
    Ok(Admitted::new(roster, project_dir, bound, &edges, warnings))
}

/// The folder that holds the roster file, symlinks resolved.
fn project_dir(file: &Path) -> PathBuf {
    let dir = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

fn member_fault(index: usize, m: &Member) -> Fault {
    Fault::Member {
        index,
        name: Some(m.name.to_string()),
    }
}

/// Check 6: each member in turn is found and parses (E-ROS-007), then agrees with
/// murmur.lock (E-REG-005), before the next member.
fn bind(roster: &Roster, project: &Path) -> Result<Vec<(Installed, Manifest)>, Refusal> {
    // Read at the first member that needs it, so a member not installed before it is
    // reported first; read once.
    let mut lock: Option<Result<Option<Lock>>> = None;
    let lock_file = project.join(lock::FILE_NAME);
    let mut bound = Vec::with_capacity(roster.members.len());
    for (index, m) in roster.members.iter().enumerate() {
        let refuse = |message: String, hint: String| {
            Refusal::new(
                Diagnostic::new(E_ROS_007, format!("member `{}`: {message}", m.name))
                    .at(roster.location(m.capsule_at))
                    .hint(hint),
                member_fault(index, m),
            )
        };
        let installed = match store::find(project, m.capsule.as_str(), &m.version) {
            Ok(Some(found)) => found,
            Ok(None) => {
                let (message, hint) = not_installed(m, project);
                return Err(refuse(message, hint));
            }
            Err(d) => {
                return Err(refuse(
                    format!(
                        "{} {} could not be looked up: {}",
                        m.capsule,
                        m.version,
                        inline(&d)
                    ),
                    d.hint_text().to_string(),
                ));
            }
        };
        let manifest = pack::read_manifest(&installed.path).map_err(|d| {
            refuse(
                format!(
                    "the packed murmur.yaml of {} {} ({} store) does not parse: {}",
                    m.capsule,
                    m.version,
                    installed.store,
                    inline(&d)
                ),
                format!(
                    "Fix the capsule's murmur.yaml, then install it again: `mur sync` in the roster's \
                     folder, or `mur install --force <folder>`. \
                     ({})",
                    d.hint_text()
                ),
            )
        })?;
        match lock.get_or_insert_with(|| lock::load(project)) {
            Err(d) => return Err(Refusal::new(d.clone(), member_fault(index, m))),
            Ok(Some(l)) => {
                if let Some(pin) = l.pin(m.capsule.as_str()) {
                    lock::check(pin, &installed, &lock_file).map_err(|d| {
                        Refusal::new(
                            roster::prefixed(&format!("member `{}`", m.name), d),
                            member_fault(index, m),
                        )
                    })?;
                }
            }
            Ok(None) => {}
        }
        bound.push((installed, manifest));
    }
    Ok(bound)
}

/// A diagnostic as one line inside another's message.
fn inline(d: &Diagnostic) -> String {
    match &d.location {
        Some(loc) => format!("{}: {} (at {loc})", d.code, d.message),
        None => format!("{}: {}", d.code, d.message),
    }
}

/// E-ROS-007's message and hint, naming the versions that are installed, if any.
fn not_installed(m: &Member, project: &Path) -> (String, String) {
    let message = format!(
        "{} {} is installed in neither the project store nor the global store",
        m.capsule, m.version
    );
    let installed = store::list(project).unwrap_or_default();
    let others: Vec<String> = installed
        .iter()
        .filter(|i| m.capsule == i.name.as_str())
        .map(|i| format!("{} ({})", i.version, i.store))
        .collect();
    let mut hint = String::from(
        "Install it with `mur install <capsule folder or .mur.zip>` in the roster's folder \
         (or with --global), then run `mur doctor` again.",
    );
    let guess = crate::diag::closest(
        m.capsule.as_str(),
        installed.iter().map(|i| i.name.as_str()),
    );
    if let (true, Some(guess)) = (others.is_empty(), guess) {
        let versions: Vec<&str> = installed
            .iter()
            .filter(|i| i.name == guess)
            .map(|i| i.version.as_str())
            .collect();
        hint = format!(
            "Did you mean `{guess}`? It is installed at {}; or {}",
            versions.join(", "),
            lowercase_first(&hint)
        );
    } else if !others.is_empty() {
        hint = format!(
            "{} is installed at {}; name one of those versions, or {}",
            m.capsule,
            others.join(", "),
            lowercase_first(&hint)
        );
    }
    // The murmur.yaml beside the roster is a member only once installed.
    let beside = project.join(manifest::FILE_NAME);
    if let Ok(own) = manifest::load(&beside)
        && m.capsule.as_str() == format!("local/{}", own.name)
        && m.version == own.version
    {
        hint = format!(
            "The murmur.yaml beside the roster is {} {}, but a member runs only what is \
             installed: run `mur install .` in {}, then `mur doctor` again.",
            m.capsule,
            m.version,
            project.display()
        );
    }
    (message, hint)
}

fn lowercase_first(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Check 7: every member a rule lists in `to` serves peers (E-ROS-005); members in
/// roster order, each reported where a rule first calls it.
fn callees_serve_peers(
    roster: &Roster,
    bound: &[(Installed, Manifest)],
    accepts: &[bool],
) -> Result<(), Refusal> {
    for (index, m) in roster.members.iter().enumerate() {
        if accepts[index] {
            continue;
        }
        let called = roster.rules().iter().enumerate().find_map(|(r, rule)| {
            let i = rule.to.iter().position(|t| m.name == t.as_str())?;
            Some((r, rule, rule.to_at[i]))
        });
        if let Some((r, rule, at)) = called {
            let installed = &bound[index].0;
            let diagnostic = Diagnostic::new(
                E_ROS_005,
                format!(
                    "member `{}` ({} {}) does not serve peers, but rule {} lets `{}` call it",
                    m.name,
                    installed.name,
                    installed.version,
                    r + 1,
                    rule.from
                ),
            )
            .at(roster.location(at))
            .hint(format!(
                "Declare `exports: {{peer_tasks: {{accept: true}}}}` in {}'s murmur.yaml and \
                 run `mur sync`, or remove `{}` from the rule's `to`.",
                installed.name, m.name
            ));
            return Err(Refusal::new(diagnostic, member_fault(index, m)));
        }
    }
    Ok(())
}

/// The roster's edges as (from, to) member indices: deduplicated and sorted by roster
/// order. `accepts[i]` is whether member `i` serves peers (used by `all`).
pub fn edges(roster: &Roster, accepts: &[bool]) -> Vec<(usize, usize)> {
    let n = roster.members.len();
    let mut edges: Vec<(usize, usize)> = match &roster.reachability {
        Reachability::None => Vec::new(),
        Reachability::All => (0..n)
            .flat_map(|from| (0..n).map(move |to| (from, to)))
            .filter(|&(from, to)| {
                from != to && accepts[from] && accepts[to] && !roster.members[to].entry
            })
            .collect(),
        Reachability::Rules(rules) => rules
            .iter()
            .flat_map(|rule| {
                let from = roster.index_of(&rule.from);
                rule.to
                    .iter()
                    .filter_map(move |to| Some((from?, roster.index_of(to)?)))
            })
            .collect(),
    };
    edges.sort_unstable();
    edges.dedup();
    edges
}

/// Check 8: with any edge, every member declares network.authentication (E-ROS-006),
/// members on no edge included.
fn doors_authenticate(
    roster: &Roster,
    bound: &[(Installed, Manifest)],
    edges: &[(usize, usize)],
) -> Result<(), Refusal> {
    if edges.is_empty() {
        return Ok(());
    }
    for (index, m) in roster.members.iter().enumerate() {
        let (installed, manifest) = &bound[index];
        if manifest.network.authentication.is_some() {
            continue;
        }
        let on_edge = edges.iter().any(|&(f, t)| f == index || t == index);
        let diagnostic = Diagnostic::new(
            E_ROS_006,
            format!(
                "member `{}` ({} {}) declares no network.authentication, and this roster has \
                 {} edge{}: every member's door must require authentication{}",
                m.name,
                installed.name,
                installed.version,
                edges.len(),
                if edges.len() == 1 { "" } else { "s" },
                if on_edge {
                    ""
                } else {
                    ", members on no edge included"
                }
            ),
        )
        .at(roster.location(m.name_at))
        .hint(format!(
            "Declare `network: {{authentication: {{}}}}` (or list bearer_env) in {}'s \
             murmur.yaml and run `mur sync`.",
            installed.name
        ));
        return Err(Refusal::new(diagnostic, member_fault(index, m)));
    }
    Ok(())
}

/// W-ROS-002 for each wait cycle that can deadlock.
fn wait_cycles(
    roster: &Roster,
    bound: &[(Installed, Manifest)],
    edges: &[(usize, usize)],
) -> Vec<Diagnostic> {
    let manifests: Vec<&Manifest> = bound.iter().map(|(_, m)| m).collect();
    cycles::deadlocks(roster, &manifests, edges).1
}

/// W-ROS-001: each called member that more members may call than it holds tasks at
/// once, with the queue_depth that would hold every caller (each caller counted once).
fn crowded(
    roster: &Roster,
    bound: &[(Installed, Manifest)],
    edges: &[(usize, usize)],
) -> Vec<Diagnostic> {
    // One pass over the edges; they are sorted, so callers come in roster order.
    let mut callers_of: Vec<Vec<&str>> = vec![Vec::new(); roster.members.len()];
    for &(from, to) in edges {
        callers_of[to].push(roster.members[from].name.as_str());
    }
    let manifests: Vec<&Manifest> = bound.iter().map(|(_, m)| m).collect();
    let (deadlocks, _) = cycles::deadlocks(roster, &manifests, edges);
    let mut warnings = Vec::new();
    for (index, (m, callers)) in roster.members.iter().zip(callers_of).enumerate() {
        let (installed, manifest) = &bound[index];
        let lifecycle = &manifest.lifecycle;
        let holds = lifecycle.holds() as usize;
        if callers.len() <= holds {
            continue;
        }
        let depth = callers.len() - 1;
        let change = match lifecycle.task_acceptance {
            TaskAcceptance::Queue => format!("lifecycle.queue_depth: {depth}"),
            TaskAcceptance::Single => {
                format!("lifecycle.task_acceptance: queue and lifecycle.queue_depth: {depth}")
            }
        };
        warnings.push(
            Diagnostic::new(
                W_ROS_001,
                format!(
                    "member `{}` may be called by {} members ({}) but holds {} task{} at once; \
                     lifecycle.queue_depth: {depth} would hold every caller",
                    m.name,
                    callers.len(),
                    callers.join(", "),
                    holds,
                    if holds == 1 { "" } else { "s" },
                ),
            )
            .at(roster.location(m.name_at))
            .hint(match deadlocks.iter().find(|c| c.contains(&index)) {
                // A longer queue would make a call that closes the cycle wait unbounded.
                Some(cycle) => format!(
                    "`{}` is on the wait cycle {} (W-ROS-002): break that cycle first, as no \
                     queue_depth does; then set {change} in {}'s murmur.yaml and run \
                     `mur sync`.",
                    m.name,
                    cycles::named(roster, cycle),
                    installed.name
                ),
                None => format!(
                    "Set {change} in {}'s murmur.yaml and run `mur sync`; until then a call \
                     that finds it busy waits for it.",
                    installed.name
                ),
            }),
        );
    }
    warnings
}

#[cfg(test)]
mod tests;
