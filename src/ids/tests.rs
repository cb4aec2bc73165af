use super::*;

#[test]
fn minted_ids_parse_sort_by_time_and_carry_it() {
    let before = SystemTime::now() - Duration::from_millis(1);
    let a = SessionId::mint();
    std::thread::yield_now();
    let b = SessionId::mint();
    assert!(a <= b);
    assert_eq!(a.as_str().parse::<SessionId>().unwrap(), a);
    let at = a.minted_at();
    assert!(at >= before && at <= SystemTime::now() + Duration::from_millis(1));
    for id in [a.as_str(), b.as_str()] {
        let uuid = uuid::Uuid::parse_str(&id[4..]).unwrap();
        assert_eq!(uuid.get_version_num(), 7, "{id}");
    }
    let f = FormationId::mint();
    assert!(f.as_str().starts_with("frm_"));
    assert_eq!(f.to_string().parse::<FormationId>().unwrap(), f);
}

#[test]
fn minted_at_reads_the_first_48_bits() {
    let id: FormationId = "frm_0199c4e2f1b7712a9d3e4f5061728394".parse().unwrap();
    assert_eq!(
        id.minted_at(),
        UNIX_EPOCH + Duration::from_millis(0x0199c4e2f1b7)
    );
}

#[test]
fn ids_refuse_other_prefixes_lengths_cases_versions_and_paths() {
    for bad in [
        "",
        "ses_",
        "frm_0199c4e2f1b7712a9d3e4f5061728394", // a formation id is not a session id
        "ses_0199c4e2f1b7712a9d3e4f506172839",  // 31 digits
        "ses_0199C4E2F1B7712A9D3E4F5061728394", // upper case
        "ses_0199c4e2f1b7412a9d3e4f5061728394", // UUIDv4
        "ses_0199c4e2f1b7712a9d3e4f50617283zz",
        "../ses_0199c4e2f1b7712a9d3e4f5061728394",
        "ses_0199c4e2f1b7712a9d3e4f5061728394/..",
        "ses_../../../../../../../etc/passwd",
    ] {
        let e = bad.parse::<SessionId>().unwrap_err();
        assert_eq!(e.to_string(), format!("`{bad}` is not a session id"));
    }
    assert!(
        "ses_0199c4e2f1b7712a9d3e4f5061728394"
            .parse::<FormationId>()
            .is_err()
    );
}

#[test]
fn member_names_follow_the_roster_rule() {
    for good in ["a", "coder", "a-1", &format!("a{}", "b".repeat(31))] {
        assert!(good.parse::<MemberName>().is_ok(), "{good}");
    }
    for bad in [
        "",
        "1a",
        "-a",
        "Coder",
        "a_b",
        "a.b",
        "..",
        "a/b",
        "../etc",
        &format!("a{}", "b".repeat(32)),
    ] {
        let e = bad.parse::<MemberName>().unwrap_err();
        assert_eq!(e.to_string(), format!("`{bad}` is not a member name"));
    }
}

#[test]
fn artifact_names_are_scope_slash_name() {
    let n: ArtifactName = "local/coder".parse().unwrap();
    assert_eq!(n.to_string(), "local/coder");
    for bad in [
        "coder",
        "local/",
        "/coder",
        "local/coder/x",
        "../coder",
        "local/..",
        "Local/coder",
        &format!("local/a{}", "b".repeat(64)),
    ] {
        assert!(bad.parse::<ArtifactName>().is_err(), "{bad}");
    }
}

#[test]
fn serde_goes_through_from_str() {
    let id = SessionId::mint();
    let json = serde_json::to_string(&id).unwrap();
    assert_eq!(json, format!("\"{id}\""));
    assert_eq!(serde_json::from_str::<SessionId>(&json).unwrap(), id);
    let e = serde_json::from_str::<SessionId>("\"../x\"").unwrap_err();
    assert!(e.to_string().contains("`../x` is not a session id"), "{e}");
}

#[test]
fn sha256_is_64_lowercase_hex() {
    let d = Sha256::of(b"test");
    assert_eq!(
        d.as_str(),
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    );
    assert_eq!(d.as_str().parse::<Sha256>().unwrap(), d);
    for bad in [
        "",
        "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08",
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a0",
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08/",
        "../../../../../../../../../../../../../../../../../../../etc/pwd",
    ] {
        let e = bad.parse::<Sha256>().unwrap_err();
        assert_eq!(e.to_string(), format!("`{bad}` is not a sha256"));
    }
}

#[test]
fn names_honour_width_and_alignment() {
    let name: MemberName = "coder".parse().unwrap();
    assert_eq!(format!("[{name:<7}]"), "[coder  ]");
    assert_eq!(format!("[{name:>7}]"), "[  coder]");
}
