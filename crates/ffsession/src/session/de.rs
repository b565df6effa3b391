//! Tolerant, borrowing field deserializers for the session model.
//!
//! Firefox versions differ in small ways (a number written as a float, a field
//! set to `null`), so numbers accept any JSON number and every optional field
//! accepts `null`. Strings borrow from the input unless an escape forces a copy.
//!
//! It also owns the one difference between the reference parse and a *fast
//! attempt* (see [`fast_attempt`]): how long unused strings are skipped.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use serde::de::{Deserializer, Error, IgnoredAny, Visitor};

thread_local! {
    /// Set while this thread runs a fast attempt: a parse whose every error
    /// sends the whole document to the reference parser.
    static FAST_ATTEMPT: Cell<bool> = const { Cell::new(false) };
}

/// Run `f` as a fast attempt on this thread: [`unused_blob`] fields are then
/// skipped in a way that is exact for the strings Firefox writes there and
/// fails (so the caller must fall back to the reference parser) on anything else.
pub(crate) fn fast_attempt<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            FAST_ATTEMPT.set(self.0);
        }
    }
    let _restore = Restore(FAST_ATTEMPT.replace(true));
    f()
}

/// What [`unused_blob`] keeps of a field: nothing.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Skipped;

/// A long string the model does not use: a favicon's `data:` URI, base64 CSP,
/// referrer info or clone state. Most of a session's bytes are such strings.
///
/// The reference parse skips it like any unknown field (serde's `IgnoredAny`:
/// any JSON value; serde_json scans strings 8 bytes at a time for the closing
/// quote, escapes and control characters). A fast attempt asks serde_json for
/// the string's raw bytes instead, which finds the closing quote and escapes
/// with memchr (SIMD) but lets control characters through, so they are checked
/// here, on bytes still in cache. Raw control characters survive unescaping,
/// so a string whose (unescaped) bytes have none had none; one that has some
/// (an escaped `\n`, or a raw one) fails the attempt, as does a value that is
/// not a string or null. An escaped string is unescaped into serde_json's
/// scratch buffer, which may grow: Firefox writes base64 and URLs in these
/// fields, so escapes are rare there.
pub(crate) fn unused_blob<'de, D: Deserializer<'de>>(d: D) -> Result<Skipped, D::Error> {
    struct RawString;
    impl<'de> Visitor<'de> for RawString {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string without control characters, or null")
        }
        fn visit_none<E: Error>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E: Error>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_bytes(self)
        }
        fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<(), E> {
            // The smallest byte, found with vector instructions (`any` would
            // test byte by byte). JSON forbids raw bytes below 0x20 in strings.
            match v.iter().fold(u8::MAX, |low, &b| low.min(b)) {
                0..0x20 => Err(E::custom("control character in a string")),
                _ => Ok(()),
            }
        }
    }
    if FAST_ATTEMPT.get() {
        d.deserialize_option(RawString)?;
    } else {
        d.deserialize_ignored_any(IgnoredAny)?;
    }
    Ok(Skipped)
}

struct CowVisitor;

impl<'de> Visitor<'de> for CowVisitor {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or null")
    }
    fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
    fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(v)))
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v)))
    }
}

/// `Option<Cow<str>>` that borrows when it can (serde's own `Cow` impl always copies).
pub(crate) fn opt_str<'de: 'a, 'a, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    d.deserialize_option(CowVisitor)
}

/// A string id that Firefox may also write as a number (tab group ids).
pub(crate) fn opt_id<'de: 'a, 'a, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    struct IdVisitor;
    impl<'de> Visitor<'de> for IdVisitor {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string, a number or null")
        }
        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_owned())))
        }
        fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
        fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_string())))
        }
    }
    d.deserialize_any(IdVisitor)
}

struct NumberVisitor;

impl<'de> Visitor<'de> for NumberVisitor {
    type Value = Option<f64>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number or null")
    }
    fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(v as f64))
    }
    fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(v as f64))
    }
    fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
}

/// A non-negative integer written as any JSON number, or null. Negative values
/// read as `None`.
pub(crate) fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(d.deserialize_any(NumberVisitor)?
        .filter(|v| *v >= 0.0 && v.is_finite())
        .map(|v| v as u64))
}

/// A signed integer written as any JSON number, or null.
pub(crate) fn opt_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(d.deserialize_any(NumberVisitor)?
        .filter(|v| v.is_finite())
        .map(|v| v as i64))
}

/// A boolean, with `null` (or a missing field, via `default`) read as false.
pub(crate) fn bool_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    struct BoolVisitor;
    impl<'de> Visitor<'de> for BoolVisitor {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a boolean or null")
        }
        fn visit_unit<E: Error>(self) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_bool<E: Error>(self, v: bool) -> Result<bool, E> {
            Ok(v)
        }
    }
    d.deserialize_any(BoolVisitor)
}

/// Implement `Deserialize` for a model type so that it reads only from a JSON
/// object, forwarding to the impl serde derives with `#[serde(remote = "Self")]`.
macro_rules! object_only {
    ($ty:ident<'a>) => {
        impl<'de: 'a, 'a> serde::Deserialize<'de> for $ty<'a> {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V<'a>(std::marker::PhantomData<$ty<'a>>);
                impl<'de: 'a, 'a> serde::de::Visitor<'de> for V<'a> {
                    type Value = $ty<'a>;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str(concat!("a JSON object (", stringify!($ty), ")"))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        map: A,
                    ) -> Result<Self::Value, A::Error> {
                        $ty::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    }
                }
                d.deserialize_map(V(std::marker::PhantomData))
            }
        }
    };
    ($ty:ident) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> serde::de::Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str(concat!("a JSON object (", stringify!($ty), ")"))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        map: A,
                    ) -> Result<Self::Value, A::Error> {
                        $ty::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}
pub(crate) use object_only;
