//! `mur ps` lists the current project's live sessions, `mur ps -a` every project's,
//! and either fits 100 columns: a long capsule name is cut (`…`), an id never is (its
//! shortest unique prefix, which `mur stop` takes); `--no-trunc` shows both whole.

use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;

use crate::support::session::{SLEEPER, Session};
use crate::support::{World, stderr, stdout};

/// 60 characters: wider than any column of `mur ps`.
const LONG: &str = "a-sleeper-whose-name-is-far-longer-than-a-column-should-take";

fn session_ids(out: &std::process::Output) -> Vec<String> {
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["session_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn ps_lists_this_project_s_sessions_and_fits_100_columns() {
    assert_eq!(LONG.len(), 60);
    let w = World::new();
    w.install("sleeper", "", Some(SLEEPER));
    // A second project, whose capsule (the long name) is in the global store.
    let other = w.root.join("other");
    std::fs::create_dir_all(other.join(".murmur")).unwrap();
    let src = w.root.join("src-long");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("murmur.yaml"),
        crate::support::manifest_text(LONG, "1.0.0"),
    )
    .unwrap();
    let installed = w
        .mur()
        .args(["install", "--global"])
        .arg(&src)
        .output()
        .unwrap();
    assert!(installed.status.success(), "{}", stderr(&installed));

    let mut here = w.run("sleeper");
    here.arg("--json");
    let here = Session::spawn(here);
    let here_id = here.ready()["session_id"].as_str().unwrap().to_string();
    let mut there = w.mur_in(&other);
    there.args([
        "run",
        "--capsule",
        &format!("local/{LONG}"),
        "--capsule-version",
        "1.0.0",
        "--json",
    ]);
    let there = Session::spawn(there);
    let there_id = there.ready()["session_id"].as_str().unwrap().to_string();

    // Each project sees its own, from any folder in it.
    let mine = w.mur().args(["ps", "--json"]).output().unwrap();
    assert_eq!(session_ids(&mine), vec![here_id.clone()]);
    std::fs::create_dir_all(other.join("deep/er")).unwrap();
    let theirs = w
        .mur_in(&other.join("deep/er"))
        .args(["ps", "--json"])
        .output()
        .unwrap();
    assert_eq!(session_ids(&theirs), vec![there_id.clone()]);

    // For people: 100 columns at most, the name cut, the id a prefix that names it.
    let table = w.mur_in(&other).arg("ps").output().unwrap();
    let text = stdout(&table);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    for line in &lines {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    assert!(lines[0].starts_with("SESSION  "), "{text}");
    assert!(!text.contains(LONG) && text.contains("…"), "{text}");
    let shown = lines[1].split_whitespace().next().unwrap();
    assert!(
        there_id.starts_with(shown) && shown.len() < there_id.len(),
        "{text}"
    );
    let short = &there_id[..shown.len()];
    assert!(
        !text.contains(&here_id[..16]),
        "another project's session: {text}"
    );

    // `-a`: every project's, ended ones too, still 100 columns.
    let all = w.mur().args(["ps", "-a"]).output().unwrap();
    let all_text = stdout(&all);
    for line in all_text.lines() {
        assert!(line.chars().count() <= 100, "{line}");
    }
    assert!(
        all_text.contains(&here_id[..16]) && all_text.contains(short),
        "{all_text}"
    );
    assert!(
        all_text.lines().filter(|l| l.contains("running")).count() == 2,
        "{all_text}"
    );
    let all_json = w.mur().args(["ps", "-a", "--json"]).output().unwrap();
    assert_eq!(session_ids(&all_json).len(), 2);

    // --no-trunc: whole ids and names, however wide.
    let whole = w
        .mur_in(&other)
        .args(["ps", "--no-trunc"])
        .output()
        .unwrap();
    let whole = stdout(&whole);
    assert!(whole.contains(&there_id) && whole.contains(LONG), "{whole}");

    // Nothing of its own: this project says where the others' are.
    let empty = w.root.join("empty");
    std::fs::create_dir_all(empty.join(".murmur")).unwrap();
    let none = w.mur_in(&empty).arg("ps").output().unwrap();
    assert_eq!(stdout(&none), "");
    assert!(
        stderr(&none).contains("2 in other projects (`mur ps -a`"),
        "{}",
        stderr(&none)
    );

    // The shown prefix is what `mur stop` takes.
    let stop = w.mur().args(["stop", short]).output().unwrap();
    assert!(stop.status.success(), "{}", stderr(&stop));
    let (code, err) = there.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    here.signal(Signal::SIGTERM);
    let (code, err) = here.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
}
