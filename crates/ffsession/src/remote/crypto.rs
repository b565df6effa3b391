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

/// age's payload pieces (its STREAM chunk size).
const AGE_PIECE: u64 = 64 * 1024;
/// An age header with one X25519 recipient and no other stanza: the
/// version line (22 bytes), the stanza's line (54) and body (44), the MAC
/// line (48).
const AGE_X25519_HEADER: u64 = 22 + 54 + 44 + 48;
/// The most age's random extra stanza adds (its line of at most 66
/// characters and a body of at most 99 bytes: 132 base64 characters on
/// three lines), rounded up.
const AGE_GREASE_MAX: u64 = 256;

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
        age::encrypt(&recipient, text.as_bytes()).map_err(|e| one_line(&e))
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
            Err(e) => return Err(Unwrap::Damaged(one_line(&e))),
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

    /// The identity as age writes it (`AGE-SECRET-KEY-1...`): the secret
    /// that opens everything on the remote.
    pub(super) fn identity_text(&self) -> String {
        self.identity.to_string().expose_secret().to_owned()
    }

    /// The keys of an identity written by [`Keys::identity_text`].
    pub(super) fn from_identity_text(text: &str) -> Result<Keys, String> {
        let identity: age::x25519::Identity =
            text.trim().parse().map_err(|e: &str| e.to_owned())?;
        Ok(Self::from_identity(identity))
    }

    /// `plaintext` encrypted to this remote's recipient.
    pub fn seal(&self, plaintext: &[u8]) -> Result<Vec<u8>, String> {
        age::encrypt(&self.recipient, plaintext).map_err(|e| one_line(&e))
    }

    /// The sizes an object sealed from `plain_len` bytes may have (least,
    /// most): the payload's size is fixed (a 16-byte nonce, then 64 KiB
    /// pieces with a 16-byte tag each), the header's varies with the random
    /// stanza age adds to keep parsers honest ("grease", up to about 200
    /// bytes). An object of a size outside this range was cut short or is
    /// not what its name says.
    pub fn sealed_size_range(plain_len: u64) -> (u64, u64) {
        let pieces = plain_len.div_ceil(AGE_PIECE).max(1);
        let least = AGE_X25519_HEADER + 16 + plain_len + 16 * pieces;
        (least, least + AGE_GREASE_MAX)
    }

    /// The plaintext of an object, authenticated by age.
    pub fn open(&self, ciphertext: &[u8]) -> Result<Vec<u8>, String> {
        age::decrypt(&self.identity, ciphertext).map_err(|e| one_line(&e))
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

/// An error of age's on one line: its text is a message and advice on lines
/// of their own ("Unknown age format.\nHave you tried upgrading to the
/// latest version?"), which a one-line error would show as a literal `\n`.
fn one_line(e: &dyn std::fmt::Display) -> String {
    e.to_string()
        .lines()
        .map(|l| l.trim().trim_end_matches('.'))
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn age_errors_are_one_line() {
        let keys = Keys::generate();
        let e = keys.open(b"not an age file at all").unwrap_err();
        assert!(!e.contains('\n'), "{e:?}");
        assert!(!e.is_empty());
        // A newer format: age's text is two lines.
        let newer = b"age-encryption.org/v2\nwhat next\n";
        let raw = age::decrypt(&keys.identity, newer).unwrap_err().to_string();
        assert!(raw.contains('\n'), "{raw:?}");
        let e = keys.open(newer).unwrap_err();
        assert!(!e.contains('\n') && e.len() + 1 >= raw.len(), "{e:?}");
        assert_eq!(
            one_line(&"Unknown age format.\nHave you tried upgrading?"),
            "Unknown age format: Have you tried upgrading?"
        );
    }

    #[test]
    fn sealed_sizes_fall_in_their_range() {
        let keys = Keys::generate();
        let mut least = u64::MAX;
        for len in [0usize, 1, 100, 65_535, 65_536, 65_537, 200_000] {
            let (lo, hi) = Keys::sealed_size_range(len as u64);
            for _ in 0..40 {
                let n = keys.seal(&vec![7u8; len]).unwrap().len() as u64;
                assert!(lo <= n && n <= hi, "{len}: {n} not in {lo}..={hi}");
                if len == 0 {
                    least = least.min(n);
                }
            }
        }
        // The range is tight: the smallest object sealed is near its least.
        assert!(least < Keys::sealed_size_range(0).0 + 60, "{least}");
    }

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
