//! The value rules of murmur.yaml that are more than a type: names, versions,
//! durations, paths inside the capsule, environment variable names and hosts.
//! Each returns `Err(reason)`; the reader turns it into a coded fault at the node.

use std::time::Duration;

/// Words that name a moving target, never an exact version.
const MOVING_VERSIONS: [&str; 3] = ["latest", "stable", "edge"];

/// A capsule name without its scope: `^[a-z][a-z0-9-]{0,63}$`.
pub fn capsule_name(name: &str) -> Result<(), String> {
    word(name, 64, |c| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
    })
    .map_err(|()| {
        "must start with a lowercase letter, then up to 63 lowercase letters, digits or `-`"
            .to_string()
    })
}

/// A tool's name as the model sees it: `^[a-z][a-z0-9_-]{0,63}$`.
pub fn tool_name(name: &str) -> Result<(), String> {
    word(name, 64, |c| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_'
    })
    .map_err(|()| {
        "must start with a lowercase letter, then up to 63 lowercase letters, digits, `-` or `_`"
            .to_string()
    })
}

/// A full artifact name, `<scope>/<name>`, each part a capsule name.
pub fn artifact_name(name: &str) -> Result<(), String> {
    match name.split_once('/') {
        Some((scope, bare)) if capsule_name(scope).is_ok() && capsule_name(bare).is_ok() => Ok(()),
        Some(_) => {
            Err("must be `<scope>/<name>`, each part a lowercase name such as `local/coder`".into())
        }
        None => Err(format!(
            "is a bare name; write it with its scope, such as `local/{name}`"
        )),
    }
}

/// A `capabilities.spawn.allow` entry: `<scope>/<name>`, or `<scope>/*` for every
/// capsule of a scope.
pub fn spawn_pattern(pattern: &str) -> Result<(), String> {
    match pattern.split_once('/') {
        Some((scope, "*")) if capsule_name(scope).is_ok() => Ok(()),
        _ => artifact_name(pattern).map_err(|_| {
            "must be `<scope>/<name>` or `<scope>/*`, such as `local/coder`".to_string()
        }),
    }
}

/// An exact version: not blank, not a moving word, and safe as one path component.
pub fn version(v: &str) -> Result<(), String> {
    if v.trim().is_empty() {
        return Err("is blank".into());
    }
    if MOVING_VERSIONS.iter().any(|m| m.eq_ignore_ascii_case(v)) {
        return Err(format!("`{v}` names a moving target, not an exact version"));
    }
    let first_ok = v.starts_with(|c: char| c.is_ascii_alphanumeric());
    let rest_ok = v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'));
    if !first_ok || !rest_ok || v.len() > 64 {
        return Err(
            "must be up to 64 letters, digits, `.`, `-`, `+` or `_`, starting with a letter or digit"
                .into(),
        );
    }
    Ok(())
}

/// A duration written as a whole number and one unit: `45s`, `90m`, `12h`, `30d`.
pub fn duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("`{text}` is not a duration such as `45s`, `90m`, `12h` or `30d`");
    let t = text.trim();
    let unit_at = t.find(|c: char| !c.is_ascii_digit()).ok_or_else(|| {
        format!("`{text}` has no unit; write it with one, such as `{t}s` or `{t}d`")
    })?;
    let (digits, unit) = t.split_at(unit_at);
    if digits.is_empty() {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let per = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    let secs = n
        .checked_mul(per)
        .ok_or_else(|| format!("`{text}` is too long a duration"))?;
    if secs == 0 {
        return Err(format!("`{text}` is zero; leave the key out instead"));
    }
    Ok(Duration::from_secs(secs))
}

/// A relative path to a file inside the capsule: no leading `/`, no `..`, no `\`.
pub fn capsule_path(path: &str) -> Result<(), String> {
    if path.trim().is_empty() {
        return Err("is blank".into());
    }
    if path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return Err(format!(
            "`{path}` must be a relative path inside the capsule, written with `/`"
        ));
    }
    if path.split('/').any(|part| part == "..") {
        return Err(format!("`{path}` leaves the capsule through `..`"));
    }
    if path.ends_with('/') {
        return Err(format!("`{path}` names a folder, not a file"));
    }
    Ok(())
}

/// A `.wasm` component inside the capsule.
pub fn component_path(path: &str) -> Result<(), String> {
    capsule_path(path)?;
    if !path.ends_with(".wasm") {
        return Err(format!("`{path}` is not a `.wasm` component"));
    }
    Ok(())
}

/// An environment variable name: `^[A-Za-z_][A-Za-z0-9_]*$`.
pub fn env_name(name: &str) -> Result<(), String> {
    let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.len() <= 256
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not an environment variable name (letters, digits and `_`, not starting with a digit)"
        ))
    }
}

/// A `capabilities.files` path: absolute, `~/…` (the user's home) or relative to the
/// work folder; no `..` (a grant names the tree it means, never climbs out of it).
pub fn file_grant(path: &str) -> Result<(), String> {
    let bad = |why: &str| format!("`{path}` {why}; write `/srv/data`, `~/datasets` or `data`");
    if path.is_empty() || path.contains('\0') {
        return Err(bad("is empty or holds a NUL"));
    }
    if path.split('/').any(|c| c == "..") {
        return Err(bad("climbs with `..`"));
    }
    if path.starts_with('~') && path != "~" && !path.starts_with("~/") {
        return Err(bad("names another user's home"));
    }
    Ok(())
}

