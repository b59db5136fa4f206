use super::*;

fn encode_part(value: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
}

fn token_with_header(header: Value) -> String {
    format!(
        "{}.{}.c2ln",
        encode_part(&header),
        encode_part(&serde_json::json!({"sub": "x"}))
    )
}

#[test]
fn none_and_hmac_are_refused_before_any_key_is_looked_up() {
    for alg in ["none", "None", "NONE"] {
        let token = token_with_header(serde_json::json!({"alg": alg, "kid": "k1"}));
        assert_eq!(
            read_header(&token),
            Err(InvalidToken::DisallowedAlgorithm("`none`")),
            "{alg}"
        );
    }
    for alg in ["HS256", "HS384", "HS512", "hs256"] {
        let token = token_with_header(serde_json::json!({"alg": alg, "kid": "k1"}));
        assert_eq!(
            read_header(&token),
            Err(InvalidToken::DisallowedAlgorithm("HMAC")),
            "{alg}"
        );
    }
    let token = token_with_header(serde_json::json!({"alg": "RS256", "kid": "k1"}));
    assert_eq!(
        read_header(&token),
        Ok(TokenHeader {
            algorithm: Algorithm::RS256,
            kid: Some("k1".into())
        })
    );
    assert!(matches!(
        read_header("a.b"),
        Err(InvalidToken::Malformed(_))
    ));
    assert!(matches!(
        read_header("a.b.c.d.e"),
        Err(InvalidToken::Malformed(m)) if m.contains("JWE")
    ));
    assert!(matches!(
        read_header("!!.b.c"),
        Err(InvalidToken::Malformed(_))
    ));
    let long = "a".repeat(MAX_TOKEN_BYTES + 1);
    assert!(matches!(
        read_header(&long),
        Err(InvalidToken::Malformed(_))
    ));
}

#[test]
fn shared_secret_keys_are_never_used_and_the_algorithm_comes_from_the_key() {
    let oct: Jwk =
        serde_json::from_value(serde_json::json!({"kty": "oct", "k": "c2VjcmV0", "kid": "h"}))
            .unwrap();
    assert!(signing_key(&oct).is_err());
    let rsa = serde_json::json!({"kty": "RSA", "kid": "r", "e": "AQAB",
        "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbg"});
    let key = signing_key(&serde_json::from_value(rsa.clone()).unwrap()).unwrap();
    assert_eq!(key.algorithms, RSA_ALGORITHMS);
    let mut pinned = rsa.clone();
    pinned["alg"] = "RS256".into();
    let key = signing_key(&serde_json::from_value(pinned).unwrap()).unwrap();
    assert_eq!(key.algorithms, [Algorithm::RS256]);
    let mut hmac_alg = rsa.clone();
    hmac_alg["alg"] = "HS256".into();
    assert!(signing_key(&serde_json::from_value(hmac_alg).unwrap()).is_err());
    let mut encryption = rsa;
    encryption["use"] = "enc".into();
    assert!(signing_key(&serde_json::from_value(encryption).unwrap()).is_err());
}

#[test]
fn roles_permit_their_routes_and_refusals_say_what_the_role_may_do() {
    for (method, route) in APPROVER_ROUTES {
        assert!(
            permit(Role::Approver, method, route).is_ok(),
            "{method} {route}"
        );
    }
    assert!(permit(Role::Approver, "GET", "/v1/sessions/{id}/agent-config").is_err());
    let why = permit(
        Role::Approver,
        "PUT",
        "/v1/brands/{brand}/connections/{connector}",
    )
    .unwrap_err();
    assert!(
        why.starts_with("role `approver` may only list and decide approvals")
            && why.ends_with("needs role admin"),
        "{why}"
    );
    assert!(permit(Role::Viewer, "GET", "/v1/brands/{brand}/profiles").is_ok());
    assert!(permit(Role::Viewer, "HEAD", "/v1/trace").is_ok());
    let why = permit(Role::Viewer, "POST", "/v1/approvals/{id}").unwrap_err();
    assert!(
        why.starts_with("role `viewer` may only read")
            && why.ends_with("needs role approver or admin"),
        "{why}"
    );
    assert!(permit(Role::Admin, "DELETE", "/v1/sessions/{id}").is_ok());
}

