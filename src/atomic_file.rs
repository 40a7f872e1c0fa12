//! Files written whole or not at all, safely in folders that other processes share.
//!
//! [`write_atomically_with`] writes a file through a temporary one beside it, created
//! exclusively (`O_EXCL`, so a symbolic link or any file planted at its name is never
//! followed or reused) under a random name `.NAME.XXXXXX.partial`, held under an exclusive
//! `flock` while it exists, synced, renamed over `NAME` (a symbolic link at `NAME` is
//! replaced, never written through), and the folder synced. Several processes may write the
//! same file at once: each writes its own temporary file, every rename is atomic, so the file
//! is always one whole version and the last one renamed stays.
//!
//! [`remove_abandoned_temporaries`] removes the temporary files of writers that are gone (a
//! killed render) and leaves those a live process holds locked.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

/// The suffix of every temporary file.
pub const TEMPORARY_SUFFIX: &str = ".partial";

/// How many times a write starts again when its temporary file was removed under it (by
/// another process's [`remove_abandoned_temporaries`] in the instant between its creation
/// and its lock).
const ATTEMPTS: usize = 4;

/// The folder `path` is in (`.` for a bare name).
pub fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The prefix of the temporary files of `path`: `.NAME.`.
fn temporary_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or("file".into(), |n| n.to_string_lossy());
    format!(".{name}.")
}

/// A new temporary file for `path` in its folder, created exclusively under a random name and
/// locked (see the module's documentation); removed when dropped unless persisted.
pub fn create_temporary(path: &Path) -> io::Result<tempfile::NamedTempFile> {
    loop {
        let temporary = tempfile::Builder::new()
            .prefix(&temporary_prefix(path))
            .suffix(TEMPORARY_SUFFIX)
            .tempfile_in(folder_of(path))?;
        match temporary.as_file().try_lock() {
            Ok(()) => return Ok(temporary),
            // Another process's cleanup took it for abandoned in the instant before the lock:
            // it removes it; take another.
            Err(std::fs::TryLockError::WouldBlock) => {
                // Dropping would remove the path, which the cleanup now owns.
                let _ = temporary.into_temp_path().keep();
            }
            // A file system without locks: the file stays unlocked (and a cleanup never
            // removes what it cannot lock).
            Err(std::fs::TryLockError::Error(_)) => return Ok(temporary),
        }
    }
}

/// Syncs the folder `folder`, so that a rename in it survives a crash. File systems that
/// cannot sync a folder are left as they are.
pub fn sync_folder(folder: &Path) -> io::Result<()> {
    match File::open(folder).and_then(|f| f.sync_all()) {
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
            ) =>
        {
            Ok(())
        }
        other => other,
    }
}

/// Renames the complete temporary file `temporary` over `path` and syncs the folder. Gives
/// the temporary file back when it was removed before the rename (the writer then writes it
/// again).
pub fn persist(temporary: tempfile::NamedTempFile, path: &Path) -> Result<(), PersistFailure> {
    match temporary.persist(path) {
        // The lock goes with the handle, dropped here, after the rename.
        Ok(_file) => sync_folder(folder_of(path)).map_err(PersistFailure::Other),
        Err(e) if e.error.kind() == io::ErrorKind::NotFound => {
            // Removed under it: keep the (now absent) path from being removed again.
            let _ = e.file.into_temp_path().keep();
            Err(PersistFailure::Removed)
        }
        Err(e) => Err(PersistFailure::Other(e.error)),
    }
}

/// Why [`persist`] failed.
#[derive(Debug)]
pub enum PersistFailure {
    /// The temporary file was removed before the rename: write it again.
    Removed,
    /// The operating system's error.
    Other(io::Error),
}

/// Writes the file `path` whole or not at all: `write` fills a new temporary file (see the
/// module's documentation), which is synced and renamed over `path`; on any failure the
/// temporary file is removed and `path` is as it was. `write` may be called again if another
/// process removed the temporary file under it.
pub fn write_atomically_with(
    path: &Path,
    mut write: impl FnMut(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut temporary = create_temporary(path)?;
        write(temporary.as_file_mut())?;
        temporary.as_file().sync_all()?;
        match persist(temporary, path) {
            Ok(()) => return Ok(()),
            Err(PersistFailure::Removed) if attempt < ATTEMPTS => continue,
            Err(PersistFailure::Removed) => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    "the temporary file was removed before it could be renamed",
                ));
            }
            Err(PersistFailure::Other(e)) => return Err(e),
        }
    }
}

/// Whether `name` is a temporary file name of the file `target` (`.TARGET.<anything>.partial`,
/// the older `.TARGET.PID.partial` included).
pub fn is_temporary_of(name: &str, target: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|n| n.strip_suffix(TEMPORARY_SUFFIX))
        .and_then(|n| n.strip_prefix(target))
        .is_some_and(|rest| rest.len() > 1 && rest.starts_with('.'))
}

/// Removes from `folder` the temporary files of the files whose names `is_target` accepts and
/// whose writer is gone: those no process holds locked. Only regular files are considered (a symbolic link at
/// such a name is neither followed nor removed). Returns the paths removed.
pub fn remove_abandoned_temporaries(
    folder: &Path,
    is_target: impl Fn(&str) -> bool,
) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(folder) else {
        return removed;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(name) = file_name.to_str() else {
            continue;
        };
        let Some(target) = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(TEMPORARY_SUFFIX))
            .and_then(|n| n.rsplit_once('.'))
            .map(|(target, _)| target)
        else {
            continue;
        };
        // The random part holds no dot, so the target is what comes before the last one.
        if !is_target(target) {
            continue;
        }
        let path = entry.path();
        if remove_if_abandoned(&path) {
            removed.push(path);
        }
    }
    removed
}

