//! `roster.yaml`: the schema's Fields table (admission check 1) and the admission
//! checks that read no store (2–5). See docs/roster.md.
//!
//! `parse` reads the whole shape first, so a structural fault anywhere is reported
//! before any later check runs; `check` then runs checks 2–5 over the parsed data,
//! each in full before the next, members in roster order.

use std::path::{Path, PathBuf};

use crate::catalogue::{Code, E_ROS_001, E_ROS_002, E_ROS_003, E_ROS_004, E_ROS_008};
use crate::diag::{Diagnostic, Location};
use crate::ids::{ArtifactName, MemberName};
use crate::yaml::{self, Node, Reader, Value};

pub const FILE_NAME: &str = "roster.yaml";
/// The only `roster_version` this mur reads.
pub const ROSTER_VERSION: i64 = 1;
/// Version words that name a channel, not an exact version.
pub const FLOATING_VERSIONS: [&str; 3] = ["latest", "stable", "edge"];

/// A line and column in the roster file, counting from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

impl Pos {
    fn of(node: &Node) -> Pos {
        Pos {
            line: node.line,
            column: node.column,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Roster {
    /// The roster file, as it was named.
    pub file: PathBuf,
    /// In roster order.
    pub members: Vec<Member>,
    pub reachability: Reachability,
    /// Where the `members` key is (a missing entry member is reported there).
    pub members_at: Pos,
    /// Of the text parsed: what a launch holds against its approval (crate::approve).
    pub sha256: crate::ids::Sha256,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub name: MemberName,
    /// The full artifact name, `<scope>/<name>`.
    pub capsule: ArtifactName,
    /// Exactly as written: an unquoted `1.10` is "1.10".
    pub version: String,
    pub entry: bool,
    /// Where the member's entry starts.
    pub line: usize,
    pub column: usize,
    pub name_at: Pos,
    pub capsule_at: Pos,
    pub version_at: Pos,
    /// Where `entry:` has a value, if it does.
    pub entry_at: Option<Pos>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Reachability {
    /// Absent, or `[]`: no member may call another.
    None,
    /// Every ordered pair of distinct members that both serve peers, except pairs into
    /// the entry member (resolved at admission, which knows who serves peers).
    All,
    /// At least one rule.
    Rules(Vec<Rule>),
}

/// "`from` may call each member in `to`".
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub from: String,
    /// As written, duplicates included (an edge written twice is still one edge).
    pub to: Vec<String>,
    /// Where the rule's entry starts.
    pub line: usize,
    pub column: usize,
    pub from_at: Pos,
    /// The position of each name in `to`.
    pub to_at: Vec<Pos>,
}

/// What a refusal is about, for reports (`mur doctor --json`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The file as a whole, or a top-level key.
    Roster,
    /// The member at `index` (0-based, roster order); `name` once it has read.
    Member { index: usize, name: Option<String> },
    /// The reachability rule at `index` (0-based); `from` once it has read.
    Rule { index: usize, from: Option<String> },
}

/// A refused roster: the one diagnostic, and what it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub diagnostic: Diagnostic,
    pub fault: Fault,
}

impl Refusal {
    pub fn new(diagnostic: Diagnostic, fault: Fault) -> Self {
        Refusal { diagnostic, fault }
    }
    fn roster(diagnostic: Diagnostic) -> Self {
        Refusal::new(diagnostic, Fault::Roster)
    }
}

impl From<Refusal> for Diagnostic {
    fn from(r: Refusal) -> Diagnostic {
        r.diagnostic
    }
}

impl Roster {
    /// The member with `entry: true` (after `check`, there is exactly one).
    pub fn entry(&self) -> Option<&Member> {
        self.members.iter().find(|m| m.entry)
    }

    /// The member's index in roster order.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.members.iter().position(|m| m.name == name)
    }

    /// The rules, or none for `all` and no reachability.
    pub fn rules(&self) -> &[Rule] {
        match &self.reachability {
            Reachability::Rules(rules) => rules,
            _ => &[],
        }
    }

    /// A place in this roster's file.
    pub fn location(&self, pos: Pos) -> Location {
        Location::new(&self.file, pos.line, pos.column)
    }

    fn fault(&self, code: Code, pos: Pos, message: String, hint: String) -> Diagnostic {
        Diagnostic::new(code, message)
            .at(self.location(pos))
            .hint(hint)
    }
}

