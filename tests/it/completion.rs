//! Shell completion completes live ids: the bash script `mur completions bash` prints,
//! run in bash as readline would run it (COMP_WORDS, COMP_CWORD), offers the id of a
//! live session where a command takes one, and no id anywhere else.

use std::process::Command;
use std::time::Duration;

use nix::sys::signal::Signal;

use crate::support::session::{SLEEPER, Session};
use crate::support::{World, stderr, stdout};

/// What bash's completion offers for `words` (the last is the word being typed).
fn complete(w: &World, script: &std::path::Path, words: &[&str]) -> Vec<String> {
    let mur = crate::support::mur();
    let bin = std::path::Path::new(mur.get_program())
        .parent()
        .unwrap()
        .to_path_buf();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let line = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={cword}; _mur_with_ids mur '{}' '{prev}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words[cword],
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &line])
        .env("HOME", &w.home)
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn bash_completion_offers_live_ids_where_a_command_takes_one() {
    let w = World::new();
    w.install("sleeper", "", Some(SLEEPER));
    let out = w.mur().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let script = w.root.join("mur.bash");
    std::fs::write(&script, &out.stdout).unwrap();

    // Nothing runs: `stop` offers clap's flags, and no id.
    let idle = complete(&w, &script, &["mur", "stop", ""]);
    assert!(idle.iter().all(|c| !c.starts_with("ses_")), "{idle:?}");
    assert!(idle.iter().any(|c| c == "--help"), "{idle:?}");

    let mut cmd = w.run("sleeper");
    cmd.arg("--json");
    let s = Session::spawn(cmd);
    let id = s.ready()["session_id"].as_str().unwrap().to_string();

    for words in [
        vec!["mur", "stop", ""],
        vec!["mur", "send", ""],
        vec!["mur", "logs", "-f", ""],
        vec!["mur", "-q", "trace", "show", ""],
        vec!["mur", "stop", &id[..10]],
    ] {
        let offered = complete(&w, &script, &words);
        assert_eq!(offered, vec![id.clone()], "{words:?}");
    }
    // Not where no id goes: after send's id (its text), a flag, another command.
    for words in [
        vec!["mur", "send", &id, ""],
        vec!["mur", "stop", "--"],
        vec!["mur", "ls", ""],
        vec!["mur", "stop", "frm_"],
    ] {
        let offered = complete(&w, &script, &words);
        assert!(!offered.contains(&id), "{words:?}: {offered:?}");
    }
    let listed = w.mur().args(["__complete", "ids"]).output().unwrap();
    assert_eq!(stdout(&listed).trim(), id);

    s.signal(Signal::SIGTERM);
    let (code, err) = s.wait(Duration::from_secs(30));
    assert_eq!(code, 0, "{err}");
    let ended = w.mur().args(["__complete", "ids"]).output().unwrap();
    assert!(ended.status.success());
    assert_eq!(stdout(&ended), "", "an ended session is not offered");
}
