//! `decompress` and `compress`: round trips, atomic output, never over the input.

use std::fs;

use crate::common::{expect_error, ok_output, ok_stdout, session, TestEnv};

#[test]
fn decompress_then_compress_gives_back_the_same_json_bytes() {
    let env = TestEnv::new();
    let g = session(Default::default());
    let packed = env.write("recovery.baklz4", &g.packed);
    ok_output(
        env.cmd()
            .arg("decompress")
            .arg(&packed)
            .args(["-o", "s.json"]),
    );
    assert_eq!(
        fs::read_to_string(env.path().join("s.json")).unwrap(),
        g.json
    );

    ok_output(
        env.cmd()
            .args(["compress", "s.json", "-o", "again.jsonlz4"]),
    );
    let again = fs::read(env.path().join("again.jsonlz4")).unwrap();
    assert_eq!(&again[..8], b"mozLz40\0");
    assert_eq!(
        ok_stdout(env.cmd().args(["decompress", "again.jsonlz4"])),
        g.json
    );
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
    let pretty = ok_stdout(env.cmd().args(["decompress", "--pretty", "in.jsonlz4"]));
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
    let err = expect_error(env.cmd().args(["compress", "s.json", "-o", "./s.json"]));
    assert!(
        err.contains("refusing to overwrite the input file"),
        "{err}"
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
    let err = expect_error(env.cmd().args(["compress", "s.jsonlz4", "-o", "x"]));
    assert!(err.contains("already mozlz4"), "{err}");
    env.write("bad.json", br#"{"windows": 3}"#);
    expect_error(env.cmd().args(["compress", "bad.json", "-o", "x"]));
    assert!(!env.path().join("x").exists());
    env.cmd()
        .args(["compress", "--no-verify", "bad.json", "-o", "x"])
        .assert()
        .success();
}
