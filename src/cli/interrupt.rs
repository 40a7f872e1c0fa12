//! SIGINT and SIGTERM. Outside a graceful section an interrupt ends canopy at once with exit
//! code 130: loading a mesh, building a context or any other step that cannot stop halfway is
//! not waited for (a blocked read of a pipe or a slow disk would hold the interrupt forever).
//! Before it exits, the cleanups registered with [`on_abort`] run: a child process (ffmpeg)
//! is killed and waited for, then its temporary output removed, so an abort leaves no partial
//! file. Inside a graceful section ([`graceful`]: `canopy render` while frames are rendered
//! and written) an interrupt only sets the job's stop flag ([`stop_flag`]), so that
//! the frames being written are finished; a second interrupt ends canopy at once.

use canopy::job::StopFlag;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What an abort undoes.
pub enum Cleanup {
    /// Kill this child process and wait for it.
    Kill(u32),
    /// Remove this file.
    Remove(PathBuf),
}

/// Set by the first interrupt: the job's stop flag.
static STOP: std::sync::LazyLock<StopFlag> = std::sync::LazyLock::new(StopFlag::new);
static GRACEFUL: AtomicUsize = AtomicUsize::new(0);
static CLEANUPS: Mutex<Vec<Cleanup>> = Mutex::new(Vec::new());

/// Handles SIGINT and SIGTERM from now on (once, before any command runs).
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        let again = STOP.is_stopped();
        STOP.stop();
        if again || GRACEFUL.load(Ordering::SeqCst) == 0 {
            abort();
        }
    });
}

/// The flag the first SIGINT or SIGTERM sets, for a job to stop on.
pub fn stop_flag() -> StopFlag {
    STOP.clone()
}

/// Registers `cleanup` to run if canopy is aborted by an interrupt (they run in order).
pub fn on_abort(cleanup: Cleanup) {
    if let Ok(mut cleanups) = CLEANUPS.lock() {
        cleanups.push(cleanup);
    }
}

/// A graceful section: until it is dropped, an interrupt only sets [`stop_flag`].
pub struct Graceful(());

/// Opens a graceful section.
pub fn graceful() -> Graceful {
    GRACEFUL.fetch_add(1, Ordering::SeqCst);
    Graceful(())
}

impl Drop for Graceful {
    fn drop(&mut self) {
        GRACEFUL.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Runs the cleanups and ends the process with 130, without unwinding or running exit
/// handlers (other threads may be inside a Vulkan driver).
fn abort() -> ! {
    // A cleanup that panics (or a poisoned lock) must not keep canopy from ending.
    if let Ok(cleanups) = CLEANUPS.try_lock() {
        for cleanup in cleanups.iter() {
            match cleanup {
                Cleanup::Kill(pid) => {
                    #[cfg(unix)]
                    // SAFETY: signalling and reaping our own child process, only while it is
                    // ours and running (a child waited for already may have a reused id).
                    unsafe {
                        let pid = *pid as libc::pid_t;
                        if libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) == 0 {
                            libc::kill(pid, libc::SIGKILL);
                            libc::waitpid(pid, std::ptr::null_mut(), 0);
                        }
                    }
                }
                Cleanup::Remove(path) => {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
    }
    eprintln!("error: interrupted");
    // SAFETY: _exit ends the process at once; nothing after it runs.
    unsafe { libc::_exit(130) }
}
