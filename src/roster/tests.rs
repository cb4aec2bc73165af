//! One case per row of the Fields table and of admission checks 1–5, plus ordering.

use std::path::Path;

use rstest::rstest;

use super::*;
use crate::catalogue::{E_ROS_001, E_ROS_002, E_ROS_003, E_ROS_004, E_ROS_008};

const FILE: &str = "roster.yaml";

/// Checks 1–5 over `text`, as admission runs them.
fn admit_shape(text: &str) -> Result<Roster, Refusal> {
    let roster = parse(text, Path::new(FILE))?;
    check(&roster)?;
    Ok(roster)
}

/// Two members, `a` the entry member; `extra` is appended at the top level.
fn two(extra: &str) -> String {
    format!(
        "roster_version: 1\nmembers:\n  - name: a\n    capsule: local/a\n    version: 1.0.0\n    \
         entry: true\n  - name: b\n    capsule: local/b\n    version: 2.0.0\n{extra}"
    )
}

fn refused(text: &str, code: Code, line: usize, column: usize, needle: &str) -> Refusal {
    let r = admit_shape(text).expect_err("the roster should be refused");
    let d = &r.diagnostic;
    assert_eq!(d.code, code, "{d}");
    let loc = d
        .location
        .as_ref()
        .expect("a refusal names line and column");
    assert_eq!(loc.file, Path::new(FILE), "{d}");
    assert_eq!((loc.line, loc.column), (line, column), "{d}");
    assert!(d.message.contains(needle), "{needle:?} not in: {d}");
    assert!(!d.hint_text().is_empty(), "no hint: {d}");
    r
}

// ---- Fields table: accepted forms -------------------------------------------

#[rstest]
#[case::roster_version_is_1(two(""), |r: &Roster| assert_eq!(r.members.len(), 2))]
#[case::members_order_kept(
    "roster_version: 1\nmembers:\n  - {name: z, capsule: s/z, version: '1'}\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: m, capsule: s/m, version: '1'}\n".to_string(),
    |r: &Roster| assert_eq!(r.members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["z", "a", "m"])
)]
#[case::name_32_chars(
    format!("roster_version: 1\nmembers:\n  - {{name: a{}, capsule: s/a, version: '1', entry: true}}\n", "-9".repeat(15) + "x"),
    |r: &Roster| assert_eq!(r.members[0].name.as_str().len(), 32)
)]
#[case::capsule_shared_by_two_members(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: local/coder, version: '1', entry: true}\n  - {name: b, capsule: local/coder, version: '1'}\n".to_string(),
    |r: &Roster| assert_eq!(r.members[0].capsule, r.members[1].capsule)
)]
#[case::version_unquoted_1_10_is_text(
    "roster_version: 1\nmembers:\n  - name: a\n    capsule: local/a\n    version: 1.10\n    entry: true\n".to_string(),
    |r: &Roster| assert_eq!(r.members[0].version, "1.10")
)]
#[case::entry_defaults_to_false(two(""), |r: &Roster| assert!(!r.members[1].entry && r.members[0].entry))]
#[case::entry_with_no_value_is_absent(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - name: b\n    capsule: s/b\n    version: '1'\n    entry:\n".to_string(),
    |r: &Roster| { assert!(!r.members[1].entry); assert_eq!(r.members[1].entry_at, None) }
)]
#[case::entry_false(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1', entry: false}\n".to_string(),
    |r: &Roster| assert!(!r.members[1].entry)
)]
#[case::reachability_absent(two(""), |r: &Roster| assert_eq!(r.reachability, Reachability::None))]
#[case::reachability_with_no_value(two("reachability:\n"), |r: &Roster| assert_eq!(r.reachability, Reachability::None))]
#[case::reachability_empty_list(two("reachability: []\n"), |r: &Roster| assert_eq!(r.reachability, Reachability::None))]
#[case::reachability_all(two("reachability: all\n"), |r: &Roster| assert_eq!(r.reachability, Reachability::All))]
#[case::reachability_rules(
    two("reachability:\n  - from: a\n    to: [b]\n"),
    |r: &Roster| { assert_eq!(r.rules().len(), 1); assert_eq!(r.rules()[0].to, ["b"]); assert_eq!(r.rules()[0].to_at[0], Pos { line: 12, column: 10 }) }
)]
#[case::rule_from_a_non_entry_member(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1'}\n  - {name: c, capsule: s/c, version: '1'}\nreachability:\n  - {from: b, to: [c, c]}\n".to_string(),
    |r: &Roster| assert_eq!(r.rules()[0].to, ["c", "c"])
)]
#[case::key_with_no_value_is_absent_at_top(
    "roster_version: 1\nreachability:\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n".to_string(),
    |r: &Roster| assert_eq!(r.reachability, Reachability::None)
)]
fn accepted(#[case] text: String, #[case] expect: fn(&Roster)) {
    let roster = admit_shape(&text).unwrap_or_else(|r| panic!("refused: {}", r.diagnostic));
    expect(&roster);
}