/// `path` itself, or `path/roster.yaml` when `path` is a directory.
pub fn resolve(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(FILE_NAME)
    } else {
        path.to_path_buf()
    }
}

/// Reads and parses a roster file (check 1), then runs checks 2–5.
pub fn load(path: &Path) -> Result<Roster, Refusal> {
    let roster = read(path)?;
    check(&roster)?;
    Ok(roster)
}

/// Reads and parses a roster file: check 1 only.
pub fn read(path: &Path) -> Result<Roster, Refusal> {
    let refuse = |message: String, hint: &str| {
        Refusal::roster(Diagnostic::new(E_ROS_001, message).in_file(path).hint(hint))
    };
    // Read one byte past the cap, so an oversized file is refused without reading it all.
    let read_capped = || -> std::io::Result<Vec<u8>> {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::fs::File::open(path)?
            .take(yaml::MAX_DOCUMENT_BYTES as u64 + 1)
            .read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    let bytes = match read_capped() {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(refuse(
                format!("there is no roster at {}", path.display()),
                "Run mur in the folder that holds roster.yaml, or name it with --roster; \
                 `mur new --roster <NAME>` writes one.",
            ));
        }
        Err(e) => {
            return Err(refuse(
                format!("cannot read {}: {e}", path.display()),
                "Check that the roster is a readable file.",
            ));
        }
    };
    let text = String::from_utf8(bytes).map_err(|e| {
        let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + good.iter().filter(|&&b| b == b'\n').count();
        let column = 1 + good.iter().rev().take_while(|&&b| b != b'\n').count();
        Refusal::roster(
            Diagnostic::new(E_ROS_001, "the roster is not UTF-8 text")
                .at(Location::new(path, line, column))
                .hint("Save roster.yaml as UTF-8."),
        )
    })?;
    parse(&text, path)
}

/// Parses roster text (check 1): the shape the Fields table gives, every row.
pub fn parse(text: &str, file: &Path) -> Result<Roster, Refusal> {
    let root = yaml::parse(text, file, E_ROS_001).map_err(Refusal::roster)?;
    let r = Reader::new(file, E_ROS_001);
    if root.is_null() {
        return Err(Refusal::roster(r.fault(&root, "the roster is empty").hint(
            "A roster needs `roster_version: 1` and a `members` list; see docs/roster.md.",
        )));
    }
    let top = r
        .map(&root, "", &["roster_version", "members", "reachability"])
        .map_err(Refusal::roster)?;

    let version = r
        .required(&top, "roster_version", "roster_version")
        .map_err(Refusal::roster)?;
    roster_version(&r, version).map_err(Refusal::roster)?;

    let members_node = r
        .required(&top, "members", "members")
        .map_err(Refusal::roster)?;
    let items = r.seq(members_node, "members").map_err(Refusal::roster)?;
    if items.is_empty() {
        return Err(Refusal::roster(
            r.fault(members_node, "`members` lists no member")
                .hint("List at least one member, with its name, capsule and version."),
        ));
    }
    let members = items
        .iter()
        .enumerate()
        .map(|(index, item)| member(&r, index, item))
        .collect::<Result<Vec<_>, _>>()?;

    let reachability = match top.get("reachability") {
        None => Reachability::None,
        Some(node) => reachability(&r, node)?,
    };
    Ok(Roster {
        file: file.to_path_buf(),
        members,
        reachability,
        members_at: Pos::of(top.key("members").unwrap_or(members_node)),
        sha256: crate::ids::Sha256::of(text.as_bytes()),
    })
}

fn roster_version(r: &Reader, node: &Node) -> Result<(), Diagnostic> {
    let hint = "Write `roster_version: 1`.";
    match &node.value {
        Value::Scalar { text, plain: true } => match text.parse::<i64>() {
            Ok(ROSTER_VERSION) => Ok(()),
            Ok(n) => Err(r
                .fault(
                    node,
                    format!("`roster_version` is {n}; this mur reads roster_version 1"),
                )
                .hint(hint)),
            Err(_) => Err(r
                .fault(
                    node,
                    format!("`roster_version` must be the integer 1, not `{text}`"),
                )
                .hint(hint)),
        },
        _ => Err(r
            .fault(
                node,
                format!(
                    "`roster_version` must be the integer 1, not {}",
                    node.kind()
                ),
            )
            .hint(hint)),
    }
}

