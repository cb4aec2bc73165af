use std::path::Path;

use rstest::rstest;

use super::*;
use Executor::{Component, Delegate, Harness, Shell};

/// mur's environment in the table: every variable of a row is set, to `mur:<NAME>`.
const NAMES: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "MURMUR_SESSION_ID",
    "MURMUR_FORMATION_ID",
    "MURMUR_X",
    "MURMUR_ALLOW_ROOT",
    "ALLOWED",
    "UNLISTED",
    "API_KEY",
    "DOOR_TOKEN",
    "HTTP_PROXY",
    "https_proxy",
    "NO_PROXY",
    "all_proxy",
];

fn session() -> Session {
    Session {
        id: "ses_1".into(),
        workdir: "/w".into(),
        home: "/r/home".into(),
        out: "/r/out".into(),
        tmp: "/r/tmp".into(),
        proxy: None,
    }
}

/// What `executor` sees of `name` when the capsule's list (env.allow or
/// baseline_env) names every variable but UNLISTED, and its model key is API_KEY and
/// its door's credential DOOR_TOKEN.
fn seen(executor: Executor, name: &str) -> Option<String> {
    let vars: Vec<(String, String)> = NAMES
        .iter()
        .map(|n| (n.to_string(), format!("mur:{n}")))
        .collect();
    let listed: Vec<String> = NAMES
        .iter()
        .filter(|n| **n != "UNLISTED")
        .map(|n| n.to_string())
        .collect();
    let credentials = Credentials {
        api_key: Some("API_KEY".into()),
        door: vec!["DOOR_TOKEN".into()],
    };
    let s = session();
    let native = matches!(executor, Harness | Shell).then_some(&s);
    let env = env(executor, &listed, &credentials, native, &vars);
    let got: Vec<_> = env.iter().filter(|(k, _)| k == name).collect();
    assert!(got.len() <= 1, "{name} set twice: {env:?}");
    got.first().map(|(_, v)| v.clone())
}

/// One row per executor and variable: the value the child gets, or none.
#[rstest]
// MURMUR_*: only the runtime's own, for the executor documented to get them.
#[case::component_murmur_own(Component, "MURMUR_SESSION_ID", None)]
#[case::component_murmur_other(Component, "MURMUR_X", None)]
#[case::harness_murmur_own(Harness, "MURMUR_SESSION_ID", Some("ses_1"))]
#[case::harness_murmur_formation(Harness, "MURMUR_FORMATION_ID", None)]
#[case::harness_murmur_other(Harness, "MURMUR_X", None)]
#[case::shell_murmur_own(Shell, "MURMUR_SESSION_ID", None)]
#[case::shell_murmur_other(Shell, "MURMUR_X", None)]
#[case::delegate_murmur_formation(Delegate, "MURMUR_FORMATION_ID", None)]
#[case::delegate_murmur_other(Delegate, "MURMUR_X", None)]
#[case::delegate_allow_root(Delegate, "MURMUR_ALLOW_ROOT", Some("mur:MURMUR_ALLOW_ROOT"))]
#[case::harness_allow_root(Harness, "MURMUR_ALLOW_ROOT", None)]
// HOME and TMPDIR: the session's for its native executors; mur's for mur itself.
#[case::component_home(Component, "HOME", None)]
#[case::component_tmpdir(Component, "TMPDIR", None)]
#[case::harness_home(Harness, "HOME", Some("/r/home"))]
#[case::harness_tmpdir(Harness, "TMPDIR", Some("/r/tmp"))]
#[case::shell_home(Shell, "HOME", Some("/r/home"))]
#[case::shell_tmpdir(Shell, "TMPDIR", Some("/r/tmp"))]
#[case::delegate_home(Delegate, "HOME", Some("mur:HOME"))]
#[case::delegate_tmpdir(Delegate, "TMPDIR", Some("mur:TMPDIR"))]
// env.allow / baseline_env pass names from mur's environment, and only those.
#[case::component_allowed(Component, "ALLOWED", Some("mur:ALLOWED"))]
#[case::component_unlisted(Component, "UNLISTED", None)]
#[case::harness_allowed(Harness, "ALLOWED", Some("mur:ALLOWED"))]
#[case::harness_unlisted(Harness, "UNLISTED", None)]
#[case::harness_path(Harness, "PATH", Some("mur:PATH"))]
#[case::shell_allowed(Shell, "ALLOWED", Some("mur:ALLOWED"))]
#[case::shell_unlisted(Shell, "UNLISTED", None)]
#[case::delegate_unlisted(Delegate, "UNLISTED", Some("mur:UNLISTED"))]
// The model's key: no capsule executor; the delegate (mur, for its own model) keeps it.
#[case::component_api_key(Component, "API_KEY", None)]
#[case::harness_api_key(Harness, "API_KEY", None)]
#[case::shell_api_key(Shell, "API_KEY", None)]
#[case::delegate_api_key(Delegate, "API_KEY", Some("mur:API_KEY"))]
// The door's credentials: no child at all.
#[case::component_door(Component, "DOOR_TOKEN", None)]
#[case::harness_door(Harness, "DOOR_TOKEN", None)]
#[case::shell_door(Shell, "DOOR_TOKEN", None)]
#[case::delegate_door(Delegate, "DOOR_TOKEN", None)]
// Proxies: never from mur's environment to a capsule executor.
#[case::component_proxy(Component, "HTTP_PROXY", None)]
#[case::harness_proxy(Harness, "https_proxy", None)]
#[case::harness_no_proxy(Harness, "NO_PROXY", None)]
#[case::shell_proxy(Shell, "all_proxy", None)]
#[case::shell_no_proxy(Shell, "NO_PROXY", None)]
#[case::delegate_proxy(Delegate, "HTTP_PROXY", Some("mur:HTTP_PROXY"))]
fn the_rule(#[case] executor: Executor, #[case] name: &str, #[case] expected: Option<&str>) {
    assert_eq!(seen(executor, name).as_deref(), expected);
}

