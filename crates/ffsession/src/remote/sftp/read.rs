//! Reading many objects on SFTP, each on its own account (see
//! `SftpBackend::read_many`): a read that hangs or that the server refuses
//! is that object's failure, and the others are read.

use std::sync::Arc;

use super::{classify, Conn, Fail, SftpBackend};
use crate::remote::backend::{read_timeout, ReadResult};
use crate::remote::RemoteError;

impl SftpBackend {
    /// Read `rel` in at most the read timeout ([`Fail::Hung`] if not: the
    /// session may be stuck behind it).
    pub(super) async fn read_timed(&self, c: &Arc<Conn>, rel: &str) -> Result<Vec<u8>, Fail> {
        let timeout = read_timeout();
        match tokio::time::timeout(timeout, c.sftp.fs().read(self.full_path(rel))).await {
            Ok(r) => r.map(|b| b.to_vec()).map_err(classify),
            Err(_) => Err(Fail::Hung(format!(
                "no answer for {} s",
                timeout.as_secs_f64().round()
            ))),
        }
    }

    /// The store's folder answers a look at it within the read timeout.
    pub(super) async fn answers(&self, c: &Arc<Conn>) -> Result<(), Fail> {
        let timeout = read_timeout();
        match tokio::time::timeout(timeout, c.sftp.fs().metadata(self.full_path(""))).await {
            Ok(r) => r.map(|_| ()).map_err(classify),
            Err(_) => Err(Fail::Lost(format!(
                "no answer for {} s",
                timeout.as_secs_f64().round()
            ))),
        }
    }

    /// One read's result: no such file is `None`; a refusal, or a read
    /// that hung, is that object's error.
    pub(super) fn one_result(&self, rel: &str, got: Result<Vec<u8>, Fail>) -> ReadResult {
        match got {
            Ok(b) => Ok(Some(b)),
            Err(Fail::NotFound) => Ok(None),
            Err(Fail::Refused(why)) => {
                Err(self.error("read", rel, format!("the server refused: {why}"), false))
            }
            Err(Fail::Lost(why) | Fail::Hung(why)) => Err(self.error("read", rel, why, false)),
        }
    }

    /// `rel` read again alone (its first read got no answer, or its
    /// connection was lost), on a new connection if the last was dropped.
    /// One that hangs again is unreadable, once a new connection shows the
    /// server answers (its stuck one is dropped: `ssh` killed); a
    /// connection that cannot be made, or is lost, fails the whole call.
    pub(super) async fn read_alone(&self, rel: &str) -> Result<ReadResult, RemoteError> {
        let c = self.conn().await?;
        match self.read_timed(&c, rel).await {
            Err(Fail::Hung(why)) => {
                self.drop_conn(&c);
                let fresh = self.conn().await?;
                if let Err(f) = self.answers(&fresh).await {
                    return Err(self.failed(&fresh, "read", rel, f));
                }
                Ok(Err(self.error("read", rel, why, false)))
            }
            Err(Fail::Lost(why)) => Err(self.failed(&c, "read", rel, Fail::Lost(why))),
            got => Ok(self.one_result(rel, got)),
        }
    }
}