// ---- Fields table: refusals (check 1, E-ROS-001) ----------------------------

#[rstest]
#[case::roster_version_missing(
    "members:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n",
    1,
    1,
    "`roster_version` is required"
)]
#[case::roster_version_with_no_value(
    "roster_version:\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n",
    1,
    1,
    "`roster_version` is required"
)]
#[case::roster_version_2(
    "roster_version: 2\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n",
    1,
    17,
    "reads roster_version 1"
)]
#[case::roster_version_quoted(
    "roster_version: '1'\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n",
    1,
    17,
    "must be the integer 1"
)]
#[case::roster_version_float(
    "roster_version: 1.0\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n",
    1,
    17,
    "must be the integer 1"
)]
#[case::members_missing("roster_version: 1\n", 1, 1, "`members` is required")]
#[case::members_with_no_value("roster_version: 1\nmembers:\n", 2, 1, "`members` is required")]
#[case::members_empty("roster_version: 1\nmembers: []\n", 2, 10, "lists no member")]
#[case::members_not_a_list("roster_version: 1\nmembers: a\n", 2, 10, "must be a list")]
#[case::member_not_a_mapping("roster_version: 1\nmembers:\n  - a\n", 3, 5, "must be a mapping")]
#[case::name_missing(
    "roster_version: 1\nmembers:\n  - {capsule: s/a, version: '1', entry: true}\n",
    3,
    5,
    "member 1: `members[].name` is required"
)]
#[case::name_uppercase(
    "roster_version: 1\nmembers:\n  - {name: Coder, capsule: s/a, version: '1', entry: true}\n",
    3,
    12,
    "does not match ^[a-z][a-z0-9-]{0,31}$"
)]
#[case::name_digit_first(
    "roster_version: 1\nmembers:\n  - {name: 1a, capsule: s/a, version: '1', entry: true}\n",
    3,
    12,
    "`1a` does not match"
)]
#[case::name_underscore(
    "roster_version: 1\nmembers:\n  - {name: a_b, capsule: s/a, version: '1', entry: true}\n",
    3,
    12,
    "`a_b` does not match"
)]
#[case::name_33_chars(
    "roster_version: 1\nmembers:\n  - {name: abcdefghijklmnopqrstuvwxyz0123456, capsule: s/a, version: '1', entry: true}\n",
    3,
    12,
    "does not match"
)]
#[case::name_quoted_empty(
    "roster_version: 1\nmembers:\n  - {name: '', capsule: s/a, version: '1', entry: true}\n",
    3,
    12,
    "does not match"
)]
#[case::name_a_list(
    "roster_version: 1\nmembers:\n  - {name: [a], capsule: s/a, version: '1', entry: true}\n",
    3,
    12,
    "must be a string"
)]
#[case::capsule_missing(
    "roster_version: 1\nmembers:\n  - {name: a, version: '1', entry: true}\n",
    3,
    5,
    "member `a`: `members[].capsule` is required"
)]
#[case::capsule_bare_name(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: coder, version: '1', entry: true}\n",
    3,
    24,
    "bare name"
)]
#[case::capsule_three_parts(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: a/b/c, version: '1', entry: true}\n",
    3,
    24,
    "is not an artifact name"
)]
#[case::capsule_empty_scope(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: /coder, version: '1', entry: true}\n",
    3,
    24,
    "is not an artifact name"
)]
#[case::version_missing(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, entry: true}\n",
    3,
    5,
    "`members[].version` is required"
)]
#[case::version_blank(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '  ', entry: true}\n",
    3,
    38,
    "blank"
)]
#[case::version_latest(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: latest, entry: true}\n",
    3,
    38,
    "names a channel"
)]
#[case::version_stable(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: stable, entry: true}\n",
    3,
    38,
    "`version: stable`"
)]
#[case::version_edge(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: EDGE, entry: true}\n",
    3,
    38,
    "`version: EDGE`"
)]
#[case::version_a_mapping(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: {x: 1}, entry: true}\n",
    3,
    38,
    "must be a string"
)]
#[case::entry_not_boolean(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: yes}\n",
    3,
    50,
    "must be true or false"
)]
#[case::entry_quoted_true(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: 'true'}\n",
    3,
    50,
    "must be true or false"
)]
#[case::reachability_other_word(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\nreachability: everyone\n",
    4,
    15,
    "not `everyone`"
)]
#[case::reachability_a_mapping(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\nreachability: {from: a}\n",
    4,
    15,
    "not a mapping"
)]
#[case::rule_from_missing(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\nreachability:\n  - to: [b]\n",
    5,
    5,
    "rule 1: `reachability[].from` is required"
)]
#[case::rule_from_a_list(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\nreachability:\n  - {from: [a], to: [b]}\n",
    5,
    12,
    "must be a string"
)]
#[case::rule_to_missing(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\nreachability:\n  - from: a\n",
    5,
    5,
    "rule 1 (from `a`): `reachability[].to` is required"
)]
#[case::rule_to_with_no_value(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\nreachability:\n  - from: a\n    to:\n",
    6,
    5,
    "`reachability[].to` is required"
)]
#[case::rule_to_empty(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\nreachability:\n  - {from: a, to: []}\n",
    5,
    19,
    "`to` lists no member"
)]
#[case::rule_to_not_a_list(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\nreachability:\n  - {from: a, to: b}\n",
    5,
    19,
    "must be a list"
)]
#[case::rule_to_itself(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1'}\nreachability:\n  - {from: b, to: [a, b]}\n",
    6,
    23,
    "`b` lists itself in `to`"
)]
#[case::unknown_key_top(
    "roster_version: 1\nmember: []\n",
    2,
    1,
    "unknown key `member` at the top level"
)]
#[case::unknown_key_member(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true, port: 1}\n",
    3,
    56,
    "unknown key `port`"
)]
#[case::unknown_key_rule(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\nreachability:\n  - {from: a, to: [b], via: c}\n",
    5,
    24,
    "unknown key `via`"
)]
#[case::unknown_key_even_with_no_value("roster_version: 1\nnotes:\n", 2, 1, "unknown key `notes`")]
#[case::not_yaml("roster_version: [1\n", 2, 1, "not valid YAML")]
#[case::empty_file("", 1, 1, "the roster is empty")]
#[case::top_level_list("- a\n", 1, 1, "must be a mapping")]
fn refused_by_check_1(
    #[case] text: &str,
    #[case] line: usize,
    #[case] column: usize,
    #[case] needle: &str,
) {
    let r = refused(text, E_ROS_001, line, column, needle);
    // Every member-level fault names its member; rule faults name the rule.
    if r.diagnostic.message.starts_with("member") {
        assert!(
            matches!(r.fault, Fault::Member { index: 0, .. }),
            "{:?}",
            r.fault
        );
    }
}

