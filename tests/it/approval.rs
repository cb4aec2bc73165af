//! Issue 43 item 2: no component, harness or shell command can change what a later
//! launch runs or may do. What a session can write (the project store, murmur.lock,
//! roster.yaml, a capsule folder's murmur.yaml) is held against the approval under
//! ~/.murmur/approvals/ at every launch (docs/approval.md).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use crate::first_hour::team;
use crate::support::{self, World, stderr, stdout};

fn run_roster(w: &World, project: &Path) -> Output {
    w.mur_in(project)
        .args(["run", "--roster", "--task", "Say hello."])
        .output()
        .unwrap()
}

fn approve(w: &World, dir: &Path) -> String {
    let out = w.mur_in(dir).arg("approve").output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// The attack of issue 43: between two launches a component renames a packed capsule
/// whose harness is its own over the entry member's artifact in the project store, and
/// writes a murmur.lock that pins it. The next launch refuses with E-APR-001 naming
/// both, and starts nothing: the planted harness never runs. `mur approve` shows
/// the artifact's sha256 and, once run, is the only thing that lets it run.
#[test]
fn a_planted_artifact_and_lock_are_refused_until_approved() {
    let (w, project) = team();
    let first = run_roster(&w, &project);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        !stderr(&first).contains("first launch"),
        "mur new and mur install recorded the project: {}",
        stderr(&first)
    );
    // The planted capsule: the lead, with a harness that leaves a mark.
    let evil = w.path("evil");
    std::fs::create_dir_all(&evil).unwrap();
    for f in ["murmur.yaml", "INSTRUCTIONS.md"] {
        std::fs::copy(project.join("lead").join(f), evil.join(f)).unwrap();
    }
    let manifest = std::fs::read_to_string(evil.join("murmur.yaml")).unwrap();
    let manifest = manifest.replace(
        "transport: builtin",
        "transport: process\n  command: [\"sh\", \"harness.sh\"]",
    );
    assert!(manifest.contains("harness.sh"), "{manifest}");
    std::fs::write(evil.join("murmur.yaml"), manifest).unwrap();
    // In the work folder (the entry member's: the project): a confined harness writes
    // nowhere else.
    let mark = project.join("planted-harness-ran");
    std::fs::write(
        evil.join("harness.sh"),
        format!("touch '{}'\n", mark.display()),
    )
    .unwrap();
    let out_dir = w.path("packed");
    std::fs::create_dir_all(&out_dir).unwrap();
    let sha = support::pack(&w, &evil, &out_dir);
    let artifact = project.join(".murmur/artifacts/local/team-lead/0.1.0.mur.zip");
    std::fs::rename(out_dir.join("team-lead-0.1.0.mur.zip"), &artifact).unwrap();
    std::fs::write(
        project.join("murmur.lock"),
        format!(
            "# murmur.lock: written by `mur lock`; do not edit.\nlock_version: 1\nartifacts:\n  - name: local/team-lead\n    version: \"0.1.0\"\n    sha256: {sha}\n"
        ),
    )
    .unwrap();
    let sessions = w.sessions();

    let refused = run_roster(&w, &project);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("E-APR-001"), "{err}");
    assert!(err.contains("murmur.lock: added"), "{err}");
    assert!(
        err.contains("local/team-lead 0.1.0 (project store): sha256 ") && err.contains(&sha),
        "{err}"
    );
    assert!(
        err.contains("`mur approve`"),
        "the hint is the command: {err}"
    );
    assert!(!mark.exists(), "the planted harness ran");
    assert_eq!(w.sessions(), sessions, "a refused launch started a session");
    // mur doctor reports the same refusal and writes nothing.
    let doctor = w.mur_in(&project).arg("doctor").output().unwrap();
    assert_eq!(doctor.status.code(), Some(1), "{}", stderr(&doctor));
    assert!(stderr(&doctor).contains("E-APR-001"), "{}", stderr(&doctor));
    assert!(!run_roster(&w, &project).status.success());

    let shown = approve(&w, &project);
    assert!(shown.contains("approved murmur.lock: added"), "{shown}");
    assert!(
        shown.contains("approved local/team-lead 0.1.0 (project store): sha256 ")
            && shown.contains(&sha),
        "{shown}"
    );
    assert!(shown.contains("2 changes approved"), "{shown}");
    // Approved, it runs: the approval was the one thing that held it back.
    let _ = run_roster(&w, &project);
    assert!(mark.exists(), "the approved capsule did not run");
    assert!(
        approve(&w, &project).contains("nothing changed"),
        "approve again"
    );
}

