use base64::Engine as _;
use rstest::rstest;

use super::*;

fn kinds(text: &str) -> Vec<SecretKind> {
    find(text).into_iter().map(|f| f.kind).collect()
}

#[rstest]
#[case::aws("aws_access = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE")]
#[case::openai(
    "key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXyZ0",
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXyZ0"
)]
#[case::anthropic(
    "ANTHROPIC sk-ant-api03-q1w2e3r4t5y6u7i8o9p0asdfghjkl",
    "sk-ant-api03-q1w2e3r4t5y6u7i8o9p0asdfghjkl"
)]
#[case::github(
    "token ghp_0123456789abcdefghijABCDEFGHIJ012345 end",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345"
)]
#[case::slack("xoxb-1234567890-abcdefghijkl", "xoxb-1234567890-abcdefghijkl")]
#[case::google(
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv"
)]
#[case::stripe("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc")]
#[case::bearer("Authorization: Bearer abc.def-ghi_jkl123456", "abc.def-ghi_jkl123456")]
#[case::url_password("postgres://admin:s3cr3t-pw@db.internal:5432/app", "s3cr3t-pw")]
#[case::assignment("DB_PASSWORD=hunter2hunter2\n", "hunter2hunter2")]
#[case::json_assignment(r#"{"api_key": "zz-top-secret-value"}"#, "zz-top-secret-value")]
fn finds_the_secret_itself(#[case] text: &str, #[case] secret: &str) {
    let found = find(text);
    assert_eq!(found.len(), 1, "one secret in {text:?}: {found:?}");
    assert_eq!(&text[found[0].range.clone()], secret);
    let clean = redact(text);
    assert!(!clean.contains(secret), "{clean}");
    assert!(clean.contains("[redacted sha256:"), "{clean}");
}

#[test]
fn jwts_and_private_keys_are_found_whole() {
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    assert_eq!(kinds(&format!("cookie: {jwt}")), [SecretKind::Jwt]);
    let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----";
    let text = format!("key file:\n{pem}\ntrailing");
    let clean = redact(&text);
    assert_eq!(clean.matches("[redacted").count(), 1, "{clean}");
    assert!(
        clean.ends_with("\ntrailing") && !clean.contains("b3Bl"),
        "{clean}"
    );
    // A block cut off by a size cap is still removed to the end.
    let cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7";
    assert!(!redact(cut).contains("MIIE"));
}

#[test]
fn encoded_secrets_are_found() {
    let key = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let b64 = base64::engine::general_purpose::STANDARD.encode(format!("token: {key}"));
    let hexed = hex::encode(key);
    assert_eq!(kinds(&format!("blob {b64} end")), [SecretKind::Encoded]);
    assert_eq!(kinds(&hexed), [SecretKind::Encoded]);
}

#[test]
fn random_tokens_are_high_entropy() {
    for token in [
        "Zk3vQ9xL2mR7tW1pN8sB4dF6hJ0gY5cA",
        "q8Xz2LmP0vN4rT7wK1sD9fH3jB6gC5aE/+Q=",
        "u3Kp9Vd2Hq8Lx5Rz1Tn7Wb4Ys6Ja0Mc",
    ] {
        assert_eq!(kinds(token), [SecretKind::HighEntropy], "{token}");
    }
}

#[test]
fn a_random_token_needs_the_context_of_a_credential_except_for_memory() {
    let token = "Zk3vQ9xL2mR7tW1pN8sB4dF6hJ0gY5cA";
    for (text, secret) in [
        (format!("see {token} in the log"), false),
        (format!("RELEASE_PUBLIC_KEY = \"{token}\""), false),
        (format!("integrity sha512-{token}"), false),
        (format!("MY_SERVICE_TOKEN={token}"), true),
        (format!("X-Api-Key: {token}"), true),
        (format!("$ cat token.txt\n{token}\n"), true),
    ] {
        assert_eq!(!find(&text).is_empty(), secret, "{text}");
        assert!(!find_strict(&text).is_empty() || text.contains("sha512-"), "strict: {text}");
    }
}

