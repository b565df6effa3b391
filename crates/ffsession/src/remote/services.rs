//! Opening the backend of a location: a folder directly, the others through
//! OpenDAL. Settings the location cannot carry (S3 endpoint and keys, a
//! WebDAV password) come from [`RemoteOptions`], which the caller fills
//! (the CLI: from the usual environment variables and the config file).

use super::backend::Backend;
use super::local::LocalBackend;
use super::location::Location;
use super::opendal::OpendalBackend;
use super::RemoteError;

/// Settings for the services that need more than a URL.
#[derive(Debug, Clone, Default)]
pub struct RemoteOptions {
    /// S3: the endpoint URL (`https://s3.example.org`); AWS when `None`.
    pub s3_endpoint: Option<String>,
    /// S3: the region (`us-east-1` when `None`).
    pub s3_region: Option<String>,
    /// S3: the access key id.
    pub s3_access_key_id: Option<String>,
    /// S3: the secret access key.
    pub s3_secret_access_key: Option<String>,
    /// S3: a session token, for temporary credentials.
    pub s3_session_token: Option<String>,
    /// WebDAV: the password (the login name is in the URL).
    pub webdav_password: Option<String>,
    /// SFTP: a private key file to use instead of the SSH set-up's choice.
    pub sftp_key: Option<String>,
}

/// The backend for `location`.
pub fn open_backend(
    location: &Location,
    options: &RemoteOptions,
) -> Result<Box<dyn Backend>, RemoteError> {
    let name = location.to_string();
    let build_err = |e: opendal::Error| RemoteError::Location {
        location: name.clone(),
        reason: e.to_string(),
    };
    if matches!(location, Location::S3 { .. } | Location::WebDav { .. }) {
        tls_crypto();
        http_client_can_be_built().map_err(|reason| RemoteError::Location {
            location: name.clone(),
            reason,
        })?;
    }
    match location {
        Location::Folder(path) => Ok(Box::new(LocalBackend::new(path.clone()))),
        Location::S3 { bucket, prefix } => {
            let mut b = opendal::services::S3::default()
                .bucket(bucket)
                .root(&format!("/{prefix}"))
                .region(options.s3_region.as_deref().unwrap_or("us-east-1"))
                .disable_config_load()
                .disable_ec2_metadata();
            if let Some(e) = &options.s3_endpoint {
                b = b.endpoint(e);
            }
            if let Some(k) = &options.s3_access_key_id {
                b = b.access_key_id(k);
            }
            if let Some(k) = &options.s3_secret_access_key {
                b = b.secret_access_key(k);
            }
            if let Some(t) = &options.s3_session_token {
                b = b.session_token(t);
            }
            let op = opendal::Operator::new(b).map_err(build_err)?.finish();
            Ok(Box::new(OpendalBackend::new(op, name, false)?))
        }
        Location::WebDav {
            tls,
            user,
            host,
            path,
        } => {
            let mut b = opendal::services::Webdav::default()
                .endpoint(&format!("{}://{host}", if *tls { "https" } else { "http" }))
                .root(path);
            if let Some(u) = user {
                b = b.username(u);
            }
            if let Some(p) = &options.webdav_password {
                b = b.password(p);
            }
            let op = opendal::Operator::new(b).map_err(build_err)?.finish();
            Ok(Box::new(OpendalBackend::new(op, name, true)?))
        }
        Location::Sftp { .. } => sftp(location, options),
    }
}

/// Installs ring as rustls' cryptography for the process. Every OpenDAL
/// service (S3, WebDAV) builds an HTTP client when it is set up, and that
/// client needs one installed (the workspace Cargo.toml says why ring). One
/// installed already (by an earlier call, or by a program using this
/// library) is kept.
fn tls_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Whether OpenDAL's HTTP client can be built here. OpenDAL builds it as
/// any service is set up, and panics if it cannot: on a system
/// with no CA certificates (a container without `ca-certificates`, an empty
/// `SSL_CERT_FILE`). One built here first, with the same settings, says so
/// as an error instead.
fn http_client_can_be_built() -> Result<(), String> {
    match reqwest::Client::builder().build() {
        Ok(_) => Ok(()),
        Err(e) => {
            let cause = super::error::last_cause(&e).unwrap_or_else(|| e.to_string());
            Err(format!(
                "the HTTPS client cannot be set up ({cause}): install the system's CA certificates (Debian: the ca-certificates package), or point SSL_CERT_FILE at a file of them"
            ))
        }
    }
}

#[cfg(unix)]
fn sftp(location: &Location, options: &RemoteOptions) -> Result<Box<dyn Backend>, RemoteError> {
    let Location::Sftp {
        user,
        host,
        port,
        path,
    } = location
    else {
        unreachable!("sftp() is called for SFTP locations only")
    };
    // `ssh` reads ~/.ssh/config (host aliases, keys, ports), the agent and
    // known_hosts itself; a port or user given in the URL wins.
    let target = super::ssh::Target {
        user: user.clone(),
        host: host.clone(),
        port: *port,
        key: options.sftp_key.clone(),
    };
    Ok(Box::new(super::sftp::SftpBackend::new(
        location.to_string(),
        target,
        path.clone(),
    )?))
}

#[cfg(not(unix))]
fn sftp(location: &Location, _: &RemoteOptions) -> Result<Box<dyn Backend>, RemoteError> {
    Err(RemoteError::Unsupported {
        location: location.to_string(),
        reason: "SFTP is not available on this system (ffsession speaks SFTP through OpenSSH's `ssh` on Unix only)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::backend::Kind;

    /// A server that takes each connection and closes it at once: no TLS
    /// handshake or HTTP answer ever comes.
    fn hang_up_server() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                drop(conn);
            }
        });
        port
    }

    /// OpenDAL's HTTP client is built with rustls and no cryptography of
    /// its own (the workspace Cargo.toml): without `tls_crypto` installing
    /// ring, setting up an S3 or WebDAV service panics. Here an SFTP remote
    /// is set up (it connects only when used), and an HTTPS
    /// WebDAV and an HTTPS S3 server that hang up are errors.
    #[test]
    fn remotes_set_up_and_https_remotes_that_hang_up_are_errors_not_panics() {
        #[cfg(unix)]
        {
            let sftp = Location::parse("sftp://127.0.0.1:1/store").unwrap();
            open_backend(&sftp, &RemoteOptions::default()).unwrap();
        }
        let port = hang_up_server();
        let webdav = Location::parse(&format!("webdavs://127.0.0.1:{port}/store")).unwrap();
        let s3 = Location::parse("s3://bucket/store").unwrap();
        let options = RemoteOptions {
            s3_endpoint: Some(format!("https://127.0.0.1:{port}")),
            s3_access_key_id: Some("key".into()),
            s3_secret_access_key: Some("secret".into()),
            ..RemoteOptions::default()
        };
        for location in [webdav, s3] {
            let backend = open_backend(&location, &options).unwrap();
            let err = backend.list(Kind::Snapshots).unwrap_err();
            assert!(
                matches!(err, RemoteError::Backend { .. }),
                "{location}: {err:?}"
            );
        }
    }
}
