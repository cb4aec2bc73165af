//! The operator's methods: murmur.WatchSession (SSE of the session's events),
//! murmur.StopSession (asks the session to stop) and resources/files (a read-only
//! listing of the session's files folder). Only the operator token reaches them.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use axum::response::Response;
use serde_json::json;
use tokio::sync::{broadcast, mpsc};

use super::rpc::{Call, Shared, frame, json_reply, params, sse};
use crate::a2a::{self, FileEntry, FilesRequest, FilesResponse, RpcError};

/// The most entries one resources/files answer lists.
pub(super) const MAX_FILE_ENTRIES: usize = 10_000;

pub(crate) async fn dispatch(s: &Arc<Shared>, call: Call) -> Result<Response, RpcError> {
    match call.method.as_str() {
        a2a::WATCH_SESSION => Ok(watch(s, call)),
        a2a::STOP_SESSION => {
            let Some(stop) = &s.on_stop else {
                return Err(RpcError::unsupported(
                    "this session cannot be stopped through its door",
                ));
            };
            stop();
            Ok(json_reply(&a2a::Response::ok(
                call.id,
                json!({"stopping": true}),
            )))
        }
        _ => files(s, call).await,
    }
}

fn watch(s: &Arc<Shared>, call: Call) -> Response {
    let mut events = s.events.subscribe();
    let (tx, rx) = mpsc::channel(64);
    let shutdown = s.shutdown.clone();
    let id = call.id;
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                biased;
                e = events.recv() => e,
                _ = tx.closed() => return,
                // Everything published before the door closed has been sent.
                _ = shutdown.cancelled() => return,
            };
            let data = match event {
                Ok(event) => frame(&id, event),
                Err(broadcast::error::RecvError::Lagged(n)) => frame(&id, json!({"lagged": n})),
                Err(broadcast::error::RecvError::Closed) => return,
            };
            if tx.send(data).await.is_err() {
                return;
            }
        }
    });
    sse(rx)
}

async fn files(s: &Arc<Shared>, call: Call) -> Result<Response, RpcError> {
    let Some(root) = s.files_root.clone() else {
        return Err(RpcError::unsupported("this session has no files folder"));
    };
    let req: FilesRequest = params(call.params)?;
    let rel = req.path.unwrap_or_default();
    let listing = tokio::task::spawn_blocking(move || list_files(&root, &rel))
        .await
        .map_err(RpcError::internal)??;
    Ok(json_reply(&a2a::Response::ok(
        call.id,
        serde_json::to_value(listing).map_err(RpcError::internal)?,
    )))
}

/// Lists `rel` under `root`, depth first in name order. `rel` must be a relative
/// path of plain names: no `..`, no root, and no symlink on the way, so nothing
/// outside `root` is ever read. Symlinks inside are listed, never followed.
pub(super) fn list_files(root: &Path, rel: &str) -> Result<FilesResponse, RpcError> {
    let escape =
        || RpcError::invalid_params("path must name a folder inside the session's files folder");
    let mut dir = root.to_path_buf();
    let mut shown = PathBuf::new();
    for part in Path::new(rel).components() {
        match part {
            Component::Normal(name) => {
                dir.push(name);
                shown.push(name);
                let meta = std::fs::symlink_metadata(&dir).map_err(|_| escape())?;
                if meta.file_type().is_symlink() {
                    return Err(escape());
                }
            }
            Component::CurDir => {}
            _ => return Err(escape()),
        }
    }
    if !std::fs::symlink_metadata(&dir)
        .map(|m| m.is_dir())
        .unwrap_or(false)
    {
        return Err(RpcError::invalid_params(format!("{rel:?} is not a folder")));
    }
    let mut files = Vec::new();
    let mut truncated = false;
    let mut stack = vec![(dir, shown)];
    while let Some((dir, shown)) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        let mut subdirs = Vec::new();
        for entry in entries {
            if files.len() >= MAX_FILE_ENTRIES {
                truncated = true;
                break;
            }
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            let path = shown.join(entry.file_name());
            let kind = if meta.file_type().is_symlink() {
                "symlink"
            } else if meta.is_dir() {
                subdirs.push((entry.path(), path.clone()));
                "dir"
            } else {
                "file"
            };
            files.push(FileEntry {
                path: path.to_string_lossy().replace('\\', "/"),
                kind: kind.into(),
                size: if kind == "file" { meta.len() } else { 0 },
            });
        }
        if truncated {
            break;
        }
        stack.extend(subdirs.into_iter().rev());
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(FilesResponse { files, truncated })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_inside_and_refuses_every_escape() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("out/sub")).unwrap();
        std::fs::write(dir.path().join("out/result.txt"), "done").unwrap();
        std::fs::write(dir.path().join("out/sub/a"), "").unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join("out/etc")).unwrap();
        let all = list_files(dir.path(), "").unwrap();
        let paths: Vec<&str> = all.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            ["out", "out/etc", "out/result.txt", "out/sub", "out/sub/a"]
        );
        assert_eq!(all.files[2].size, 4);
        assert_eq!(all.files[1].kind, "symlink");
        for bad in ["..", "../x", "/etc", "out/../..", "out/etc", "missing"] {
            let err = list_files(dir.path(), bad).unwrap_err();
            assert_eq!(err.code, a2a::INVALID_PARAMS, "{bad}");
        }
    }
}