/// A member name: `^[a-z][a-z0-9-]{0,31}$`.
pub fn is_member_name(name: &str) -> bool {
    crate::ids::MemberName::is_valid(name)
}

/// One part of an artifact name (`<scope>` or `<name>`), as murmur.yaml names
/// capsules: `^[a-z][a-z0-9-]{0,63}$`.
pub fn is_artifact_part(part: &str) -> bool {
    crate::ids::is_name(part, 64)
}

/// Refuses a capsule name that is not `<scope>/<name>`, with a hint that names its
/// scoped forms when it is bare.
pub fn capsule_name_fault(capsule: &str) -> Option<(String, String)> {
    match capsule.split_once('/') {
        None => Some((
            format!(
                "`capsule: {capsule}` is a bare name; a member names its capsule by its full name, `<scope>/<name>`"
            ),
            if is_artifact_part(capsule) {
                format!(
                    "Write `capsule: local/{capsule}` for a capsule installed from its .mur.zip, \
                     or `<scope>/{capsule}` with the scope it was installed under."
                )
            } else {
                "Write the capsule's full name, such as `local/coder` for a capsule installed \
                 from its .mur.zip."
                    .to_string()
            },
        )),
        Some((scope, name)) if is_artifact_part(scope) && is_artifact_part(name) => None,
        Some(_) => Some((
            format!("`capsule: {capsule}` is not an artifact name `<scope>/<name>`"),
            "Scope and name each start with a lowercase letter, then up to 63 lowercase \
             letters, digits or hyphens, as in `local/coder`."
                .to_string(),
        )),
    }
}

fn member(r: &Reader, index: usize, item: &Node) -> Result<Member, Refusal> {
    let mut name: Option<String> = None;
    let read = |name: &mut Option<String>| -> Result<Member, Diagnostic> {
        let m = r.map(item, "members[]", &["name", "capsule", "version", "entry"])?;

        let name_node = r.required(&m, "name", "members[].name")?;
        let text = r.string(name_node, "members[].name")?;
        let Ok(member_name) = text.parse::<MemberName>() else {
            return Err(r
                .fault(
                    name_node,
                    format!("member name `{text}` does not match ^[a-z][a-z0-9-]{{0,31}}$"),
                )
                .hint(
                    "A member name starts with a lowercase letter, then up to 31 lowercase \
                     letters, digits or hyphens, as in `coder-2`.",
                ));
        };
        *name = Some(text.to_string());

        let capsule_node = r.required(&m, "capsule", "members[].capsule")?;
        let capsule = r.string(capsule_node, "members[].capsule")?;
        let capsule = match (capsule_name_fault(capsule), capsule.parse::<ArtifactName>()) {
            (None, Ok(name)) => name,
            (Some((message, hint)), _) => return Err(r.fault(capsule_node, message).hint(hint)),
            (None, Err(e)) => return Err(r.fault(capsule_node, e.to_string())),
        };

        let version_node = r.required(&m, "version", "members[].version")?;
        let version = r.string(version_node, "members[].version")?;
        if version.trim().is_empty() {
            return Err(r
                .fault(version_node, "`version` is blank")
                .hint("Write the exact version of the capsule, such as `1.2.0`."));
        }
        if FLOATING_VERSIONS
            .iter()
            .any(|word| version.eq_ignore_ascii_case(word))
        {
            return Err(r
                .fault(
                    version_node,
                    format!("`version: {version}` names a channel, not an exact version"),
                )
                .hint(format!(
                    "Write the exact version of {capsule} you installed, such as `1.2.0`."
                )));
        }

        let entry = match m.get("entry") {
            Some(node) => Some((r.bool(node, "members[].entry")?, Pos::of(node))),
            None => None,
        };
        Ok(Member {
            name: member_name,
            capsule,
            version: version.to_string(),
            entry: entry.is_some_and(|(e, _)| e),
            line: item.line,
            column: item.column,
            name_at: Pos::of(name_node),
            capsule_at: Pos::of(capsule_node),
            version_at: Pos::of(version_node),
            entry_at: entry.map(|(_, at)| at),
        })
    };
    read(&mut name).map_err(|d| {
        let who = match &name {
            Some(n) => format!("member `{n}`"),
            None => format!("member {}", index + 1),
        };
        Refusal::new(prefixed(&who, d), Fault::Member { index, name })
    })
}

