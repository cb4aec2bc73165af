//! How far a session tree may delegate: how deep it may nest and how many delegated
//! sessions it may run at once, and how both reach a child out of its capsule's
//! reach. docs/delegation.md.
//!
//! The root session (one with no spawner lifeline) takes its limits from `mur run`'s
//! flags, else its manifest's `capabilities.spawn`, else the defaults. A child gets
//! them from its parent as the first line the parent writes on its spawner lifeline,
//! before the child starts: no environment variable, argument or file its capsule
//! could set. A child's own manifest can only lower them.
//!
//! The live limit is counted across the whole tree with a token pipe, as make's
//! jobserver does: the root fills a pipe with `max_live` bytes; a session takes one
//! (a non-blocking read) before it starts a child and puts it back once the child
//! exited. Every session of the tree holds both ends at descriptors 4 and 5,
//! close-on-exec once taken, so no harness, shell command or component sees them.
//! A session killed while its children run loses their tokens: the tree may then
//! start fewer children, never more.

use std::os::fd::{AsFd, OwnedFd};

use serde::{Deserialize, Serialize};

use crate::catalogue::E_RUN_046;
use crate::diag::{Diagnostic, Result};

/// Nesting allowed by default: the root, its children, grandchildren, great-grandchildren.
pub const DEFAULT_MAX_DEPTH: u32 = 3;
/// Delegated sessions one tree may run at once by default.
pub const DEFAULT_MAX_LIVE: u32 = 8;
/// Where a child inherits the tree's token pipe: its read end, then its write end.
pub const POOL_FDS: [i32; 2] = [4, 5];
/// A lifeline line longer than this is no delegation line.
const MAX_LINE: usize = 512;

/// What a parent tells its child on the spawner lifeline, one JSON line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    /// The child's depth: the root is 0, its children 1.
    pub depth: u32,
    pub max_depth: u32,
    pub max_live: u32,
}

/// The limits a session asked for itself: `mur run`'s flags over its manifest's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Asked {
    pub max_depth: Option<u32>,
    pub max_live: Option<u32>,
}

impl Asked {
    /// `flag` where given, else `manifest`'s.
    pub fn of(flags: Asked, manifest: &crate::manifest::Spawn) -> Asked {
        Asked {
            max_depth: flags.max_depth.or(manifest.max_depth),
            max_live: flags.max_live.or(manifest.max_live),
        }
    }
}

/// What a delegated child inherited: its line and the tree's token pipe.
#[derive(Debug)]
pub struct Inherited {
    pub line: Line,
    pool: Pool,
}

/// The tree's token pipe.
#[derive(Debug)]
struct Pool {
    read: OwnedFd,
    write: OwnedFd,
}

impl Pool {
    fn new(tokens: u32) -> std::io::Result<Pool> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let bytes = vec![b't'; tokens as usize];
        let mut left = &bytes[..];
        while !left.is_empty() {
            let n = rustix::io::write(&write, left)?;
            left = &left[n..];
        }
        let pool = Pool { read, write };
        pool.nonblocking()?;
        Ok(pool)
    }

    /// The read end never blocks (the flag is the pipe's, shared by the whole tree).
    fn nonblocking(&self) -> std::io::Result<()> {
        let flags = rustix::fs::fcntl_getfl(&self.read)?;
        rustix::fs::fcntl_setfl(&self.read, flags | rustix::fs::OFlags::NONBLOCK)?;
        Ok(())
    }

    /// Takes a token; `false` when none is left.
    fn take(&self) -> bool {
        let mut b = [0u8; 1];
        matches!(rustix::io::read(&self.read, &mut b), Ok(1))
    }

    fn give_back(&self) {
        let _ = rustix::io::write(&self.write, b"t");
    }
}

/// Reads the delegation line from a just-inherited spawner lifeline (byte by byte,
/// so nothing after it is consumed) and takes the token pipe at [`POOL_FDS`].
pub fn inherit(lifeline: &OwnedFd) -> Result<Inherited> {
    let bad = |why: String| {
        Diagnostic::new(
            E_RUN_046,
            format!("the spawner lifeline carries no delegation line: {why}"),
        )
    };
    let mut line = Vec::new();
    loop {
        let mut b = [0u8; 1];
        match rustix::io::read(lifeline.as_fd(), &mut b) {
            Ok(0) => return Err(bad("it closed first".into())),
            Ok(_) if b[0] == b'\n' => break,
            Ok(_) if line.len() < MAX_LINE => line.push(b[0]),
            Ok(_) => return Err(bad(format!("longer than {MAX_LINE} bytes"))),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(bad(e.to_string())),
        }
    }
    let line: Line = serde_json::from_slice(&line).map_err(|e| bad(e.to_string()))?;
    let fd = |at: i32| {
        crate::proc::take_fd(crate::env::MURMUR_SPAWNER_LIFELINE, &at.to_string())
            .map(|(fd, _)| fd)
            .map_err(|e| bad(format!("the token pipe: {e}")))
    };
    let pool = Pool {
        read: fd(POOL_FDS[0])?,
        write: fd(POOL_FDS[1])?,
    };
    Ok(Inherited { line, pool })
}

