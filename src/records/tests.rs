use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use super::*;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_directory_is_named_after_the_work_folder_without_its_root() {
    let d = dir_for(Path::new("/no/such/project"), "ses_1");
    assert!(
        d.ends_with(".murmur/records/no/such/project/ses_1"),
        "{}",
        d.display()
    );
    let d = dir_for(
        Path::new("/h/.murmur/formations/frm_1/coder-not-there"),
        "ses_2",
    );
    assert!(d.ends_with("records/h/.murmur/formations/frm_1/coder-not-there/ses_2"));
}

#[test]
fn create_makes_owner_only_folders_and_refuses_to_reuse_one() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("records/home/u/proj/ses_1");
    let r = Records::create_at(dir.clone(), "ses_1").unwrap();
    assert_eq!(r.session_id, "ses_1");
    for p in [
        root.path().join("records"),
        root.path().join("records/home/u/proj"),
        dir.clone(),
    ] {
        assert_eq!(mode(&p), 0o700, "{}", p.display());
    }
    for sub in SUBDIRS {
        assert_eq!(mode(&dir.join(sub)), 0o700, "{sub}");
    }
    assert_eq!(r.trace_path(), dir.join("trace.jsonl"));
    assert_eq!(r.result_path(), dir.join("out/result.txt"));
    let err = Records::create_at(dir.clone(), "ses_1").unwrap_err();
    assert_eq!(err.code, catalogue::E_REC_001);
    assert!(err.message.contains("ses_1"), "{}", err.message);
}

#[test]
fn a_failed_create_leaves_nothing_behind() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("file"), "x").unwrap();
    let err = Records::create_at(root.path().join("file/ses_1"), "ses_1").unwrap_err();
    assert_eq!(err.code, catalogue::E_REC_001);
    assert_eq!(
        std::fs::read_to_string(root.path().join("file")).unwrap(),
        "x"
    );
}

#[test]
fn murmur_md_identity_names_the_roster_name_and_formation_only_in_one() {
    let root = tempfile::tempdir().unwrap();
    let r = Records::create_at(root.path().join("ses_1"), "ses_1").unwrap();
    let mut id = Identity {
        session_id: "ses_1".into(),
        capsule: "local/coder".into(),
        version: "1.2.0".into(),
        roster_name: Some("back-end".parse().unwrap()),
        formation_id: Some("frm_9".into()),
    };
    let text = r.write_murmur_md(&id, Path::new("/w")).unwrap();
    assert_eq!(std::fs::read_to_string(r.murmur_md_path()).unwrap(), text);
    assert!(text.contains(
        "## Identity\n\n- Session: ses_1\n- Capsule: local/coder 1.2.0\n\
         - Roster name: back-end\n- Formation: frm_9\n\n## Folders\n\n- Work folder: /w\n"
    ));
    assert_eq!(mode(&r.murmur_md_path()), 0o600);
    id.roster_name = None;
    id.formation_id = None;
    let text = murmur_md(&id, Path::new("/w"), &r);
    assert!(!text.contains("Roster name") && !text.contains("Formation"));
}

#[test]
fn result_lines_for_every_outcome() {
    let cases = [
        (
            Outcome::InputRequired {
                question: "which\nfile?".into(),
            },
            "input-required: which file?\n",
        ),
        (
            Outcome::Rejected {
                reason: "no".into(),
            },
            "rejected: no\n",
        ),
        (
            Outcome::Failed {
                reason: "  ".into(),
            },
            "failed: no reason given\n",
        ),
        (Outcome::Canceled, "canceled: formation ended\n"),
        (
            Outcome::Completed {
                message: Some("done\n".into()),
                artifacts: vec![],
            },
            "completed\ndone\n",
        ),
    ];
    for (outcome, want) in cases {
        assert_eq!(result_text(&outcome, "formation ended", &[]), want);
    }
}

