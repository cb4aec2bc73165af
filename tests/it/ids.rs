//! Ids a person types: a unique prefix for `mur stop`, `mur send` and `mur trace
//! show`, E-RUN-009 for an ambiguous one, `mur stop` with no id in a project folder,
//! and a stop of what already ended (src/session/pick.rs, docs/run.md).

use crate::first_hour::team;
use crate::support::session::wait_for;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_prefix_reaches_a_formation_and_a_session_and_an_ambiguous_one_lists_them() {
    let (w, project) = team();
    let (mut launcher, ready) = w.launch_json(&project);
    let frm = ready["formation_id"].as_str().unwrap().to_string();
    let entry = ready["members"][0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();

    // `frm_` and 16 hex digits: unique among one formation's ids.
    let sent = w
        .mur()
        .args(["send", &frm[..20], "Say hi."])
        .output()
        .unwrap();
    assert_eq!(sent.status.code(), Some(0), "{}", stderr(&sent));
    // The kind may be left out.
    let shown = w
        .mur()
        .args(["trace", "show", &entry[4..30]])
        .output()
        .unwrap();
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    assert!(String::from_utf8_lossy(&shown.stdout).contains(&entry));

    // Every UUIDv7 of today starts with `0`: the lead's session, the helper's and the
    // formation all match, and the refusal names them.
    let many = w.mur().args(["trace", "show", "0"]).output().unwrap();
    assert_eq!(many.status.code(), Some(1));
    let err = stderr(&many);
    assert!(err.contains("E-RUN-009"), "{err}");
    assert!(err.contains(&entry) && err.contains(&frm), "{err}");

    let stop = w.mur().args(["stop", &frm[..20]]).output().unwrap();
    assert_eq!(stop.status.code(), Some(0), "{}", stderr(&stop));
    wait_for("the launcher to exit", || {
        launcher.try_wait().unwrap().is_some()
    });
}

#[test]
fn stop_without_an_id_stops_this_folder_s_formation_and_again_says_how_it_ended() {
    let (w, project) = team();
    let (mut launcher, ready) = w.launch_json(&project);
    let frm = ready["formation_id"].as_str().unwrap().to_string();

    // Elsewhere, no formation runs: E-RUN-003 with a hint that names the id form.
    let elsewhere = w.mur().arg("stop").output().unwrap();
    assert_eq!(elsewhere.status.code(), Some(1));
    let err = stderr(&elsewhere);
    assert!(
        err.contains("E-RUN-003") && err.contains("mur stop <ses_id|frm_id>"),
        "{err}"
    );

    let stop = w.mur_in(&project).arg("stop").output().unwrap();
    assert_eq!(stop.status.code(), Some(0), "{}", stderr(&stop));
    assert!(
        stderr(&stop).contains(&format!("the launcher of {frm}")),
        "{}",
        stderr(&stop)
    );
    let mut status = None;
    wait_for("the launcher to exit", || {
        status = launcher.try_wait().unwrap();
        status.is_some()
    });
    assert_eq!(status.unwrap().code(), Some(0));

    // Stopped already: how it ended, and success, since what was asked for holds.
    let again = w.mur().args(["stop", &frm]).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let said = stderr(&again);
    assert!(
        said.contains(&format!(
            "{frm} already ended: its entry member lead ended ok (exit code 0)"
        )),
        "{said}"
    );
    // No records by that name: E-RUN-003.
    let none = w
        .mur()
        .args(["stop", "frm_ffffffffffffffffffffffffffffffff"])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(1));
    assert!(stderr(&none).contains("E-RUN-003"), "{}", stderr(&none));
}
