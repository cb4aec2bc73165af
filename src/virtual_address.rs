//! The virtual addresses `<member>.formation.invalid` a member's components call
//! (the spec's "What a member's components are handed"): the one reading of such a
//! host. A leaf, because the door (its Agent Card), the member's routing
//! (call_member) and the component host all read it.

use crate::ids::MemberName;

/// Every virtual address is under this name; `.invalid` never resolves (RFC 2606).
pub const VIRTUAL_DOMAIN: &str = "formation.invalid";

/// The name a host under formation.invalid gives (`coder` for
/// `coder.formation.invalid`, empty for the domain itself); `None` for any other host.
/// `host` in lower case. The one reading of a virtual address: routing, the
/// components' requests and the door's Agent Card all go through it.
pub fn virtual_member(host: &str) -> Option<&str> {
    if host == VIRTUAL_DOMAIN {
        return Some("");
    }
    host.strip_suffix(VIRTUAL_DOMAIN)?.strip_suffix('.')
}

/// Whether `host` is a virtual member address, `<member name>.formation.invalid`.
pub fn is_virtual_host(host: &str) -> bool {
    virtual_member(host).is_some_and(MemberName::is_valid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_virtual_host_is_a_member_name_under_the_domain() {
        assert!(is_virtual_host("coder.formation.invalid"));
        for not in [
            "formation.invalid",
            ".formation.invalid",
            "Coder.formation.invalid",
            "a.b.formation.invalid",
            "coder.formation.invalid.evil",
            "coderformation.invalid",
            "127.0.0.1:8080",
        ] {
            assert!(!is_virtual_host(not), "{not}");
        }
    }
}
