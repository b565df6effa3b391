//! What a remote needs besides its location: the service's settings (the
//! config's, else the usual environment variables) and the store's
//! password (the environment, a password file, or typed once per run).

use std::io::{self, IsTerminal};
use std::path::Path;

use anyhow::{Context, Result};
use ffsession::remote::{KeyParams, Location, RemoteOptions};

use super::Target;
use crate::cli::GlobalArgs;
use crate::error::UserError;

pub(super) fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn first_line(path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read the password file", path.display()))?;
    Ok(text.lines().next().unwrap_or("").to_owned())
}

/// The settings the URL cannot carry: the config's, else the usual
/// environment variables (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
/// AWS_SESSION_TOKEN, AWS_ENDPOINT_URL, AWS_REGION/AWS_DEFAULT_REGION;
/// FFSESSION_WEBDAV_PASSWORD).
pub fn options(t: &Target) -> Result<RemoteOptions> {
    let webdav_password = match &t.config.webdav_password_file {
        Some(f) => Some(first_line(f)?),
        None => env("FFSESSION_WEBDAV_PASSWORD"),
    };
    Ok(RemoteOptions {
        s3_endpoint: t
            .config
            .endpoint
            .clone()
            .or_else(|| env("AWS_ENDPOINT_URL_S3"))
            .or_else(|| env("AWS_ENDPOINT_URL")),
        s3_region: t
            .config
            .region
            .clone()
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION")),
        s3_access_key_id: env("AWS_ACCESS_KEY_ID"),
        s3_secret_access_key: env("AWS_SECRET_ACCESS_KEY"),
        s3_session_token: env("AWS_SESSION_TOKEN"),
        webdav_password,
        sftp_key: t
            .config
            .ssh_key
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
    })
}

/// Passwords typed in this run, by location: a remote's is asked once.
static TYPED: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

fn typed(location: &Location) -> Option<String> {
    let key = location.to_string();
    let list = TYPED.lock().ok()?;
    list.iter().find(|(l, _)| *l == key).map(|(_, p)| p.clone())
}

/// The password: FFSESSION_PASSWORD, `--password-file`, the remote's
/// `password_file`, else the one typed before in this run, else a prompt on
/// the terminal (asked twice for a new remote). `interactive` false never
/// prompts (the watch service).
pub fn password(global: &GlobalArgs, t: &Target, new: bool, interactive: bool) -> Result<String> {
    if let Some(p) = env("FFSESSION_PASSWORD") {
        return Ok(p);
    }
    if let Some(f) = global
        .password_file
        .as_ref()
        .or(t.config.password_file.as_ref())
    {
        let p = first_line(f)?;
        if p.is_empty() {
            return Err(UserError::with_hint(
                format!("{}: the password file is empty", f.display()),
                "write the password on its first line",
            ));
        }
        return Ok(p);
    }
    if let Some(p) = typed(&t.location).filter(|_| !new) {
        return Ok(p);
    }
    if !interactive || !io::stdin().is_terminal() {
        return Err(UserError::with_hint(
            format!("{}: a password is needed and there is no terminal to ask it on", t.label),
            "set FFSESSION_PASSWORD, or pass --password-file FILE (or password_file in the remote's config)",
        ));
    }
    let p = rpassword::prompt_password(format!("password for {}: ", t.location))
        .context("reading the password")?;
    if p.is_empty() {
        return Err(UserError::with_hint(
            "the password is empty",
            "type a password",
        ));
    }
    if new {
        let again = rpassword::prompt_password("the same password again: ")
            .context("reading the password")?;
        if again != p {
            return Err(UserError::with_hint(
                "the two passwords differ; nothing was written",
                "run the command again",
            ));
        }
    }
    if let Ok(mut list) = TYPED.lock() {
        list.push((t.location.to_string(), p.clone()));
    }
    Ok(p)
}

/// scrypt's work factor for new keys (tests make it cheap, in debug builds
/// only: a release build always uses the strong default).
pub(super) fn key_params() -> KeyParams {
    KeyParams {
        log_n: ffsession::test_setting!("SCRYPT_LOG_N").and_then(|v| u8::try_from(v).ok()),
    }
}
