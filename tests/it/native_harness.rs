//! A capsule on a native harness (W-RUN-010): told once, run alone or as a formation
//! member, that it runs confined and in which network tier (docs/confinement.md).

use crate::support::World;

#[test]
fn a_native_harness_is_told_once_that_it_runs_confined_and_in_which_tier() {
    let w = World::new();
    let harness = "read line\necho '{\"type\":\"message\",\"text\":\"done\"}'\n";
    w.install("native", "", Some(harness));
    w.install("model", "", None);
    let native = w.run_task("native", "Go.");
    let stderr = String::from_utf8_lossy(&native.stderr);
    assert!(native.status.success(), "{stderr}");
    assert_eq!(stderr.matches("warning[W-RUN-010]").count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "local/native starts a `transport: process` harness, confined: files deny by default, the network only through mur's egress proxy; tier {}",
            mur::confine::start::tier_line(&mur::confine::net::Kernel::probe())
        )),
        "{stderr}"
    );
    let builtin = w.run_task("model", "Go.");
    assert!(!String::from_utf8_lossy(&builtin.stderr).contains("W-RUN-010"));
}

#[test]
fn a_formation_member_on_a_native_harness_is_told_once_at_launch() {
    let w = World::new();
    assert!(
        w.mur()
            .args(["new", "--roster", "team"])
            .status()
            .unwrap()
            .success()
    );
    let project = w.proj.join("team");
    // helper's agent becomes a native harness that answers every task at once.
    let helper = project.join("helper");
    let manifest = std::fs::read_to_string(helper.join("murmur.yaml"))
        .unwrap()
        .replace(
            "transport: builtin",
            "transport: process\n  command: [\"sh\", \"harness.sh\"]",
        );
    std::fs::write(helper.join("murmur.yaml"), manifest).unwrap();
    std::fs::write(
        helper.join("harness.sh"),
        "read line\necho '{\"type\":\"message\",\"text\":\"done by hand\"}'\n",
    )
    .unwrap();
    let install = w
        .mur_in(&project)
        .args(["install", "lead", "helper"])
        .output()
        .unwrap();
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let out = w
        .mur_in(&project)
        .args(["run", "--roster", "--task", "Say hello."])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("done by hand"));
    // Once, by the member whose harness it is, behind its prefix; lead (builtin) says nothing.
    assert_eq!(stderr.matches("W-RUN-010").count(), 1, "{stderr}");
    assert!(
        stderr.contains(
            "[helper] warning[W-RUN-010]: local/team-helper starts a `transport: process` harness, confined: "
        ),
        "{stderr}"
    );
}