#[test]
fn bare_capsule_hint_names_its_scoped_forms() {
    let r = refused(
        "roster_version: 1\nmembers:\n  - {name: a, capsule: coder, version: '1', entry: true}\n",
        E_ROS_001,
        3,
        24,
        "`<scope>/<name>`",
    );
    let hint = r.diagnostic.hint_text();
    assert!(hint.contains("`capsule: local/coder`"), "{hint}");
    assert!(hint.contains("`<scope>/coder`"), "{hint}");
}

#[test]
fn a_fault_in_a_later_member_names_that_member() {
    let r = refused(
        "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: latest}\n",
        E_ROS_001,
        4,
        38,
        "member `b`",
    );
    assert_eq!(
        r.fault,
        Fault::Member {
            index: 1,
            name: Some("b".into())
        }
    );
}

// ---- Admission checks 2–5 ---------------------------------------------------

#[rstest]
#[case::check_2_duplicate_name(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1'}\n  - {name: b, capsule: s/c, version: '1'}\n",
    E_ROS_003,
    5,
    12,
    "`b` is used twice: by member 2 at line 4 and member 3 here"
)]
#[case::check_3_no_entry(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1'}\n  - {name: b, capsule: s/b, version: '1', entry: false}\n",
    E_ROS_002,
    2,
    1,
    "no member has `entry: true`"
)]
#[case::check_3_two_entries(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1', entry: true}\n",
    E_ROS_002,
    4,
    50,
    "`a` and `b` both have `entry: true`"
)]
#[case::check_4_unknown_from(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1'}\nreachability:\n  - {from: x, to: [b]}\n",
    E_ROS_004,
    6,
    12,
    "`from` names `x`, which is no member"
)]
#[case::check_4_unknown_to(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1'}\nreachability:\n  - {from: a, to: [b, c]}\n",
    E_ROS_004,
    6,
    23,
    "`to` names `c`"
)]
#[case::check_5_entry_in_to(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1'}\nreachability:\n  - {from: b, to: [a]}\n",
    E_ROS_008,
    6,
    20,
    "the entry member"
)]
fn refused_by_checks_2_to_5(
    #[case] text: &str,
    #[case] code: Code,
    #[case] line: usize,
    #[case] column: usize,
    #[case] needle: &str,
) {
    refused(text, code, line, column, needle);
}