#[test]
fn the_harness_has_a_path_even_when_mur_has_none() {
    let s = session();
    let env = env(Harness, &[], &Credentials::default(), Some(&s), &[]);
    assert!(
        env.contains(&("PATH".into(), DEFAULT_PATH.into())),
        "{env:?}"
    );
    assert!(
        env.contains(&("MURMUR_WORKDIR".into(), "/w".into())),
        "{env:?}"
    );
    assert!(
        env.contains(&("MURMUR_OUT".into(), "/r/out".into())),
        "{env:?}"
    );
}

#[test]
fn a_credential_listed_as_passed_is_warned_about_with_the_reason() {
    let credentials = Credentials {
        api_key: Some("API_KEY".into()),
        door: vec!["DOOR_TOKEN".into()],
    };
    let allow = ["API_KEY", "FINE"].map(String::from);
    let baseline = ["DOOR_TOKEN", "PATH"].map(String::from);
    let lists = [
        ("capabilities.env.allow", &allow[..]),
        ("capabilities.shell.baseline_env", &baseline[..]),
    ];
    let w = credential_warnings("leaky", &credentials, &lists, Path::new("murmur.yaml"));
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w.iter().all(|d| d.code == W_MAN_001));
    assert!(
        w[0].message
            .starts_with("leaky: capabilities.env.allow names API_KEY")
            && w[0].message.contains("agent.api_key_env"),
        "{}",
        w[0].message
    );
    assert!(
        w[1].message
            .contains("capabilities.shell.baseline_env names DOOR_TOKEN")
            && w[1].message.contains("reaches no child"),
        "{}",
        w[1].message
    );
}

#[test]
fn a_confined_harness_and_shell_get_the_sessions_proxy_and_never_murs() {
    let vars = vec![
        ("HTTPS_PROXY".to_string(), "http://mine:1".to_string()),
        ("no_proxy".to_string(), "*".to_string()),
    ];
    let listed = vec!["HTTPS_PROXY".to_string(), "no_proxy".to_string()];
    let confined = Session {
        proxy: Some("http://127.0.0.1:9".into()),
        ..session()
    };
    for executor in [Executor::Harness, Executor::Shell] {
        let out = env(
            executor,
            &listed,
            &Credentials::default(),
            Some(&confined),
            &vars,
        );
        for k in PROXY_SET {
            let got: Vec<_> = out.iter().filter(|(n, _)| n == k).collect();
            assert_eq!(got.len(), 1, "{executor:?} {k}: {out:?}");
            assert_eq!(got[0].1, "http://127.0.0.1:9", "{executor:?} {k}");
        }
        assert!(!out.iter().any(|(k, _)| k == "no_proxy"), "{out:?}");
        let open = env(
            executor,
            &listed,
            &Credentials::default(),
            Some(&session()),
            &vars,
        );
        assert!(
            !open.iter().any(|(k, _)| PROXY.contains(&k.as_str())),
            "{executor:?} unconfined: {open:?}"
        );
    }
    let component = env(
        Executor::Component,
        &listed,
        &Credentials::default(),
        Some(&confined),
        &vars,
    );
    assert!(!component.iter().any(|(k, _)| PROXY.contains(&k.as_str())));
}