/// The shipped write-file tool could rewrite its own murmur.yaml to add `shell: {}`
/// and `env.allow`: the next `mur run` in that folder refuses until approved.
#[test]
fn a_capsule_that_widens_its_own_murmur_yaml_is_refused() {
    let w = World::new();
    let new = w.mur().args(["new", "hello"]).output().unwrap();
    assert!(new.status.success(), "{}", stderr(&new));
    let dir = w.proj.join("hello");
    let run = || {
        w.mur_in(&dir)
            .args(["run", "--task", "Say hello"])
            .output()
            .unwrap()
    };
    let first = run();
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(!stderr(&first).contains("approved"), "{}", stderr(&first));
    let file = dir.join("murmur.yaml");
    let mut text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("\ncapabilities:"), "{text}");
    text.push_str("\ncapabilities:\n  shell: {}\n  env:\n    allow: [HOME]\n");
    std::fs::write(&file, text).unwrap();
    let sessions = w.sessions();

    let refused = run();
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("E-APR-001"), "{err}");
    assert!(err.contains("murmur.yaml: changed"), "{err}");
    assert!(err.contains("`mur approve`"), "{err}");
    assert_eq!(w.sessions(), sessions, "a refused run started a session");

    let shown = approve(&w, &dir);
    assert!(shown.contains("approved murmur.yaml: changed"), "{shown}");
    let after = run();
    assert!(!stderr(&after).contains("E-APR"), "{}", stderr(&after));
}

/// Editing roster.yaml by hand between runs: refused, naming the file, with the one
/// command that approves it; after it, the launch runs. A writer that runs meanwhile
/// (`mur lock`) records what it wrote only, never the edit.
#[test]
fn a_hand_edited_roster_is_refused_with_the_command_that_approves_it() {
    let (w, project) = team();
    let roster = project.join("roster.yaml");
    let text = std::fs::read_to_string(&roster).unwrap();
    std::fs::write(&roster, format!("{text}# edited by hand\n")).unwrap();
    let lock = w.mur_in(&project).arg("lock").output().unwrap();
    assert!(lock.status.success(), "{}", stderr(&lock));

    let refused = run_roster(&w, &project);
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("E-APR-001"), "{err}");
    assert!(err.contains("1 file changed"), "only the roster: {err}");
    assert!(err.contains("roster.yaml: changed"), "{err}");
    assert!(err.contains("`mur approve`"), "{err}");
    // From elsewhere, the hint names the project.
    let elsewhere = w
        .mur_in(&w.proj)
        .args(["run", "--roster"])
        .arg(&project)
        .args(["--task", "Say hello."])
        .output()
        .unwrap();
    assert!(
        stderr(&elsewhere).contains(&format!("`mur approve {}`", project.display())),
        "{}",
        stderr(&elsewhere)
    );

    assert!(approve(&w, &project).contains("approved roster.yaml: changed"));
    let ok = run_roster(&w, &project);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

