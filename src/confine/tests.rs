use std::net::IpAddr;

use super::proxy::{decide, special};

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn special_addresses_include_mapped_and_nat64_forms() {
    for (a, kind) in [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.1", "private"),
        ("169.254.169.254", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("100.64.0.1", "shared (carrier NAT)"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("64:ff9b::a00:1", "private"),
        ("fd00::1", "unique local"),
        ("fe80::1", "link-local"),
    ] {
        assert_eq!(special(ip(a)), Some(kind), "{a}");
    }
    for a in ["93.184.216.34", "2606:2800:220:1::1"] {
        assert_eq!(special(ip(a)), None, "{a}");
    }
}

#[tokio::test]
async fn a_special_address_is_reached_only_by_naming_it() {
    let allow = vec!["127.0.0.1:8080".to_string(), "10.0.0.5".to_string()];
    assert_eq!(
        decide(&allow, "127.0.0.1", 8080).await.unwrap().to_string(),
        "127.0.0.1:8080"
    );
    let e = decide(&allow, "127.0.0.1", 8081).await.unwrap_err();
    assert!(e.contains("is not in capabilities.network.allow"), "{e}");
    // A mapped form of an allowed address is a different host string: not listed.
    let e = decide(&allow, "[::ffff:127.0.0.1]", 8080)
        .await
        .unwrap_err();
    assert!(e.contains("not in capabilities.network.allow"), "{e}");
    assert!(decide(&allow, "10.0.0.5", 22).await.is_ok());
    let e = decide(&[], "example.com", 443).await.unwrap_err();
    assert_eq!(
        e,
        "example.com:443 is not in capabilities.network.allow (empty)"
    );
}

#[test]
fn only_native_processes_need_the_kernel() {
    use super::net::Kernel;
    use super::start::check;
    let none = Kernel {
        release: "5.4.0".into(),
        landlock_abi: 0,
        netns: Ok(()),
    };
    let parse = |t: &str| crate::manifest::parse(t, std::path::Path::new("murmur.yaml")).unwrap();
    let wasm = parse("name: w\nversion: 0.1.0\ndescription: x\nagent:\n  transport: builtin\n");
    assert!(check("w", &wasm, false, &none).unwrap().is_none());
    let shell = parse(
        "name: s\nversion: 0.1.0\ndescription: x\nagent:\n  transport: builtin\ncapabilities:\n  shell: {}\n",
    );
    let e = check("s", &shell, false, &none).unwrap_err();
    assert!(e.to_string().contains("E-RUN-054"), "{e}");
    assert!(e.to_string().contains("s starts shell commands"), "{e}");
    let old = Kernel {
        release: "6.8.0".into(),
        landlock_abi: 4,
        netns: Ok(()),
    };
    let e = check("s", &shell, false, &old).unwrap_err();
    assert!(
        e.to_string().contains(
            "Landlock ABI 6 (kernel 6.8.0 has ABI 4: no signal or abstract-socket scopes)"
        ),
        "{e}"
    );
    let (how, w) = check("s", &shell, true, &none).unwrap().unwrap();
    assert_eq!(how, "--unconfined");
    assert!(w.to_string().contains("W-RUN-011"), "{w}");
}

#[test]
fn the_tier_is_netns_where_namespaces_work_and_landlock_otherwise() {
    use super::net::{Kernel, Tier};
    let mut k = Kernel {
        release: "6.18.0".into(),
        landlock_abi: 7,
        netns: Ok(()),
    };
    assert_eq!(k.tier(), Some(Tier::Netns));
    k.netns = Err("EPERM".into());
    assert_eq!(k.tier(), Some(Tier::Landlock));
    assert_eq!(
        super::start::tier_line(&k),
        "landlock (tier netns is not available: EPERM); cannot stop: a TCP connect to any address on the proxy's port (Landlock matches ports, not addresses); TLS contents"
    );
    k.landlock_abi = 0;
    assert_eq!(k.tier(), None);
    // This machine (and CI) has unprivileged user and network namespaces.
    assert_eq!(Kernel::probe().netns, Ok(()), "the namespace probe");
}

/// A formation peer's own folder under `~/.murmur/formations/<frm_id>/<member>/` is a
/// work folder (it holds nothing of mur's but its own files); `formations/` itself, a
/// formation's folder, and any other place in `~/.murmur` are not, nor is a grant that
/// climbs out of the peer's folder into mur's.
#[test]
fn a_peer_s_own_folder_is_the_one_work_folder_inside_murmur() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let murmur = home.join(".murmur");
    let peer = murmur.join("formations/frm_1/helper");
    std::fs::create_dir_all(peer.join("data")).unwrap();
    std::fs::create_dir_all(murmur.join("running")).unwrap();
    let plan = |workdir: &std::path::Path, files: &crate::manifest::Files| {
        super::Plan::new(&super::Inputs {
            workdir,
            session_dirs: vec![],
            capsule_read: vec![],
            files,
            user_home: &home,
            murmur_home: &murmur,
            network: vec![],
        })
    };
    let none = crate::manifest::Files::default();
    let plan_ok = plan(&peer, &none).unwrap();
    assert!(plan_ok.rules.write.contains(&peer.canonicalize().unwrap()));
    for refused in [
        murmur.join("formations"),
        murmur.join("formations/frm_1"),
        murmur.join("running"),
        murmur.clone(),
        home.clone(),
    ] {
        let e = plan(&refused, &none).unwrap_err();
        assert!(
            e.contains("holds or lies in mur's folder"),
            "{refused:?}: {e}"
        );
    }
    let inside = crate::manifest::Files {
        read: vec!["data".into()],
        ..Default::default()
    };
    assert!(plan(&peer, &inside).is_ok());
    let climbs = crate::manifest::Files {
        read: vec!["~/.murmur/running".into()],
        ..Default::default()
    };
    let e = plan(&peer, &climbs).unwrap_err();
    assert!(e.contains("would expose mur's folder"), "{e}");
}
