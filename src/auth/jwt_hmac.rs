//! The HMAC-only crypto provider handed to `jsonwebtoken`: tenant tokens are signed with
//! HS256, HS384 or HS512 only, so the RSA, ECDSA and EdDSA backends (and their compile
//! time) are left out.
//!
//! Invariants: [`install`] runs before any `jsonwebtoken` call of this crate; the provider
//! builds a signer or verifier for the three HMAC algorithms and refuses any other with
//! `InvalidAlgorithm` (unreachable in practice: decoding rejects other algorithms first
//! with `InvalidAlgorithm`, as Meilisearch answers). Signature comparison is constant-time
//! (`hmac`'s `verify_slice`).

use hmac::{Hmac, Mac};
use jsonwebtoken::crypto::{CryptoProvider, JwkUtils, JwtSigner, JwtVerifier};
use jsonwebtoken::errors::{Error, ErrorKind};
use jsonwebtoken::signature::{self, Signer, Verifier};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use sha2::{Sha256, Sha384, Sha512};

/// A keyed HMAC of one of the three JWT hash sizes.
#[derive(Clone)]
enum KeyedHmac {
    Sha256(Hmac<Sha256>),
    Sha384(Hmac<Sha384>),
    Sha512(Hmac<Sha512>),
}

impl KeyedHmac {
    fn new(algorithm: Algorithm, secret: &[u8]) -> Result<KeyedHmac, Error> {
        let invalid = |_| Error::from(ErrorKind::InvalidKeyFormat);
        Ok(match algorithm {
            Algorithm::HS256 => KeyedHmac::Sha256(Hmac::new_from_slice(secret).map_err(invalid)?),
            Algorithm::HS384 => KeyedHmac::Sha384(Hmac::new_from_slice(secret).map_err(invalid)?),
            Algorithm::HS512 => KeyedHmac::Sha512(Hmac::new_from_slice(secret).map_err(invalid)?),
            _ => return Err(ErrorKind::InvalidAlgorithm.into()),
        })
    }

    fn algorithm(&self) -> Algorithm {
        match self {
            KeyedHmac::Sha256(_) => Algorithm::HS256,
            KeyedHmac::Sha384(_) => Algorithm::HS384,
            KeyedHmac::Sha512(_) => Algorithm::HS512,
        }
    }

    fn sign(&self, message: &[u8]) -> Vec<u8> {
        match self.clone() {
            KeyedHmac::Sha256(mac) => mac.chain_update(message).finalize().into_bytes().to_vec(),
            KeyedHmac::Sha384(mac) => mac.chain_update(message).finalize().into_bytes().to_vec(),
            KeyedHmac::Sha512(mac) => mac.chain_update(message).finalize().into_bytes().to_vec(),
        }
    }

    fn verify(&self, message: &[u8], tag: &[u8]) -> bool {
        match self.clone() {
            KeyedHmac::Sha256(mac) => mac.chain_update(message).verify_slice(tag).is_ok(),
            KeyedHmac::Sha384(mac) => mac.chain_update(message).verify_slice(tag).is_ok(),
            KeyedHmac::Sha512(mac) => mac.chain_update(message).verify_slice(tag).is_ok(),
        }
    }
}

impl Signer<Vec<u8>> for KeyedHmac {
    fn try_sign(&self, message: &[u8]) -> Result<Vec<u8>, signature::Error> {
        Ok(self.sign(message))
    }
}

impl JwtSigner for KeyedHmac {
    fn algorithm(&self) -> Algorithm {
        KeyedHmac::algorithm(self)
    }
}

impl Verifier<Vec<u8>> for KeyedHmac {
    fn verify(&self, message: &[u8], tag: &Vec<u8>) -> Result<(), signature::Error> {
        if KeyedHmac::verify(self, message, tag) {
            Ok(())
        } else {
            Err(signature::Error::new())
        }
    }
}

impl JwtVerifier for KeyedHmac {
    fn algorithm(&self) -> Algorithm {
        KeyedHmac::algorithm(self)
    }
}

fn new_signer(algorithm: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>, Error> {
    Ok(Box::new(KeyedHmac::new(
        *algorithm,
        key.try_get_hmac_secret()?,
    )?))
}

fn new_verifier(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>, Error> {
    Ok(Box::new(KeyedHmac::new(
        *algorithm,
        key.try_get_hmac_secret()?,
    )?))
}

static HMAC_PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory: new_signer,
    verifier_factory: new_verifier,
    jwk_utils: JwkUtils::new_unimplemented(),
};

/// Installs the provider as the process default (idempotent; a provider installed earlier
/// by someone else is kept, and any complete provider handles HMAC the same way).
pub fn install() {
    // An Err only says a default is already installed, which is fine.
    let _already_installed = HMAC_PROVIDER.install_default();
}
