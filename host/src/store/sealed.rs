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