/// One session's place in its tree, and the tree's limits in force for it.
#[derive(Debug)]
pub struct Tree {
    pub depth: u32,
    pub max_depth: u32,
    pub max_live: u32,
    pool: Pool,
}

/// Why a delegation was refused: the text of the tool's error.
pub type Refusal = String;

impl Tree {
    /// The root's tree (`inherited` is `None`) or a child's: the inherited limits,
    /// lowered (never raised) by what this session asked.
    pub fn new(inherited: Option<Inherited>, asked: Asked) -> std::io::Result<Tree> {
        match inherited {
            None => {
                let max_depth = asked.max_depth.unwrap_or(DEFAULT_MAX_DEPTH);
                let max_live = asked.max_live.unwrap_or(DEFAULT_MAX_LIVE);
                Ok(Tree {
                    depth: 0,
                    max_depth,
                    max_live,
                    pool: Pool::new(max_live)?,
                })
            }
            Some(Inherited { line, pool }) => {
                let lower = |own: Option<u32>, tree: u32| own.map_or(tree, |o| o.min(tree));
                Ok(Tree {
                    depth: line.depth,
                    max_depth: lower(asked.max_depth, line.max_depth),
                    max_live: lower(asked.max_live, line.max_live),
                    pool,
                })
            }
        }
    }

    /// Takes a token for one more child, `live` being this session's own live
    /// children (give it back with [`Tree::give_back`] once the child exited); the
    /// refusal says which limit, its number and how to raise it.
    pub fn admit(&self, live: usize) -> std::result::Result<(), Refusal> {
        let raise = "The limits are the root session's: raise them with `mur run \
                     --max-delegation-depth <N>` / `--max-live-delegations <N>`, or \
                     `capabilities.spawn.max_depth` / `max_live` in the root capsule's \
                     murmur.yaml; a child's own can only lower them.";
        if self.depth >= self.max_depth {
            return Err(format!(
                "delegation refused: the depth limit is {} and this session is at depth {} \
                 (the root is 0), so a child would be at {}. Do the task yourself. {raise}",
                self.max_depth,
                self.depth,
                self.depth + 1
            ));
        }
        let busy = || {
            format!(
                "delegation refused: the live-delegations limit is {}: that many delegated \
                 sessions already run in this session tree. End your turn to receive the \
                 answers you are owed, then delegate again. {raise}",
                self.max_live
            )
        };
        if live >= self.max_live as usize || !self.pool.take() {
            return Err(busy());
        }
        Ok(())
    }

    /// Gives back the token of a child that exited or never started.
    pub fn give_back(&self) {
        self.pool.give_back();
    }

    /// What a child is told: its depth and the limits in force here.
    pub fn child_line(&self) -> Line {
        Line {
            depth: self.depth + 1,
            max_depth: self.max_depth,
            max_live: self.max_live,
        }
    }

    /// Copies of the token pipe's ends for a child, to go at [`POOL_FDS`].
    pub fn pool_for_child(&self) -> std::io::Result<[OwnedFd; 2]> {
        Ok([self.pool.read.try_clone()?, self.pool.write.try_clone()?])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_admits_up_to_its_live_limit_and_tokens_come_back() {
        let tree = Tree::new(
            None,
            Asked {
                max_depth: None,
                max_live: Some(2),
            },
        )
        .unwrap();
        assert_eq!((tree.depth, tree.max_depth), (0, DEFAULT_MAX_DEPTH));
        tree.admit(0).unwrap();
        tree.admit(1).unwrap();
        let refused = tree.admit(0).unwrap_err();
        assert!(refused.contains("live-delegations limit is 2"), "{refused}");
        assert!(refused.contains("--max-live-delegations"), "{refused}");
        tree.give_back();
        tree.admit(1).unwrap();
        // This session's own count binds too, whatever the pipe holds.
        tree.give_back();
        assert!(tree.admit(2).is_err());
        assert!(tree.admit(1).is_ok());
    }

    #[test]
    fn a_child_s_own_limits_lower_the_tree_s_and_never_raise_them() {
        let root = Tree::new(
            None,
            Asked {
                max_depth: Some(2),
                max_live: Some(4),
            },
        )
        .unwrap();
        let inherited = |line| Inherited {
            line,
            pool: Pool {
                read: root.pool.read.try_clone().unwrap(),
                write: root.pool.write.try_clone().unwrap(),
            },
        };
        let greedy = Asked {
            max_depth: Some(100),
            max_live: Some(100),
        };
        let child = Tree::new(Some(inherited(root.child_line())), greedy).unwrap();
        assert_eq!((child.depth, child.max_depth, child.max_live), (1, 2, 4));
        let grandchild = Tree::new(Some(inherited(child.child_line())), greedy).unwrap();
        let refused = grandchild.admit(0).unwrap_err();
        assert!(refused.contains("depth limit is 2"), "{refused}");
        assert!(refused.contains("at depth 2"), "{refused}");
        let modest = Asked {
            max_depth: Some(1),
            max_live: Some(1),
        };
        let child = Tree::new(Some(inherited(root.child_line())), modest).unwrap();
        assert_eq!((child.max_depth, child.max_live), (1, 1));
        assert!(child.admit(0).is_err(), "depth 1 of 1");
    }
}
