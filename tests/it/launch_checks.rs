//! What `mur doctor` and `mur run --roster` check before a launch starts a process
//! (issue 44, items 5, 6 and 8), on `mur new --roster team` with its members installed
//! by the real `mur install`: a source folder that differs from its installed bytes
//! (W-STO-001), a formation of the roster already live (W-RUN-020), a caller that
//! cannot reach localhost (W-RUN-008), an unset `api_key_env` (E-AGT-001), and a single
//! capsule's folder checked as `mur run` would.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::World;

/// `mur new --roster team`, both members installed; the team's folder.
fn team(w: &World) -> PathBuf {
    let new = w.mur().args(["new", "--roster", "team"]).output().unwrap();
    assert!(
        new.status.success(),
        "{}",
        String::from_utf8_lossy(&new.stderr)
    );
    let team = w.proj.join("team");
    ok(&w
        .mur_in(&team)
        .args(["install", "lead", "helper"])
        .output()
        .unwrap());
    team
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn edit(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(file, text.replacen(from, to, 1)).unwrap();
}

/// `mur doctor --json` in `dir`: (admitted, warnings as (code, message, hint), error).
fn doctor(w: &World, dir: &Path) -> (bool, Vec<(String, String, String)>, serde_json::Value) {
    let out = w.mur_in(dir).args(["doctor", "--json"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let admitted = json["admitted"] == true;
    assert_eq!(out.status.code(), Some(i32::from(!admitted)), "{json:#}");
    let warnings = json["warnings"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|w| {
                    (
                        w["code"].as_str().unwrap().to_string(),
                        w["message"].as_str().unwrap().to_string(),
                        w["hint"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    (admitted, warnings, json["error"].clone())
}

fn coded<'a>(
    warnings: &'a [(String, String, String)],
    code: &str,
) -> Vec<&'a (String, String, String)> {
    warnings.iter().filter(|(c, _, _)| c == code).collect()
}

fn run_task(w: &World, team: &Path) -> Output {
    w.mur_in(team)
        .args([
            "run",
            "--roster",
            "--deadline",
            "120",
            "--task",
            "Plan a picnic.",
        ])
        .output()
        .unwrap()
}

#[test]
fn an_edited_source_folder_is_w_sto_001_until_mur_sync() {
    let w = World::new();
    let team = team(&w);
    let (admitted, warnings, _) = doctor(&w, &team);
    assert!(admitted);
    assert!(coded(&warnings, "W-STO-001").is_empty(), "{warnings:#?}");

    // A real edit: the folder now packs other bytes than the installed ones.
    edit(
        &team.join("helper/murmur.yaml"),
        "max_turns: 8",
        "max_turns: 9",
    );
    let (admitted, warnings, _) = doctor(&w, &team);
    assert!(admitted);
    let stale = coded(&warnings, "W-STO-001");
    assert_eq!(stale.len(), 1, "{warnings:#?}");
    assert!(
        stale[0].1.contains("member `helper`") && stale[0].1.contains("differs"),
        "{stale:?}"
    );
    assert!(stale[0].2.contains("`mur sync`"), "{stale:?}");
    // The launch says the same before it starts anything, and runs the installed bytes.
    let out = run_task(&w, &team);
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("W-STO-001") && stderr.contains("mur sync"),
        "{stderr}"
    );

    // A typo: the folder no longer packs; the warning names the manifest's own error.
    edit(
        &team.join("helper/murmur.yaml"),
        "max_turns: 9",
        "max_turn: 9",
    );
    let (admitted, warnings, _) = doctor(&w, &team);
    assert!(admitted);
    let stale = coded(&warnings, "W-STO-001");
    assert_eq!(stale.len(), 1, "{warnings:#?}");
    assert!(
        stale[0].1.contains("no longer packs") && stale[0].1.contains("max_turn"),
        "{stale:?}"
    );
    assert!(stale[0].2.contains("then run `mur sync`"), "{stale:?}");

    // The hint's command works: fixed and synced, the warning is gone.
    edit(
        &team.join("helper/murmur.yaml"),
        "max_turn: 9",
        "max_turns: 9",
    );
    ok(&w.mur_in(&team).arg("sync").output().unwrap());
    let (admitted, warnings, _) = doctor(&w, &team);
    assert!(admitted);
    assert!(coded(&warnings, "W-STO-001").is_empty(), "{warnings:#?}");
}

#[test]
fn a_second_launch_beside_a_live_formation_is_w_run_020_naming_it() {
    let w = World::new();
    let team = team(&w);
    let (_launcher, ready) = w.launch_json(&team);
    let frm = ready["formation_id"]
        .as_str()
        .expect("a formation id")
        .to_string();
    let (_, warnings, _) = doctor(&w, &team);
    let live = coded(&warnings, "W-RUN-020");
    assert_eq!(live.len(), 1, "{warnings:#?}");
    assert!(live[0].1.contains(&frm), "{live:?}");
    assert!(live[0].2.contains(&format!("mur stop {frm}")), "{live:?}");
    // The second launch warns with the live id and still runs.
    let out = run_task(&w, &team);
    ok(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("W-RUN-020") && stderr.contains(&frm),
        "{stderr}"
    );
}

#[test]
fn a_caller_without_localhost_is_w_run_008_at_doctor() {
    let w = World::new();
    let team = team(&w);
    edit(
        &team.join("lead/murmur.yaml"),
        "      - localhost\n",
        "      - example.com\n",
    );
    ok(&w.mur_in(&team).arg("sync").output().unwrap());
    let (admitted, warnings, _) = doctor(&w, &team);
    assert!(admitted);
    let reach = coded(&warnings, "W-RUN-008");
    assert_eq!(reach.len(), 1, "{warnings:#?}");
    assert!(
        reach[0].1.contains("member `lead` may call helper"),
        "{reach:?}"
    );
}

#[test]
fn an_unset_api_key_env_refuses_doctor_and_launch_naming_the_variable() {
    let w = World::new();
    let team = team(&w);
    edit(
        &team.join("helper/murmur.yaml"),
        "  transport: builtin\n",
        "  transport: http\n  base_url: http://127.0.0.1:9/v1\n  model: m\n  api_key_env: TEAM_HELPER_KEY\n",
    );
    ok(&w.mur_in(&team).arg("sync").output().unwrap());
    let (admitted, _, error) = doctor(&w, &team);
    assert!(!admitted);
    assert_eq!(error["code"], "E-AGT-001", "{error:#}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("member `helper`"),
        "{error:#}"
    );
    assert!(
        error["hint"]
            .as_str()
            .unwrap()
            .contains("export TEAM_HELPER_KEY="),
        "{error:#}"
    );
    // The launch refuses the same way before it starts a member.
    let out = run_task(&w, &team);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("E-AGT-001") && stderr.contains("TEAM_HELPER_KEY"),
        "{stderr}"
    );
    assert!(!stderr.contains("E-RUN-045"), "{stderr}");
    assert!(w.sessions().is_empty(), "a member started");
    // With the variable set, doctor admits it.
    let out = w
        .mur_in(&team)
        .args(["doctor", "--json"])
        .env("TEAM_HELPER_KEY", "k")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn doctor_in_a_single_capsule_folder_checks_that_capsule() {
    let w = World::new();
    let dir = w.proj.join("solo");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("murmur.yaml"),
        "name: solo\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\n",
    )
    .unwrap();
    let out = w.mur_in(&dir).arg("doctor").output().unwrap();
    ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("murmur.yaml: ready to run (local/solo 1.0.0"),
        "{stdout}"
    );
    // A tool file the manifest names and the folder does not hold: refused as the run would.
    std::fs::write(
        dir.join("murmur.yaml"),
        "name: solo\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\n\
         tools:\n  - name: search\n    path: tools/search.wasm\n    description: Searches.\n",
    )
    .unwrap();
    let out = w.mur_in(&dir).args(["doctor", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["ready"], false, "{json:#}");
    assert!(
        json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tools/search.wasm"),
        "{json:#}"
    );
    let run = w
        .mur_in(&dir)
        .args(["run", "--task", "x"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let code = json["error"]["code"].as_str().unwrap();
    assert!(
        String::from_utf8_lossy(&run.stderr).contains(code),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn a_misspelled_instructions_file_is_w_man_002_at_doctor_and_at_the_start() {
    let w = World::new();
    let dir = w.proj.join("solo");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("INSTRUCTIONS.md"), "Answer briefly.\n").unwrap();
    std::fs::write(
        dir.join("murmur.yaml"),
        "name: solo\nversion: 1.0.0\ndescription: d\ninstructions: INSTRUCTION.md\nagent:\n  transport: builtin\n",
    )
    .unwrap();
    let out = w.mur_in(&dir).args(["doctor", "--json"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        json.to_string().contains("W-MAN-002"),
        "doctor names the missing file: {json:#}"
    );
    let run = w
        .mur_in(&dir)
        .args(["run", "--task", "x"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("W-MAN-002").count(), 1, "{stderr}");
    assert!(
        stderr.contains("`instructions: INSTRUCTION.md` cannot be read"),
        "{stderr}"
    );
}