#[test]
fn a_misspelled_rule_member_gets_the_member_meant() {
    let r = refused(
        "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: writer, capsule: local/coder, version: '1'}\nreachability:\n  - {from: a, to: [wrtier]}\n",
        E_ROS_004,
        6,
        20,
        "`wrtier`",
    );
    assert_eq!(
        r.diagnostic.hint_text(),
        "Did you mean `writer`? Members of this roster: a, writer."
    );
}

#[test]
fn unknown_rule_member_that_is_a_capsule_gets_a_hint() {
    let r = refused(
        "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: writer, capsule: local/coder, version: '1'}\nreachability:\n  - {from: a, to: [local/coder]}\n",
        E_ROS_004,
        6,
        20,
        "`local/coder`",
    );
    assert!(
        r.diagnostic.hint_text().contains("did you mean `writer`"),
        "{}",
        r.diagnostic
    );
    assert_eq!(
        r.fault,
        Fault::Rule {
            index: 0,
            from: Some("a".into())
        }
    );
}

// ---- Ordering: with two faults, the earlier check is the one reported --------

#[rstest]
// Check 1 beats check 2 even when the duplicate comes first in the file.
#[case::shape_beats_duplicate(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: a, capsule: s/a, version: '1'}\n  - {name: c, capsule: c, version: '1'}\n",
    E_ROS_001,
    5,
    24
)]
// Check 2 beats check 3.
#[case::duplicate_beats_no_entry(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1'}\n  - {name: a, capsule: s/b, version: '1'}\n",
    E_ROS_003,
    4,
    12
)]
// Check 2 (a duplicate, after the rule in the file) beats check 4 (an unknown rule member).
#[case::duplicate_beats_unknown_rule_member(
    "roster_version: 1\nreachability:\n  - {from: a, to: [zz]}\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1'}\n  - {name: b, capsule: s/c, version: '1'}\n",
    E_ROS_003,
    7,
    12
)]
// Check 3 beats check 4.
#[case::two_entries_beat_unknown_rule_member(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1', entry: true}\nreachability:\n  - {from: a, to: [zz]}\n",
    E_ROS_002,
    4,
    50
)]
// Check 4 beats check 5, even when the rule calling the entry member comes first.
#[case::unknown_member_beats_entry_called(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1'}\nreachability:\n  - {from: b, to: [a]}\n  - {from: a, to: [zz]}\n",
    E_ROS_004,
    7,
    20
)]
// Within check 1, members are taken in roster order.
#[case::first_member_fault_first(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: latest, entry: true}\n  - {name: B, capsule: s/b, version: '1'}\n",
    E_ROS_001,
    3,
    38
)]
// Within check 2, the first repeated name in roster order.
#[case::first_duplicate_first(
    "roster_version: 1\nmembers:\n  - {name: a, capsule: s/a, version: '1', entry: true}\n  - {name: b, capsule: s/b, version: '1'}\n  - {name: b, capsule: s/b, version: '1'}\n  - {name: a, capsule: s/a, version: '1'}\n",
    E_ROS_003,
    5,
    12
)]
fn earlier_check_wins(
    #[case] text: &str,
    #[case] code: Code,
    #[case] line: usize,
    #[case] column: usize,
) {
    refused(text, code, line, column, "");
}