/// A host a component may reach: `localhost`, `api.example.com`, `*.example.com`,
/// an IP address, each optionally with `:port`. No scheme and no path.
pub fn host(entry: &str) -> Result<(), String> {
    let bad = |why: &str| {
        format!("`{entry}` {why}; write a bare host such as `api.example.com` or `localhost:8080`")
    };
    if entry.contains("://") {
        return Err(bad("has a scheme"));
    }
    if entry.contains('/') {
        return Err(bad("has a path"));
    }
    let (name, port) = match entry.rsplit_once(':') {
        // An IPv6 address in brackets may hold colons of its own.
        Some((n, p)) if !n.contains(':') || n.ends_with(']') => (n, Some(p)),
        _ => (entry, None),
    };
    if let Some(p) = port
        && p.parse::<u16>().map_or(true, |p| p == 0)
    {
        return Err(bad("has a bad port"));
    }
    if name.starts_with('[') && name.ends_with(']') {
        return name[1..name.len() - 1]
            .parse::<std::net::Ipv6Addr>()
            .map(|_| ())
            .map_err(|_| bad("is not an IPv6 address"));
    }
    let name = name.strip_prefix("*.").unwrap_or(name);
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
        return Err(bad("is not a host name"));
    }
    Ok(())
}

/// `^[a-z]<allowed>{0,max-1}$` over ASCII.
fn word(s: &str, max: usize, allowed: impl Fn(char) -> bool) -> Result<(), ()> {
    crate::ids::is_word(s, max, allowed).then_some(()).ok_or(())
}

/// The reach rule (`call_member::reaches`, the egress proxy) for a host whose port may not be known yet (`None`): then only an
/// entry without a port reaches it.
pub fn reaches_host(allow: &[String], host: &str, port: Option<u16>) -> bool {
    allow.iter().any(|entry| {
        let (h, p) = split_host_port(entry);
        let host_ok = if is_loopback(h) || is_loopback(host) {
            is_loopback(h) && is_loopback(host)
        } else if let Some(domain) = h.strip_prefix("*.") {
            host.len() > domain.len() + 1
                && host
                    .to_ascii_lowercase()
                    .ends_with(&format!(".{}", domain.to_ascii_lowercase()))
        } else {
            h.eq_ignore_ascii_case(host)
        };
        host_ok && p.is_none_or(|p| Some(p) == port)
    })
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]"
}

/// `host[:port]`, `[v6][:port]`: an allow-list entry split (the egress proxy reads it too).
pub fn split_host_port(entry: &str) -> (&str, Option<u16>) {
    let entry = entry.trim();
    if entry.starts_with('[') {
        if let Some(end) = entry.find(']') {
            let port = entry[end + 1..]
                .strip_prefix(':')
                .and_then(|p| p.parse().ok());
            return (&entry[..=end], port);
        }
        return (entry, None);
    }
    match entry.rsplit_once(':') {
        Some((h, p)) => match p.parse() {
            Ok(p) => (h, Some(p)),
            Err(_) => (entry, None),
        },
        None => (entry, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(capsule_name("coder").is_ok());
        assert!(capsule_name("a-1").is_ok());
        assert!(capsule_name(&"a".repeat(64)).is_ok());
        for bad in ["", "1a", "-a", "Coder", "a_b", "a.b", "é", &"a".repeat(65)] {
            assert!(capsule_name(bad).is_err(), "{bad:?}");
        }
        assert!(tool_name("read_file").is_ok());
        assert!(tool_name("Read").is_err());
        assert!(artifact_name("local/coder").is_ok());
        assert!(artifact_name("coder").unwrap_err().contains("local/coder"));
        assert!(artifact_name("local/").is_err());
        assert!(artifact_name("a/b/c").is_err());
        assert!(spawn_pattern("local/*").is_ok());
        assert!(spawn_pattern("local/coder").is_ok());
        assert!(spawn_pattern("*/coder").is_err());
    }

    #[test]
    fn versions() {
        for ok in ["1.10", "0.1.0", "1.0.0-rc.1+build", "2024_01"] {
            assert!(version(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", " ", "latest", "Stable", "edge", "../x", "1/2", ".1", "1 0",
        ] {
            assert!(version(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(duration("45s"), Ok(Duration::from_secs(45)));
        assert_eq!(duration("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(duration("12h"), Ok(Duration::from_secs(43_200)));
        assert_eq!(duration("30d"), Ok(Duration::from_secs(2_592_000)));
        assert!(duration("30").unwrap_err().contains("no unit"));
        for bad in [
            "",
            "d",
            "0s",
            "1.5h",
            "-1s",
            "1w",
            "1h30m",
            "99999999999999999999d",
        ] {
            assert!(duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn paths() {
        assert!(capsule_path("INSTRUCTIONS.md").is_ok());
        assert!(capsule_path("docs/a.md").is_ok());
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a\\b", "dir/"] {
            assert!(capsule_path(bad).is_err(), "{bad:?}");
        }
        assert!(component_path("tools/t.wasm").is_ok());
        assert!(component_path("tools/t.so").is_err());
    }

    #[test]
    fn env_names_and_hosts() {
        assert!(env_name("OPENAI_API_KEY").is_ok());
        assert!(env_name("_x1").is_ok());
        for bad in ["", "1A", "A-B", "A B", "A=B"] {
            assert!(env_name(bad).is_err(), "{bad:?}");
        }
        for ok in [
            "localhost",
            "localhost:8080",
            "api.example.com",
            "*.example.com",
            "127.0.0.1",
            "[::1]:80",
        ] {
            assert!(host(ok).is_ok(), "{ok}");
        }
        for bad in [
            "", "http://x", "x/y", "a..b", "-a.com", "x:0", "x:99999", "[zz]",
        ] {
            assert!(host(bad).is_err(), "{bad:?}");
        }
    }
}
