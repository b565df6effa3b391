//! Tolerant, borrowing field deserializers for the session model.
//!
//! Firefox versions differ in small ways: a number written as a float or as a
//! string (window geometry around Firefox 57 was `"width":"1280"`), a field set
//! to `null`, a boolean written as `0`/`1`. The rule: if Firefox would restore a
//! file's tabs, we read them. A field the model reads whose value has an
//! unexpected type is read as absent, never a reason to reject the file; a list
//! that is not an array is empty, and an element of a list that is not an object
//! is skipped. Only `windows` must be an array. Strings borrow from the input
//! unless an escape forces a copy.
//!
//! It also owns the one difference between the reference parse and a *fast
//! attempt* (see [`fast_attempt`]): how long unused strings are skipped.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, Error, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

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

/// The visitor methods that read any value of an unexpected type as `$absent`:
/// booleans, numbers, `null`, and objects or arrays (drained, their contents
/// skipped without recursion).
macro_rules! absent_otherwise {
    ($absent:expr; $($skip:ident),*) => {
        $(absent_otherwise!(@one $skip, $absent);)*
    };
    (@one unit, $absent:expr) => {
        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok($absent)
        }
    };
    (@one bool, $absent:expr) => {
        fn visit_bool<E: Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($absent)
        }
    };
    (@one numbers, $absent:expr) => {
        fn visit_u64<E: Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($absent)
        }
        fn visit_i64<E: Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($absent)
        }
        fn visit_f64<E: Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($absent)
        }
    };
    (@one strings, $absent:expr) => {
        fn visit_str<E: Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($absent)
        }
    };
    (@one containers, $absent:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($absent)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($absent)
        }
    };
}

impl<'de> Visitor<'de> for CowVisitor {
    type Value = Option<Cow<'de, str>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string (anything else reads as absent)")
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
    absent_otherwise!(None; unit, bool, numbers, containers);
}

/// `Option<Cow<str>>` that borrows when it can (serde's own `Cow` impl always copies).
/// Anything but a string reads as `None`.
pub(crate) fn opt_str<'de: 'a, 'a, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    d.deserialize_any(CowVisitor)
}

/// A string id that Firefox may also write as a number (tab group ids);
/// anything else reads as `None`.
pub(crate) fn opt_id<'de: 'a, 'a, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    struct IdVisitor;
    impl<'de> Visitor<'de> for IdVisitor {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a string or a number (anything else reads as absent)")
        }
        absent_otherwise!(None; unit, bool, containers);
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
        f.write_str("a number (anything else reads as absent)")
    }
    absent_otherwise!(None; unit, bool, containers);
    /// A number written as a string (`"1280"`, window sizes around Firefox 57).
    fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.trim().parse::<f64>().ok())
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

/// A non-negative integer written as any JSON number or a numeric string.
/// Negative values and anything else read as `None`.
pub(crate) fn opt_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(d.deserialize_any(NumberVisitor)?
        .filter(|v| *v >= 0.0 && v.is_finite())
        .map(|v| v as u64))
}

/// A signed integer written as any JSON number or a numeric string; anything
/// else reads as `None`.
pub(crate) fn opt_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(d.deserialize_any(NumberVisitor)?
        .filter(|v| v.is_finite())
        .map(|v| v as i64))
}

/// A boolean; a number reads as JavaScript reads it (`1` is true, `0` false),
/// and anything else (`null`, a missing field via `default`, a string, an
/// object) as false.
pub(crate) fn bool_or_null<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    struct BoolVisitor;
    impl<'de> Visitor<'de> for BoolVisitor {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a boolean (anything else reads as false)")
        }
        absent_otherwise!(false; unit, strings, containers);
        fn visit_bool<E: Error>(self, v: bool) -> Result<bool, E> {
            Ok(v)
        }
        fn visit_u64<E: Error>(self, v: u64) -> Result<bool, E> {
            Ok(v != 0)
        }
        fn visit_i64<E: Error>(self, v: i64) -> Result<bool, E> {
            Ok(v != 0)
        }
        fn visit_f64<E: Error>(self, v: f64) -> Result<bool, E> {
            Ok(v != 0.0 && !v.is_nan())
        }
    }
    d.deserialize_any(BoolVisitor)
}