#[rstest]
#[case::sha256("actionHash 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")]
#[case::uuid("run 01938f5e-7c1a-7d4e-9b2f-3a6c5d8e9f10")]
#[case::path("crates/reins-core/src/engine/effect.rs and src/components/ApprovalCard2.tsx")]
#[case::words("ConfigurationManagerFactory and test_fixture_2024_configuration")]
#[case::kinds("approval.requested checkpoint.damage_detected intent.outcome_unknown")]
#[case::url_with_port("fetch https://example.com:8080/path?q=1")]
#[case::diff("@@ -1,3 +1,4 @@\n-let x = compute(1);\n+let x = compute_all(2);\n")]
#[case::plain_b64("aGVsbG8gd29ybGQsIHRoaXMgaXMganVzdCBzb21lIHRleHQ=")]
#[case::command("cargo test --workspace --all-features -- --test-threads=1")]
#[case::short_password_word("the password is required")]
fn harmless_text_is_left_alone(#[case] text: &str) {
    assert_eq!(find(text), [], "{text}");
    assert!(matches!(redact(text), Cow::Borrowed(_)));
}

#[test]
fn markers_are_stable_and_json_is_walked() {
    let key = "AKIAIOSFODNN7EXAMPLE";
    assert_eq!(marker(key), marker(key));
    let mut v = serde_json::json!({
        "args": { "content": format!("export AWS={key}"), "n": 3 },
        "list": ["ok", format!("Bearer {key}")],
        key: "a key used as a name",
    });
    assert!(redact_json(&mut v));
    let text = v.to_string();
    assert!(!text.contains(key), "{text}");
    assert_eq!(v["args"]["n"], 3);
    assert!(!redact_json(&mut v), "a second pass finds nothing");
}

#[test]
fn tokens_are_runs_of_twenty_or_more() {
    let text = "a abcdefghij0123456789 x/y+z=_-ABCDEFGHIJKLMNOP é short";
    let found: Vec<&str> = tokens(text).map(|r| &text[r]).collect();
    assert_eq!(found, ["abcdefghij0123456789", "x/y+z=_-ABCDEFGHIJKLMNOP"]);
}

/// Red-team F12: password forms that reached the audit log, exports and memory.
#[rstest]
#[case::goal_prose("deploy using mysql password Tr0ub4dor3xyz now", "Tr0ub4dor3xyz")]
#[case::why_prose("the db password is Tr0ub4dorWHY", "Tr0ub4dorWHY")]
#[case::password_option("mysql -u root --password Tr0ub4dorCMD -h db app", "Tr0ub4dorCMD")]
#[case::password_equals("tool --token=abcd1234efgh", "abcd1234efgh")]
#[case::sshpass("sshpass -p 'Summer2024!cmd' ssh deploy@host", "'Summer2024!cmd'")]
#[case::mysql_attached("mysql -uroot -pTr0ub4dorATT app", "Tr0ub4dorATT")]
#[case::curl_user("curl -u admin:Hunter2curlPass https://api.example.com", "Hunter2curlPass")]
#[case::docker_login("docker login -u me -p Dock3rPassw0rd registry.example", "Dock3rPassw0rd")]
#[case::memory_prose("my github password is Hunter2MEM4", "Hunter2MEM4")]
#[case::passphrase("the passphrase was correct-horse-battery", "correct-horse-battery")]
#[case::login_slash("prod db login is admin / Tr0ub4dorMEM1", "Tr0ub4dorMEM1")]
#[case::sshpass_bare("deploy with sshpass -p Summer2024MEM2", "Summer2024MEM2")]
// Red-team N9: the forms the third pass found in the audit log.
#[case::db_pass("DB_PASS=Hunter2pass ./deploy.sh", "Hunter2pass")]
#[case::redis("redis-cli -a RedisPass77 ping", "RedisPass77")]
#[case::htpasswd("htpasswd -b -c site.htpasswd admin HtPass8899", "HtPass8899")]
#[case::htpasswd_bundled("htpasswd -cb site.htpasswd admin HtPass8898", "HtPass8898")]
#[case::openssl("openssl rsa -in k.pem -passin pass:OsslPass42 -out k2.pem", "OsslPass42")]
#[case::zip("zip -P ZipPass1234 backup.zip README", "ZipPass1234")]
#[case::seven_zip("7z a -pSevenPass12 backup.7z src", "SevenPass12")]
#[case::smbclient("smbclient //host/share -U admin%SmbPass123", "SmbPass123")]
#[case::ini_pass("[db]\npass = IniPass5566\n", "IniPass5566")]
#[case::ini_pwd("pwd = IniPwd7788", "IniPwd7788")]
#[case::json_pwd(r#"{"pwd": "JsonPwd9900"}"#, "JsonPwd9900")]
fn password_forms_are_found(#[case] text: &str, #[case] secret: &str) {
    let clean = redact(text);
    assert!(!clean.contains(secret.trim_matches('\'')), "{text:?} -> {clean}");
    assert!(clean.contains("[redacted sha256:"), "{clean}");
}

