//! Store locations: a folder path, or a URL naming a remote.
//!
//! ```text
//! /mnt/usb/ffsession                 a folder (a USB disk, a NAS mount)
//! file:///mnt/usb/ffsession          the same
//! sftp://[user@]host[:port]/path     path relative to the login folder
//! sftp://[user@]host[:port]//path    an absolute path
//! s3://bucket[/prefix]               endpoint, region and keys from S3Options
//! webdav://[user@]host[:port]/path   WebDAV over http
//! webdavs://[user@]host[:port]/path  WebDAV over https (Nextcloud: .../remote.php/dav/files/USER/path)
//! ```

use std::fmt;
use std::path::PathBuf;

use super::RemoteError;

/// Where a store is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Location {
    /// A local folder (a store laid out for remotes: encrypted objects).
    Folder(PathBuf),
    /// An SFTP server, through the system's `ssh` and the user's SSH set-up.
    Sftp {
        /// The login name, if given (else `~/.ssh/config` or the local user).
        user: Option<String>,
        /// Host name or `~/.ssh/config` alias.
        host: String,
        /// The port, if given.
        port: Option<u16>,
        /// The folder on the server (relative to the login folder unless it
        /// starts with `/`).
        path: String,
    },
    /// An S3-compatible bucket.
    S3 {
        /// The bucket.
        bucket: String,
        /// The prefix inside it (no leading or trailing `/`).
        prefix: String,
    },
    /// A WebDAV server.
    WebDav {
        /// https rather than http.
        tls: bool,
        /// The login name, if given.
        user: Option<String>,
        /// `host[:port]`
        host: String,
        /// The folder on the server.
        path: String,
    },
}

impl Location {
    /// True if `value` is a URL ffsession would read as a remote location
    /// (`sftp://`, `s3://`, `webdav://`, `webdavs://`, `file://`).
    pub fn is_url(value: &str) -> bool {
        ["sftp://", "s3://", "webdav://", "webdavs://", "file://"]
            .iter()
            .any(|p| value.len() > p.len() && value[..p.len()].eq_ignore_ascii_case(p))
    }

    /// Parse a location; anything that is not a URL is a folder path, but
    /// for a known scheme written without its `//` (`sftp:/host/path`, a
    /// typo that would make a folder named `sftp:`), and an empty value.
    pub fn parse(value: &str) -> Result<Location, RemoteError> {
        let bad = |reason: &str| RemoteError::Location {
            location: value.to_owned(),
            reason: reason.to_owned(),
        };
        if value.trim().is_empty() {
            return Err(bad("an empty location: give a folder path or a URL"));
        }
        let Some((scheme, rest)) = value.split_once("://") else {
            if let Some((scheme, rest)) = value.split_once(':') {
                if SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
                    let rest = rest.trim_start_matches('/');
                    return Err(bad(&format!(
                        "not a URL: its scheme is followed by `:` without `//` (did you mean {scheme}://{rest}?)"
                    )));
                }
            }
            return Ok(Location::Folder(PathBuf::from(value)));
        };
        match scheme.to_ascii_lowercase().as_str() {
            "file" => {
                if rest.is_empty() {
                    return Err(bad("a file:// location needs a path"));
                }
                Ok(Location::Folder(PathBuf::from(rest)))
            }
            "s3" => {
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty()
                    || !bucket
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
                {
                    return Err(bad(
                        "an s3:// location is s3://bucket or s3://bucket/prefix",
                    ));
                }
                Ok(Location::S3 {
                    bucket: bucket.to_owned(),
                    prefix: prefix.trim_matches('/').to_owned(),
                })
            }
            "sftp" => {
                let (authority, path) = split_authority(rest);
                let (user, hostport) = split_user(authority);
                let (host, port) = split_port(hostport).ok_or_else(|| bad(PORT))?;
                if host.is_empty() {
                    return Err(bad(
                        "an sftp:// location needs a host: sftp://user@host:port/path",
                    ));
                }
                // sftp://host/dir is relative to the login folder; sftp://host//dir absolute.
                let path = path.strip_prefix('/').unwrap_or(path);
                if path.is_empty() || path == "/" {
                    return Err(bad(
                        "an sftp:// location needs a folder: sftp://host/ffsession",
                    ));
                }
                Ok(Location::Sftp {
                    user,
                    host: host.to_owned(),
                    port,
                    path: path.trim_end_matches('/').to_owned(),
                })
            }
            s @ ("webdav" | "webdavs") => {
                let (authority, path) = split_authority(rest);
                let (user, host) = split_user(authority);
                if split_port(host).is_none() {
                    return Err(bad(PORT));
                }
                if host.is_empty() {
                    return Err(bad(
                        "a WebDAV location is webdav[s]://[user@]host[:port]/path",
                    ));
                }
                Ok(Location::WebDav {
                    tls: s == "webdavs",
                    user,
                    host: host.to_owned(),
                    path: format!("/{}", path.trim_matches('/')),
                })
            }
            _ => Err(bad("unknown kind of location")),
        }
    }

    /// A short, stable text naming this location (for cache folders and
    /// messages); holds no secret.
    pub fn key(&self) -> String {
        self.to_string()
    }
}