/// A flag read as JavaScript reads a value in an `if`: `true`, a number
/// other than 0 (and not NaN), a non-empty string, an object or an array
/// are true; `false`, `0`, `""` and `null` are false. Forks write some of
/// their flags as the value of a DOM attribute (`"true"` or `null`) and
/// test them with an `if`; their modules read such flags with this.
pub(crate) fn truthy<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    struct TruthyVisitor;
    impl<'de> Visitor<'de> for TruthyVisitor {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any value (read as JavaScript reads it in an `if`)")
        }
        absent_otherwise!(true; containers);
        fn visit_unit<E: Error>(self) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_bool<E: Error>(self, v: bool) -> Result<bool, E> {
            Ok(v)
        }
        fn visit_u64<E: Error>(self, v: u64) -> Result<bool, E> {
            Ok(v != 0)
        }
        fn visit_i64<E: Error>(self, v: i64) -> Result<bool, E> {
            Ok(v != 0)
        }
        fn visit_f64<E: Error>(self, v: f64) -> Result<bool, E> {
            Ok(v != 0.0 && !v.is_nan())
        }
        fn visit_str<E: Error>(self, v: &str) -> Result<bool, E> {
            Ok(!v.is_empty())
        }
    }
    d.deserialize_any(TruthyVisitor)
}

/// One element of a list: `Some` if it is an object (read by `T`, the model
/// type), `None` (skipped) if it is anything else.
struct Element<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Element<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Element<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object (anything else is skipped)")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|t| Element(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Element(None))
            }
            absent_otherwise!(Element(None); unit, bool, numbers, strings);
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A list of model objects, as a visitor: elements that are not objects are
/// skipped; `required` decides whether a value that is not an array is an
/// error (`windows`) or an empty list (every other list).
struct ListVisitor<T> {
    required: bool,
    marker: PhantomData<T>,
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for ListVisitor<T> {
    type Value = Vec<T>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut list = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(Element(element)) = seq.next_element::<Element<T>>()? {
            list.extend(element);
        }
        Ok(list)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<T>, A::Error> {
        if self.required {
            return Err(Error::invalid_type(serde::de::Unexpected::Map, &self));
        }
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Vec::new())
    }
    fn visit_unit<E: Error>(self) -> Result<Vec<T>, E> {
        self.other(serde::de::Unexpected::Unit)
    }
    fn visit_bool<E: Error>(self, v: bool) -> Result<Vec<T>, E> {
        self.other(serde::de::Unexpected::Bool(v))
    }
    fn visit_u64<E: Error>(self, v: u64) -> Result<Vec<T>, E> {
        self.other(serde::de::Unexpected::Unsigned(v))
    }
    fn visit_i64<E: Error>(self, v: i64) -> Result<Vec<T>, E> {
        self.other(serde::de::Unexpected::Signed(v))
    }
    fn visit_f64<E: Error>(self, v: f64) -> Result<Vec<T>, E> {
        self.other(serde::de::Unexpected::Float(v))
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<Vec<T>, E> {
        self.other(serde::de::Unexpected::Str(v))
    }
}

impl<T> ListVisitor<T> {
    fn other<E: Error>(self, unexpected: serde::de::Unexpected) -> Result<Vec<T>, E> {
        match self.required {
            true => Err(E::invalid_type(unexpected, &"an array")),
            false => Ok(Vec::new()),
        }
    }
}

/// A list of model objects (`tabs`, `entries`, `_closedTabs`, ...): a value
/// that is not an array reads as empty, an element that is not an object is
/// skipped.
pub(crate) fn list<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    d.deserialize_any(ListVisitor {
        required: false,
        marker: PhantomData,
    })
}

/// `windows`: must be an array (without it there is no session); elements
/// that are not objects are skipped.
pub(crate) fn array<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    d.deserialize_any(ListVisitor {
        required: true,
        marker: PhantomData,
    })
}

/// A model object that may be absent: anything but an object reads as the
/// default (`session`, a closed tab's `state`).
pub(crate) fn object_or_default<'de, T: Deserialize<'de> + Default, D: Deserializer<'de>>(
    d: D,
) -> Result<T, D::Error> {
    Ok(Element::<T>::deserialize(d)?.0.unwrap_or_default())
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

/// The field readers of the model, as standalone values.
macro_rules! field_type {
    ($name:ident, $ty:ty, $read:path) => {
        pub(crate) struct $name<'a>(pub(crate) $ty, std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Deserialize<'de> for $name<'a> {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                Ok($name($read(d)?, std::marker::PhantomData))
            }
        }
    };
}
field_type!(OptU64, Option<u64>, opt_u64);
field_type!(OptI64, Option<i64>, opt_i64);
field_type!(OptStr, Option<Cow<'a, str>>, opt_str);
field_type!(OptId, Option<Cow<'a, str>>, opt_id);
field_type!(BoolOrNull, bool, bool_or_null);
field_type!(Truthy, bool, truthy);
field_type!(Blob, Skipped, unused_blob);

/// A list field of the model (`de::list`), as a standalone value.
pub(crate) struct List<T>(pub(crate) Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        list(d).map(List)
    }
}

/// An object field of the model (`de::object_or_default`), as a standalone value.
pub(crate) struct OrDefault<T>(pub(crate) T);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for OrDefault<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        object_or_default(d).map(OrDefault)
    }
}
