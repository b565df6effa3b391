//! `ffsessionw`: run `ffsession` without a console window, and again after
//! it fails. The Windows service (a Task Scheduler task at logon) runs it.
//!
//! A console program started at logon opens a console window, if only for a
//! moment. This one is built for the Windows subsystem, so nothing opens when
//! it starts; it starts `ffsession.exe` (the one beside it) with its own
//! arguments and `CREATE_NO_WINDOW`, the way `pythonw` and `javaw` run
//! their programs. When `ffsession` fails (exits non-zero), it runs it again
//! 30 seconds later, as systemd's `Restart=on-failure` does for the Linux
//! service; Task Scheduler's own restart only covers a task that cannot
//! start. It exits when `ffsession` exits successfully, and with 1 when
//! `ffsession` cannot be started at all. Outside Windows it does the same
//! with no window to hide.
//!
//! On Windows it puts itself in a job object that kills its processes when
//! the last handle to it closes, that is when this launcher ends, however it
//! ends (`schtasks /end`, Task Manager, logoff): `ffsession watch` never
//! outlives the task that started it (cargo does the same for its children).

#![cfg_attr(windows, windows_subsystem = "windows")]

use std::process::{Command, ExitCode};
use std::time::Duration;

/// How long after a failure `ffsession` is run again.
const RESTART_DELAY: Duration = Duration::from_secs(30);

fn main() -> ExitCode {
    let Ok(exe) = std::env::current_exe() else {
        return ExitCode::from(1);
    };
    let program = exe.with_file_name(format!("ffsession{}", std::env::consts::EXE_SUFFIX));
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    // TEST HOOK: a shorter wait, for the CLI tests only (debug builds).
    let delay =
        ffsession::test_setting!("RESTART_DELAY_MS").map_or(RESTART_DELAY, Duration::from_millis);
    #[cfg(windows)]
    job::end_children_with_me();
    loop {
        let mut cmd = Command::new(&program);
        cmd.args(&args);
        #[cfg(windows)]
        {
            use std::os::windows::process::CommandExt;
            const CREATE_NO_WINDOW: u32 = 0x0800_0000;
            cmd.creation_flags(CREATE_NO_WINDOW);
        }
        match cmd.status() {
            Ok(status) if status.success() => return ExitCode::SUCCESS,
            Ok(_) => std::thread::sleep(delay),
            Err(_) => return ExitCode::from(1),
        }
    }
}

/// The job object that ends `ffsession` with this launcher.
#[cfg(windows)]
#[allow(unsafe_code)]
mod job {
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
        SetInformationJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    };
    use windows_sys::Win32::System::Threading::GetCurrentProcess;

    /// Put this process, and so every process it starts from now on, in a
    /// new job that kills them all when its handle closes. The handle is
    /// never closed by hand: it closes when this process ends. Best effort:
    /// without a job `ffsession` still runs, only it may outlive us.
    pub fn end_children_with_me() {
        // SAFETY: plain Win32 calls. `info` is a zeroed plain-data struct
        // that outlives the call reading it, with its size passed alongside;
        // the job handle is checked before use and deliberately leaked.
        unsafe {
            let job = CreateJobObjectW(std::ptr::null(), std::ptr::null());
            if job.is_null() {
                return;
            }
            let mut info: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
            info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            let set = SetInformationJobObject(
                job,
                JobObjectExtendedLimitInformation,
                (&raw const info).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            );
            if set != 0 {
                AssignProcessToJobObject(job, GetCurrentProcess());
            }
        }
    }
}
