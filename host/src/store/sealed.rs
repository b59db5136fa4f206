//! Sealing at rest, shared by every backend: ChaCha20-Poly1305 with the
//! store key, the row's identity as associated data, so a sealed value
//! copied onto another row (another brand, another connector) does not open.

use super::StoreError;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};

/// Associated data binding a sealed credential to its row: the brand's length
/// first, so ("ab", "c") and ("a", "bc") differ.
pub(crate) fn connection_aad(brand: &str, connector: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + brand.len() + connector.len());
    out.extend_from_slice(&(brand.len() as u64).to_le_bytes());
    out.extend_from_slice(brand.as_bytes());
    out.extend_from_slice(connector.as_bytes());
    out
}

/// `plain` sealed under `key`: (nonce, ciphertext).
pub(crate) fn seal(
    key: &[u8; 32],
    aad: &[u8],
    plain: &[u8],
) -> Result<(Vec<u8>, Vec<u8>), StoreError> {
    let cipher = ChaCha20Poly1305::new(Key::from_slice(key));
    let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
    let ciphertext = cipher
        .encrypt(&nonce, Payload { msg: plain, aad })
        .map_err(|_| StoreError::Encrypt)?;
    Ok((nonce.to_vec(), ciphertext))
}

/// The plain text of a sealed value, or `None` when it does not open (wrong
/// key, tampered row, another row's value).
pub(crate) fn open(key: &[u8; 32], aad: &[u8], nonce: &[u8], ciphertext: &[u8]) -> Option<Vec<u8>> {
    if nonce.len() != 12 {
        return None;
    }
    ChaCha20Poly1305::new(Key::from_slice(key))
        .decrypt(
            Nonce::from_slice(nonce),
            Payload {
                msg: ciphertext,
                aad,
            },
        )
        .ok()
}

/// A stored connection's credential, opened: `Ok(None)` when disabled.
pub(crate) fn open_connection(
    brand: &str,
    connector: &str,
    key: &[u8; 32],
    nonce: &[u8],
    ciphertext: &[u8],
) -> Result<String, StoreError> {
    let decrypt_error = || StoreError::Decrypt {
        brand: brand.to_owned(),
        connector: connector.to_owned(),
    };
    let plain = open(key, &connection_aad(brand, connector), nonce, ciphertext)
        .ok_or_else(decrypt_error)?;
    String::from_utf8(plain).map_err(|_| decrypt_error())
}

/// `plain` sealed under `key` for `purpose` (its associated data), as one
/// URL-safe text (nonce then ciphertext): a value the host hands out and
/// must get back unchanged, such as an OAuth `state`.
pub fn seal_text(key: &[u8; 32], purpose: &[u8], plain: &[u8]) -> Result<String, StoreError> {
    use base64::Engine;
    let (mut nonce, ciphertext) = seal(key, purpose, plain)?;
    nonce.extend_from_slice(&ciphertext);
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(nonce))
}

/// What [`seal_text`] sealed, or `None` for anything else (another key,
/// another purpose, a changed byte).
pub fn open_text(key: &[u8; 32], purpose: &[u8], text: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()?;
    if bytes.len() < 12 {
        return None;
    }
    let (nonce, ciphertext) = bytes.split_at(12);
    open(key, purpose, nonce, ciphertext)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_text_opens_only_with_its_key_and_purpose_and_unchanged() {
        let key = [7u8; 32];
        let text = seal_text(&key, b"purpose", b"plain").unwrap();
        assert_eq!(
            open_text(&key, b"purpose", &text).as_deref(),
            Some(&b"plain"[..])
        );
        assert_eq!(
            open_text(&[8u8; 32], b"purpose", &text),
            None,
            "another key"
        );
        assert_eq!(open_text(&key, b"other", &text), None, "another purpose");
        let mut changed = text.into_bytes();
        let last = changed.len() - 2;
        changed[last] = if changed[last] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(changed).unwrap();
        assert_eq!(
            open_text(&key, b"purpose", &changed),
            None,
            "a changed byte"
        );
        assert_eq!(open_text(&key, b"purpose", "short"), None);
    }
}