/// The same options where they hold no password stay as they are.
#[rstest]
#[case("ssh -p 2222 deploy@host")]
#[case("ls -p src")]
#[case("curl -u admin https://api.example.com")]
#[case("mkdir -p build/out")]
#[case("git log --oneline -5")]
#[case("credentials: Permission denied")]
#[case("cat: /root/.aws/credentials: Permission denied")]
#[case("tests pass: all")]
#[case("unzip -l backup.zip")]
#[case("compass=northward bypass=sideways")]
fn ordinary_options_are_not_taken_for_passwords(#[case] text: &str) {
    assert_eq!(redact(text), text);
}

/// A secret found in a command masks the same text where it is quoted out of context.
#[test]
fn a_secret_is_masked_wherever_its_source_quotes_it() {
    let cmd = "mysql -u root --password Tr0ub4dorCMD5 -h db app";
    let argv = r#"["mysql", "-u", "root", "--password", "Tr0ub4dorCMD5", "-h", "db", "app"]"#;
    let shown = redact_found_in(argv, cmd);
    assert!(!shown.contains("Tr0ub4dorCMD5"), "{shown}");
    assert!(shown.contains("\"root\""), "{shown}");
    assert_eq!(redact_found_in("nothing here", cmd), "nothing here");
}

/// Redacting redacted text changes nothing: the preview is masked once when it is made and may be
/// masked again on the way out (it read `--password [redacted sha256:…] sha256:…]`).
#[rstest]
#[case("mysql -u root --password Tr0ub4dorCMD5 -h db app")]
#[case("curl -u admin:Hunter2Secret https://x")]
#[case("the password is Tr0ub4dor&3")]
fn redacting_twice_reads_the_same_as_once(#[case] text: &str) {
    let once = redact(text).into_owned();
    assert_ne!(once, text);
    assert_eq!(redact(&once), once);
    let sealed = "--password ⟦sealed:O8IOn9odj0v2hTOrnvwdCyJAuCx-D1aQFjCELGB13H3BzMyzdTQ7YI4⟧ x";
    assert_eq!(redact(sealed), sealed, "a sealed token is not a secret");
    let shown = "mysql -u root --password [sealed secret] -h db app";
    assert_eq!(redact(shown), shown, "nor the mark it is shown as");
}

/// The artefacts of a corpus file: `(name, text)` for each `### name` block.
fn artefacts(corpus: &str) -> Vec<(&str, &str)> {
    corpus
        .split("\n### ")
        .skip(1)
        .map(|block| block.split_once('\n').unwrap_or((block, "")))
        .collect()
}

/// The scanner's precision and recall, held to two corpora and to this repository's own lockfiles:
/// no public artefact flagged, every secret form found. The counts are printed
/// (`cargo test -p reins-core --lib corpus -- --nocapture`).
#[test]
fn the_corpus_public_artefacts_pass_and_every_secret_form_is_found() {
    let public = artefacts(include_str!("public.txt"));
    let forms = artefacts(include_str!("found.txt"));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut lockfiles = Vec::new();
    for file in ["Cargo.lock", "ui/package-lock.json"] {
        lockfiles.push((file, std::fs::read_to_string(root.join(file)).unwrap_or_default()));
    }
    let flagged: Vec<String> = public
        .iter()
        .map(|(name, text)| (*name, *text))
        .chain(lockfiles.iter().map(|(n, t)| (*n, t.as_str())))
        .filter_map(|(name, text)| {
            let found = find(text);
            let first = found.first()?;
            Some(format!("{name}: {:?}", &text[first.range.clone()]))
        })
        .collect();
    let missed: Vec<&str> = forms
        .iter()
        .filter(|(_, text)| find(text).is_empty())
        .map(|(name, _)| *name)
        .collect();
    println!(
        "public artefacts flagged: {} of {} (and {} lockfiles of this repository); secret forms found: {} of {}",
        flagged.len(),
        public.len() + lockfiles.len(),
        lockfiles.len(),
        forms.len() - missed.len(),
        forms.len()
    );
    assert!(public.len() >= 15 && forms.len() >= 40, "the corpora were read");
    assert!(lockfiles.iter().all(|(_, t)| t.len() > 10_000), "the lockfiles were read");
    assert!(flagged.is_empty(), "public artefacts flagged:\n{}", flagged.join("\n"));
    assert!(missed.is_empty(), "secret forms missed: {missed:?}");
}
