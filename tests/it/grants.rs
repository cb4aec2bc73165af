//! The one grant rule (docs/grants.md) where a capsule's author meets it: a manifest
//! that lists one of its own credentials as passed to an executor is warned about
//! (W-MAN-001) at `mur pack` and at admission, and a real session's harness never gets
//! it. What each executor gets is the table test in src/grant/tests.rs; the shell's,
//! through a real session, is in tests/it/shell.rs.

use std::path::Path;

use crate::support::World;

/// A capsule whose door credential DOOR_TOKEN is also in env.allow and baseline_env.
fn leaky(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("murmur.yaml"),
        "name: leaky\nversion: 1.0.0\ndescription: d\nagent:\n  transport: builtin\n\
         network:\n  authentication:\n    bearer_env: [DOOR_TOKEN]\n\
         capabilities:\n  env:\n    allow: [DOOR_TOKEN, FINE]\n  shell:\n    baseline_env: [PATH, DOOR_TOKEN]\n",
    )
    .unwrap();
}

fn warnings(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.starts_with("warning[W-MAN-001]"))
        .collect()
}

#[test]
fn pack_warns_of_a_credential_listed_as_passed_and_still_packs() {
    let w = World::new();
    let src = w.path("src/leaky");
    leaky(&src);
    let out = w
        .mur()
        .arg("pack")
        .arg(&src)
        .arg("--out")
        .arg(w.path("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let found = warnings(&stderr);
    assert_eq!(found.len(), 2, "{stderr}");
    assert!(
        found[0].contains("capabilities.env.allow names DOOR_TOKEN")
            && found[0].contains("network.authentication.bearer_env")
            && found[0].contains("reaches no child"),
        "{stderr}"
    );
    assert!(
        found[1].contains("capabilities.shell.baseline_env names DOOR_TOKEN"),
        "{stderr}"
    );
    assert!(w.path("out/leaky-1.0.0.mur.zip").is_file());
}

#[test]
fn admission_warns_of_a_credential_listed_as_passed() {
    let w = World::new();
    let src = w.path("src/leaky");
    leaky(&src);
    let out = w.mur().arg("install").arg(&src).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(
        w.proj.join("roster.yaml"),
        "roster_version: 1\nmembers:\n  - name: leaky\n    capsule: local/leaky\n    version: 1.0.0\n    entry: true\n",
    )
    .unwrap();
    let out = w.mur().args(["doctor", "--json"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["admitted"], true, "{json:#}");
    let codes: Vec<&str> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["W-MAN-001", "W-MAN-001"], "{json:#}");
}

/// Through a real session: the harness gets neither the door's credential nor a proxy
/// variable, though env.allow names both, and gets what else it names.
#[test]
fn a_harness_gets_no_credential_and_no_proxy_whatever_env_allow_says() {
    let w = World::new();
    // In the work folder: a confined harness writes nowhere else.
    let dump = w.proj.join("harness.env");
    w.install(
        "leaky",
        "network:\n  authentication:\n    bearer_env: [DOOR_TOKEN]\ncapabilities:\n  env:\n    allow: [DOOR_TOKEN, HTTPS_PROXY, FINE]\n",
        Some(&format!(
            "IFS= read -r task\nenv > '{}'\necho '{{\"type\":\"message\",\"text\":\"done\"}}'\n",
            dump.display()
        )),
    );
    let out = w
        .run("leaky")
        .args(["--task", "go"])
        .env("DOOR_TOKEN", "d00r-s3cr3t")
        .env("HTTPS_PROXY", "http://proxy.invalid")
        .env("FINE", "passed")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env = std::fs::read_to_string(&dump).unwrap();
    assert!(env.lines().any(|l| l == "FINE=passed"), "{env}");
    assert!(!env.contains("d00r-s3cr3t"), "{env}");
    assert!(!env.contains("proxy.invalid"), "{env}");
    // The one proxy it gets is the session's egress proxy.
    assert!(
        env.lines()
            .any(|l| l.starts_with("HTTPS_PROXY=http://127.0.0.1:")),
        "{env}"
    );
}