#[test]
fn the_highest_role_a_claim_gives_wins_over_every_brand_and_each_brand() {
    let config = OidcConfig {
        issuer: "https://id.example.com".into(),
        audience: "scout".into(),
        jwks_url: Some("https://id.example.com/jwks".into()),
        console_client_id: None,
        console_scope: "openid".into(),
        console_bearer: Default::default(),
        role_claim: "scout_roles".into(),
        subject_claim: None,
        leeway_secs: 60,
        jwks_min_refresh_secs: 10,
        allow_private_network: false,
        roles: None,
        brand_roles: Default::default(),
    };
    let verifier = OidcVerifier::new(&config).unwrap();
    let every = |v: Value| verifier.roles_of(Some(&v)).0;
    assert_eq!(every("viewer".into()), Some(Role::Viewer));
    assert_eq!(
        every(serde_json::json!(["viewer", "admin"])),
        Some(Role::Admin)
    );
    assert_eq!(
        every(serde_json::json!(["approver", 3])),
        Some(Role::Approver)
    );
    assert_eq!(every(serde_json::json!(["owner"])), None);
    assert_eq!(every(serde_json::json!({"admin": true})), None);
    assert_eq!(verifier.roles_of(None), (None, Default::default()));

    // `ROLE:BRAND` is a role over that brand alone; one no higher than the
    // every-brand role adds nothing.
    let (every_brand, brands) = verifier.roles_of(Some(&serde_json::json!([
        "approver:acme",
        "viewer:acme",
        "viewer:globex",
        "owner:initech",
        "admin: spaced"
    ])));
    assert_eq!(every_brand, None);
    assert_eq!(
        brands.into_iter().collect::<Vec<_>>(),
        [
            ("acme".to_string(), Role::Approver),
            ("globex".to_string(), Role::Viewer)
        ]
    );
    let (every_brand, brands) = verifier.roles_of(Some(&serde_json::json!([
        "viewer",
        "viewer:acme",
        "approver:globex"
    ])));
    assert_eq!(every_brand, Some(Role::Viewer));
    assert_eq!(
        brands.into_iter().collect::<Vec<_>>(),
        [("globex".to_string(), Role::Approver)]
    );
    // An auditor audits every brand or, as `auditor:BRAND`, that brand.
    let audits = |v: Value| verifier.audits(Some(&v));
    assert_eq!(audits("auditor".into()), (true, Default::default()));
    assert_eq!(
        audits(serde_json::json!([
            "auditor:acme",
            "auditor:globex",
            "auditor: bad"
        ])),
        (false, ["acme".to_string(), "globex".to_string()].into())
    );
    assert_eq!(
        audits(serde_json::json!(["auditor:acme", "auditor"])),
        (true, Default::default()),
        "every brand covers each"
    );
    assert_eq!(
        audits(serde_json::json!(["approver:acme"])),
        (false, Default::default())
    );

    let mapped = OidcVerifier::new(&OidcConfig {
        roles: Some(OidcRoles {
            admin: vec!["platform-admins".into()],
            ..Default::default()
        }),
        brand_roles: [(
            "acme".to_string(),
            OidcRoles {
                approver: vec!["acme-approvers".into()],
                auditor: vec!["acme-audit".into()],
                ..Default::default()
            },
        )]
        .into(),
        ..config
    })
    .unwrap();
    assert_eq!(
        mapped
            .roles_of(Some(&serde_json::json!(["platform-admins"])))
            .0,
        Some(Role::Admin)
    );
    assert_eq!(
        mapped.roles_of(Some(&serde_json::json!(["viewer", "approver:acme"]))),
        (None, Default::default()),
        "a mapping replaces the default values"
    );
    let (every_brand, brands) = mapped.roles_of(Some(&serde_json::json!(["acme-approvers"])));
    assert_eq!(every_brand, None);
    assert_eq!(brands.get("acme"), Some(&Role::Approver));
    assert_eq!(
        mapped.audits(Some(&serde_json::json!(["acme-audit", "auditor:globex"]))),
        (false, ["acme".to_string()].into()),
        "a mapping's brand auditor; the default value is not one"
    );
}