#[test]
fn completed_results_list_artifacts_and_save_file_bytes_safely() {
    let root = tempfile::tempdir().unwrap();
    let r = Records::create_at(root.path().join("ses_1"), "ses_1").unwrap();
    std::fs::write(r.result_path(), "canceled: old\n").unwrap();
    let outcome = Outcome::Completed {
        message: Some("see below".into()),
        artifacts: vec![
            Artifact::text("notes", "line one"),
            Artifact {
                artifact_id: "a2".into(),
                name: None,
                description: None,
                parts: vec![
                    Part::Data(json!({"n": 1})),
                    Part::File {
                        filename: Some("../../etc/passwd".into()),
                        media_type: Some("text/plain".into()),
                        content: FileContent::Bytes(b"root".to_vec()),
                    },
                    Part::File {
                        filename: None,
                        media_type: None,
                        content: FileContent::Url("https://x.invalid/a".into()),
                    },
                ],
            },
        ],
    };
    r.write_result(&outcome, "").unwrap();
    assert_eq!(
        std::fs::read_to_string(r.result_path()).unwrap(),
        "completed\nsee below\n\n=== artifact: notes\nline one\n\n=== artifact: a2\n\
         {\n  \"n\": 1\n}\nfile: ../../etc/passwd (text/plain, 4 bytes) saved as out/files/2-2-passwd\n\
         file: (unnamed) (application/octet-stream) at https://x.invalid/a\n"
    );
    assert_eq!(
        std::fs::read(r.out_dir().join("files/2-2-passwd")).unwrap(),
        b"root"
    );
    // Beside the result only the spare it was exchanged with: the previous result.
    let mut names: Vec<_> = std::fs::read_dir(r.out_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [".result.next", "files", "result.txt"]);
    assert_eq!(
        std::fs::read_to_string(r.out_dir().join(".result.next")).unwrap(),
        "canceled: old\n"
    );
}