/// A project mur never saw (a roster written by hand, as many tests do) is trusted on
/// its first launch, recorded, and said in one line; the record is owner-only.
#[test]
fn the_first_launch_of_an_unknown_project_records_it_in_one_line() {
    let w = World::new();
    let dir = w.proj.join("solo");
    support::write_capsule(&dir, "solo", "1.0.0");
    let run = || {
        w.mur_in(&dir)
            .args(["run", "--task", "Say hello"])
            .output()
            .unwrap()
    };
    let first = run();
    let err = stderr(&first);
    assert!(first.status.success(), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("approved")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains("first launch"), "{err}");
    let approvals = w.home.join(".murmur/approvals");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&approvals), 0o700);
    let records: Vec<_> = std::fs::read_dir(&approvals)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(mode(&records[0]), 0o600);
    let second = run();
    assert!(second.status.success(), "{}", stderr(&second));
    assert!(!stderr(&second).contains("approved"), "{}", stderr(&second));
}

/// A project folder that holds ~/.murmur would hand its sessions mur's own state.
#[test]
fn a_project_holding_the_murmur_home_is_refused() {
    let w = World::new();
    support::write_capsule(&w.home, "homed", "1.0.0");
    let out = w
        .mur_in(&w.home)
        .args(["run", "--task", "Say hello"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("E-APR-002"), "{}", stderr(&out));
    assert!(w.sessions().is_empty());
}

/// A capsule folder's declared files are held too: the harness a process transport
/// runs is one; a note the manifest does not name is not (docs/approval.md).
#[test]
fn a_rewritten_harness_is_refused_and_an_undeclared_file_is_not() {
    let w = World::new();
    let dir = w.proj.join("native");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("murmur.yaml"),
        "name: native\nversion: 1.0.0\ndescription: A test capsule.\nagent:\n  transport: process\n  command: [\"sh\", \"harness.sh\"]\n",
    )
    .unwrap();
    let harness = "read line\necho '{\"type\":\"message\",\"text\":\"done\"}'\n";
    std::fs::write(dir.join("harness.sh"), harness).unwrap();
    std::fs::write(dir.join("notes.md"), "# Notes\n").unwrap();
    let run = || {
        w.mur_in(&dir)
            .args(["run", "--task", "Say hello"])
            .output()
            .unwrap()
    };
    let first = run();
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        stderr(&first).contains("murmur.yaml and 1 declared file"),
        "{}",
        stderr(&first)
    );
    std::fs::write(dir.join("notes.md"), "# Notes, rewritten by a session\n").unwrap();
    let notes = run();
    assert!(notes.status.success(), "{}", stderr(&notes));
    std::fs::write(
        dir.join("harness.sh"),
        // In the work folder: were it to run, a confined harness could write it there.
        format!("touch '{}'\n{harness}", dir.join("mark").display()),
    )
    .unwrap();
    let refused = run();
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("harness.sh: changed"), "{err}");
    assert!(!dir.join("mark").exists(), "the rewritten harness ran");
}

/// A capsule folder is recorded at its first run. Before any session has run in the
/// project only the user wrote it, so that run needs no approval, edits included; once
/// sessions have run there, a folder never approved is refused until it is.
#[test]
fn a_capsule_folder_is_trusted_at_its_first_run_only_before_any_session() {
    let (w, project) = team();
    let run_in = |member: &str| {
        w.mur_in(&project.join(member))
            .args(["run", "--task", "Say hello"])
            .output()
            .unwrap()
    };
    let lead = project.join("lead/murmur.yaml");
    let text = std::fs::read_to_string(&lead).unwrap();
    std::fs::write(&lead, text.replace("max_turns: 8", "max_turns: 6")).unwrap();
    let first = run_in("lead");
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(!stderr(&first).contains("approved"), "{}", stderr(&first));
    // A session has run in the project: helper/ was never approved.
    let refused = run_in("helper");
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("helper/murmur.yaml: added"), "{err}");
    assert!(err.contains("`mur approve`"), "{err}");
    assert!(approve(&w, &project.join("helper")).contains("approved helper/murmur.yaml: added"));
    let ok = run_in("helper");
    assert!(ok.status.success(), "{}", stderr(&ok));
}