/// The schemes of [`Location::is_url`].
const SCHEMES: &[&str] = &["sftp", "s3", "webdav", "webdavs", "file"];

/// What is wrong with a port that is not one.
const PORT: &str = "the port is not a number from 1 to 65535";

fn split_authority(rest: &str) -> (&str, &str) {
    match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    }
}

fn split_user(authority: &str) -> (Option<String>, &str) {
    match authority.rsplit_once('@') {
        Some((u, h)) if !u.is_empty() => (Some(u.to_owned()), h),
        Some((_, h)) => (None, h),
        None => (None, authority),
    }
}

/// host[:port]; `None` if the port is not a number from 1 to 65535. IPv6
/// in brackets.
fn split_port(hostport: &str) -> Option<(&str, Option<u16>)> {
    let port = |p: &str| p.parse::<u16>().ok().filter(|&p| p > 0);
    if let Some(rest) = hostport.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        return match after.strip_prefix(':') {
            Some(p) => Some((h, Some(port(p)?))),
            None if after.is_empty() => Some((h, None)),
            None => None,
        };
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) => Some((h, Some(port(p)?))),
        None => Some((hostport, None)),
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Folder(p) => write!(f, "{}", p.display()),
            Location::Sftp {
                user,
                host,
                port,
                path,
            } => {
                f.write_str("sftp://")?;
                if let Some(u) = user {
                    write!(f, "{u}@")?;
                }
                f.write_str(host)?;
                if let Some(p) = port {
                    write!(f, ":{p}")?;
                }
                write!(f, "/{path}")
            }
            Location::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            Location::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
            Location::WebDav {
                tls,
                user,
                host,
                path,
            } => {
                write!(f, "{}://", if *tls { "webdavs" } else { "webdav" })?;
                if let Some(u) = user {
                    write!(f, "{u}@")?;
                }
                write!(f, "{host}{path}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_parse_and_print_back() {
        for s in [
            "sftp://me@example.org:2222/backups/ff",
            "sftp://nas//srv/ffsession",
            "s3://bucket/some/prefix",
            "s3://bucket",
            "webdavs://me@cloud.example.org/remote.php/dav/files/me/ffsession",
            "webdav://127.0.0.1:8080/ff",
        ] {
            let l = Location::parse(s).unwrap();
            assert_eq!(l.to_string(), s, "{l:?}");
        }
        assert_eq!(
            Location::parse("sftp://nas//srv/x").unwrap(),
            Location::Sftp {
                user: None,
                host: "nas".into(),
                port: None,
                path: "/srv/x".into()
            }
        );
        assert_eq!(
            Location::parse("/a/b").unwrap(),
            Location::Folder("/a/b".into())
        );
        assert_eq!(
            Location::parse("file:///a/b").unwrap(),
            Location::Folder("/a/b".into())
        );
        for (bad, says) in [
            ("", "an empty location"),
            (
                "sftp:/127.0.0.1/tmp/x",
                "did you mean sftp://127.0.0.1/tmp/x?",
            ),
            ("SFTP:host/x", "did you mean SFTP://host/x?"),
            ("webdavs:/h/x", "did you mean webdavs://h/x?"),
            ("sftp://host:99999/p", "not a number from 1 to 65535"),
            ("sftp://host:0/p", "not a number from 1 to 65535"),
            ("webdav://host:70000/p", "not a number from 1 to 65535"),
        ] {
            let e = Location::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        for bad in [
            "sftp://host",
            "sftp://host:x/p",
            "s3://",
            "s3://bu cket/x",
            "ftp://x/y",
            "webdav:///x",
        ] {
            assert!(Location::parse(bad).is_err(), "{bad}");
        }
        assert!(Location::is_url("SFTP://h/p"));
        assert!(!Location::is_url("/home/me/sftp://x"));
    }
}