#[test]
fn each_result_replaces_the_last_whole_whatever_their_lengths() {
    let root = tempfile::tempdir().unwrap();
    let r = Records::create_at(root.path().join("ses_1"), "ses_1").unwrap();
    let long = Outcome::Failed {
        reason: "x".repeat(5000),
    };
    let short = Outcome::Rejected {
        reason: "no".into(),
    };
    for (i, outcome) in [&long, &short, &long, &short, &short]
        .into_iter()
        .enumerate()
    {
        r.write_result(outcome, "").unwrap();
        let want = result_text(outcome, "", &[]);
        assert_eq!(
            std::fs::read_to_string(r.result_path()).unwrap(),
            want,
            "result {i}"
        );
        let mode = std::fs::metadata(r.result_path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn a_symlink_planted_as_the_spare_is_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let r = Records::create_at(root.path().join("ses_1"), "ses_1").unwrap();
    let victim = root.path().join("victim");
    std::fs::write(&victim, "keep me").unwrap();
    std::os::unix::fs::symlink(&victim, r.out_dir().join(".result.next")).unwrap();
    let err = r
        .write_result(
            &Outcome::Rejected {
                reason: "no".into(),
            },
            "",
        )
        .unwrap_err();
    assert_eq!(err.code, catalogue::E_REC_001);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
}

/// out/ is named to a harness (MURMUR_OUT): a symlink it puts at out/files (or at
/// out/ itself) takes no file part's bytes elsewhere.
#[test]
fn symlinks_planted_at_out_files_or_out_are_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let r = Records::create_at(root.path().join("ses_1"), "ses_1").unwrap();
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, r.out_dir().join("files")).unwrap();
    let outcome = Outcome::Completed {
        message: None,
        artifacts: vec![Artifact {
            artifact_id: "a1".into(),
            name: None,
            description: None,
            parts: vec![Part::File {
                filename: Some("x.txt".into()),
                media_type: None,
                content: FileContent::Bytes(b"bytes".to_vec()),
            }],
        }],
    };
    let err = r.write_result(&outcome, "").unwrap_err();
    assert_eq!(err.code, catalogue::E_REC_001);
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // out/ itself swapped for a link: the result goes nowhere.
    std::fs::remove_file(r.out_dir().join("files")).unwrap();
    std::fs::rename(r.out_dir(), root.path().join("old-out")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, r.out_dir()).unwrap();
    let rejected = Outcome::Rejected {
        reason: "no".into(),
    };
    assert!(r.write_result(&rejected, "").is_err());
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn safe_names_stay_in_their_folder() {
    assert_eq!(safe_name("../../x"), "x");
    assert_eq!(safe_name(".."), "file");
    assert_eq!(safe_name(".hidden"), "hidden");
    assert_eq!(safe_name("a b/c d.txt"), "c_d.txt");
    assert_eq!(safe_name(""), "file");
}

#[test]
fn sessions_are_found_anywhere_under_the_root_in_start_order() {
    let root = tempfile::tempdir().unwrap();
    let records = root.path().join("records");
    let b = crate::ids::SessionId::mint().to_string();
    let a = crate::ids::SessionId::mint().to_string();
    let peer = Records::create_at(
        records
            .join("home/u/.murmur/formations/frm_1/coder")
            .join(&b),
        &b,
    )
    .unwrap();
    let entry = Records::create_at(records.join("home/u/proj").join(&a), &a).unwrap();
    for r in [&peer, &entry] {
        crate::trace::TraceWriter::create(&r.trace_path()).unwrap();
    }
    // A ses_ folder with no trace, and one inside a session's home/, are not sessions.
    std::fs::create_dir_all(records.join("home/u/other/ses_x")).unwrap();
    let inner = entry.home_dir().join("ses_inner");
    std::fs::create_dir_all(&inner).unwrap();
    std::fs::write(inner.join("trace.jsonl"), "").unwrap();

    let found: Vec<String> = find_sessions(&records)
        .into_iter()
        .map(|r| r.session_id)
        .collect();
    assert_eq!(found, [b.clone(), a.clone()]);
    assert_eq!(find_session(&records, &a).unwrap().dir, entry.dir);
    assert!(find_session(&records, "ses_x").is_none());
    assert!(find_sessions(&root.path().join("none")).is_empty());
}

#[test]
fn start_makes_the_directory_the_trace_and_murmur_md() {
    let root = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let id = crate::ids::SessionId::mint().to_string();
    let identity = Identity {
        session_id: id.clone(),
        capsule: "local/coder".into(),
        version: "1.2.0".into(),
        roster_name: Some("coder".parse().unwrap()),
        formation_id: Some("frm_1".into()),
    };
    let info = StartInfo {
        sha256: Some("ab".repeat(32)),
        callees: None,
        unconfined: None,
    };
    let s = start(root.path(), work.path(), &identity, &info).unwrap();
    let real_work = std::fs::canonicalize(work.path()).unwrap();
    assert_eq!(
        s.records.dir,
        root.path().join(paths::strip_root(&real_work)).join(&id)
    );
    let trace = crate::trace::read(&s.records.trace_path()).unwrap();
    assert_eq!(trace.records.len(), 1);
    let crate::trace::Event::SessionStart {
        session_id,
        formation_member,
        formation_callees,
        workdir,
        pid,
        ..
    } = &trace.records[0].event
    else {
        panic!("not session_start")
    };
    assert_eq!(session_id, &id);
    assert_eq!(formation_member.as_deref(), Some("coder"));
    assert_eq!(formation_callees.as_deref(), Some(&[][..]));
    assert_eq!(workdir, &real_work);
    assert_eq!(*pid, std::process::id());
    assert!(s.murmur_md.contains("- Formation: frm_1"));
    // Nothing was made in the work folder.
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0);
    // The same session cannot start twice, and the refusal leaves the first intact.
    let again = start(root.path(), work.path(), &identity, &info).unwrap_err();
    assert_eq!(again.code, catalogue::E_REC_001, "{again}");
    assert!(s.records.trace_path().is_file());
}