#[test]
fn read_names_a_missing_file_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let r = load(&path).unwrap_err();
    assert_eq!(r.diagnostic.code, E_ROS_001);
    assert_eq!(r.diagnostic.file.as_deref(), Some(path.as_path()));
    assert!(r.diagnostic.hint_text().contains("--roster"));
}

#[test]
fn read_refuses_non_utf8_at_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    std::fs::write(&path, b"roster_version: 1\nmembers: \xff\n").unwrap();
    let r = load(&path).unwrap_err();
    let loc = r.diagnostic.location.clone().unwrap();
    assert_eq!(
        (r.diagnostic.code, loc.line, loc.column),
        (E_ROS_001, 2, 10)
    );
}

#[test]
fn read_refuses_an_oversized_file_without_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(FILE_NAME);
    let mut text = String::from("roster_version: 1\n");
    while text.len() <= crate::yaml::MAX_DOCUMENT_BYTES {
        text.push_str("# padding padding padding padding padding padding padding\n");
    }
    std::fs::write(&path, text).unwrap();
    let r = load(&path).unwrap_err();
    assert_eq!(r.diagnostic.code, E_ROS_001);
    assert!(r.diagnostic.message.contains("bytes"), "{}", r.diagnostic);
}

#[test]
fn resolve_takes_a_directory_or_a_file() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(resolve(dir.path()), dir.path().join(FILE_NAME));
    let file = dir.path().join("other.yaml");
    assert_eq!(resolve(&file), file);
}

mod fuzz {
    use proptest::prelude::*;

    use super::*;

    /// Fragments that reach deep into the schema, so random documents are mostly YAML.
    const PIECES: &[&str] = &[
        "roster_version: ",
        "1",
        "2",
        "members:",
        "\n",
        "  - ",
        "    ",
        "name: ",
        "capsule: ",
        "version: ",
        "entry: ",
        "true",
        "reachability: ",
        "all",
        "from: ",
        "to: ",
        "[",
        "]",
        "{",
        "}",
        ", ",
        "a",
        "b",
        "local/a",
        "1.10",
        "latest",
        "'",
        "\"",
        ":",
        "-",
        "#",
        "&x",
        "*x",
        "~",
        "!!str ",
        "|\n",
        ">\n",
        "\t",
        "é",
        "\u{0}",
        "---\n",
        "? ",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC*") {
            let _ = admit_shape(&text);
        }

        #[test]
        fn roster_like_text_never_panics(parts in prop::collection::vec(prop::sample::select(PIECES), 0..80)) {
            let text: String = parts.concat();
            if let Err(r) = admit_shape(&text) {
                // Every refusal is a roster code with a position in the file.
                prop_assert!(r.diagnostic.code.as_str().starts_with("E-ROS-"));
                prop_assert!(r.diagnostic.location.is_some(), "{}", r.diagnostic);
            }
        }
    }
}
