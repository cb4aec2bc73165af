//! `--help` and the man pages: every command's help opens with the sentence the
//! command list gives it, and every page the man pages name exists.

use crate::support::World;

/// The commands `mur --help` lists, each with its sentence.
fn commands(w: &World) -> Vec<(String, String)> {
    let out = w.mur().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let list = text
        .split("Commands:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("a Commands: section");
    let commands: Vec<(String, String)> = list
        .lines()
        .filter_map(|l| {
            let (name, about) = l.trim().split_once(' ')?;
            Some((name.to_string(), about.trim().to_string()))
        })
        .filter(|(name, _)| name != "help")
        .collect();
    assert!(commands.len() >= 15, "{commands:?}");
    commands
}

#[test]
fn every_command_s_help_opens_with_its_sentence() {
    let w = World::new();
    for (name, about) in commands(&w) {
        let out = w.mur().args([name.as_str(), "--help"]).output().unwrap();
        assert!(out.status.success(), "{name}");
        let help = String::from_utf8(out.stdout).unwrap();
        let first = help.lines().next().unwrap_or_default();
        assert_eq!(first, about, "`mur {name} --help` opens with another line");
        assert!(
            first.starts_with(|c: char| c.is_ascii_uppercase()),
            "`mur {name} --help` does not open with a sentence: {first:?}"
        );
    }
}

#[test]
fn man_dir_writes_every_page_the_pages_name() {
    let w = World::new();
    let dir = w.path("man/man1");
    let out = w.mur().args(["man", "--dir"]).arg(&dir).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty(), "--dir prints nothing");
    let pages: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(pages.contains(&"mur.1".to_string()), "{pages:?}");
    for (name, _) in commands(&w) {
        assert!(
            pages.contains(&format!("mur-{name}.1")),
            "no page for {name}: {pages:?}"
        );
    }
    // Every `mur-…(1)` any page names (roff writes the dash as `\-`) is a page.
    for page in &pages {
        let text = std::fs::read_to_string(dir.join(page)).unwrap();
        for (at, _) in text.match_indices("mur\\-") {
            let rest = &text[at + "mur\\-".len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_lowercase() || c == '\\' || c == '-'))
                .unwrap_or(rest.len());
            if !rest[end..].starts_with("(1)") {
                continue;
            }
            let named = format!("mur-{}.1", rest[..end].replace("\\-", "-"));
            assert!(
                pages.contains(&named),
                "{page} names {named}, which was not written"
            );
        }
    }
    // The top page printed on stdout names no help page either.
    let top = w.mur().arg("man").output().unwrap();
    assert!(!String::from_utf8_lossy(&top.stdout).contains("mur\\-help(1)"));
}

#[test]
fn man_dir_that_cannot_be_made_is_e_cli_002() {
    let w = World::new();
    let file = w.path("not-a-folder");
    std::fs::write(&file, "x").unwrap();
    let out = w
        .mur()
        .args(["man", "--dir"])
        .arg(file.join("man1"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("E-CLI-002"), "{err}");
    assert!(err.contains("not-a-folder"), "{err}");
}

#[test]
fn completions_and_the_man_page_name_every_command() {
    let w = World::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = w.mur().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        for command in ["run", "install", "trace", "doctor", "completions"] {
            assert!(script.contains(command), "{shell} completes {command}");
        }
        // Each command's flags, added to the parser only when it is typed, too.
        for flag in ["capsule-version", "follow"] {
            assert!(script.contains(flag), "{shell} completes --{flag}");
        }
    }
    let bad = w.mur().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let man = w.mur().arg("man").output().unwrap();
    assert!(man.status.success());
    let page = String::from_utf8_lossy(&man.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH mur"),
        "{page}"
    );
    assert!(
        page.contains("completions") && page.contains("doctor"),
        "{page}"
    );
}
