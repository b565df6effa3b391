//! Windows: a store folder readable by its user only, what mode 0700 is on
//! Unix.
//!
//! Files and folders created on Windows inherit the access control list of
//! the folder they are made in. Under the user's own profile folder (the
//! default, `%LOCALAPPDATA%\ffsession\data`) that already leaves other users
//! out; but a store given with `--store D:\backups\firefox` inherits what
//! that drive grants, often read access for every user of the machine. So
//! the store folder ffsession creates gets the access list of a user's
//! profile folder, whatever its parent grants: full control for the user,
//! for SYSTEM and for the Administrators (who can take any file on Windows,
//! as root can read any file on Unix), inherited by everything inside, and
//! nothing inherited from the parent (a protected list). Folders that exist
//! already keep the list their owner gave them.
//!
//! The one place outside `buffer.rs` where the library calls the system
//! directly: std has no access lists.

#![allow(unsafe_code)]

use std::ffi::OsStr;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::path::Path;
use std::ptr;

use windows_sys::Win32::Foundation::{CloseHandle, LocalFree, ERROR_SUCCESS, HANDLE};
use windows_sys::Win32::Security::Authorization::{
    ConvertSecurityDescriptorToStringSecurityDescriptorW, ConvertSidToStringSidW,
    ConvertStringSecurityDescriptorToSecurityDescriptorW, GetNamedSecurityInfoW, SDDL_REVISION_1,
    SE_FILE_OBJECT,
};
use windows_sys::Win32::Security::{
    GetTokenInformation, SetFileSecurityW, TokenUser, DACL_SECURITY_INFORMATION,
    PSECURITY_DESCRIPTOR, TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// The access list given to a new store folder, in SDDL, for the user whose
/// SID is `user`: protected (`P`), full access (`FA`) for the user, SYSTEM
/// (`SY`) and the Administrators (`BA`), each inherited by files (`OI`) and
/// folders (`CI`) inside.
pub(crate) fn private_sddl(user: &str) -> String {
    format!("D:P(A;OICI;FA;;;{user})(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)")
}

/// Give the folder `dir` the private access list of a store folder: full
/// access for its user, SYSTEM and the Administrators, inherited by what is
/// made inside, nothing from its parent (what 0700 is on Unix). For the
/// folders the CLI makes beside a store, as `ffsession ui`'s temporary one.
///
/// `SetFileSecurityW` sets the folder's own list (with its protection
/// bit); unlike `SetNamedSecurityInfoW` it does not walk what is inside,
/// and a new folder holds nothing yet. (Wine, which CI runs the Windows
/// tests under, keeps access lists as Unix modes, and only this call
/// reaches them.)
pub fn make_private(dir: &Path) -> io::Result<()> {
    let sddl = wide(OsStr::new(&private_sddl(&current_user_sid()?)));
    let path = wide(dir.as_os_str());
    let mut sd: PSECURITY_DESCRIPTOR = ptr::null_mut();
    // SAFETY: the strings are NUL-terminated UTF-16 that outlive the calls;
    // `sd` is allocated by the system and freed with LocalFree below.
    unsafe {
        if ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &mut sd,
            ptr::null_mut(),
        ) == 0
        {
            return Err(io::Error::last_os_error());
        }
        let result = if SetFileSecurityW(path.as_ptr(), DACL_SECURITY_INFORMATION, sd) == 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        };
        LocalFree(sd);
        result
    }
}

/// The access list of `path` in SDDL (`D:P(A;OICI;FA;;;S-1-5-21-...)...`).
pub fn dacl_sddl(path: &Path) -> io::Result<String> {
    let path = wide(path.as_os_str());
    let mut sd: PSECURITY_DESCRIPTOR = ptr::null_mut();
    // SAFETY: `path` is NUL-terminated and outlives the call; `sd` and the
    // string are allocated by the system and freed with LocalFree.
    unsafe {
        let code = GetNamedSecurityInfoW(
            path.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION,
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            ptr::null_mut(),
            &mut sd,
        );
        if code != ERROR_SUCCESS {
            return Err(io::Error::from_raw_os_error(code as i32));
        }
        let mut text = ptr::null_mut();
        let converted = ConvertSecurityDescriptorToStringSecurityDescriptorW(
            sd,
            SDDL_REVISION_1,
            DACL_SECURITY_INFORMATION,
            &mut text,
            ptr::null_mut(),
        );
        let result = if converted == 0 {
            Err(io::Error::last_os_error())
        } else {
            let s = from_wide(text);
            LocalFree(text.cast());
            Ok(s)
        };
        LocalFree(sd);
        result
    }
}

/// The SID of the user this process runs as, in text (`S-1-5-21-...`).
pub fn current_user_sid() -> io::Result<String> {
    // SAFETY: the token handle is closed before returning; `buffer` is large
    // enough for the TOKEN_USER (its size asked first) and aligned for it
    // (u64 elements); the SID it points to lives in `buffer`; the string is
    // allocated by the system and freed with LocalFree.
    unsafe {
        let mut token: HANDLE = ptr::null_mut();
        if OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) == 0 {
            return Err(io::Error::last_os_error());
        }
        let mut len = 0u32;
        GetTokenInformation(token, TokenUser, ptr::null_mut(), 0, &mut len);
        let mut buffer = vec![0u64; (len as usize).div_ceil(8).max(1)];
        let ok = GetTokenInformation(
            token,
            TokenUser,
            buffer.as_mut_ptr().cast(),
            (buffer.len() * 8) as u32,
            &mut len,
        );
        let error = io::Error::last_os_error();
        CloseHandle(token);
        if ok == 0 {
            return Err(error);
        }
        let user = &*(buffer.as_ptr().cast::<TOKEN_USER>());
        let mut text = ptr::null_mut();
        if ConvertSidToStringSidW(user.User.Sid, &mut text) == 0 {
            return Err(io::Error::last_os_error());
        }
        let sid = from_wide(text);
        LocalFree(text.cast());
        Ok(sid)
    }
}

/// `s` as NUL-terminated UTF-16.
fn wide(s: &OsStr) -> Vec<u16> {
    s.encode_wide().chain(std::iter::once(0)).collect()
}

/// The NUL-terminated UTF-16 string at `p`.
///
/// # Safety
/// `p` points to a NUL-terminated UTF-16 string.
unsafe fn from_wide(p: *const u16) -> String {
    let mut len = 0;
    // SAFETY: the caller promises a terminating NUL.
    unsafe {
        while *p.add(len) != 0 {
            len += 1;
        }
        String::from_utf16_lossy(std::slice::from_raw_parts(p, len))
    }
}
