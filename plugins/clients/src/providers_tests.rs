//! Checking a provider's id, URL and key, masking its key, reading a model list.

use super::*;

#[test]
fn ids_urls_and_keys_are_checked_by_name() {
    assert!(check_id("local-vllm").is_ok());
    for bad in ["", "Local", "-x", "a/b", "a b", &"x".repeat(41)] {
        let Err(Failure(code, message)) = check_id(bad) else {
            panic!("took id {bad:?}");
        };
        assert_eq!(code, RpcErrorCode::ProviderRejected);
        assert!(message.starts_with("id `"), "{message}");
    }
    assert_eq!(
        check_base_url(" http://127.0.0.1:8/v1/ ").ok().as_deref(),
        Some("http://127.0.0.1:8/v1")
    );
    for bad in [
        "ftp://x",
        "http://",
        "https:///v1",
        "http://a b",
        "http://x/?q=1",
        "localhost:11434",
    ] {
        let Err(Failure(_, message)) = check_base_url(bad) else {
            panic!("took url {bad:?}");
        };
        assert!(message.contains("baseUrl"), "{message}");
    }
    assert!(check_key("sk-1").is_ok());
    assert!(check_key("a b").is_err() && check_key(" ").is_err() && check_key("ключ").is_err());
}

#[test]
fn a_key_is_shown_by_its_last_four_characters_at_most() {
    assert_eq!(mask("sk-abcdefghijkl1234"), "••••1234");
    assert_eq!(mask("short"), "••••");
    assert_eq!(key_name("local-vllm"), "DSH_PROVIDER_LOCAL_VLLM_API_KEY");
    assert!(dsh_credentials_seam::valid_name(&key_name("a-1")));
}

#[test]
fn a_model_list_reads_its_ids_once_each() {
    let body =
        br#"{"object":"list","data":[{"id":"a"},{"id":" b "},{"id":"a"},{"x":1},{"id":""}]}"#;
    assert_eq!(parse_models(body).unwrap(), ["a", "b"]);
    assert!(
        parse_models(b"<html>")
            .unwrap_err()
            .to_string()
            .contains("not JSON")
    );
    assert!(
        parse_models(b"{\"models\":[]}")
            .unwrap_err()
            .to_string()
            .contains("data")
    );
}
