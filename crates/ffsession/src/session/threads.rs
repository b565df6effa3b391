//! Starting helper threads and waiting for what they send: the two-thread
//! parse (`parallel.rs`), the parse behind the decoder
//! (`parallel::parse_growing`) and the count in pieces (`streamed.rs`,
//! `format/summarize.rs`).

use std::sync::mpsc;
use std::thread::{self, ScopedJoinHandle};

/// Whether a second thread can run at the same time (checked once): on
/// Linux, whether this thread may run on two CPUs or more.
///
/// Not `available_parallelism` there, which also reads the cgroup's CPU
/// quota: 18 system calls and 45-70 µs before every read of a large
/// session. A read takes milliseconds, far less than a quota's period
/// (100 ms), so even a quota of one CPU lets two threads run at once.
pub(crate) fn two_cores() -> bool {
    static TWO: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TWO.get_or_init(|| {
        #[cfg(target_os = "linux")]
        let two = rustix::thread::sched_getaffinity(None).is_ok_and(|cpus| cpus.count() >= 2);
        #[cfg(not(target_os = "linux"))]
        let two = thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
        two
    })
}

/// Spawn `f` on a scoped thread that runs on another core than this thread.
///
/// Linux sometimes queues a new thread on its parent's core even when the
/// other core is idle, and moves it only at the next scheduler tick (4 ms at
/// 250 Hz): on a 2-core VM, 2 of 5 runs parsed a 23 MB session in 9 ms
/// instead of 5. So the new thread's first act is to leave the core its parent
/// runs on (if another is allowed; then it allows every core again), and the
/// parent yields once, which lets a thread queued behind it run that far.
pub(crate) fn spawn_beside<'scope, T: Send + 'scope>(
    scope: &'scope thread::Scope<'scope, '_>,
    f: impl FnOnce() -> T + Send + 'scope,
) -> ScopedJoinHandle<'scope, T> {
    // (Miri, which checks the threads' use of shared memory in tests, has no
    // CPU affinity.)
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        let parent = rustix::thread::sched_getcpu();
        let handle = scope.spawn(move || {
            leave_core(parent);
            f()
        });
        thread::yield_now();
        handle
    }
    #[cfg(any(not(target_os = "linux"), miri))]
    scope.spawn(f)
}

/// Move this thread off core `cpu`, if it may run elsewhere: restrict it to
/// the other allowed cores (the kernel moves it before the call returns), then
/// allow all of them again.
#[cfg(target_os = "linux")]
pub(super) fn leave_core(cpu: usize) {
    use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity};
    // Already elsewhere: nothing to do (`sched_getcpu` needs no system call).
    if sched_getcpu() != cpu {
        return;
    }
    let Ok(allowed) = sched_getaffinity(None) else {
        return;
    };
    if allowed.count() < 2 || !allowed.is_set(cpu) {
        return;
    }
    let mut others = allowed;
    others.unset(cpu);
    if sched_setaffinity(None, &others).is_ok() {
        let _ = sched_setaffinity(None, &allowed);
    }
}

/// The next message from `from`, `None` once its sender is gone. It waits
/// awake for up to [`SPIN`] before sleeping: on a virtual machine, a thread
/// that sleeps can take a millisecond to wake.
pub(crate) fn receive<T>(from: &mpsc::Receiver<T>) -> Option<T> {
    let start = std::time::Instant::now();
    loop {
        match from.try_recv() {
            Ok(message) => return Some(message),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) if start.elapsed() > SPIN => return from.recv().ok(),
            Err(mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
}

/// How long [`receive`] waits awake.
const SPIN: std::time::Duration = std::time::Duration::from_millis(2);