fn reachability(r: &Reader, node: &Node) -> Result<Reachability, Refusal> {
    let hint = "Write `reachability: all`, or a list of rules such as \
                `- {from: planner, to: [coder]}`, or leave it out.";
    match &node.value {
        Value::Scalar { text, .. } if text == "all" => Ok(Reachability::All),
        Value::Seq(items) if items.is_empty() => Ok(Reachability::None),
        Value::Seq(items) => Ok(Reachability::Rules(
            items
                .iter()
                .enumerate()
                .map(|(index, item)| rule(r, index, item))
                .collect::<Result<_, _>>()?,
        )),
        Value::Scalar { text, .. } => Err(Refusal::roster(
            r.fault(
                node,
                format!("`reachability` must be `all` or a list of rules, not `{text}`"),
            )
            .hint(hint),
        )),
        _ => Err(Refusal::roster(
            r.fault(
                node,
                format!(
                    "`reachability` must be `all` or a list of rules, not {}",
                    node.kind()
                ),
            )
            .hint(hint),
        )),
    }
}

fn rule(r: &Reader, index: usize, item: &Node) -> Result<Rule, Refusal> {
    let mut from: Option<String> = None;
    let read = |from: &mut Option<String>| -> Result<Rule, Diagnostic> {
        let m = r.map(item, "reachability[]", &["from", "to"])?;
        let from_node = r.required(&m, "from", "reachability[].from")?;
        let caller = r.string(from_node, "reachability[].from")?;
        *from = Some(caller.to_string());
        let to_node = r.required(&m, "to", "reachability[].to")?;
        let to_items = r.seq(to_node, "reachability[].to")?;
        if to_items.is_empty() {
            return Err(r
                .fault(to_node, "`to` lists no member")
                .hint("List at least one member `from` may call, or remove the rule."));
        }
        let mut to = Vec::with_capacity(to_items.len());
        let mut to_at = Vec::with_capacity(to_items.len());
        for item in to_items {
            let callee = r.string(item, "reachability[].to[]")?;
            if callee == caller {
                return Err(r
                    .fault(item, format!("`{caller}` lists itself in `to`"))
                    .hint(format!(
                        "A member never calls itself: remove `{caller}` from this rule's `to`."
                    )));
            }
            to.push(callee.to_string());
            to_at.push(Pos::of(item));
        }
        Ok(Rule {
            from: caller.to_string(),
            to,
            line: item.line,
            column: item.column,
            from_at: Pos::of(from_node),
            to_at,
        })
    };
    read(&mut from).map_err(|d| {
        let who = match &from {
            Some(f) => format!("rule {} (from `{f}`)", index + 1),
            None => format!("rule {}", index + 1),
        };
        Refusal::new(prefixed(&who, d), Fault::Rule { index, from })
    })
}

/// The same diagnostic, its message prefixed with what it is about.
pub(crate) fn prefixed(who: &str, d: Diagnostic) -> Diagnostic {
    let mut out = Diagnostic::new(d.code, format!("{who}: {}", d.message));
    if let Some(loc) = &d.location {
        out = out.at(loc.clone());
    } else if let Some(file) = &d.file {
        out = out.in_file(file);
    }
    out.hint(d.hint_text())
}

/// Admission checks 2–5, in order, each over the whole roster before the next.
pub fn check(roster: &Roster) -> Result<(), Refusal> {
    unique_names(roster)?;
    one_entry(roster)?;
    rules_name_members(roster)?;
    entry_not_called(roster)
}

/// Check 2: member names are unique (E-ROS-003), reported at the later use.
fn unique_names(roster: &Roster) -> Result<(), Refusal> {
    for (index, m) in roster.members.iter().enumerate() {
        if let Some(first) = roster.members[..index].iter().find(|o| o.name == m.name) {
            let diagnostic = roster.fault(
                E_ROS_003,
                m.name_at,
                format!(
                    "member name `{}` is used twice: by member {} at line {} and member {} here",
                    m.name,
                    roster.index_of(m.name.as_str()).map_or(0, |i| i + 1),
                    first.name_at.line,
                    index + 1,
                ),
                format!(
                    "Give each member its own name; two members may run the same capsule \
                     ({}) under different names.",
                    m.capsule
                ),
            );
            return Err(Refusal::new(
                diagnostic,
                Fault::Member {
                    index,
                    name: Some(m.name.to_string()),
                },
            ));
        }
    }
    Ok(())
}

