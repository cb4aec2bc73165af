//! "Did you mean": a misspelled capsule name (on the command line and in a roster), a
//! misspelled member in a rule, and a misspelled tool path each get the name meant, as
//! the hint of their refusal; a name close to nothing gets none.

use crate::first_hour::team;
use crate::support::World;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_misspelled_capsule_on_the_command_line_gets_the_installed_name() {
    let (w, project) = team();
    let run = |name: &str| {
        let out = w
            .mur_in(&project)
            .args(["run", "--capsule", name, "--capsule-version", "0.1.0"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        stderr(&out)
    };
    for (wrong, meant) in [
        ("local/team-laed", "local/team-lead"),
        ("local/team-helpr", "local/team-helper"),
        ("team-helpr", "local/team-helper"),
    ] {
        let err = run(wrong);
        assert!(err.contains("error[E-RUN-001]"), "{err}");
        assert!(
            err.contains(&format!(
                "= hint: Did you mean `{meant}`? It is installed at 0.1.0"
            )),
            "{wrong}: {err}"
        );
    }
    let far = run("local/reviewer");
    assert!(!far.to_lowercase().contains("did you mean"), "{far}");
}

/// `mur doctor` in the team's folder, with its roster edited by `edit`.
fn doctor(edit: impl Fn(&str) -> String) -> String {
    let (w, project) = team();
    let file = project.join("roster.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let edited = edit(&text);
    assert_ne!(edited, text);
    std::fs::write(&file, edited).unwrap();
    let out = w.mur_in(&project).args(["doctor"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    stderr(&out)
}

#[test]
fn a_member_s_misspelled_capsule_gets_the_installed_name() {
    let err = doctor(|t| t.replace("capsule: local/team-helper", "capsule: local/team-hepler"));
    assert!(err.contains("error[E-ROS-007]"), "{err}");
    assert!(
        err.contains("= hint: Did you mean `local/team-helper`? It is installed at 0.1.0"),
        "{err}"
    );
}

#[test]
fn a_rule_s_misspelled_member_gets_the_member_meant() {
    let err = doctor(|t| t.replace("to: [helper]", "to: [helpr]"));
    assert!(err.contains("error[E-ROS-004]"), "{err}");
    assert!(
        err.contains("= hint: Did you mean `helper`? Members of this roster: lead, helper."),
        "{err}"
    );
    let far = doctor(|t| t.replace("to: [helper]", "to: [reviewer]"));
    assert!(far.contains("error[E-ROS-004]"), "{far}");
    assert!(!far.to_lowercase().contains("did you mean"), "{far}");
}

#[test]
fn a_misspelled_tool_path_gets_the_file_the_capsule_holds() {
    let w = World::new();
    let dir = w.proj.join("shouter");
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(dir.join("tools/shout.wasm"), b"\0asm").unwrap();
    let manifest = |path: &str| {
        format!(
            "name: shouter\nversion: 0.1.0\ndescription: d\nagent:\n  transport: builtin\ntools:\n  - name: shout\n    description: Shouts.\n    path: {path}\n"
        )
    };
    let pack = |path: &str| {
        std::fs::write(dir.join("murmur.yaml"), manifest(path)).unwrap();
        let out = w
            .mur()
            .args(["pack"])
            .arg(&dir)
            .args(["--out", "dist"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        stderr(&out)
    };
    let err = pack("tools/shuot.wasm");
    assert!(err.contains("error[E-MAN-007]"), "{err}");
    assert!(err.contains("murmur.yaml:9:11"), "{err}");
    assert!(
        err.contains("= hint: Did you mean `tools/shout.wasm`?"),
        "{err}"
    );
    let far = pack("tools/reverse.wasm");
    assert!(far.contains("error[E-MAN-007]"), "{far}");
    assert!(!far.to_lowercase().contains("did you mean"), "{far}");
}
