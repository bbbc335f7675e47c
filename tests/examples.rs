//! The example files shipped in the repository are real: they load with the real
//! loaders, so a user copying them starts from something that works.

use std::path::Path;

#[test]
fn the_security_example_parses_and_names_every_secret() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(".security.yml.example");
    let text = std::fs::read_to_string(&path).unwrap();
    let secrets = pincer_config::parse_secrets(&text, &path).expect("the example must parse");
    let env: Vec<(String, String)> = Vec::new();
    assert_eq!(
        secrets
            .provider_keys("anthropic", pincer_config::ProviderKind::Anthropic, &env)
            .len(),
        2
    );
    assert!(secrets.channel_token("telegram", &env).is_some());
    assert!(secrets.slack_app_token(&env).is_some());
    assert!(secrets.mcp.contains_key("github"));
}
