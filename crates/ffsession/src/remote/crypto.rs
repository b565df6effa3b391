//! Keys and encryption, in age's format so that the `age` command decrypts
//! every object without ffsession.
//!
//! Each remote has one random X25519 identity. `keys/<name>` holds it as an
//! age identity file, encrypted with the user's password through age's
//! scrypt recipient (a slow KDF, as restic keeps its master key). Every
//! object is encrypted to that identity's recipient. age authenticates the
//! payload but not the sender (anyone knowing the recipient could encrypt),
//! so every object is also bound to its name: names are keyed BLAKE3 digests
//! under a key derived from the identity, and a reader checks the name of
//! what it decrypted. The server learns sizes and times only: no digest of
//! any plaintext, no URL, no title.

use age::secrecy::{ExposeSecret, SecretString};

/// The context string of the name key (BLAKE3 `derive_key`).
const NAME_KEY_CONTEXT: &str = "ffsession remote store 2026-11 object names";

/// A remote's keys, once unlocked.
pub struct Keys {
    identity: age::x25519::Identity,
    recipient: age::x25519::Recipient,
    names: [u8; 32],
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

/// Why a key file did not open.
#[derive(Debug)]
pub enum Unwrap {
    /// The password is not this key's.
    WrongPassword,
    /// The file is not a key ffsession wrote (what is wrong).
    Damaged(String),
}

impl Keys {
    /// A new random identity.
    pub fn generate() -> Keys {
        Self::from_identity(age::x25519::Identity::generate())
    }

    fn from_identity(identity: age::x25519::Identity) -> Keys {
        let secret = identity.to_string();
        let names = blake3::derive_key(NAME_KEY_CONTEXT, secret.expose_secret().as_bytes());
        Keys {
            recipient: identity.to_public(),
            identity,
            names,
        }
    }

    /// The key file: an age identity file (with a comment line), encrypted
    /// with `password` through scrypt at work factor `log_n` (age's own
    /// calibration, about a second, when `None`).
    pub fn wrap(&self, password: &str, log_n: Option<u8>, note: &str) -> Result<Vec<u8>, String> {
        let mut recipient = age::scrypt::Recipient::new(SecretString::from(password.to_owned()));
        if let Some(n) = log_n {
            recipient.set_work_factor(n);
        }
        let text = format!(
            "# ffsession remote store key ({})\n{}\n",
            note.replace('\n', " "),
            self.identity.to_string().expose_secret()
        );
        age::encrypt(&recipient, text.as_bytes()).map_err(|e| e.to_string())
    }

    /// The keys in a key file, opened with `password`.
    pub fn unwrap(file: &[u8], password: &str) -> Result<Keys, Unwrap> {
        let mut identity = age::scrypt::Identity::new(SecretString::from(password.to_owned()));
        // A key file of ours is at most a few factors above this machine's
        // calibration; anything far slower is refused rather than run.
        identity.set_max_work_factor(24);
        let text = match age::decrypt(&identity, file) {
            Ok(t) => t,
            Err(age::DecryptError::DecryptionFailed)
            | Err(age::DecryptError::NoMatchingKeys)
            | Err(age::DecryptError::KeyDecryptionFailed) => return Err(Unwrap::WrongPassword),
            Err(e) => return Err(Unwrap::Damaged(e.to_string())),
        };
        let text = String::from_utf8(text).map_err(|_| Unwrap::Damaged("not text".into()))?;
        let line = text
            .lines()
            .find(|l| l.starts_with("AGE-SECRET-KEY-"))
            .ok_or_else(|| Unwrap::Damaged("it holds no age identity".into()))?;
        let identity: age::x25519::Identity = line
            .parse()
            .map_err(|e: &str| Unwrap::Damaged(e.to_owned()))?;
        Ok(Self::from_identity(identity))
    }

    /// `plaintext` encrypted to this remote's recipient.
    pub fn seal(&self, plaintext: &[u8]) -> Result<Vec<u8>, String> {
        age::encrypt(&self.recipient, plaintext).map_err(|e| e.to_string())
    }

    /// The plaintext of an object, authenticated by age.
    pub fn open(&self, ciphertext: &[u8]) -> Result<Vec<u8>, String> {
        age::decrypt(&self.identity, ciphertext).map_err(|e| e.to_string())
    }

    /// The name of an object of `kind` standing for `digest`: 64 hex digits
    /// of a keyed BLAKE3, which says nothing of the digest to the server.
    pub fn name(&self, kind: &str, digest: &[u8; 32]) -> String {
        let mut h = blake3::Hasher::new_keyed(&self.names);
        h.update(kind.as_bytes());
        h.update(&[0]);
        h.update(digest);
        h.finalize().to_hex().to_string()
    }

    /// True if both are the same identity.
    pub fn same(&self, other: &Keys) -> bool {
        self.names == other.names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_opens_with_its_password_only_and_objects_round_trip() {
        let keys = Keys::generate();
        let file = keys.wrap("correct horse", Some(2), "test").unwrap();
        assert!(matches!(
            Keys::unwrap(&file, "wrong"),
            Err(Unwrap::WrongPassword)
        ));
        let back = Keys::unwrap(&file, "correct horse").unwrap();
        assert!(back.same(&keys));
        let sealed = keys.seal(b"hello").unwrap();
        assert_eq!(back.open(&sealed).unwrap(), b"hello");
        let mut bad = sealed.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(back.open(&bad).is_err());
        assert!(Keys::generate().open(&sealed).is_err());
        let d = [7u8; 32];
        assert_eq!(keys.name("chunk", &d), back.name("chunk", &d));
        assert_ne!(keys.name("chunk", &d), keys.name("content", &d));
        assert_ne!(keys.name("chunk", &d), Keys::generate().name("chunk", &d));
        assert!(!keys
            .name("chunk", &d)
            .contains(&blake3::Hash::from(d).to_hex().to_string()));
    }
}
