//! `decompress` and `compress`: round trips, atomic output, never over the input.

use std::fs;

use crate::common::{session, stderr, TestEnv};

#[test]
fn decompress_then_compress_gives_back_the_same_json_bytes() {
    let env = TestEnv::new();
    let g = session(Default::default());
    let packed = env.write("recovery.baklz4", &g.packed);
    let out = env
        .cmd()
        .arg("decompress")
        .arg(&packed)
        .args(["-o", "s.json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(env.path().join("s.json")).unwrap(),
        g.json
    );

    let out = env
        .cmd()
        .args(["compress", "s.json", "-o", "again.jsonlz4"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let again = fs::read(env.path().join("again.jsonlz4")).unwrap();
    assert_eq!(&again[..8], b"mozLz40\0");
    let out = env
        .cmd()
        .args(["decompress", "again.jsonlz4"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), g.json);
    assert_eq!(
        env.files(),
        ["again.jsonlz4", "home", "recovery.baklz4", "s.json"]
    );
}

#[cfg(unix)]
#[test]
fn outputs_are_private_because_sessions_hold_secrets() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let g = session(Default::default());
    env.write("in.jsonlz4", &g.packed);
    env.cmd()
        .args(["decompress", "in.jsonlz4", "-o", "out.json"])
        .assert()
        .success();
    let mode = fs::metadata(env.path().join("out.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn pretty_json_is_the_same_value() {
    let env = TestEnv::new();
    let g = session(Default::default());
    env.write("in.jsonlz4", &g.packed);
    let out = env
        .cmd()
        .args(["decompress", "--pretty", "in.jsonlz4"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let pretty = String::from_utf8(out.stdout).unwrap();
    assert!(pretty.lines().count() > 100);
    let a: serde_json::Value = serde_json::from_str(&pretty).unwrap();
    let b: serde_json::Value = serde_json::from_str(&g.json).unwrap();
    assert_eq!(a, b);
}

#[test]
fn never_writes_over_the_input_unless_in_place() {
    let env = TestEnv::new();
    let g = session(Default::default());
    let input = env.write("s.json", g.json.as_bytes());
    let out = env
        .cmd()
        .args(["compress", "s.json", "-o", "./s.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("refusing to overwrite the input file"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&input).unwrap(), g.json);

    env.cmd()
        .args(["compress", "--in-place", "s.json"])
        .assert()
        .success();
    let replaced = fs::read(&input).unwrap();
    assert_eq!(&replaced[..8], b"mozLz40\0");
    env.cmd()
        .args(["decompress", "--in-place", "s.json"])
        .assert()
        .success();
    assert_eq!(fs::read_to_string(&input).unwrap(), g.json);
    assert_eq!(env.files(), ["home", "s.json"]);
}

#[test]
fn compress_refuses_mozlz4_and_invalid_sessions() {
    let env = TestEnv::new();
    let g = session(Default::default());
    env.write("s.jsonlz4", &g.packed);
    let out = env
        .cmd()
        .args(["compress", "s.jsonlz4", "-o", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("already mozlz4"), "{}", stderr(&out));
    env.write("bad.json", br#"{"windows": 3}"#);
    let out = env
        .cmd()
        .args(["compress", "bad.json", "-o", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!env.path().join("x").exists());
    env.cmd()
        .args(["compress", "--no-verify", "bad.json", "-o", "x"])
        .assert()
        .success();
}