/// Removes the temporary file `path` if it is a regular file that no process holds locked.
fn remove_if_abandoned(path: &Path) -> bool {
    let Ok(seen) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !seen.file_type().is_file() {
        return false;
    }
    let Ok(file) = open_no_follow(path) else {
        return false;
    };
    // Locked: its writer is alive. Any other error (no locks here): it cannot be told.
    if file.try_lock().is_err() {
        return false;
    }
    // Still the file at that name (its writer may have renamed it meanwhile).
    if !same_file(&file, path) {
        return false;
    }
    std::fs::remove_file(path).is_ok()
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> io::Result<File> {
    File::open(path)
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.is_file()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn folder(name: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("canopy-atomic-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    fn names(folder: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn temporary_names_are_recognised() {
        for name in [
            ".frame_0005.png.123.partial",
            ".frame_0005.png.aB3xYz.partial",
        ] {
            assert!(is_temporary_of(name, "frame_0005.png"), "{name}");
        }
        for name in [
            "frame_0005.png",
            ".frame_0005.png.partial",
            ".frame_0005.png..partial",
            ".frame_0015.png.1.partial",
        ] {
            assert!(!is_temporary_of(name, "frame_0005.png"), "{name}");
        }
    }

    /// A symbolic link planted at every name the writer could have used before (and at the
    /// random kind's shape) is never written through: the file it points to is untouched, and
    /// the frame is a regular file.
    #[cfg(unix)]
    #[test]
    fn planted_symbolic_links_are_never_followed() {
        let folder = folder("symlink");
        let outside = folder.join("outside");
        std::fs::create_dir(&outside).unwrap();
        let victim = outside.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let out = folder.join("out");
        std::fs::create_dir(&out).unwrap();
        let target = out.join("frame_0005.png");
        for name in [
            format!(".frame_0005.png.{}.partial", std::process::id()),
            ".frame_0005.png.partial".to_string(),
            ".frame_0005.png.AAAAAA.partial".to_string(),
        ] {
            std::os::unix::fs::symlink(&victim, out.join(name)).unwrap();
        }
        for _ in 0..20 {
            write_atomically_with(&target, |file| file.write_all(b"frame")).unwrap();
        }
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let meta = std::fs::symlink_metadata(&target).unwrap();
        assert!(
            meta.file_type().is_file(),
            "the frame is not a regular file"
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"frame");
        // The links are left, and nothing else.
        assert_eq!(names(&out).len(), 4, "{:?}", names(&out));
        // A cleanup neither follows nor removes them.
        assert!(remove_abandoned_temporaries(&out, |n| n == "frame_0005.png").is_empty());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let _ = std::fs::remove_dir_all(&folder);
    }

    /// The temporary file is created exclusively: a file already at the name it would take is
    /// never opened.
    #[test]
    fn temporary_files_are_new_files_with_random_names() {
        let folder = folder("exclusive");
        let target = folder.join("a.png");
        let first = create_temporary(&target).unwrap();
        let second = create_temporary(&target).unwrap();
        assert_ne!(first.path(), second.path());
        for temporary in [&first, &second] {
            let name = temporary.path().file_name().unwrap().to_str().unwrap();
            assert!(is_temporary_of(name, "a.png"), "{name}");
        }
        drop((first, second));
        assert!(names(&folder).is_empty(), "{:?}", names(&folder));
        let _ = std::fs::remove_dir_all(&folder);
    }

    /// A cleanup removes the temporary files of writers that are gone and leaves those of a
    /// live one (locked), and only of the files it is asked about.
    #[test]
    fn cleanup_removes_only_abandoned_temporaries() {
        let folder = folder("cleanup");
        let live = create_temporary(&folder.join("frame_0001.png")).unwrap();
        let abandoned = folder.join(".frame_0001.png.4242.partial");
        std::fs::write(&abandoned, b"half").unwrap();
        let dead = create_temporary(&folder.join("frame_0002.png")).unwrap();
        let dead_path = dead.into_temp_path().keep().unwrap();
        let other = folder.join(".frame_0003.png.4242.partial");
        std::fs::write(&other, b"half").unwrap();
        let targets = ["frame_0001.png", "frame_0002.png"];
        let mut removed = remove_abandoned_temporaries(&folder, |n| targets.contains(&n));
        removed.sort();
        let mut expected = vec![abandoned, dead_path];
        expected.sort();
        assert_eq!(removed, expected);
        assert!(live.path().exists(), "the live writer's file was removed");
        assert!(other.exists(), "another frame's file was removed");
        // The live writer finishes.
        persist(live, &folder.join("frame_0001.png")).unwrap();
        assert!(folder.join("frame_0001.png").is_file());
        let _ = std::fs::remove_dir_all(&folder);
    }

    /// A temporary file removed under its writer (a cleanup between its creation and its
    /// lock) is written again, not an error.
    #[test]
    fn a_temporary_removed_under_its_writer_is_written_again() {
        let folder = folder("removed");
        let target = folder.join("f.png");
        let mut calls = 0;
        write_atomically_with(&target, |file| {
            calls += 1;
            if calls == 1 {
                // Remove every temporary file of f.png, as a cleanup that won the race would.
                for name in names(&folder) {
                    std::fs::remove_file(folder.join(name)).unwrap();
                }
            }
            file.write_all(b"whole")
        })
        .unwrap();
        assert_eq!(calls, 2);
        assert_eq!(std::fs::read(&target).unwrap(), b"whole");
        assert_eq!(names(&folder), ["f.png"]);
        let _ = std::fs::remove_dir_all(&folder);
    }
}