/// Check 3: exactly one member has `entry: true` (E-ROS-002).
fn one_entry(roster: &Roster) -> Result<(), Refusal> {
    let mut entries = roster.members.iter().enumerate().filter(|(_, m)| m.entry);
    let Some((_, first)) = entries.next() else {
        let diagnostic = roster.fault(
            E_ROS_002,
            roster.members_at,
            "no member has `entry: true`".to_string(),
            format!(
                "Mark the member that receives the formation's tasks with `entry: true` \
                 (for example under `name: {}`).",
                roster.members[0].name
            ),
        );
        return Err(Refusal::roster(diagnostic));
    };
    if let Some((index, second)) = entries.next() {
        let diagnostic = roster.fault(
            E_ROS_002,
            second.entry_at.unwrap_or(second.name_at),
            format!(
                "members `{}` and `{}` both have `entry: true`; a roster has exactly one entry member",
                first.name, second.name
            ),
            format!(
                "Keep `entry: true` on one member and remove it from `{}`.",
                second.name
            ),
        );
        return Err(Refusal::new(
            diagnostic,
            Fault::Member {
                index,
                name: Some(second.name.to_string()),
            },
        ));
    }
    Ok(())
}

/// Check 4: every rule's `from` and `to` name a member (E-ROS-004).
fn rules_name_members(roster: &Roster) -> Result<(), Refusal> {
    let names: Vec<&str> = roster.members.iter().map(|m| m.name.as_str()).collect();
    for (index, rule) in roster.rules().iter().enumerate() {
        let named = std::iter::once((&rule.from, rule.from_at, "from")).chain(
            rule.to
                .iter()
                .zip(rule.to_at.iter().copied())
                .map(|(t, at)| (t, at, "to")),
        );
        for (name, at, key) in named {
            if names.contains(&name.as_str()) {
                continue;
            }
            // A capsule name where a member name belongs is the likely slip.
            let runs = roster.members.iter().find(|m| {
                m.capsule == *name || m.capsule.as_str().rsplit('/').next() == Some(name)
            });
            let hint = match (runs, crate::diag::closest(name, names.iter().copied())) {
                (Some(m), _) => format!(
                    "Rules name members, not capsules: did you mean `{}`, the member that runs {}?",
                    m.name, m.capsule
                ),
                (None, Some(guess)) => format!(
                    "Did you mean `{guess}`? Members of this roster: {}.",
                    names.join(", ")
                ),
                (None, None) => format!(
                    "Name a member of this roster by its `name`: {}.",
                    names.join(", ")
                ),
            };
            let diagnostic = roster.fault(
                E_ROS_004,
                at,
                format!(
                    "rule {} (from `{}`): `{key}` names `{name}`, which is no member of this roster",
                    index + 1,
                    rule.from
                ),
                hint,
            );
            return Err(Refusal::new(
                diagnostic,
                Fault::Rule {
                    index,
                    from: Some(rule.from.clone()),
                },
            ));
        }
    }
    Ok(())
}

/// Check 5: no rule lists the entry member in `to` (E-ROS-008).
fn entry_not_called(roster: &Roster) -> Result<(), Refusal> {
    let Some(entry) = roster.entry() else {
        return Ok(());
    };
    for (index, rule) in roster.rules().iter().enumerate() {
        if let Some(i) = rule.to.iter().position(|t| *t == entry.name) {
            let diagnostic = roster.fault(
                E_ROS_008,
                rule.to_at[i],
                format!(
                    "rule {} lets `{}` call `{}`, the entry member; no member calls the entry member",
                    index + 1,
                    rule.from,
                    entry.name
                ),
                format!(
                    "Remove `{}` from this rule's `to`. To have `{}` report to the entry member, \
                     let the entry member call it: `- from: {}` with `to: [{}]`.",
                    entry.name, rule.from, entry.name, rule.from
                ),
            );
            return Err(Refusal::new(
                diagnostic,
                Fault::Rule {
                    index,
                    from: Some(rule.from.clone()),
                },
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
